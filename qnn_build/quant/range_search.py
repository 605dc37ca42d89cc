"""The range search (`act_range: search`): each activation range moved, one at a time, to the
candidate that makes the quantized model's outputs closest to the float model's on the calibration
samples. Equations: docs/quantization.md (13)-(16).

Scoring runs the real cpu backend (the float simulation of the integer model), through a `compile_graph`
callable convert hands in: the graph quantized with the starting ranges is compiled once, and every
candidate is that library composed with the candidate's encodings and biases in place
(runtime/reencode.py), quantized by the same quantize_graph as the model convert writes. The float
model's outputs come from the run that calibrated (a Reference), not from another compile. Deterministic: a fixed candidate list, a fixed order, one thread, the first samples of the
set, a tie keeps the current range.
"""

import copy
import dataclasses
from typing import Callable

import numpy as np

from ..log import progress
from ..ops.kinds import VALUE_KEEPERS
from .apply import quantize_graph
from .encoding import activation_encoding
from .ranked_values import MIXED_BITS, carried_on, head_tensors, mixed_scale_concats, ranked_tensors
from .ranges import choose_range

SEARCH_START = "minmax"                 # the fixed method the search starts from
SEARCH_PERCENTILES = (99.999, 99.99, 99.9)
SEARCH_PASSES = 2                       # sweeps over all tensors at most; stops early when one changes nothing
SEARCH_SAMPLES = 128                    # the first calibration samples score a candidate
SEARCH_SIGNIFICANCE = 2.0               # (16): standard errors a move must gain by
# act_range auto (docs/quantization.md (21)): one fixed method for every tensor, the one that scores
# best, then squares (21c), with the recurrence's inputs (21d), at 16 bits, and bias correction (21b);
# five to eight evaluations.
AUTO_METHODS = (("minmax", None),) + tuple(("percentile", p) for p in SEARCH_PERCENTILES) + (("mse", None),)
# (21c): squares, and the sums and means of squares, at SQUARE_BITS with their minmax ranges; (21d):
# the tensors a recurrence reads, the same way
SQUARE_BITS = 16
_SUMS = {"Add", "Sum", "ReduceMean", "ReduceSum", "GlobalAveragePool", "AveragePool"}


@dataclasses.dataclass
class SearchResult:
    ranges: dict          # tensor -> (lo, hi), for quantize_graph(act_ranges=...)
    start_error: float    # (13) with the starting ranges
    error: float          # (13) with the ranges found
    evaluations: int
    changed: list         # tensors whose range moved
    method: str = SEARCH_START  # the fixed method the ranges start from (auto: the best one, (21))
    bias_correction: bool = False  # auto: (12) pays, (21b)
    squares: list = dataclasses.field(default_factory=list)  # auto: tensors at SQUARE_BITS, (21c) and (21d)


@dataclasses.dataclass
class Reference:
    """The first calibration samples and the float model's outputs on them: what (13) compares with."""
    samples: list     # feeds, one dict per sample
    outputs: list     # the float model's outputs, one dict per sample


def reference_outputs(model, stream: Callable) -> Reference:
    """The Reference of a loaded float model (the one calibration ran) over the first SEARCH_SAMPLES
    samples of stream()."""
    feeds = [f for _, f in zip(range(SEARCH_SAMPLES), stream())]
    return Reference(feeds, [model.run(f) for f in feeds])


def candidate_ranges(stats, bits: int) -> list[tuple[float, float]]:
    """(14): minmax, percentiles clipping both tails, and the mse range (10); one per encoding."""
    s = stats
    cands = [(s.min, s.max)]
    cands += [choose_range(s.min, s.max, s.hist, bits, "percentile", p) for p in SEARCH_PERCENTILES]
    cands.append(choose_range(s.min, s.max, s.hist, bits, "mse"))
    out, seen = [], set()
    for lo, hi in cands:
        key = _encoding_key(lo, hi, bits)
        if key not in seen:
            seen.add(key)
            out.append((float(lo), float(hi)))
    return out


def _encoding_key(lo, hi, bits):
    enc = activation_encoding(lo, hi, bits)
    return float(enc.scales[0]), int(enc.offsets[0])


def search_ranges(graph, precision, stats, options, pinned, reference: Reference, compile_graph,
                  hessians=None) -> SearchResult:
    """The ranges (15) finds for `graph` (the float graph; not modified), or with act_range auto the
    best fixed method's (21).
    reference: the calibration samples that score and the float model's outputs on them.
    compile_graph(graph, precision name) -> load, where load(replace=None) is a session of `graph` compiled on
    the cpu backend, with `replace` (tensor -> (encoding, constant data)) put in place as it composes.
    hessians: GPTQ's, for weight_rounding gptq (the candidates are scored with the weights convert will
    write)."""
    auto = options.act_range == "auto"
    scorer = _Scorer(graph, precision, stats, options, pinned, reference, compile_graph, hessians)
    try:
        return _best_method(scorer, stats) if auto else _greedy(scorer, stats)
    finally:
        scorer.close()


def _method_label(method, p):
    return f"percentile {p}" if p is not None else method


