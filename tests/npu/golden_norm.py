"""NumPy golden model of the npu's Softmax, LogSoftmax, LayerNormalization and InstanceNormalization
(docs/npu.md (N27)-(N29)), used only by tests: the runtime must equal it exactly. Every parameter is
derived here from the encodings and ONNX attributes (tests/npu/golden.py says why). Integer
arithmetic throughout; large intermediates use Python ints (object arrays) so nothing can overflow
here."""

import math

import numpy as np

from .golden import check_attrs, dequantize, interpolate, requantize, requantize_out, scale, zp

EXP_BITS, RECIP_BITS, LOG_BITS = 23, 62, 20  # (N27), (N28)
MEAN_BITS, RSQRT_BITS_MAX = 8, 32            # (N29)


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
