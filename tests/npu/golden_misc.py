"""NumPy golden model of the npu's movement, pooling, reduction, normalisation and remaining
elementwise kernels (docs/npu.md (N20)-(N33)), used only by tests: the runtime must equal it exactly.
Every parameter is derived here from the encodings and ONNX attributes (tests/npu/golden.py says
why). Integer arithmetic throughout; large intermediates use Python ints (object arrays) so nothing
can overflow here."""

import math

import numpy as np

from .golden import check_attrs, dequantize, interpolate, qmax, quantize_input, requantize, requantize_out, scale, zp

EXP_BITS, RECIP_BITS, LOG_BITS = 23, 62, 20  # (N27), (N28)
MEAN_BITS, RSQRT_BITS_MAX = 8, 32            # (N29)
RESIZE_FRAC_BITS = 20                        # (N23)
SQRT_BITS = 16                               # (N33)


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


# ---- (N24) / (N25) pooling ---------------------------------------------------------------------

def _windows(x_shape, y_shape, attrs):
    """Yields (output index, input index tuple (spatial)) per window, the taps inside the input and
    the AveragePool count."""
    r = len(x_shape) - 2
    k, st, dl, pads = attrs["kernel_shape"], attrs["strides"], attrs["dilations"], attrs["pads"]
    incl = int(attrs.get("count_include_pad", 0))
    for o in np.ndindex(*y_shape[2:]):
        taps, count = [], 1
        per_dim = []
        for d in range(r):
            first = o[d] * st[d] - pads[d]
            idxs = [first + t * dl[d] for t in range(k[d])]
            inside = [i for i in idxs if 0 <= i < x_shape[2 + d]]
            c = sum(1 for i in idxs if -pads[d] <= i < x_shape[2 + d] + pads[r + d]) if incl else len(inside)
            count *= c
            per_dim.append(inside)
        for t in np.ndindex(*[len(p) for p in per_dim]):
            taps.append(tuple(per_dim[d][t[d]] for d in range(r)))
        yield o, taps, count


def max_pool(x, ex, ey, y_shape, attrs):
    """(N24): the max code of the taps inside the input (none: code 0), re-encoded."""
    y = np.zeros(y_shape, np.int64)
    empty = []
    for o, taps, _ in _windows(x.shape, y_shape, check_attrs(attrs)):
        if not taps:
            empty.append(o)
            continue
        y[(slice(None), slice(None)) + o] = np.stack([x[(slice(None), slice(None)) + t] for t in taps]).max(axis=0)
    y = recode(y, ex, ey)
    for o in empty:
        y[(slice(None), slice(None)) + o] = 0
    return y


def average_pool(x, ex, ey, y_shape, attrs):
    """(N25): the sum of q - zp_x over the taps, requantized by s_x / (s_y c) for the window's count c."""
    y = np.zeros(y_shape, np.int64)
    v = x.astype(np.int64) - zp(ex)
    for o, taps, count in _windows(x.shape, y_shape, check_attrs(attrs)):
        sel = (slice(None), slice(None)) + o
        if count == 0:
            y[sel] = min(max(zp(ey), 0), qmax(ey))
            continue
        acc = sum((v[(slice(None), slice(None)) + t] for t in taps), np.zeros(y_shape[:2], np.int64))
        y[sel] = requantize_out(acc, scale(ex) / (scale(ey) * count), ey)
    return y


def global_pool(x, ex, ey, kind):
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1).astype(np.int64)
    if kind == "max":
        return recode(flat.max(axis=2), ex, ey)
    return requantize_out((flat - zp(ex)).sum(axis=2), scale(ex) / (scale(ey) * flat.shape[2]), ey)


# ---- (N24)-(N26) reductions --------------------------------------------------------------------

def reduce(x, ex, ey, op, axes):
    axes = tuple(axes)
    if op in ("ReduceMax", "ReduceMin"):
        y = x.max(axis=axes) if op == "ReduceMax" else x.min(axis=axes)
        return recode(y.astype(np.int64), ex, ey)
    count = int(np.prod([x.shape[a] for a in axes])) if op == "ReduceMean" else 1
    return requantize_out((x.astype(np.int64) - zp(ex)).sum(axis=axes), scale(ex) / (scale(ey) * count), ey)


