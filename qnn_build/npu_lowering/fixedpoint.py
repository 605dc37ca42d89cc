"""The requantization primitive's parameters and reference arithmetic: docs/npu.md (N1)-(N3)."""

import math

import numpy as np

from ..errors import QnnBuildError


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(mult, shift) with real = mult * 2^-(31 + shift), mult in [2^30, 2^31): (N1)."""
    real = float(real)
    if real < 0 or not math.isfinite(real):
        raise QnnBuildError(f"requantization multiplier {real} is not a finite non-negative number")
    if real < 2.0 ** -62:
        return 0, 0
    if real >= 2.0 ** 30:
        raise QnnBuildError(f"requantization multiplier {real:.3g} is too large for the npu (scales out of range)")
    m, e = math.frexp(real)  # real = m * 2^e, m in [0.5, 1)
    mult = int(round(m * (1 << 31)))
    if mult == 1 << 31:
        mult //= 2
        e += 1
    return mult, -e


def requantize(acc, mult: int, shift: int):
    """(N2) on Python ints or int64 arrays (object arithmetic: exact, no overflow)."""
    t = 31 + shift
    a = np.asarray(acc, dtype=object)
    prod = a * int(mult)
    if t <= 0:
        out = prod * (1 << -t)
    else:
        out = (prod + (1 << (t - 1))) >> t
    return np.asarray(out, dtype=np.int64)


def requantize_clamped(acc, mult: int, shift: int, zp: int, bits: int):
    """(N3)."""
    return np.clip(requantize(acc, mult, shift) + zp, 0, (1 << bits) - 1).astype(np.int64)