def _best_method(scorer, stats) -> SearchResult:
    """(21): each fixed method of AUTO_METHODS for every searched tensor at once, in order; a method
    replaces the current one only if it lowers (13) significantly (16), so minmax stays unless another
    method is better on the calibration samples as a whole, not on a few of them."""
    fixed, structural = _structural_ranges(scorer, stats)
    best = start = None
    for method, p in AUTO_METHODS:
        ranges = {name: tuple(float(v) for v in choose_range(stats[name].min, stats[name].max, stats[name].hist,
                                                             bits, method, p if p is not None else 99.99))
                  for name, (_, _, bits) in scorer.start.items()}
        ranges.update(fixed)
        e = scorer.error(ranges)
        if best is None or _significantly_lower(e, best[1]):
            best = (ranges, e, _method_label(method, p))
        start = e if start is None else start
    ranges, e, label = best
    label += "".join(f", {what}" for what in structural)
    evaluations, corrected, wide = len(AUTO_METHODS), False, []
    tried, families, kept = [], [], []
    for what, found in (("squares", square_tensors), ("recurrence inputs", recurrence_inputs)):
        # (21c), then (21d) with (21c)'s tensors too (nested sets): each kept by (16) against the result so far
        names = [n for n in found(scorer.graph) if n in scorer.start and scorer.start[n][2] < SQUARE_BITS]
        if not names:
            continue
        evaluations += 1
        tried, families = tried + [n for n in names if n not in tried], families + [what]
        trial = {**ranges, **{n: (stats[n].min, stats[n].max, SQUARE_BITS) for n in tried}}
        e_wide = scorer.error(trial)
        if _significantly_lower(e_wide, e):
            ranges, e, wide, kept = trial, e_wide, list(tried), list(families)
    if wide:
        label += f", {' and '.join(kept)} at {SQUARE_BITS} bits"
    if not scorer.bias_correction and scorer.has_biases:  # (21b): bias correction (12), kept by the same rule
        evaluations += 1
        e_corrected = scorer.error(ranges, bias_correction=True)
        if _significantly_lower(e_corrected, e):
            e, corrected = e_corrected, True
    changed = [n for n, (lo, hi, bits) in scorer.start.items()
               if _encoding_key(*ranges[n][:2], ranges[n][2] if len(ranges[n]) > 2 else bits)
               != _encoding_key(lo, hi, bits)]
    return SearchResult(ranges, float(start.sum()), float(e.sum()), evaluations, changed, label, corrected, wide)


def _structural_ranges(scorer, stats) -> tuple[dict, list]:
    """(21e): every method's ranges take these: ranked values (and what they are computed from) at
    their minmax ranges, mixed-scale Concats and what carries their values on, and a head that ranks
    and gathers in the graph, at MIXED_BITS too. Returns (tensor -> range, what the label says)."""
    mixed = mixed_scale_concats(scorer.graph, stats)
    wide = [n for n in carried_on(scorer.graph, mixed) if n in scorer.start and scorer.start[n][2] < MIXED_BITS]
    head = [n for n in head_tensors(scorer.graph) if n in scorer.start and scorer.start[n][2] < MIXED_BITS]
    narrow = [i for inputs in mixed.values() for i in inputs]
    ranked = [n for n in ranked_tensors(scorer.graph, narrow) if n in scorer.start]
    fixed = {n: (stats[n].min, stats[n].max) for n in ranked}
    fixed.update({n: (stats[n].min, stats[n].max, MIXED_BITS) for n in wide + head})
    said = (["ranked values at minmax"] if ranked else []) + \
        ([f"mixed-scale concats at {MIXED_BITS} bits"] if wide else []) + \
        ([f"ranking head at {MIXED_BITS} bits"] if head else [])
    return fixed, said


def square_tensors(graph) -> list[str]:
    """(21c): the activations that hold squares: x² (Pow by 2, x·x), sums and means of them (also with
    a constant added: an epsilon), and their moves, up to the Sqrt that takes the root. A square spans
    twice its input's dynamic range in dB: the small values an 8-bit step of the largest rounds to
    zero are the ones a magnitude or a variance needs (silero VAD's spectrum, a layer norm's variance)."""
    found = set()
    for node in graph.nodes:  # graph order: a node's inputs are classified before it
        ins = [i for i in node.inputs if i and not graph.tensor(i).is_const]
        op = node.op_type
        square = (op == "Mul" and len(node.inputs) == 2 and node.inputs[0] == node.inputs[1]) or \
            (op == "Pow" and graph.tensor(node.inputs[1]).is_const and np.all(graph.tensor(node.inputs[1]).const == 2))
        of_squares = bool(ins) and all(i in found for i in ins) and (op in _SUMS or op in VALUE_KEEPERS)
        if square or of_squares:
            found.update(o for o in node.outputs if o)
    return [n for n in graph.tensors if n in found]


