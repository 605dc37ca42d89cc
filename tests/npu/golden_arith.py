"""NumPy golden model of the npu's Div, Min, Max, Where, PRelu and Pow (docs/npu.md (N30)-(N33)),
used only by tests: the runtime must equal it exactly. Every parameter is derived here from the
encodings and ONNX attributes (tests/npu/golden.py says why). Integer arithmetic throughout; large
intermediates use Python ints (object arrays) so nothing can overflow here."""

import math

import numpy as np

from .golden import qmax, requantize_out, scale, zp

SQRT_BITS = 16  # (N33)


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
