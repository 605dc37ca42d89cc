"""Quantizing a lowered graph: an encoding for every float activation (from calibration statistics),
and every float constant replaced by its integers (weights, biases, other parameters).
Equations: docs/quantization.md."""

from dataclasses import dataclass, replace

import numpy as np

from ..errors import QnnBuildError
from ..ir.graph import Graph, Node
from ..ir.mask_select import is_fill
from ..ops.kinds import VALUE_KEEPERS
from ..options import QUANTIZATION, Precision
from .calibrate import Stats, masked_tensors
from .encoding import (Encoding, activation_encoding, bias_encoding, dequantize, float16_constant, fp16_encoding,
                       headroom, integer_encoding, integer_valued, quantize, storage_dtype, symmetric_encoding)
from .ranges import choose_range, weight_absmax

# The defaults are the option table's (qnn_build/options.py QUANTIZATION), by spec key.
_DEFAULT = {o.spec_key: o.to_spec(o.default) for o in QUANTIZATION}


@dataclass
class QuantOptions:
    act_range: str = _DEFAULT["act_range"]
    weight_range: str = _DEFAULT["weight_range"]
    percentile: float = _DEFAULT["percentile"]
    per_channel: bool = _DEFAULT["per_channel"]
    block_size: int | None = _DEFAULT["block_size"]
    bias_correction: bool = _DEFAULT["bias_correction"]
    # Bits of the activations and constants of unrolled LSTM/GRU/RNN where the precision has fewer
    # (8 or None: the precision's). docs/quantization.md "The recurrence at 16 bits": why 16 by default.
    recurrent_bits: int | None = _DEFAULT["recurrent_bits"]
    # nearest: (2) on every weight; gptq: Conv/Gemm/MatMul weights rounded with error feedback,
    # docs/quantization.md (17)-(20) (needs the layers' H from quant/gptq.py collect_hessians).
    weight_rounding: str = _DEFAULT["weight_rounding"]
    # auto resolves to minmax and nearest: nothing scored, no GPTQ
    fast: bool = _DEFAULT["fast"]


def resolve_auto(options: QuantOptions, samples: bool) -> QuantOptions:
    """act_range and weight_rounding `auto` (docs/quantization.md "The best fixed method"): the best
    fixed range method (21) and GPTQ where the calibration samples are given; with `fast`, or where
    only statistics are, minmax and nearest rounding (both need the samples)."""
    scored = samples and not options.fast
    changes = {}
    if options.act_range == "auto" and not scored:
        changes["act_range"] = "minmax"
    if options.weight_rounding == "auto":
        changes["weight_rounding"] = "gptq" if scored else "nearest"
    return replace(options, **changes)


def weight_axes(node: Node, graph: Graph, index: int) -> tuple[int, int] | None:
    """(channel axis, input axis) of a weight input, or None when the input is not a weight."""
    if index != 1:
        return None
    rank = len(graph.tensor(node.inputs[1]).shape)
    if node.op_type == "Conv":
        return 0, 1
    if node.op_type == "ConvTranspose":
        return 1, 0
    if node.op_type == "Gemm":
        return (0, 1) if node.attrs.get("trans_b") else (1, 0)
    if node.op_type == "MatMul" and rank >= 2:
        return rank - 1, rank - 2
    return None


def is_bias(node: Node, index: int) -> bool:
    return index == 2 and node.op_type in ("Conv", "ConvTranspose", "Gemm")


# Bits of a constant added to an activation (docs/quantization.md, "Other parameters").
ADDED_BITS = 16


def is_added(node: Node, index: int) -> bool:
    """A constant operand that is added, not multiplied: its rounding reaches the output unscaled."""
    return node.op_type in ("Add", "Sub") or (node.op_type == "LayerNormalization" and index == 2)


def quantize_graph(graph: Graph, precision: Precision, stats: Stats | None, options: QuantOptions,
                   overrides: dict | None = None, act_ranges: dict | None = None, hessians: dict | None = None) -> dict:
    """Set `encoding` on every float tensor and store constants as integers (or halves for fp16).
    act_ranges: tensor -> (lo, hi) in place of the range algorithm's (the range search's result), or
    (lo, hi, bits) where the search gives a tensor more bits than the precision's.
    hessians: quant/gptq.py Hessians (weight -> H per group), used with weight_rounding gptq.
    Returns the range taken from statistics per tensor, in graph order: tensor -> (lo, hi, bits)."""
    if precision.name == "fp16":
        _to_fp16(graph)
        return {}
    overrides = overrides or {}
    ranges = _encode_activations(graph, precision, stats, options, overrides.get("activations", {}),
                                 act_ranges or {}, overrides.get("from_model", ()))
    _encode_constants(graph, precision, options, overrides.get("params", {}), stats,
                      hessians if options.weight_rounding == "gptq" else None, bool(overrides.get("from_model")))
    return ranges


