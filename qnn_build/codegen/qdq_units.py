"""One activation type per node of the QDQ export (qdq.py): which inputs and outputs of a node
are re-expressed, and how, so that `DQ -> op -> Q` forms one integer node for its readers.

onnxruntime's node-unit rules (applied by its QNN EP) take a node as integer only when its
activation inputs and outputs share one type (uint8, uint16, ...), a move keeps the input's scale
and zero point, and a Conv/Gemm bias is int32. Our graph mixes types where the quantizer chose so
(the 16-bit recurrence read by an 8-bit head, 16-bit added constants beside 8-bit activations),
so per node:
- moves (ops/kinds.py VALUE_KEEPERS) and Resize with an output encoding other than the input's:
  at the same bits the node writes its output at its input's encoding and it is then requantized;
  across bits (the recurrence's 8 -> 16) the input is requantized first. A move commutes with
  elementwise quantization, so the result is the same (a linear Resize's is rounded twice);
- other nodes compute at the widest activation type they touch: a narrower input is re-expressed
  over its own range at more bits (8 -> 16: scale / 257, offset * 257, the same values), a
  narrower output is written over its own range at the wider type, then requantized;
- constants that are not weights take the node's type where that holds their values exactly
  (a signed b-bit constant as unsigned with zero point 2^(b'-1), b <= b'; a scalar as itself);
  a constant operand with more bits than the activations (a 16-bit added constant) makes the
  node compute at its bits; a LayerNorm scale is unsigned at 8 bits (what the HTP takes), its bias
  int32; a 16-bit Sigmoid/Tanh output is written at the encoding the QNN EP imposes on it
  (1/65536; 1/32768 about zero) and then requantized to ours; a 4-bit weight is held in int8
  where it has one scale (the QNN EP refuses a bias beside a per-tensor 4-bit weight) or sits
  beside 16-bit activations (the HTP's a16w4 FullyConnected computes wrong outputs). Where none
  of this holds the values exactly, a constant stays as it is and its node is left to the reader
  (the HTP runs it in float).
"""

from dataclasses import dataclass, replace

import numpy as np

from ..ir.graph import Graph, Node
from ..ops.kinds import VALUE_KEEPERS
from ..quant.encoding import Encoding, activation_encoding


# Nodes whose output the QNN EP takes only at their input's encoding (onnxruntime's "drop QDQ" ops):
# our moves, and Resize (nearest: a move; linear: an interpolation rounded to the input's encoding).
MOVES = VALUE_KEEPERS | {"Resize"}


def is_int(enc) -> bool:
    return enc is not None and not enc.is_float


def same(a, b) -> bool:
    """Two encodings that quantize alike (or both absent/float)."""
    if not is_int(a) or not is_int(b):
        return is_int(a) == is_int(b)
    return enc_key(a) == enc_key(b)


def enc_key(enc) -> tuple:
    return (enc.bitwidth, enc.is_signed, enc.axis, enc.block_axis, enc.block_size,
            enc.scales.astype(np.float32).tobytes(), enc.offsets.astype(np.int64).tobytes())


def type_name(enc) -> str:
    return f"{'i' if enc.is_signed else 'u'}{enc.bitwidth}"


def dq_params(enc: Encoding, shape) -> tuple[np.ndarray, np.ndarray, dict]:
    """(scale, zero_point, DequantizeLinear attributes) of a constant's encoding: zero_point = -offset.
    Block-wise, the scale has the weight's shape with K / block_size along the block axis."""
    scales = enc.scales.astype(np.float32)
    zeros = -enc.offsets.astype(np.int64)
    if enc.block_axis >= 0:
        grid = [1] * len(shape)
        channels = shape[enc.axis] if enc.axis >= 0 else 1
        blocks = shape[enc.block_axis] // enc.block_size
        if enc.axis >= 0:
            grid[enc.axis] = channels
        grid[enc.block_axis] = blocks
        s, z = scales.reshape(channels, blocks), zeros.reshape(channels, blocks)
        if enc.axis > enc.block_axis:
            s, z = s.T, z.T
        full = [blocks if d == enc.block_axis else n for d, n in enumerate(shape)]
        return (np.ascontiguousarray(np.broadcast_to(s.reshape(grid), full)),
                np.ascontiguousarray(np.broadcast_to(z.reshape(grid), full)),
                {"axis": enc.block_axis, "block_size": enc.block_size})
    if enc.axis >= 0 and scales.size > 1:  # one channel: per tensor, as its bias is
        return scales, zeros, {"axis": enc.axis}
    return scales.reshape(()), zeros.reshape(()), {}


