"""NumPy golden model of the npu's movement, pooling, reduction, normalisation and remaining
elementwise kernels (docs/npu.md (N20)-(N33)), used only by tests: the runtime must equal it exactly.
It reads the same convert-time parameters the kernels read. Integer arithmetic throughout; large
intermediates use Python ints (object arrays) so nothing can overflow here."""

import math

import numpy as np

from qnn_build.npu.fixedpoint import requantize

from .golden import qmax, zp


def requantize_out(acc, mult, shift, ey):
    """(N3)."""
    return np.clip(requantize(acc, mult, shift) + zp(ey), 0, qmax(ey)).astype(np.int64)


def pairs(params):
    return list(zip(params["npu_mult"], params["npu_shift"]))


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


def reencode(q, ex, ey, mps):
    """(N20): r(q) = clamp(requantize(q - zp_x[j], M_j) + zp_y) with j the element's scale."""
    q = np.asarray(q, np.int64)
    if len(mps) == 1:
        return requantize_out(q + int(ex.offsets[0]), mps[0][0], mps[0][1], ey)
    idx = scale_index(q.shape, ex)
    out = np.zeros(q.shape, np.int64)
    for j, (m, s) in enumerate(mps):
        sel = idx == j
        out[sel] = requantize_out(q[sel] + int(ex.offsets[j]), m, s, ey)
    return out


def same_encoding(ea, eb) -> bool:
    return (ea.bitwidth == eb.bitwidth and ea.is_signed == eb.is_signed and np.array_equal(ea.scales, eb.scales)
            and np.array_equal(ea.offsets, eb.offsets))


def recode_inputs(arrays, encs, ey, params):
    """Each data input re-encoded where its encoding differs from the output's (N20)/(N21)."""
    mps, k, out = pairs(params), 0, []
    for a, e in zip(arrays, encs):
        n = len(e.scales)
        out.append(np.asarray(a, np.int64) if same_encoding(e, ey) else reencode(a, e, ey, mps[k:k + n]))
        k += n
    return out


def concat(arrays, encs, ey, params, axis):
    """(N21)."""
    return np.concatenate(recode_inputs(arrays, encs, ey, params), axis=axis)


def pad_constant(x, ex, ey, params, pads):
    """(N22): constant mode, padding with npu_pad_value."""
    (x,) = recode_inputs([x], [ex], ey, params)
    r = x.ndim
    return np.pad(x, [(pads[d], pads[r + d]) for d in range(r)], constant_values=params["npu_pad_value"])


# ---- (N23) Resize linear -----------------------------------------------------------------------

def resize_linear(x, ex, ey, params, out_shape):
    """Sum over the 2^k tap combinations of the resized axes of weight x (q - zp_x); a combination's
    weight starts at 2^F and is multiplied by each axis's weight in axis order, rounded to Q(F)."""
    f = params["npu_frac_bits"]
    one, half = 1 << f, 1 << (f - 1)
    v = x.astype(np.int64) - zp(ex)
    axes = list(params["npu_axes"])
    tables, pos = {}, 0
    for d in axes:
        n = out_shape[d]
        tables[d] = tuple(np.asarray(params[k][pos:pos + n], np.int64)
                          for k in ("npu_index0", "npu_index1", "npu_weight1", "npu_outside"))
        pos += n
    grids = np.meshgrid(*[np.arange(n) for n in out_shape], indexing="ij")
    acc = np.zeros(out_shape, dtype=object)
    outside = np.zeros(out_shape, bool)
    for combo in range(1 << len(axes)):
        idx = list(grids)
        w = np.full(out_shape, one, dtype=object)
        for bit, d in enumerate(axes):
            i0, i1, w1, out = tables[d]
            o = grids[d]
            second = (combo >> bit) & 1
            idx[d] = (i1 if second else i0)[o]
            wd = (w1 if second else one - w1)[o].astype(object)
            w = (w * wd + half) >> f
            outside |= out[o].astype(bool)
        acc = acc + w * v[tuple(idx)].astype(object)
    y = requantize_out(acc, params["npu_mult"][0], params["npu_shift"][0], ey)
    return np.where(outside, min(max(params.get("npu_extrapolation", 0), 0), qmax(ey)), y)


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