def _to_fp16(graph: Graph) -> None:
    for t in graph.tensors.values():
        if t.dtype != np.float32:
            continue
        if t.is_const:
            t.const = float16_constant(t.const)
            t.dtype = np.dtype(np.float16)
        else:
            t.encoding = fp16_encoding()


def activation_names(graph: Graph) -> list[str]:
    names = [n for n in graph.inputs]
    for node in graph.nodes:
        names.extend(o for o in node.outputs if o)
    return [n for n in names if graph.tensor(n).dtype == np.float32 and not graph.tensor(n).is_const]


# Activations whose encoding a producer writing only into them takes over: quantizing the producer's
# output to the activation's range is what a fused Conv+Relu does, and spends no codes on values the
# activation discards.
FUSABLE_ACTIVATIONS = {"Relu"}


def _fused_into_activation(graph, name, consumers):
    """The output of the activation that `name` feeds alone, when its encoding can be shared."""
    users = consumers.get(name, [])
    if len(users) != 1 or users[0].op_type not in FUSABLE_ACTIVATIONS or name in graph.outputs:
        return None
    return users[0].outputs[0]


def recurrent_bits(bits: int, options: QuantOptions) -> int:
    """Bits of the recurrence's tensors at a precision with `bits`: never fewer than the precision's."""
    return max(bits, options.recurrent_bits or 0)


def _shared_ranges(graph, stats) -> dict[str, tuple[float, float]]:
    """Role -> the union of its tensors' calibrated ranges over all time steps."""
    out = {}
    for name, role in graph.recurrent.items():
        if stats is not None and name in stats and name in graph.tensors:
            lo, hi = out.get(role, (np.inf, -np.inf))
            out[role] = (min(lo, stats[name].min), max(hi, stats[name].max))
    return out


# x at or below which a function is constant: HardSwish(x) = x·clip(x/6 + 1/2, 0, 1) = 0 for x <= -3.
FLAT_BELOW = {"HardSwish": -3.0}


def _flat_cut(graph, name, consumers, lo: float) -> float:
    """(3b): the low end of a range that only functions constant below a bound read. Values below the
    bound give the same outputs as the bound itself, so no codes are spent on them (as a Relu
    fusion spends none on negative values)."""
    users = consumers.get(name, [])
    if not users or name in graph.outputs or any(u.op_type not in FLAT_BELOW for u in users):
        return lo
    return max(lo, min(FLAT_BELOW[u.op_type] for u in users))


# |x| past which a function's value is within a fraction of a 16-bit step of its limit.
SATURATES_AT = {"Sigmoid": 16.0, "Tanh": 8.0}


def _saturation_bound(graph, name, consumers):
    """The bound past which every reader of `name` (through pass-through moves) saturates, or None."""
    users = consumers.get(name, [])
    if not users or name in graph.outputs:
        return None
    bounds = []
    for u in users:
        if u.op_type in SATURATES_AT:
            bounds.append(SATURATES_AT[u.op_type])
        elif u.op_type in VALUE_KEEPERS and u.inputs[0] == name:
            bounds += [_saturation_bound(graph, o, consumers) for o in u.outputs if o]
        else:
            return None
    return None if None in bounds else max(bounds)


def _widened_or_saturated(graph, name, consumers, lo, hi, bits):
    """The headroom (3c), before the cut (3b); but not for an input that only saturating functions
    read: past its range they change by less than its codes do, and on the npu a wider range would
    spread their interpolated table's knots (docs/npu.md (N7)). A recurrent gate's pre-activation
    is instead cut where its sigmoid/tanh saturates: the values past it give the same output, and
    no codes (or knots) are spent on them."""
    bound = _saturation_bound(graph, name, consumers)
    if bound is None:
        return headroom(lo, hi, bits)
    return (max(lo, -bound), min(hi, bound)) if name in graph.recurrent else (lo, hi)


def _inherits(source, bits: int) -> bool:
    """A pass-through output keeps its input's encoding, unless that has fewer bits than the output
    should (the recurrence reading an 8-bit input: the move re-encodes it to 16 bits, as the npu
    multiplies 16-bit weights by 16-bit activations only)."""
    enc = source.encoding
    return enc is not None and (enc.is_float or enc.bitwidth >= bits)


# Bits of an activation a QDQ model leaves float (calibrated, as it has no encoding of its own).
SOURCE_FLOAT_BITS = 16