@dataclass(frozen=True)
class ConstForm:
    """How a quantized constant is re-expressed for its node (the same real values; `scales`: a
    weight's coarser per-channel scales, its integers rounded to them)."""
    key: str                 # names the variant: "u8", "i32", "rescaled"
    bits: int = 0
    signed: bool = True
    scales: tuple = ()
    axis: int = -1

    def apply(self, enc: Encoding, q: np.ndarray) -> tuple[Encoding, np.ndarray]:
        if self.scales:
            new = np.array(self.scales, np.float32)
            view = [1] * q.ndim
            view[self.axis] = -1
            old = np.broadcast_to(enc.scales.astype(np.float64), new.shape).reshape(view)
            q = np.clip(np.round(q * old / new.astype(np.float64).reshape(view)), enc.qmin, enc.qmax).astype(np.int64)
            return replace(enc, scales=new, offsets=np.zeros(len(new), np.int32), axis=self.axis), q
        if self.bits == 32:
            return replace(enc, bitwidth=32, is_signed=True), q
        if self.signed == enc.is_signed:
            return replace(enc, bitwidth=self.bits), q
        if q.size == 1 and enc.bitwidth > self.bits:  # a scalar: itself as the scale
            v = np.float32(enc.scales[0] * (q.reshape(-1)[0] + enc.offsets[0]))
            scale, code, zero = (abs(v), 1 if v > 0 else 0, 0 if v >= 0 else 1) if v else (np.float32(1), 0, 0)
            return replace(enc, bitwidth=self.bits, is_signed=False, scales=np.array([scale], np.float32),
                           offsets=np.array([-zero], np.int32), axis=-1), np.full(q.shape, code, np.int64)
        zero = 2 ** (self.bits - 1)  # signed symmetric -> unsigned: q + 2^(b-1)
        return replace(enc, bitwidth=self.bits, is_signed=False,
                       offsets=np.full_like(enc.offsets, -zero)), q + zero


def _as_type(enc: Encoding, q: np.ndarray, bits: int, signed: bool) -> ConstForm | None:
    """The form of a constant operand at an activation type, when it holds the values exactly."""
    if (enc.bitwidth, enc.is_signed) == (bits, signed) or enc.block_axis >= 0:
        return None
    form = ConstForm(f"{'i' if signed else 'u'}{bits}", bits, signed)
    if q.size == 1 and not signed:
        return form
    if enc.is_signed and not signed and enc.bitwidth <= bits and np.all(enc.offsets == 0):
        return form
    if enc.is_signed == signed and enc.bitwidth <= bits:
        return form
    return None


def widened(enc: Encoding, bits: int) -> Encoding:
    """An activation encoding over the same range at more bits: the same values where the levels
    divide (unsigned 8 -> 16: scale / 257, offset * 257)."""
    if not enc.is_signed:
        levels, more = 2 ** enc.bitwidth - 1, 2 ** bits - 1
        if more % levels == 0:
            m = more // levels
            return replace(enc, bitwidth=bits, scales=(enc.scales / m).astype(np.float32),
                           offsets=(enc.offsets.astype(np.int64) * m).astype(np.int32))
    lo = float(enc.scales[0]) * (enc.qmin + int(enc.offsets[0]))
    hi = float(enc.scales[0]) * (enc.qmax + int(enc.offsets[0]))
    return activation_encoding(lo, hi, bits)


# Output encodings the QNN EP imposes on an op's 16-bit output (its simple_op_builder overrides them,
# whatever the model says): (op, signed) -> (scale, offset). Our encoding is reached by a requantize.
FIXED_OUTPUTS = {("Sigmoid", False): (1 / 65536, 0), ("Sigmoid", True): (1 / 32768, 0),
                 ("Tanh", False): (1 / 32768, -32768), ("Tanh", True): (1 / 32768, 0)}


def _fixed(node: Node, enc: Encoding) -> Encoding | None:
    """The encoding the QNN EP gives this node's 16-bit output, when it is not ours."""
    fixed = FIXED_OUTPUTS.get((node.op_type, enc.is_signed)) if enc.bitwidth == 16 else None
    if fixed is None:
        return None
    scale, offset = fixed
    if float(enc.scales[0]) == np.float32(scale) and int(enc.offsets[0]) == offset:
        return None
    return replace(enc, scales=np.array([scale], np.float32), offsets=np.array([offset], np.int32))


INT32_MAX = 2 ** 31 - 1