def max_pool(x, ex, ey, params, y_shape, attrs):
    """(N24): the max code of the taps inside the input (none: code 0), re-encoded."""
    y = np.zeros(y_shape, np.int64)
    for o, taps, _ in _windows(x.shape, y_shape, attrs):
        if not taps:
            continue
        vals = np.stack([x[(slice(None), slice(None)) + t] for t in taps]).max(axis=0)
        y[(slice(None), slice(None)) + o] = vals
    if same_encoding(ex, ey):
        return y
    ran = reencode(y, ex, ey, pairs(params))
    empty = [o for o, taps, _ in _windows(x.shape, y_shape, attrs) if not taps]
    for o in empty:
        ran[(slice(None), slice(None)) + o] = 0
    return ran


def average_pool(x, ex, ey, params, y_shape, attrs):
    """(N25): sum of q - zp_x over the taps inside the input, multiplier c - 1 for count c."""
    mps = pairs(params)
    y = np.zeros(y_shape, np.int64)
    v = x.astype(np.int64) - zp(ex)
    for o, taps, count in _windows(x.shape, y_shape, attrs):
        sel = (slice(None), slice(None)) + o
        if count == 0:
            y[sel] = min(max(zp(ey), 0), qmax(ey))
            continue
        acc = sum((v[(slice(None), slice(None)) + t] for t in taps), np.zeros(y_shape[:2], np.int64))
        y[sel] = requantize_out(acc, *mps[count - 1], ey)
    return y


def global_pool(x, ex, ey, params, kind):
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1).astype(np.int64)
    m, s = params["npu_mult"][0], params["npu_shift"][0]
    if kind == "max":
        y = flat.max(axis=2)
        return y if same_encoding(ex, ey) else reencode(y, ex, ey, [(m, s)])
    return requantize_out((flat - zp(ex)).sum(axis=2), m, s, ey)


# ---- (N24)-(N26) reductions --------------------------------------------------------------------

def reduce(x, ex, ey, params, op, axes):
    m, s = params["npu_mult"][0], params["npu_shift"][0]
    axes = tuple(axes)
    if op in ("ReduceMax", "ReduceMin"):
        y = x.max(axis=axes) if op == "ReduceMax" else x.min(axis=axes)
        y = y.astype(np.int64)
        return y if same_encoding(ex, ey) else reencode(y, ex, ey, [(m, s)])
    return requantize_out((x.astype(np.int64) - zp(ex)).sum(axis=axes), m, s, ey)


def arg(x, axis, select_last, is_max):
    x = x.astype(np.int64)
    if select_last:
        flipped = np.flip(x, axis=axis)
        i = np.argmax(flipped, axis=axis) if is_max else np.argmin(flipped, axis=axis)
        return x.shape[axis] - 1 - i
    return np.argmax(x, axis=axis) if is_max else np.argmin(x, axis=axis)


# ---- (N27) / (N28) Softmax, LogSoftmax ---------------------------------------------------------

def exp_of(table, d, bits):
    table = np.asarray(table, np.int64)
    if bits <= 8:
        return table[d]
    k, r = d >> 6, d & 63
    lo, hi = table[k], table[k + 1]
    return lo + (((hi - lo) * r + 32) >> 6)


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


