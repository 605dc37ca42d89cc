"""NumPy golden model of the npu's re-encoding, Concat, Pad and linear Resize (docs/npu.md
(N20)-(N23)), used only by tests: the runtime must equal it exactly. Every parameter is derived here
from the encodings and ONNX attributes (tests/npu/golden.py says why). Integer arithmetic throughout;
large intermediates use Python ints (object arrays) so nothing can overflow here."""

import numpy as np

from .golden import check_attrs, dequantize, quantize_input, requantize_out, scale, zp

RESIZE_FRAC_BITS = 20  # (N23)


def value_code(value: float, ey) -> int:
    """A real constant as a code of the output's encoding, by (2)."""
    return int(quantize_input(np.array([value], np.float32), ey)[0])


# ---- (N20) re-encoding, (N21) Concat, (N22) Pad ------------------------------------------------

def scale_index(shape, enc) -> np.ndarray:
    """Per element of a constant: which of its encoding's scales it uses ([channel][block])."""
    idx = np.zeros(shape, np.int64)
    blocks = 1
    if enc.block_axis >= 0:
        blocks = shape[enc.block_axis] // enc.block_size
        view = [1] * len(shape)
        view[enc.block_axis] = shape[enc.block_axis]
        idx = idx + (np.arange(shape[enc.block_axis]) // enc.block_size).reshape(view)
    if enc.axis >= 0:
        view = [1] * len(shape)
        view[enc.axis] = shape[enc.axis]
        idx = idx + np.arange(shape[enc.axis]).reshape(view) * blocks
    return np.broadcast_to(idx, shape)


def reencode(q, ex, ey):
    """(N20): r(q) = clamp(requantize(q - zp_x[j], s_x[j] / s_y) + zp_y) with j the element's scale."""
    q = np.asarray(q, np.int64)
    if len(ex.scales) == 1:
        return requantize_out(q + int(ex.offsets[0]), scale(ex) / scale(ey), ey)
    idx = scale_index(q.shape, ex)
    out = np.zeros(q.shape, np.int64)
    for j in range(len(ex.scales)):
        sel = idx == j
        out[sel] = requantize_out(q[sel] + int(ex.offsets[j]), scale(ex, j) / scale(ey), ey)
    return out


def same_encoding(ea, eb) -> bool:
    return (ea.bitwidth == eb.bitwidth and ea.is_signed == eb.is_signed and np.array_equal(ea.scales, eb.scales)
            and np.array_equal(ea.offsets, eb.offsets))


def recode(q, ex, ey):
    """(N20)/(N21): q re-encoded where its encoding differs from the output's, else a copy."""
    return np.asarray(q, np.int64) if same_encoding(ex, ey) else reencode(q, ex, ey)


def concat(arrays, encs, ey, axis):
    """(N21)."""
    return np.concatenate([recode(a, e, ey) for a, e in zip(arrays, encs)], axis=axis)


def pad_constant(x, ex, ey, pads, value=None):
    """(N22): constant mode; `value` the converted pad constant (a quantized parameter, or None for
    0), dequantized by (1) and quantized by (2) into the output's encoding."""
    real = float(dequantize(value.const, value.encoding)[0]) if value is not None else 0.0
    x = recode(x, ex, ey)
    r = x.ndim
    return np.pad(x, [(pads[d], pads[r + d]) for d in range(r)], constant_values=value_code(real, ey))


# ---- (N23) Resize linear -----------------------------------------------------------------------

def source_coordinate(mode, o, in_len, length, scale_, roi0, roi1):
    """The ONNX Resize coordinate transformation of output index o, in float32 (as the cpu kernel);
    length is the spec's length_resized (scale · in_len, unrounded)."""
    f = np.float32
    x, n, ln, sc = f(o), f(in_len), f(length), f(scale_)
    if mode == "half_pixel":
        return (x + f(0.5)) / sc - f(0.5)
    if mode == "pytorch_half_pixel":
        return (x + f(0.5)) / sc - f(0.5) if ln > f(1) else f(0)
    if mode == "align_corners":
        return f(0) if ln == f(1) else x * (n - f(1)) / (ln - f(1))
    if mode == "asymmetric":
        return x / sc
    if mode == "tf_crop_and_resize":
        if ln == f(1):
            return f(0.5 * float(f(roi0) + f(roi1)) * float(n - f(1)))
        return f(roi0) * (n - f(1)) + (x * (f(roi1) - f(roi0)) * (n - f(1))) / (ln - f(1))
    raise NotImplementedError(mode)


def axis_taps(mode, in_len, out_len, scale_, roi0, roi1):
    """(N23) per output coordinate of one axis: taps i0, i1, the Q20 weight of i1, outside."""
    length = float(np.float32(scale_)) * in_len
    taps = []
    for o in range(out_len):
        x = source_coordinate(mode, o, in_len, length, scale_, roi0, roi1)
        outside = mode == "tf_crop_and_resize" and (x < 0 or x > in_len - 1)
        xc = min(max(x, np.float32(0)), np.float32(in_len - 1))
        i0 = min(int(xc), in_len - 1)
        w1 = int(np.round(float(xc - np.float32(i0)) * (1 << RESIZE_FRAC_BITS)))
        taps.append((i0, min(i0 + 1, in_len - 1), w1, outside))
    return taps


def resize_linear(x, ex, ey, attrs, out_shape):
    """(N23): every axis resized (an axis of scale 1 has weight 0 on its second tap, so it changes
    nothing); a combination's weight starts at 2^F and is multiplied by each axis's weight in axis
    order, rounded to Q(F); acc = Σ w (q - zp_x), requantized by s_x / (s_y 2^F)."""
    a = check_attrs(attrs)
    mode = a.get("coordinate_transformation_mode", "half_pixel")
    rank = x.ndim
    roi = [float(v) for v in a.get("roi") or [0.0] * rank + [1.0] * rank]
    f = RESIZE_FRAC_BITS
    one, half = 1 << f, 1 << (f - 1)
    v = x.astype(np.int64) - zp(ex)
    grids = np.meshgrid(*[np.arange(n) for n in out_shape], indexing="ij")
    tables = []
    for d in range(rank):
        taps = axis_taps(mode, x.shape[d], out_shape[d], a["scales"][d], roi[d], roi[rank + d])
        tables.append([np.array([t[k] for t in taps]) for k in range(4)])
    acc = np.zeros(out_shape, dtype=object)
    outside = np.zeros(out_shape, bool)
    for combo in range(1 << rank):
        idx, w = [], np.full(out_shape, one, dtype=object)
        for d in range(rank):
            i0, i1, w1, out = tables[d]
            second = (combo >> d) & 1
            idx.append((i1 if second else i0)[grids[d]])
            w = (w * (w1 if second else one - w1)[grids[d]].astype(object) + half) >> f
            outside |= out[grids[d]].astype(bool)
        acc = acc + w * v[tuple(idx)].astype(object)
    y = requantize_out(acc, scale(ex) / (scale(ey) * (1 << f)), ey)
    return np.where(outside, value_code(float(a.get("extrapolation_value", 0.0)), ey), y)