def _bias_room(node: Node, graph: Graph, x_enc: Encoding) -> ConstForm | None:
    """The QNN EP stores a Conv/Gemm bias in int32 at input scale x weight scale, requantizing ours.
    Where a bias does not fit there (our (8b) widened its scale; 16-bit activations and weights),
    the weight's channel takes the coarser scale |bias| / (input scale x (2^31 - 1)) that makes room
    (its 16-bit integers rounded once more), instead of the EP clipping the bias."""
    w, b = (graph.tensor(n) if n else None for n in (node.inputs[1], node.inputs[2] if len(node.inputs) > 2 else ""))
    if b is None or not is_int(w.encoding) or not is_int(b.encoding) or w.encoding.block_axis >= 0:
        return None
    from ..quant.apply import weight_axes
    bias = np.abs(b.const.astype(np.float64) * b.encoding.scales.astype(np.float64))
    needed = bias / (float(x_enc.scales[0]) * INT32_MAX)
    current = np.broadcast_to(w.encoding.scales.astype(np.float64), bias.shape)
    if np.all(needed <= current):
        return None
    scales = np.maximum(current, needed).astype(np.float32)
    return ConstForm("rescaled", scales=tuple(float(v) for v in scales), axis=weight_axes(node, graph, 1)[0])


def const_role(node: Node, k: int) -> str:
    """weight and bias (kept as quantized), norm_scale (unsigned at 8 bits), norm_bias (int32)
    or operand (takes the node's activation type)."""
    if node.op_type in ("Conv", "ConvTranspose", "Gemm"):
        return {1: "weight", 2: "bias"}.get(k, "operand")
    if node.op_type == "MatMul" and k == 1:
        return "weight"
    if node.op_type in ("LayerNormalization", "InstanceNormalization"):
        return {1: "norm_scale", 2: "norm_bias"}.get(k, "operand")
    if node.op_type in ("LSTM", "GRU", "RNN"):
        return "weight"
    return "operand"


@dataclass
class Plan:
    inputs: list            # per input: None, an activation Encoding to requantize to, or a ConstForm
    wide_outputs: list      # [(output index, the Encoding the node writes it at before ours)]


def plan(node: Node, graph: Graph) -> Plan:
    """How the export writes `node`'s inputs and outputs (module docstring)."""
    tensors = [graph.tensor(n) if n else None for n in node.inputs]
    ins: list = [None] * len(node.inputs)
    act = [k for k, t in enumerate(tensors) if t is not None and not t.is_const and is_int(t.encoding)]
    outs = [k for k, o in enumerate(node.outputs) if o and is_int(graph.tensor(o).encoding)]
    if not act and not outs:
        return Plan(ins, [])
    if node.op_type in MOVES:
        in_enc = tensors[0].encoding if 0 in act else None
        out_enc = graph.tensor(node.outputs[0]).encoding
        if in_enc is None or not is_int(out_enc) or same(in_enc, out_enc):
            return Plan(ins, [])
        if in_enc.bitwidth != out_enc.bitwidth:  # requantize, then move
            ins[0] = out_enc
            return Plan(ins, [])
        return Plan(ins, [(k, in_enc) for k in outs])  # move, then requantize
    encs = [tensors[k].encoding for k in act] + [graph.tensor(node.outputs[k]).encoding for k in outs]
    operands = [t.encoding for k, t in enumerate(tensors) if t is not None and t.is_const and is_int(t.encoding)
                and const_role(node, k) == "operand" and t.encoding.block_axis < 0]
    bits = max(e.bitwidth for e in encs + operands)  # a 16-bit constant operand: the node computes at 16
    signed = (graph.tensor(node.outputs[outs[0]]).encoding if outs else tensors[act[0]].encoding).is_signed
    for k in act:
        enc = tensors[k].encoding
        if (enc.bitwidth, enc.is_signed) != (bits, signed):
            ins[k] = widened(enc, bits)
    wide = [(k, widened(graph.tensor(node.outputs[k]).encoding, bits)) for k in outs
            if graph.tensor(node.outputs[k]).encoding.bitwidth < bits]
    wide += [(k, fixed) for k in outs if k not in dict(wide)
             for fixed in [_fixed(node, graph.tensor(node.outputs[k]).encoding)] if fixed is not None]
    for k, t in enumerate(tensors):
        if t is None or not t.is_const or not is_int(t.encoding):
            continue
        role = const_role(node, k)
        room = _bias_room(node, graph, ins[0] or tensors[0].encoding) if role == "weight" and 0 in act else None
        if room is not None:
            ins[k] = room
        elif role == "weight" and t.encoding.bitwidth == 4 and t.encoding.block_axis < 0 and \
                (t.encoding.scales.size == 1 or bits == 16):
            ins[k] = ConstForm("i8", 8, True)  # see the module docstring: held in int8, the same values
        elif role == "norm_scale" and t.encoding.is_signed and t.encoding.bitwidth == 8:
            ins[k] = ConstForm("u8", 8, False)  # the HTP's LayerNorm takes an unsigned 8-bit scale
        elif role == "norm_bias" and t.encoding.bitwidth != 32:
            ins[k] = ConstForm("i32", 32, True)
        elif role == "operand":
            ins[k] = _as_type(t.encoding, t.const, bits, signed)
    return Plan(ins, wide)
