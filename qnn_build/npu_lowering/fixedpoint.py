"""The requantization primitive's parameters: docs/npu.md (N1). Its arithmetic, (N2)-(N3), is the
runtime's (npu/requantize.h); the tests hold it to the equations in exact integers."""

import math

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