def arg(x, axis, select_last, is_max):
    x = x.astype(np.int64)
    if select_last:
        flipped = np.flip(x, axis=axis)
        i = np.argmax(flipped, axis=axis) if is_max else np.argmin(flipped, axis=axis)
        return x.shape[axis] - 1 - i
    return np.argmax(x, axis=axis) if is_max else np.argmin(x, axis=axis)


# ---- (N27) / (N28) Softmax, LogSoftmax ---------------------------------------------------------

def exp_table(ex) -> np.ndarray:
    """(N27): E(d) = round(2^23 exp(-s_x d)): 256 entries for an 8-bit input, knots at d = 64k,
    k = 0..1024, for a 16-bit input."""
    d = np.arange(256, dtype=np.float64) if ex.bitwidth <= 8 else np.arange(1025, dtype=np.float64) * 64
    return np.round(np.exp(-scale(ex) * d) * 2.0 ** EXP_BITS).astype(np.int64)


def exp_of(d, ex):
    table = exp_table(ex)
    return table[d] if ex.bitwidth <= 8 else interpolate(table, d)


def log2_fixed(s: int, frac: int) -> int:
    """(N28): integer part from the bit length, fraction bits by squaring the Q30 mantissa."""
    b = s.bit_length()
    x = s >> (b - 31) if b > 31 else s << (31 - b)
    f = 0
    for _ in range(frac):
        x = (x * x) >> 30
        f <<= 1
        if x >= 1 << 31:
            f |= 1
            x >>= 1
    return ((b - 1) << frac) + f


