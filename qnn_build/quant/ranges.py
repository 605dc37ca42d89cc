"""Range algorithms: from calibration statistics (min, max, histogram) to the range to encode.
Equations: docs/quantization.md (10)."""

import numpy as np

from ..errors import QnnBuildError
from ..options import OPTIONS
from .encoding import float32_scales

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


def _mse_range(lo, hi, hist, bits, steps=64):
    """Search shrunken ranges [lo * a, hi * b] over a grid of a, b in (0, 1] for the least error (10);
    the first least error in (a, b) order wins. One row of the grid (every b for one a) at a time.
    The bins are narrower than a quantization step, so rounding error shows at the bin centres;
    adding scale²/12 on top would count it twice and over-clip."""
    centres, counts = _bin_centres(lo, hi, len(hist)), hist.astype(np.float64)
    fractions = np.linspace(1.0, 0.05, steps)
    his = hi * (fractions if hi > 0 else np.ones(1))
    if 2 ** bits <= len(hist):
        sums = [np.concatenate([np.zeros(1), np.cumsum(counts * centres ** p)]) for p in range(3)]
        errors = lambda a: _cell_errors(centres, sums, lo * a, his, bits)  # noqa: E731
    else:
        nz = hist > 0
        errors = lambda a: _bin_errors(centres[nz], counts[nz], lo * a, his, bits)  # noqa: E731
    best = (np.inf, lo, hi)
    for a in fractions if lo < 0 else [1.0]:
        e = errors(a)
        k = int(np.argmin(e))
        if e[k] < best[0]:
            best = (float(e[k]), lo * a, float(his[k]))
    return best[1], best[2]


def _grid_encodings(lo, his, bits):
    """(3)-(5) for [lo, h], every h of `his`: scales (float32 values) and offsets, as columns."""
    levels = 2 ** bits - 1
    lo_z, hi_z = min(float(lo), 0.0), np.maximum(his, 0.0)
    scale = float32_scales(np.where(hi_z > lo_z, (hi_z - lo_z) / levels, 1.0)).astype(np.float64)[:, None]
    return scale, np.round(lo_z / scale)


def _bin_errors(centres, counts, lo, his, bits):
    """(10) of [lo, h] for every h of `his`, bin by bin (where there are fewer bins than codes)."""
    scale, offset = _grid_encodings(lo, his, bits)
    q = np.clip(np.round(centres[None, :] / scale) - offset, 0, 2 ** bits - 1)
    return np.sum(counts * (centres - scale * (q + offset)) ** 2, axis=1)


def _cell_errors(centres, sums, lo, his, bits):
    """(10) of [lo, h] for every h of `his`, code by code (where there are more bins than codes): the
    bins that round to code k form one cell, and its error is Σn·x² − 2·d·Σn·x + d²·Σn with d its
    dequantized value; sums: Σn, Σn·x, Σn·x² over the first j bins, j = 0..len(centres)."""
    scale, offset = _grid_encodings(lo, his, bits)
    codes = np.arange(2 ** bits, dtype=np.float64)[None, :]
    # x rounds to code k or above from t = (k + offset − ½)·scale on; code 0 takes everything below
    starts = _count_below(centres, (codes[:, 1:] + offset - 0.5) * scale)
    bounds = np.concatenate([np.zeros((len(his), 1), np.int64), starts,
                             np.full((len(his), 1), len(centres), np.int64)], axis=1)
    n, s1, s2 = (np.diff(p[bounds], axis=1) for p in sums)
    deq = scale * (codes + offset)
    return np.sum(s2 - 2 * deq * s1 + deq ** 2 * n, axis=1)


def _count_below(centres, t):
    """How many of the evenly spaced, increasing `centres` are below each t (searchsorted's left side):
    estimated from the spacing, then set right by comparing with the centres on either side."""
    n = len(centres)
    width = (centres[-1] - centres[0]) / (n - 1)
    idx = np.clip(np.ceil((t - centres[0]) / width), 0, n).astype(np.int64)
    padded = np.concatenate([[-np.inf], centres, [np.inf]])       # padded[i + 1] = centres[i]
    for _ in range(2):
        idx += padded[idx + 1] < t                                # the centre at idx is still below t
        idx -= padded[idx] >= t                                   # the centre before idx is not
    return idx


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