def _encode_activations(graph, precision, stats, options, pinned, act_ranges, from_model=()):
    chosen = {}
    producer = graph.producers()
    consumers = graph.consumers()
    rec_bits = recurrent_bits(precision.act_bits, options)
    # At 16 bits a wider range costs nothing, while a value past the range of its own time step is
    # clipped: every step of a role shares one encoding. At 8 bits each step keeps its own range.
    shared = _shared_ranges(graph, stats) if rec_bits >= 16 else {}
    masked, integers = masked_tensors(graph), integer_valued(graph)
    mask_scores = {_scores_of(graph, producer[n]) for n in masked if producer[n].op_type == "Where"}
    for name in activation_names(graph):
        t = graph.tensor(name)
        node = producer.get(name)
        bits = rec_bits if name in graph.recurrent else precision.act_bits
        if name in pinned:
            t.encoding = pinned[name](stats.get(name) if stats else None, bits)
        elif node is not None and node.op_type in VALUE_KEEPERS and _inherits(graph.tensor(node.inputs[0]), bits):
            t.encoding = graph.tensor(node.inputs[0]).encoding
        elif name in masked and node.op_type == "Where" and _deep(graph.tensor(_scores_of(graph, node)), bits):
            t.encoding = graph.tensor(_scores_of(graph, node)).encoding  # (3d): the codes move unchanged
        elif graph.recurrent.get(name) in shared:
            lo, hi = _widened_or_saturated(graph, name, consumers, *shared[graph.recurrent[name]], bits)
            t.encoding = activation_encoding(lo, hi, bits)
        else:
            source = _fused_into_activation(graph, name, consumers) or name
            if source in from_model:  # a QDQ model's encoding after a Relu: a fused Conv + Relu
                t.encoding = pinned[source](None, bits)
                continue
            if source != name and source in pinned:
                source = name
            if stats is None and from_model:
                raise QnnBuildError(f"tensor '{source}' has no encoding in the QDQ model: give calibration data "
                                    f"(--calibration) to calibrate what the model leaves float")
            if stats is None or source not in stats:
                raise QnnBuildError(f"calibration statistics have no entry for tensor '{source}' "
                                    f"(statistics from another model or precision settings?)")
            if from_model:  # a tensor a QDQ model computes in float: as near to float as the npu holds
                bits = max(bits, SOURCE_FLOAT_BITS)
            s = stats[source]
            if source in act_ranges:  # (lo, hi), or (lo, hi, bits): auto's squares at 16 bits, (21c)
                lo, hi, bits = (*act_ranges[source], bits)[:3]
            else:
                lo, hi = choose_range(s.min, s.max, s.hist, bits, options.act_range, options.percentile)
            chosen.setdefault(source, (lo, hi, bits))
            lo, hi = _widened_or_saturated(graph, name, consumers, lo, hi, bits)
            lo = _flat_cut(graph, name, consumers, lo)
            if name in masked or name in mask_scores:  # (3d)
                lo = min(lo, hi - MASK_DEPTH)
            t.encoding = (integer_encoding if name in integers else activation_encoding)(lo, hi, bits)  # (3e)
    return chosen


# (3d): an attention mask's -inf (a Where's infinite operand, ir/mask_select.py) is the lowest code of
# the scores' encoding, whose range reaches at least this far below its top: a masked position then
# weighs at most exp(-MASK_DEPTH) = 1e-7 of the largest possible score's in a Softmax over the scores.
MASK_DEPTH = 16.0


def _scores_of(graph, where) -> str:
    """The operand of a masking Where(c, -inf, scores) that is not the fill constant (-inf, finfo.min)."""
    return next(n for n in where.inputs[1:3] if not is_fill(graph.const(n)))


def _deep(scores, bits: int) -> bool:
    """The scores' encoding holds the mask as (3d) asks: the Where passes their codes on."""
    enc = scores.encoding
    return _inherits(scores, bits) and not enc.is_float and enc.maxs[0] - enc.mins[0] >= MASK_DEPTH - 1e-6


def _masks(node, index, values, graph) -> bool:
    """The fill value operand (-inf, finfo.min) of a Where whose output is integer-encoded."""
    out = graph.tensor(node.outputs[0]).encoding
    return node.op_type == "Where" and index in (1, 2) and is_fill(values) \
        and out is not None and not out.is_float


