"""Summary statistics of timings, as profile.json and the native runner (runner/main.cpp) give them."""

import math


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the closest ranks, as numpy's
    default; the native runner computes it the same way."""
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def stats(values: list[float]) -> dict[str, float]:
    """mean, p50, p90, min, max in microseconds (3 decimals, nanoseconds)."""
    if not values:
        return {}
    out = {"mean": sum(values) / len(values), "p50": percentile(values, 50), "p90": percentile(values, 90),
           "min": min(values), "max": max(values)}
    return {k: round(v, 3) for k, v in out.items()}
