"""The op rules of the QDQ export (qdq.py): a runtime node's explicit parameters back to ONNX
attributes and constant inputs. An op without a rule passes its parameters as attributes.

A rule gets the exporter, our node, the ONNX names of its inputs (already in the form the node
reads them) and of its outputs, and emits ONNX nodes through `x.add_node`.
"""

import math

import numpy as np
from onnx import helper

from ..errors import ConvertError

INT64_MIN = -(2 ** 63)

# Runtime nodes whose output holds exactly the input's values (Quantize/Dequantize: the fp16
# boundary of --float-fallback, which Q/DQ at the activations' encodings already express).
ALIASES = {"Identity", "Quantize", "Dequantize"}

# Inputs a rule takes raw (as a real value), never as a DQ'd constant: {op: input indices}.
RAW_INPUTS = {"Pad": {1}}


def params(node, drop=()) -> dict:
    """The node's parameters without the npu's (npu_*) and those in `drop`."""
    return {k: v for k, v in node.attrs.items() if not k.startswith("npu_") and k not in drop}


def as_attributes(x, node, ins, outs) -> None:
    """The default rule: the runtime node's parameters are the ONNX node's attributes."""
    x.add_node(node.op_type, ins, outs, node.name, **params(node))


def _renamed(**names):
    def rule(x, node, ins, outs):
        x.add_node(node.op_type, ins, outs, node.name, **{names.get(k, k): v for k, v in params(node).items()})
    return rule


def _int64(x, node, what: str, values) -> str:
    return x.const(f"{node.name}/{what}", np.array(values, np.int64))


def _shape_input(x, node, ins, outs) -> None:
    """Reshape and Expand: the target shape is the output tensor's shape."""
    x.add_node(node.op_type, [ins[0], _int64(x, node, "shape", x.graph.tensor(node.outputs[0]).shape)], outs,
               node.name)


def _keepdims(x, node) -> int:
    return int(len(x.graph.tensor(node.outputs[0]).shape) == len(x.graph.tensor(node.inputs[0]).shape))


def _reduce(x, node, ins, outs) -> None:
    axes = node.attrs["axes"]
    x.add_node(node.op_type, [ins[0], _int64(x, node, "axes", axes)], outs, node.name,
               keepdims=_keepdims(x, node), noop_with_empty_axes=int(not axes))


def _arg(x, node, ins, outs) -> None:
    x.add_node(node.op_type, ins, outs, node.name, keepdims=_keepdims(x, node), **params(node))


def _slice(x, node, ins, outs) -> None:
    starts, steps = node.attrs["starts"], node.attrs["steps"]
    ends = []
    for start, step, n in zip(starts, steps, x.graph.tensor(node.outputs[0]).shape):
        end = start + step * n  # one step past the last element taken
        ends.append(INT64_MIN if end < 0 else end)
    extra = [_int64(x, node, k, v) for k, v in (("starts", starts), ("ends", ends),
                                                ("axes", list(range(len(starts)))), ("steps", steps))]
    x.add_node("Slice", [ins[0], *extra], outs, node.name)


def _split(x, node, ins, outs) -> None:
    x.add_node("Split", [ins[0], _int64(x, node, "split", node.attrs["split"])], outs, node.name,
               axis=node.attrs["axis"])


def _tile(x, node, ins, outs) -> None:
    x.add_node("Tile", [ins[0], _int64(x, node, "repeats", node.attrs["repeats"])], outs, node.name)


def _pad(x, node, ins, outs) -> None:
    extra = [_int64(x, node, "pads", node.attrs["pads"])]
    if node.attrs["mode"] == "constant":  # the fill value, raw: an ONNX Pad takes no DQ'd value
        value = x.real_const(node.inputs[1])
        extra.append(x.const(f"{node.name}/constant_value", np.asarray(value).reshape(()))
                     if value is not None else x.read(node.inputs[1]))
    x.add_node("Pad", [ins[0], *extra], outs, node.name, mode=node.attrs["mode"])


def _clip(x, node, ins, outs) -> None:
    bounds = []
    for key in ("min", "max"):
        v = float(node.attrs[key])
        bounds.append("" if math.isinf(v) else x.const(f"{node.name}/{key}", np.float32(v)))
    x.add_node("Clip", [ins[0], *bounds], outs, node.name)