def _encode_constants(graph, precision, options, pinned, stats, hessians=None, qdq_model=False):
    done = set()
    float_weights = {}
    for node in graph.nodes:
        recurrent = any(o in graph.recurrent for o in node.outputs)
        weight_bits = recurrent_bits(precision.weight_bits, options) if recurrent else precision.weight_bits
        param_bits = recurrent_bits(precision.param_bits, options) if recurrent else precision.param_bits
        if qdq_model:  # a parameter a QDQ model leaves float (a BatchNormalization's): as near to float
            param_bits = max(param_bits, SOURCE_FLOAT_BITS)
        for index, name in enumerate(node.inputs):
            t = graph.tensors.get(name) if name else None
            if t is None or not t.is_const or t.dtype != np.float32 or name in done:
                continue
            done.add(name)
            values = t.const
            axes = weight_axes(node, graph, index)
            if name in pinned:
                enc = pinned[name](values, weight_bits)
            elif is_bias(node, index) and _bias_fits(node, graph, values):
                if options.bias_correction and stats is not None:
                    values = _corrected_bias(node, graph, values, float_weights.get(node.inputs[1]), stats)
                enc = _bias(node, graph, values)
            elif axes is not None:
                enc = _weight(node, graph, values, axes, weight_bits, options)
            elif _masks(node, index, values, graph):  # (3d): -inf is the output's lowest code
                enc = graph.tensor(node.outputs[0]).encoding
            else:
                # over the finite values: an infinite one (the -inf a max-reduction starts from)
                # becomes the encoding's extreme code
                finite = values[np.isfinite(values)]
                absmax = np.array([np.abs(finite).max() if finite.size else 0.0])
                enc = symmetric_encoding(absmax, max(param_bits, ADDED_BITS) if is_added(node, index) else param_bits)
            if enc.is_float:
                t.const = float16_constant(values)
                t.dtype = np.dtype(np.float16)
                continue
            if axes is not None:
                float_weights[name] = values
            if axes is not None and hessians and name in hessians and name not in pinned:
                q = hessians.rounded(node, name, values, enc)             # (17)-(20)
            else:
                q = quantize(values, enc)
            t.const = q.astype(storage_dtype(enc))
            t.dtype = t.const.dtype
            t.encoding = enc


def _weight(node, graph, values, axes, bits, options) -> Encoding:
    axis, in_axis = axes
    if not options.per_channel:
        axis = -1
    block_axis, block = -1, 0
    # Block-wise applies where the input dimension holds at least one block; a narrower layer
    # (a first conv over 3 channels) keeps one scale per channel.
    if options.block_size and bits == 4 and values.shape[in_axis] >= options.block_size:
        k = values.shape[in_axis]
        if k % options.block_size:
            raise QnnBuildError(f"{node.describe()}: block size {options.block_size} does not divide the input "
                                f"dimension {k} of weight '{node.inputs[1]}'")
        block_axis, block = in_axis, options.block_size
    absmax = weight_absmax(values, axis, bits, options.weight_range, block_axis, block)
    return symmetric_encoding(absmax, bits, axis, block_axis, block)


def _bias_fits(node, graph, values) -> bool:
    w = graph.tensor(node.inputs[1])
    x = graph.tensor(node.inputs[0])
    return (values.ndim == 1 and w.encoding is not None and x.encoding is not None and not x.encoding.is_float
            and not w.encoding.is_float and w.encoding.block_axis < 0)


def _bias(node, graph, values) -> Encoding:
    w_enc = graph.tensor(node.inputs[1]).encoding
    x_enc = graph.tensor(node.inputs[0]).encoding
    w_scales = w_enc.scales if len(w_enc.scales) == len(values) else np.full(len(values), w_enc.scales[0])
    return bias_encoding(float(x_enc.scales[0]), w_scales, axis=0, values=values)


def _corrected_bias(node, graph, bias, w_float, stats):
    """Equation (12): remove the expected output shift that quantizing the weight causes."""
    x_stats = stats.get(node.inputs[0])
    if w_float is None or x_stats is None or x_stats.channel_mean is None or node.op_type == "ConvTranspose":
        return bias
    w = graph.tensor(node.inputs[1])
    err = dequantize(w.const.astype(np.int64), w.encoding) - w_float
    mean = x_stats.channel_mean
    if node.op_type == "Conv":
        groups = int(node.attrs.get("group", 1))
        per_in = err.shape[1]
        per_out = err.shape[0] // groups
        shift = np.zeros(err.shape[0])
        for o in range(err.shape[0]):
            g = o // per_out
            shift[o] = np.sum(err[o].reshape(per_in, -1).sum(axis=1) * mean[g * per_in:(g + 1) * per_in])
    else:  # Gemm: y = x @ B (+ C); B is [K, N], or [N, K] with trans_b
        b = err if node.attrs.get("trans_b") else err.T
        if b.shape[1] != len(mean):
            return bias
        shift = b @ mean
    return (bias - shift).astype(np.float32)
