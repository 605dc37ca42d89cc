"""NumPy golden model of the npu's pooling and reductions (docs/npu.md (N24)-(N26)), used only by
tests: the runtime must equal it exactly. Every parameter is derived here from the encodings and ONNX
attributes (tests/npu/golden.py says why). Integer arithmetic throughout; large intermediates use
Python ints (object arrays) so nothing can overflow here."""

import numpy as np

from .golden import check_attrs, qmax, requantize_out, scale, zp
from .golden_movement import recode


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
