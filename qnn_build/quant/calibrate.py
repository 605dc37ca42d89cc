"""Calibration statistics: the float model (a session handed in by convert: our cpu backend, every
tensor kept) run over the calibration samples (a stream handed in: data/samples.py).

Per float activation tensor: min, max, a histogram of HIST_BINS bins over [min, max], and the mean
per channel (axis 1) for bias correction. Two streamed passes (min/max, then histograms), one sample
at a time, so memory does not grow with the number of samples (the histogram pass holds up to
HELD_BYTES of values back, to count them in one call). The statistics are their own
artifact (stats.npz): changing a range algorithm, a bitwidth or an override reuses them.
"""

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ..data.npz import save_npz
from ..errors import QnnBuildError
from ..ir.mask_select import fill_values, is_fill
from ..log import progress
from ..ops.kinds import VALUE_KEEPERS

HIST_BINS = 2048
HELD_BYTES = 64 << 20  # the histogram pass counts the values of several samples at once, up to this much


@dataclass
class TensorStats:
    min: float
    max: float
    hist: np.ndarray
    channel_mean: np.ndarray | None


class Stats(dict):
    """tensor name -> TensorStats."""

    def save(self, path) -> None:
        names = sorted(self)
        arrays = {"names": np.array(names), "min": np.array([self[n].min for n in names], np.float64),
                  "max": np.array([self[n].max for n in names], np.float64),
                  "hist": np.stack([self[n].hist for n in names]).astype(np.int64) if names else np.zeros((0, HIST_BINS))}
        for i, n in enumerate(names):
            if self[n].channel_mean is not None:
                arrays[f"mean_{i}"] = self[n].channel_mean
        save_npz(path, arrays)

    @classmethod
    def load(cls, path) -> "Stats":
        try:
            z = np.load(path, allow_pickle=False)
            names = [str(n) for n in z["names"]]
            stats = cls()
            for i, n in enumerate(names):
                mean = z[f"mean_{i}"] if f"mean_{i}" in z.files else None
                stats[n] = TensorStats(float(z["min"][i]), float(z["max"][i]), z["hist"][i], mean)
        except (OSError, KeyError, ValueError) as e:
            raise QnnBuildError(f"{path}: not a calibration statistics file ({e})") from None
        return stats


def masked_tensors(graph) -> frozenset:
    """Tensors that may hold a mask's "never" by design: a Where's output where one value operand is
    a constant holding one (an attention mask's -inf or finfo.min, ir/mask_select.py), and moves of it."""
    out = set()
    for node in graph.nodes:
        if node.op_type == "Where" and any(is_fill(graph.const(n)) for n in node.inputs[1:3]):
            out.add(node.outputs[0])
        elif node.op_type in VALUE_KEEPERS and node.inputs[0] in out:
            out.update(o for o in node.outputs if o)
    return frozenset(out)


def collect_stats(model, count: int, stream: Callable[[], Iterator[dict]], bins: int = HIST_BINS,
                  constants: frozenset = frozenset(), masked: frozenset = frozenset()) -> Stats:
    """Run `model` (a runtime Model with keep_tensors=True) over the samples: two passes. The
    tensors named in `constants` are left out: their values are known (and may be infinite by
    design: the -inf a max-reduction starts from). Those in `masked` may hold a mask's fill (an
    infinity or finfo.min; never NaN): their statistics are of their other values; a fill saturates
    to the end of the encoding (docs/quantization.md "Attention masks of -inf")."""
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    sums: dict[str, np.ndarray] = {}
    for feeds in progress(stream(), "calibration, ranges", total=count, unit="sample"):
        model.run(feeds)
        tensors = {**{k: np.asarray(v, np.float32) for k, v in feeds.items() if np.issubdtype(np.asarray(v).dtype, np.floating)},
                   **model.tensors()}
        for name, t in tensors.items():
            if name in constants:
                continue
            t = _finite(name, t, masked)
            if t.size == 0:
                continue
            lo[name] = min(lo.get(name, np.inf), float(t.min()))
            hi[name] = max(hi.get(name, -np.inf), float(t.max()))
            if t.ndim >= 2 and name not in masked:  # bias correction's means: of layers, never masked
                m = t.astype(np.float64).reshape(t.shape[0], t.shape[1], -1).mean(axis=(0, 2))
                sums[name] = sums.get(name, 0) + m
    hists = {name: np.zeros(bins, np.int64) for name in lo}
    held: dict[str, list] = {}  # tensor -> its values of the samples not yet counted
    held_bytes = 0
    for feeds in progress(stream(), "calibration, histograms", total=count, unit="sample"):
        model.run(feeds)
        tensors = {**{k: np.asarray(v, np.float32) for k, v in feeds.items() if k in lo}, **model.tensors()}
        for name, t in tensors.items():
            if name not in lo:
                continue
            t = _finite(name, t, masked)
            held.setdefault(name, []).append(t.ravel())
            held_bytes += t.nbytes
        if held_bytes > HELD_BYTES:
            _count(held, hists, lo, hi, bins)
            held_bytes = 0
    _count(held, hists, lo, hi, bins)
    return Stats({name: TensorStats(lo[name], hi[name], hists[name],
                                    (sums[name] / count) if name in sums else None) for name in lo})


def _count(held: dict, hists: dict, lo: dict, hi: dict, bins: int) -> None:
    """Add the held values to their tensors' histograms and let them go. A value's bin depends on it
    alone, so one np.histogram over several samples counts what one per sample would: the thousands
    of small tensors of an unrolled recurrence cost a call per tensor, not per tensor and sample."""
    for name, parts in held.items():
        t = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if hi[name] > lo[name]:
            hists[name] += np.histogram(t, bins=bins, range=(lo[name], hi[name]))[0]
        else:
            hists[name][0] += t.size
    held.clear()


def _finite(name: str, t: np.ndarray, masked: frozenset) -> np.ndarray:
    """A masked tensor's values but its fills (finfo.min is finite, yet no value of the scores); else
    `t` when every value is finite; else the error."""
    if name in masked and not np.isnan(t).any():
        return t[~fill_values(t)]
    if np.isfinite(t).all():
        return t
    raise QnnBuildError(f"calibration: tensor '{name}' became NaN or Inf")