def recurrence_inputs(graph) -> list[str]:
    """(21d): the activations an unrolled LSTM/GRU/RNN reads from outside (its input sequence, its
    initial states) and the moves between them. The recurrence runs at 16 bits because its errors
    add up step by step; an 8-bit input enters it with an 8-bit step, which no later re-encoding
    gives back (silero VAD's one-frame model: its encoder's last Relu, 0 to 2596, feeds the LSTM)."""
    producer = graph.producers()
    found = set()
    for node in graph.nodes:
        if not any(o in graph.recurrent for o in node.outputs):
            continue
        todo = [i for i in node.inputs if i and i not in graph.recurrent and not graph.tensor(i).is_const]
        while todo:  # back through the moves to the tensor that computes the value
            name = todo.pop()
            if name in found:
                continue
            found.add(name)
            source = producer.get(name)
            if source is not None and source.op_type in VALUE_KEEPERS and not graph.tensor(source.inputs[0]).is_const:
                todo.append(source.inputs[0])
    return [n for n in graph.tensors if n in found]


def _greedy(scorer, stats) -> SearchResult:
    """(15): coordinate descent over the tensors in graph order; a move is kept only if it lowers (13)
    significantly, (16), so a move that helps a few samples at the cost of the rest is not taken."""
    current = {name: (lo, hi) for name, (lo, hi, _) in scorer.start.items()}
    start = scored = scorer.error(current)
    count = 1
    candidates = {name: candidate_ranges(stats[name], bits) for name, (_, _, bits) in scorer.start.items()}
    for k in range(SEARCH_PASSES):
        moved = False
        for name, (_, _, bits) in progress(scorer.start.items(), f"range search, pass {k + 1}",
                                           total=len(scorer.start), unit="tensor"):
            now = _encoding_key(*current[name], bits)
            for cand in candidates[name]:
                if _encoding_key(*cand, bits) == now:
                    continue
                trial = {**current, name: cand}
                e = scorer.error(trial)
                count += 1
                if _significantly_lower(e, scored):
                    scored, current, moved = e, trial, True
                    now = _encoding_key(*cand, bits)
        if not moved:
            break
    changed = [n for n, (_, _, bits) in scorer.start.items()
               if _encoding_key(*current[n], bits) != _encoding_key(*scorer.start[n][:2], bits)]
    return SearchResult(current, float(start.sum()), float(scored.sum()), count, changed)


def _significantly_lower(new: np.ndarray, old: np.ndarray) -> bool:
    """(16): the per-sample differences' sum is below zero by SEARCH_SIGNIFICANCE standard errors."""
    d = new - old
    return float(d.sum()) + SEARCH_SIGNIFICANCE * np.sqrt(len(d)) * float(d.std()) < 0


class _Scorer:
    """(13) for a set of activation ranges, on the cpu backend."""

    def __init__(self, graph, precision, stats, options, pinned, reference: Reference, compile_graph: Callable,
                 hessians=None):
        self._float_graph = copy.deepcopy(graph)
        self.graph = self._float_graph  # read only
        self._args = (precision, stats, dataclasses.replace(options, act_range=SEARCH_START), pinned)
        start_graph = copy.deepcopy(graph)
        self.start = quantize_graph(start_graph, *self._args, hessians=hessians)
        # A candidate replaces activation encodings and biases only: the weights' integers matter to
        # it only through bias correction (12), so GPTQ (20) reruns per candidate only then.
        self._hessians = hessians if options.bias_correction else None
        self._all_hessians = hessians
        self.bias_correction = options.bias_correction
        self._load = compile_graph(start_graph, precision.name)
        self.samples, self._ref = reference.samples, reference.outputs
        names = [n for n, v in self._ref[0].items() if np.issubdtype(v.dtype, np.floating)]
        self._power = {n: sum(float(np.sum(np.square(r[n], dtype=np.float64))) for r in self._ref) for n in names}
        self._biases = {n for n, t in start_graph.tensors.items()
                        if t.is_const and t.encoding is not None and t.const.dtype == np.int32}
        self.has_biases = bool(self._biases)

    def error(self, ranges: dict, bias_correction: bool = False) -> np.ndarray:
        """(13) per sample n: Σ over outputs of ||ŷ_n − y_n||² / Σ_m ||y_m||² (their sum is (13)).
        bias_correction: with (12) where the options have none (it changes only the int32 biases)."""
        g = copy.deepcopy(self._float_graph)
        if bias_correction and not self.bias_correction:
            precision, stats, options, pinned = self._args
            quantize_graph(g, precision, stats, dataclasses.replace(options, bias_correction=True), pinned,
                           act_ranges=ranges, hessians=self._all_hessians)
        else:
            quantize_graph(g, *self._args, act_ranges=ranges, hessians=self._hessians)
        replace = {}
        for name, t in g.tensors.items():
            if t.encoding is None:
                continue
            if not t.is_const:
                replace[name] = (t.encoding, None)
            elif name in self._biases:
                replace[name] = (t.encoding, t.const)
        per_sample = np.zeros(len(self.samples))
        with self._load(replace=replace) as model:
            for i, (feeds, ref) in enumerate(zip(self.samples, self._ref)):
                out = model.run(feeds)
                per_sample[i] = sum(float(np.sum(np.square(out[n].astype(np.float64) - ref[n]))) / max(p, 1e-300)
                                    for n, p in self._power.items())
        return per_sample

    def close(self):
        self.samples, self._ref = [], []