def _conv_transpose(x, node, ins, outs) -> None:
    """output_padding from the shapes (convert resolved output_shape/auto_pad into pads)."""
    p = params(node)
    xs, ys = x.graph.tensor(node.inputs[0]).shape, x.graph.tensor(node.outputs[0]).shape
    r = len(xs) - 2
    out_pad = [ys[2 + i] - (p["strides"][i] * (xs[2 + i] - 1) + (p["kernel_shape"][i] - 1) * p["dilations"][i] + 1
                            - p["pads"][i] - p["pads"][r + i]) for i in range(r)]
    x.add_node("ConvTranspose", ins, outs, node.name, output_padding=out_pad, **p)


def _transpose(x, node, ins, outs) -> None:
    """Transpose; with in_shape (DepthToSpace/SpaceToDepth) a Reshape before and after, the moved
    values keeping the input's encoding."""
    if "in_shape" not in node.attrs:
        x.add_node("Transpose", ins, outs, node.name, perm=node.attrs["perm"])
        return
    enc = x.graph.tensor(node.outputs[0]).encoding
    view = x.intermediate(f"{node.name}/view", "Reshape", [ins[0], _int64(x, node, "in_shape", node.attrs["in_shape"])],
                          enc)
    moved = x.intermediate(f"{node.name}/moved", "Transpose", [view], enc, perm=node.attrs["perm"])
    x.add_node("Reshape", [moved, _int64(x, node, "shape", x.graph.tensor(node.outputs[0]).shape)], outs, node.name)


def _softmax(x, node, ins, outs) -> None:
    """Softmax/LogSoftmax; before opset 13 (coerce_2d) over every dim from `axis` on: a 2-D view."""
    shape = x.graph.tensor(node.inputs[0]).shape
    axis = node.attrs["axis"]
    if not node.attrs.get("coerce_2d") or axis == len(shape) - 1:
        x.add_node(node.op_type, ins, outs, node.name, axis=axis)
        return
    rows = int(np.prod(shape[:axis], dtype=np.int64))
    view = x.intermediate(f"{node.name}/view", "Reshape", [ins[0], _int64(x, node, "view_shape", [rows, -1])],
                          x.graph.tensor(node.inputs[0]).encoding)
    done = x.intermediate(f"{node.name}/2d", node.op_type, [view], x.graph.tensor(node.outputs[0]).encoding, axis=1)
    x.add_node("Reshape", [done, _int64(x, node, "shape", shape)], outs, node.name)


def _resize(x, node, ins, outs) -> None:
    """Our float32 scales, or the output's sizes where ONNX's floor(in * scale) would not give the
    output convert resolved (from sizes: the same out / in scales onnxruntime computes)."""
    p = params(node, drop=("scales", "lengths", "roi"))
    xs, ys = x.graph.tensor(node.inputs[0]).shape, x.graph.tensor(node.outputs[0]).shape
    scales = node.attrs["scales"]
    if p.get("coordinate_transformation_mode") == "tf_half_pixel_for_nearest":
        p["coordinate_transformation_mode"] = "tf_half_pixel_for_nn"  # onnxruntime's spelling
    if p.get("nearest_mode") == "legacy":  # opset < 11: truncate when upsampling, ceil when downsampling
        ups = {s >= 1 for s in scales if s != 1}
        if len(ups) > 1:
            raise ConvertError(f"{node.describe()}: a legacy nearest Resize that both up- and downsamples "
                               "has no ONNX opset 21 form")
        p["nearest_mode"] = "ceil" if ups == {False} else "floor"
    roi = x.const(f"{node.name}/roi", np.array(node.attrs["roi"], np.float32)) if "roi" in node.attrs else ""
    if all(math.floor(float(s) * n) == y for s, n, y in zip(scales, xs, ys)):  # the spec's rule, in float64
        tail = [x.const(f"{node.name}/scales", np.array(scales, np.float32))]
    elif all(float(np.float32(y) / np.float32(n)) == s for y, n, s in zip(ys, xs, scales)):
        tail = ["", _int64(x, node, "sizes", ys)]
    else:
        raise ConvertError(f"{node.describe()}: scales {scales} with output {list(ys)} (keep_aspect_ratio_policy) "
                           "have no ONNX opset 21 form")
    x.add_node("Resize", [ins[0], roi, *tail], outs, node.name, **p)