def softmax(x, ex, ey, axis, log=False):
    """(N27) / (N28) along `axis` (rows: move it last)."""
    xm = np.moveaxis(x.astype(np.int64), axis, -1)
    rows = xm.reshape(-1, xm.shape[-1])
    out = np.zeros_like(rows)
    for i, row in enumerate(rows):
        d = row.max() - row
        e = exp_of(d, ex)
        total = int(e.sum())
        if not log:
            inv = ((1 << RECIP_BITS) + total // 2) // total
            out[i] = requantize_out(e.astype(object) * inv, 1.0 / (scale(ey) * 2.0 ** RECIP_BITS), ey)
        else:
            lg = log2_fixed(total, LOG_BITS) - (EXP_BITS << LOG_BITS)
            z = -requantize(d, scale(ex) * 2.0 ** LOG_BITS / math.log(2.0)) - lg
            out[i] = requantize_out(z, math.log(2.0) / (scale(ey) * 2.0 ** LOG_BITS), ey)
    return np.moveaxis(out.reshape(xm.shape), -1, axis)


# ---- (N29) LayerNormalization, InstanceNormalization -------------------------------------------

def norm_rows(rows, ex, ey, g, beta, sg, eps):
    """rows: [R, n] codes; g: [R, n] integer gamma - zp_g; beta: [R, n] real biases; sg: gamma's
    scale."""
    n = rows.shape[1]
    big_r = min(RSQRT_BITS_MAX, max(0, math.ceil(math.log2(sg * math.sqrt(n) / scale(ey))) + 10))
    big_e = max(1, round(eps * n * 4.0 ** MEAN_BITS / (scale(ex) ** 2)))
    real = sg * math.sqrt(n) / (2.0 ** big_r * scale(ey))
    units = 2.0 ** big_r / (sg * math.sqrt(n))
    k = MEAN_BITS
    out = np.zeros(rows.shape, np.int64)
    for i, row in enumerate(rows):
        v = [int(q) - zp(ex) for q in row]
        mean = (2 * (sum(v) << k) + n) // (2 * n)
        d = [(vi << k) - mean for vi in v]
        w = sum(di * di for di in d) + big_e
        e = (w.bit_length() - 29) >> 1
        mm = w >> (2 * e) if e >= 0 else w << (-2 * e)
        r = math.isqrt((1 << 90) // mm)
        sh = 45 + e - big_r
        acc = []
        for j, di in enumerate(d):
            t = di * int(g[i][j]) * r
            u = (t + (1 << (sh - 1))) >> sh if sh > 0 else t << -sh
            b = int(max(-2.0 ** 62, min(2.0 ** 62, round(float(beta[i][j]) * units))))
            acc.append(u + b)
        out[i] = requantize_out(np.array(acc, dtype=object), real, ey)
    return out


def _beta(beta, count):
    return np.zeros(count) if beta is None else dequantize(beta.const, beta.encoding).astype(np.float64)


def layer_norm(x, ex, ey, gamma, attrs, beta=None):
    """gamma, beta: the converted constants (.const, .encoding); beta may be None."""
    a = check_attrs(attrs)
    shape = x.shape
    axis = int(a.get("axis", -1)) % len(shape)
    n = int(np.prod(shape[axis:]))
    rows = x.reshape(-1, n)
    g = np.broadcast_to(np.asarray(gamma.const).reshape(-1).astype(np.int64) - zp(gamma.encoding), rows.shape)
    b = np.broadcast_to(_beta(beta, n), rows.shape)
    return norm_rows(rows, ex, ey, g, b, scale(gamma.encoding), float(a.get("epsilon", 1e-5))).reshape(shape)


def instance_norm(x, ex, ey, gamma, beta, attrs):
    a = check_attrs(attrs)
    shape = x.shape
    c = shape[1]
    rows = x.reshape(shape[0] * c, -1)
    gc = np.tile(np.asarray(gamma.const).reshape(-1).astype(np.int64) - zp(gamma.encoding), shape[0])
    bc = np.tile(_beta(beta, c), shape[0])
    g = np.repeat(gc[:, None], rows.shape[1], axis=1)
    b = np.repeat(bc[:, None], rows.shape[1], axis=1)
    return norm_rows(rows, ex, ey, g, b, scale(gamma.encoding), float(a.get("epsilon", 1e-5))).reshape(shape)


# ---- (N30)-(N33) elementwise -------------------------------------------------------------------

def div(a, b, ea, eb, ey):
    """(N30)."""
    va = (np.asarray(a, np.int64) - zp(ea)).astype(object)
    vb = (np.asarray(b, np.int64) - zp(eb)).astype(object)
    va, vb = np.broadcast_arrays(va, vb)
    k = scale(ea) / (scale(eb) * scale(ey))
    dsh = max(0, min(44, math.ceil(math.log2(k)) + 6))
    out = np.zeros(va.shape, np.int64)
    for i in np.ndindex(va.shape):
        na, nb = int(va[i]), int(vb[i])
        if nb == 0:
            out[i] = qmax(ey) if na > 0 else (0 if na < 0 else min(max(zp(ey), 0), qmax(ey)))
            continue
        n = na << dsh
        if nb < 0:
            n, nb = -n, -nb
        q = (2 * n + nb) // (2 * nb)
        out[i] = int(requantize_out(q, k / 2.0 ** dsh, ey))
    return out


def min_max(a, b, ea, eb, ey, is_max):
    """(N31)."""
    ra = requantize_out(np.asarray(a, np.int64) - zp(ea), scale(ea) / scale(ey), ey)
    rb = requantize_out(np.asarray(b, np.int64) - zp(eb), scale(eb) / scale(ey), ey)
    return np.maximum(ra, rb) if is_max else np.minimum(ra, rb)


def where(c, a, b, ea, eb, ey):
    """(N31)."""
    ra = requantize_out(np.asarray(a, np.int64) - zp(ea), scale(ea) / scale(ey), ey)
    rb = requantize_out(np.asarray(b, np.int64) - zp(eb), scale(eb) / scale(ey), ey)
    return np.where(c, ra, rb)


def prelu(x, slope, ex, es, ey):
    """(N32)."""
    v = x.astype(np.int64) - zp(ex)
    w = slope.astype(np.int64) - zp(es)
    v, w = np.broadcast_arrays(v, w)
    return np.where(v >= 0, requantize_out(v, scale(ex) / scale(ey), ey),
                    requantize_out(v * w, scale(ex) * scale(es) / scale(ey), ey))


def pow_(x, ex, ey, exponent: float):
    """(N33): exponent 2 (v², s_x² / s_y), 1 (v, s_x / s_y) or 0.5 (isqrt(v · 2^32), √s_x / (s_y 2^16))."""
    v = x.astype(np.int64) - zp(ex)
    if exponent == 2.0:
        return requantize_out(v * v, scale(ex) ** 2 / scale(ey), ey)
    if exponent == 1.0:
        return requantize_out(v, scale(ex) / scale(ey), ey)
    assert exponent == 0.5
    acc = np.array([math.isqrt(int(t) << 32) if t > 0 else 0 for t in v.reshape(-1)], object).reshape(v.shape)
    return requantize_out(acc, math.sqrt(scale(ex)) / (scale(ey) * 2.0 ** SQRT_BITS), ey)