def softmax(x, ex, ey, params, axis, log=False):
    """(N27) / (N28) along `axis` (rows: move it last)."""
    xm = np.moveaxis(x.astype(np.int64), axis, -1)
    rows = xm.reshape(-1, xm.shape[-1])
    out = np.zeros_like(rows)
    mps = pairs(params)
    for i, row in enumerate(rows):
        d = row.max() - row
        e = exp_of(params["npu_exp_lut"], d, ex.bitwidth)
        total = int(e.sum())
        if not log:
            inv = ((1 << params["npu_recip_bits"]) + total // 2) // total
            out[i] = requantize_out(e.astype(object) * inv, *mps[0], ey)
        else:
            lg = log2_fixed(total, params["npu_log_bits"]) - (params["npu_exp_bits"] << params["npu_log_bits"])
            z = -requantize(d, *mps[0]) - lg
            out[i] = requantize_out(z, *mps[1], ey)
    return np.moveaxis(out.reshape(xm.shape), -1, axis)


# ---- (N29) LayerNormalization, InstanceNormalization -------------------------------------------

def norm_rows(rows, ex, ey, g, bias, params):
    """rows: [R, n] codes; g, bias: [R, n] (broadcast) integer gamma - zp_g and B."""
    k, big_r = params["npu_mean_bits"], params["npu_rsqrt_bits"]
    m, s = params["npu_mult"][0], params["npu_shift"][0]
    out = np.zeros(rows.shape, np.int64)
    for i, row in enumerate(rows):
        v = [int(q) - zp(ex) for q in row]
        n = len(v)
        mean = (2 * (sum(v) << k) + n) // (2 * n)
        d = [(vi << k) - mean for vi in v]
        w = sum(di * di for di in d) + params["npu_eps"]
        e = (w.bit_length() - 29) >> 1
        mm = w >> (2 * e) if e >= 0 else w << (-2 * e)
        r = math.isqrt((1 << 90) // mm)
        sh = 45 + e - big_r
        acc = []
        for j, di in enumerate(d):
            t = di * int(g[i][j]) * r
            u = (t + (1 << (sh - 1))) >> sh if sh > 0 else t << -sh
            acc.append(u + int(bias[i][j]))
        out[i] = requantize_out(np.array(acc, dtype=object), m, s, ey)
    return out


def layer_norm(x, ex, ey, gamma_q, eg, params, axis):
    shape = x.shape
    n = int(np.prod(shape[axis:]))
    rows = x.reshape(-1, n)
    g = np.broadcast_to(gamma_q.reshape(-1).astype(np.int64) - zp(eg), rows.shape)
    b = np.broadcast_to(np.asarray(params.get("npu_bias", [0] * n), dtype=object), rows.shape)
    return norm_rows(rows, ex, ey, g, b, params).reshape(shape)


def instance_norm(x, ex, ey, gamma_q, eg, params):
    shape = x.shape
    c = shape[1]
    rows = x.reshape(shape[0] * c, -1)
    gc = np.tile(gamma_q.reshape(-1).astype(np.int64) - zp(eg), shape[0])
    bc = np.tile(np.asarray(params.get("npu_bias", [0] * c), dtype=object), shape[0])
    g = np.repeat(gc[:, None], rows.shape[1], axis=1)
    b = np.repeat(bc[:, None], rows.shape[1], axis=1)
    return norm_rows(rows, ex, ey, g, b, params).reshape(shape)


# ---- (N30)-(N33) elementwise -------------------------------------------------------------------

def div(a, b, ea, eb, ey, params):
    """(N30)."""
    va = (a.astype(np.int64) - zp(ea)).astype(object)
    vb = (b.astype(np.int64) - zp(eb)).astype(object)
    va, vb = np.broadcast_arrays(va, vb)
    m, s, dsh = params["npu_mult"][0], params["npu_shift"][0], params["npu_div_shift"]
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
        out[i] = int(requantize_out(q, m, s, ey))
    return out


def min_max(a, b, ea, eb, ey, params, is_max):
    """(N31)."""
    (ma, sa), (mb, sb) = pairs(params)
    ra = requantize_out(a.astype(np.int64) - zp(ea), ma, sa, ey)
    rb = requantize_out(b.astype(np.int64) - zp(eb), mb, sb, ey)
    return np.maximum(ra, rb) if is_max else np.minimum(ra, rb)


def where(c, a, b, ea, eb, ey, params):
    """(N31)."""
    (ma, sa), (mb, sb) = pairs(params)
    ra = requantize_out(a.astype(np.int64) - zp(ea), ma, sa, ey)
    rb = requantize_out(b.astype(np.int64) - zp(eb), mb, sb, ey)
    return np.where(c, ra, rb)


def prelu(x, slope, ex, es, ey, params):
    """(N32)."""
    (m0, s0), (m1, s1) = pairs(params)
    v = x.astype(np.int64) - zp(ex)
    w = slope.astype(np.int64) - zp(es)
    v, w = np.broadcast_arrays(v, w)
    return np.where(v >= 0, requantize_out(v, m0, s0, ey), requantize_out(v * w, m1, s1, ey))


def pow_(x, ex, ey, params):
    """(N33)."""
    v = x.astype(np.int64) - zp(ex)
    m, s = params["npu_mult"][0], params["npu_shift"][0]
    mode = params["npu_pow"]
    if mode == "square":
        acc = v * v
    elif mode == "identity":
        acc = v
    else:
        acc = np.array([math.isqrt(int(t) << 32) if t > 0 else 0 for t in v.reshape(-1)], np.int64).reshape(v.shape)
    return requantize_out(acc, m, s, ey)
