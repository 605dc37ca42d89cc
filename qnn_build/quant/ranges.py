"""Range algorithms: from calibration statistics (min, max, histogram) to the range to encode.
Equations: docs/quantization.md (10)."""

import numpy as np

from ..errors import QnnBuildError
from ..options import OPTIONS
from .encoding import activation_encoding

RANGE_ALGORITHMS = OPTIONS["act_range"].choices


def choose_range(lo: float, hi: float, hist: np.ndarray, bits: int, algorithm: str,
                 percentile: float = 99.99) -> tuple[float, float]:
    if algorithm not in RANGE_ALGORITHMS:
        raise QnnBuildError(f"unknown range algorithm '{algorithm}' (one of {', '.join(RANGE_ALGORITHMS)})")
    if algorithm == "search":  # range_search.py picks the ranges; it never reaches here
        raise QnnBuildError("act_range search runs the model over the calibration samples: give the "
                            "calibration data (--calibration), not only statistics")
    if algorithm == "minmax" or hist is None or hist.sum() == 0 or hi <= lo:
        return lo, hi
    if algorithm == "percentile":
        return _percentile_range(lo, hi, hist, percentile)
    return _mse_range(lo, hi, hist, bits)


def _bin_centres(lo, hi, n):
    edges = np.linspace(lo, hi, n + 1)
    return (edges[:-1] + edges[1:]) / 2


def _percentile_range(lo, hi, hist, p):
    cdf = np.cumsum(hist) / hist.sum()
    edges = np.linspace(lo, hi, len(hist) + 1)
    tail = (100.0 - p) / 100.0
    lo_p = edges[np.searchsorted(cdf, tail, side="left")]
    hi_p = edges[min(np.searchsorted(cdf, 1.0 - tail, side="left") + 1, len(hist))]
    return float(lo_p), float(hi_p)


def quantization_error(centres: np.ndarray, counts: np.ndarray, lo: float, hi: float, bits: int) -> float:
    """Equation (10): expected squared error of encoding the histogram with [lo, hi]."""
    enc = activation_encoding(lo, hi, bits)
    scale, offset = float(enc.scales[0]), int(enc.offsets[0])
    q = np.clip(np.round(centres / scale) - offset, 0, 2 ** bits - 1)
    deq = scale * (q + offset)
    # The bins are narrower than a quantization step, so rounding error shows at the bin centres;
    # adding scale^2/12 on top would count it twice and over-clip.
    return float(np.sum(counts * (centres - deq) ** 2))


def _mse_range(lo, hi, hist, bits, steps=64):
    """Search shrunken ranges [lo * a, hi * b] over a grid of a, b in (0, 1] for the least error."""
    centres = _bin_centres(lo, hi, len(hist))
    nz = hist > 0
    centres, counts = centres[nz], hist[nz].astype(np.float64)
    best = (quantization_error(centres, counts, lo, hi, bits), lo, hi)
    fractions = np.linspace(1.0, 0.05, steps)
    for a in fractions if lo < 0 else [1.0]:
        for b in fractions if hi > 0 else [1.0]:
            cand_lo, cand_hi = lo * a, hi * b
            e = quantization_error(centres, counts, cand_lo, cand_hi, bits)
            if e < best[0]:
                best = (e, cand_lo, cand_hi)
    return best[1], best[2]


def weight_absmax(w: np.ndarray, axis: int, bits: int, algorithm: str, block_axis: int = -1,
                  block_size: int = 0) -> np.ndarray:
    """Per-channel (or per-block) |max| of a weight; with `mse`, each shrunk to the least error."""
    w = np.asarray(w, np.float32)
    groups = _weight_groups(w, axis, block_axis, block_size)  # [groups, elements]
    absmax = np.abs(groups).max(axis=1)
    if algorithm != "mse":
        return absmax
    qmax = 2 ** (bits - 1) - 1
    out = absmax.copy()
    for g in range(groups.shape[0]):
        if absmax[g] == 0:
            continue
        vals = groups[g]
        best = None
        for f in np.linspace(1.0, 0.3, 36):
            s = absmax[g] * f / qmax
            err = float(np.sum((vals - s * np.clip(np.round(vals / s), -qmax, qmax)) ** 2))
            if best is None or err < best[0]:
                best = (err, absmax[g] * f)
        out[g] = best[1]
    return out


def _weight_groups(w, axis, block_axis, block_size):
    """Rows of `w` that share one scale, in the scale layout [channel][block]."""
    if axis < 0 and block_axis < 0:
        return w.reshape(1, -1)
    if block_axis < 0:
        return np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    moved = np.moveaxis(w, [axis, block_axis], [0, 1])  # [C, K, rest...]
    c, k = moved.shape[0], moved.shape[1]
    return moved.reshape(c, k // block_size, block_size, -1).reshape(c * (k // block_size), -1)