def _pool(x, node, ins, outs) -> None:
    """ceil_mode where the output holds windows the floor rule would drop (convert made pads explicit)."""
    p = params(node)
    xs, ys = x.graph.tensor(node.inputs[0]).shape, x.graph.tensor(node.outputs[0]).shape
    r = len(xs) - 2
    floor = [(xs[2 + i] + p["pads"][i] + p["pads"][r + i] - ((p["kernel_shape"][i] - 1) * p["dilations"][i] + 1))
             // p["strides"][i] + 1 for i in range(r)]
    x.add_node(node.op_type, ins, outs, node.name, ceil_mode=int(floor != list(ys[2:])), **p)


# Runtime activation codes (ops/rnn.py ACTIVATIONS) -> ONNX names, and how many of alpha/beta each takes.
_RNN_ACTIVATIONS = ["Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
                    "HardSigmoid", "Elu", "Softsign", "Softplus"]
_TAKES = {"Affine": 2, "LeakyRelu": 1, "ThresholdedRelu": 1, "ScaledTanh": 2, "HardSigmoid": 2, "Elu": 1}
_DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _recurrent(x, node, ins, outs) -> None:
    """LSTM/GRU/RNN: activations only when not ONNX's defaults (readers such as the QNN EP take
    the defaults only when left out), clip only when finite."""
    p = params(node, drop=("activations", "activation_alpha", "activation_beta", "clip"))
    names = [_RNN_ACTIVATIONS[c] for c in node.attrs["activations"]]
    dirs = 2 if p["direction"] == "bidirectional" else 1
    if names != _DEFAULTS[node.op_type] * dirs:
        p["activations"] = names
        alphas = [a for n, a in zip(names, node.attrs["activation_alpha"]) if _TAKES.get(n, 0) >= 1]
        betas = [b for n, b in zip(names, node.attrs["activation_beta"]) if _TAKES.get(n, 0) >= 2]
        if alphas:
            p["activation_alpha"] = alphas
        if betas:
            p["activation_beta"] = betas
    if not math.isinf(node.attrs["clip"]):
        p["clip"] = float(node.attrs["clip"])
    x.add_node(node.op_type, ins, outs, node.name, **p)


def _const_inputs(*names, shape=()):
    """Parameters that ONNX takes as int64 constant inputs after the data (TopK's k, CumSum's axis,
    Trilu's k): the rest stay attributes."""
    def rule(x, node, ins, outs):
        p = params(node)
        extra = [x.const(f"{node.name}/{n}", np.array(p.pop(n), np.int64).reshape(shape)) for n in names]
        x.add_node(node.op_type, [ins[0], *extra, *ins[1:]], outs, node.name, **p)
    return rule


def _onehot(x, node, ins, outs) -> None:
    """OneHot(indices, depth, values): depth is the output's size along the axis."""
    depth = x.graph.tensor(node.outputs[0]).shape[node.attrs["axis"]]
    x.add_node("OneHot", [ins[0], x.const(f"{node.name}/depth", np.int64(depth)), ins[1]], outs, node.name,
               axis=node.attrs["axis"])


def _cast(x, node, ins, outs) -> None:
    x.add_node("Cast", ins, outs, node.name, to=helper.np_dtype_to_tensor_dtype(x.graph.tensor(node.outputs[0]).dtype))


_REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
               "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")

RULES = {
    "Gemm": _renamed(trans_a="transA", trans_b="transB"),
    "ConvTranspose": _conv_transpose,
    "Reshape": _shape_input,
    "Expand": _shape_input,
    "Transpose": _transpose,
    "Slice": _slice,
    "Split": _split,
    "Pad": _pad,
    "Tile": _tile,
    "Clip": _clip,
    "Softmax": _softmax,
    "LogSoftmax": _softmax,
    "Resize": _resize,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "LpPool": _pool,
    "Cast": _cast,
    "TopK": _const_inputs("k", shape=(1,)),
    "CumSum": _const_inputs("axis"),
    "Trilu": _const_inputs("k"),
    "OneHot": _onehot,
    "ArgMax": _arg,
    "ArgMin": _arg,
    "RNN": _recurrent,
    "GRU": _recurrent,
    "LSTM": _recurrent,
    **{op: _reduce for op in _REDUCTIONS},
}
