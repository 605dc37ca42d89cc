"""A small NumPy implementation of the npu's integer semantics (docs/npu.md), used only by tests:
the runtime must equal it exactly (0 LSB). It reads the same convert-time parameters the kernels
read (npu_mult, npu_shift, npu_lut, ...) from the converted graph."""

import numpy as np

from qnn_build.npu.fixedpoint import requantize


def zp(enc) -> int:
    return -int(enc.offsets[0])


def qmax(enc) -> int:
    return (1 << enc.bitwidth) - 1


def add_sub(a, b, ea, eb, ey, params, subtract=False):
    """(N4)."""
    left = params["npu_left_shift"]
    (ma, mb, my), (sa, sb, sy) = params["npu_mult"], params["npu_shift"]
    va = (a.astype(np.int64) - zp(ea)) << left
    vb = (b.astype(np.int64) - zp(eb)) << left
    ra, rb = requantize(va, ma, sa), requantize(vb, mb, sb)
    acc = requantize(ra - rb if subtract else ra + rb, my, sy)
    return np.clip(acc + zp(ey), 0, qmax(ey))


def mul(a, b, ea, eb, ey, params):
    """(N5)."""
    prod = (a.astype(np.int64) - zp(ea)) * (b.astype(np.int64) - zp(eb))
    return np.clip(requantize(prod, params["npu_mult"][0], params["npu_shift"][0]) + zp(ey), 0, qmax(ey))


def lut(x, ex, ey, params):
    """(N6) / (N7)."""
    table = np.asarray(params["npu_lut"], np.int64)
    if ex.bitwidth <= 8:
        return table[x.astype(np.int64)]
    q = x.astype(np.int64)
    k, r = q >> 6, q & 63
    lo, hi = table[k], table[k + 1]
    return np.clip(lo + (((hi - lo) * r + 32) >> 6), 0, qmax(ey))


def quantize_input(x, enc):
    """The host's quantization of a float input, (2)."""
    q = np.round(x.astype(np.float32) / np.float32(enc.scales[0])) - enc.offsets[0]
    return np.clip(q, 0, qmax(enc)).astype(np.int64)
