"""npu parameters for the ops that move elements: docs/npu.md (N20) re-encoding an operand to the
output's encoding (Identity, Reshape, Transpose, Slice, Gather, Split, Expand, Tile, Pad, Resize
nearest), (N21) Concat, (N22) Pad's constant, (N23) Resize linear."""

import numpy as np

from ..ir.graph import Graph, Node
from ..quant.encoding import dequantize, quantize
from .common import enc, mults, scale

# Ops whose runtime node moves the elements of input 0 (Split: to several outputs).
SINGLE_INPUT_MOVERS = ("Identity", "Reshape", "Transpose", "Slice", "Gather", "Expand", "Tile")

RESIZE_FRAC_BITS = 20  # (N23): linear weights in Q20


def reencode_mults(graph: Graph, inputs, out: str) -> dict:
    """(N20): one multiplier s_x[j] / s_y per scale j of every data input, concatenated in input
    order (a per-channel or block-wise constant has one per scale, in its encoding's order)."""
    sy = scale(graph, out)
    reals = [float(s) / sy for name in inputs for s in enc(graph, name).scales]
    return mults(*reals)


def value_code(value: float, graph: Graph, out: str) -> int:
    """A real constant as a code of the output's encoding, (2): what the cpu simulation stores."""
    return int(quantize(np.array([value], np.float32), enc(graph, out))[0])


def mover(node: Node, graph: Graph) -> dict:
    return reencode_mults(graph, node.inputs[:1], node.outputs[0])


def split(node: Node, graph: Graph) -> dict:
    """(N20) per output: multiplier k re-encodes the input to output k."""
    sx = scale(graph, node.inputs[0])
    reals = [sx / scale(graph, o) if o else 1.0 for o in node.outputs]
    return mults(*reals)


def concat(node: Node, graph: Graph) -> dict:
    """(N21)."""
    return reencode_mults(graph, [i for i in node.inputs if i], node.outputs[0])


def pad(node: Node, graph: Graph) -> dict:
    """(N22): the pad value (a quantized parameter) as a code of the output's encoding."""
    params = reencode_mults(graph, node.inputs[:1], node.outputs[0])
    if len(node.inputs) > 1 and node.inputs[1]:
        t = graph.tensor(node.inputs[1])
        value = float(dequantize(t.const.reshape(-1)[:1].astype(np.int64), t.encoding)[0])
        params["npu_pad_value"] = value_code(value, graph, node.outputs[0])
    return params


# ---- Resize ------------------------------------------------------------------------------------
# The coordinate arithmetic of the cpu kernel (runtime/cpu/resize_plan.cpp), in float32, so the
# integer taps sit where the cpu simulation's do.

def _f32(v) -> np.float32:
    return np.float32(v)


def _original_coordinate(mode: str, x: int, in_len: int, out_len: int, scale_: float, length: float,
                         roi0: float, roi1: float) -> np.float32:
    xf, inn, ln, sc = _f32(x), _f32(in_len), _f32(length), _f32(scale_)
    half = _f32(0.5)
    if mode == "half_pixel":
        return (xf + half) / sc - half
    if mode == "half_pixel_symmetric":
        adjustment = _f32(out_len) / ln
        offset = inn / _f32(2) * (_f32(1) - adjustment)
        return _f32(float(offset) + (float(xf) + 0.5) / float(sc) - 0.5)
    if mode == "pytorch_half_pixel":
        return _f32(-0.5) if ln == _f32(1) else (xf + half) / sc - half
    if mode == "align_corners":
        return _f32(0) if ln == _f32(1) else xf * (inn - _f32(1)) / (ln - _f32(1))
    if mode == "asymmetric":
        return xf / sc
    if mode == "tf_half_pixel_for_nearest":
        return (xf + half) / sc
    if mode == "tf_crop_and_resize":
        r0, r1 = _f32(roi0), _f32(roi1)
        if ln == _f32(1):
            return _f32(0.5 * float(r0 + r1) * float(inn - _f32(1)))
        return r0 * (inn - _f32(1)) + (xf * (r1 - r0) * (inn - _f32(1))) / (ln - _f32(1))
    raise ValueError(mode)


def _linear_axis(mode, in_len, out_len, scale_, length, roi0, roi1):
    """Per output coordinate: the two input indices, the Q20 weight of the second, and whether
    the coordinate lies outside the input (tf_crop_and_resize)."""
    last = in_len - 1
    i0s, i1s, w1s, outside = [], [], [], []
    for y in range(out_len):
        x = _original_coordinate(mode, y, in_len, out_len, scale_, length, roi0, roi1)
        outside.append(int(mode == "tf_crop_and_resize" and (x < 0 or x > _f32(last))))
        xc = min(max(x, _f32(0)), _f32(last))
        i0 = min(int(xc), last)
        frac = float(xc - _f32(i0))
        w1 = int(np.round(frac * (1 << RESIZE_FRAC_BITS)))
        i0s.append(i0)
        i1s.append(min(i0 + 1, last))
        w1s.append(w1)
    return i0s, i1s, w1s, outside


def resize(node: Node, graph: Graph) -> dict:
    """(N20) for nearest; (N23) for linear."""
    a = node.attrs
    x, y = node.inputs[0], node.outputs[0]
    mode = a.get("mode", "nearest")
    params = {}
    if a.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        params["npu_extrapolation"] = value_code(float(a.get("extrapolation_value", 0.0)), graph, y)
    if mode == "nearest":
        return {**params, **mover(node, graph)}
    if mode != "linear" or int(a.get("antialias", 0)):
        return {**params, "npu_unsupported": f"mode '{mode}'" + (" with antialias" if a.get("antialias") else "")}
    in_shape, out_shape = graph.tensor(x).shape, graph.tensor(y).shape
    rank = len(in_shape)
    coord = a.get("coordinate_transformation_mode", "half_pixel")
    scales = [float(v) for v in a["scales"]]
    lengths = [float(v) for v in a.get("lengths", [float(d) for d in out_shape])]
    roi = [float(v) for v in a.get("roi", [0.0] * rank + [1.0] * rank)]
    axes, i0, i1, w1, outside = [], [], [], [], []
    for d in range(rank):
        identity = (_f32(scales[d]) == _f32(1) and in_shape[d] == out_shape[d]
                    and (coord != "tf_crop_and_resize" or (_f32(roi[d]) == 0 and _f32(roi[rank + d]) == 1)))
        if identity:
            continue
        taps = _linear_axis(coord, in_shape[d], out_shape[d], scales[d], _f32(lengths[d]), roi[d], roi[rank + d])
        axes.append(d)
        for lst, vals in zip((i0, i1, w1, outside), taps):
            lst.extend(vals)
    # y = requantize(sum of Q20 weights x (q - zp), s_x / (s_y 2^20)): the combined weight of a tap
    # is one Q20 number whatever the number of resized axes (N23).
    params.update(npu_axes=axes, npu_index0=i0, npu_index1=i1, npu_weight1=w1, npu_outside=outside,
                  npu_frac_bits=RESIZE_FRAC_BITS,
                  **mults(scale(graph, x) / (scale(graph, y) * (1 << RESIZE_FRAC_BITS))))
    return params


RULES = {**{op: mover for op in SINGLE_INPUT_MOVERS}, "Split": split, "Concat": concat, "Pad": pad,
         "Resize": resize}
