"""model.qdq.onnx: the lowered graph as an ONNX model with QuantizeLinear/DequantizeLinear pairs at
our encodings, the form onnxruntime, Qualcomm's QNN execution provider and AI Hub read.

It expresses the graph convert wrote (folded, fused, LSTM/GRU unrolled, every tensor named as in
model.cpp), not the source ONNX, so a backend that runs it computes what the npu computes:
- an activation with an integer encoding is written by its node in float, then `Q -> DQ` at its
  scale and zero point: ONNX's real = (q - zero_point) * scale is ours, real = scale * (q + offset)
  (docs/quantization.md (1)), with zero_point = -offset, the same float32 scale and the same
  round-half-to-even (2). The codes are `NAME/q`, the value its readers see `NAME/dq` (a graph
  output keeps its name: its node writes `NAME/float`);
- a quantized constant is an integer initializer `NAME/q` (int8, int16, int4 two to a byte, int32
  biases) read through one DequantizeLinear: per tensor, per channel (axis) or block-wise (block_size);
- fp16 (and float-fallback) tensors stay float: no Q/DQ; fp16 constants are stored as float32 of
  their half values (exact), so a backend in fp16 sees the same numbers.

QDQ readers group `DQ -> op -> Q` into one integer node only when its activations share one type
(onnxruntime's node-unit rules, which the QNN EP applies); a node that mixes them would run in
float. So each node is given one activation type (qdq_units.py): an input with fewer bits is
re-expressed over its own range at more bits (the same values), a move whose output encoding
differs from its input's requantizes before the move (the same result), an output with fewer
bits than the node computes at is written at its range at more bits and then requantized (two
roundings: 1 LSB apart where a value falls within 1/514 LSB of a rounding boundary), and a
constant operand takes the node's type where that holds its values exactly.

Runtime parameters go back to ONNX attributes and constant inputs (qdq_ops.py); the model is
checked by onnx's checker and shape inference against our shapes, so an op it cannot express
fails here, naming the node.
"""

import copy

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .. import __version__
from ..errors import ConvertError
from ..ir.graph import Graph, Node
from ..ir.rnn_lowering import lower_recurrent
from ..quant.encoding import dequantize
from . import qdq_units as units
from .qdq_ops import ALIASES, RAW_INPUTS, RULES, as_attributes

OPSET = 21  # QuantizeLinear/DequantizeLinear with int4, int16 and block_size

_QTYPES = {(4, True): TensorProto.INT4, (4, False): TensorProto.UINT4, (8, True): TensorProto.INT8,
           (8, False): TensorProto.UINT8, (16, True): TensorProto.INT16, (16, False): TensorProto.UINT16,
           (32, True): TensorProto.INT32}

# Recurrent ops onnxruntime's QNN EP has no builder for: written unrolled into primitive ops
# (ir/rnn_lowering.py), as convert already does at every quantized precision.
UNROLLED = {"GRU", "RNN"}


class Exporter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, onnx.TensorProto] = {}
        self.value: dict[str, str] = {}      # our tensor -> the ONNX name holding its real value
        self.variants: dict[tuple, str] = {}  # (tensor, form) -> the ONNX name of that form
        self.outputs = set(graph.outputs)
        self.taken = set(graph.tensors)
        self.node_names: set[str] = set()

    def fresh(self, hint: str) -> str:
        name, k = hint, 0
        while name in self.taken:
            k += 1
            name = f"{hint}_{k}"
        self.taken.add(name)
        return name

    def const(self, hint: str, array) -> str:
        """A plain initializer (a rule's shape, axes, scales), named after `hint`."""
        name = self.fresh(hint)
        self.inits[name] = numpy_helper.from_array(np.require(np.asarray(array), requirements="C"), name)
        return name

    def add_node(self, op: str, inputs: list[str], outputs: list[str], name: str, **attrs) -> None:
        unique, k = name, 0
        while unique in self.node_names:  # ONNX node names are unique (a tensor requantized twice)
            k += 1
            unique = f"{name}_{k}"
        self.node_names.add(unique)
        name = unique
        while inputs and not inputs[-1]:
            inputs = inputs[:-1]
        while outputs and not outputs[-1]:
            outputs = outputs[:-1]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))

    # -- constants ------------------------------------------------------------------------
    def read(self, name: str, form=None) -> str:
        """The ONNX name of our tensor's real value; a constant is written on first use, in `form`
        (qdq_units.py: the encoding a node needs it in) when given."""
        if not name:
            return ""
        t = self.graph.tensor(name)
        if not t.is_const:
            if name not in self.value:
                raise ConvertError(f"tensor '{name}' is read before any node writes it")
            return self.value[name]
        key = (name, form.key if form is not None else None)
        if key not in self.variants:
            self.variants[key] = self._constant(name, t, form)
        return self.variants[key]

    def real_const(self, name: str) -> np.ndarray | None:
        """The real (dequantized) value of a constant, for rules that take it raw."""
        t = self.graph.tensors.get(name) if name else None
        if t is None or not t.is_const:
            return None
        if units.is_int(t.encoding):
            return dequantize(t.const.astype(np.int64), t.encoding)
        return t.const.astype(np.float32) if t.const.dtype == np.float16 else t.const

    def _constant(self, name: str, t, form) -> str:
        if not units.is_int(t.encoding):
            value = t.const.astype(np.float32) if t.const.dtype == np.float16 else t.const
            self.inits[name] = numpy_helper.from_array(np.require(value, requirements="C"), name)
            return name
        enc, q = t.encoding, t.const.astype(np.int64)
        if form is not None:
            enc, q = form.apply(enc, q)
        out = name if form is None else self.fresh(f"{name}/{form.key}")
        qtype = _QTYPES[(enc.bitwidth, enc.is_signed)]
        self.inits[f"{out}/q"] = helper.make_tensor(f"{out}/q", qtype, list(q.shape), q.reshape(-1).tolist())
        scale, zero, attrs = units.dq_params(enc, q.shape)
        self.inits[f"{out}/scale"] = numpy_helper.from_array(scale, f"{out}/scale")
        self.inits[f"{out}/zero_point"] = helper.make_tensor(f"{out}/zero_point", qtype, list(zero.shape),
                                                            zero.reshape(-1).tolist())
        self.add_node("DequantizeLinear", [f"{out}/q", f"{out}/scale", f"{out}/zero_point"], [out],
                      f"{out}/dequantize", **attrs)
        self.taken.update({out, f"{out}/q", f"{out}/scale", f"{out}/zero_point"})
        return out

    # -- activations ------------------------------------------------------------------------
    def quantize(self, label: str, float_name: str, enc, real: str | None = None) -> str:
        """`Q -> DQ` of a float tensor at an activation encoding; returns the DQ output's name."""
        qtype = _QTYPES[(enc.bitwidth, enc.is_signed)]
        scale = self.const(f"{label}/scale", np.float32(enc.scales[0]))
        zero = self.fresh(f"{label}/zero_point")
        self.inits[zero] = helper.make_tensor(zero, qtype, [], [-int(enc.offsets[0])])
        codes = self.fresh(f"{label}/q")
        real = real or self.fresh(f"{label}/dq")
        self.add_node("QuantizeLinear", [float_name, scale, zero], [codes], f"{label}/quantize")
        self.add_node("DequantizeLinear", [codes, scale, zero], [real], f"{label}/dequantize")
        return real

    def requantized(self, name: str, enc) -> str:
        """Our activation `name` re-expressed at encoding `enc` (qdq_units.py decides which)."""
        key = (name, units.enc_key(enc))
        if key not in self.variants:
            self.variants[key] = self.quantize(f"{name}/{units.type_name(enc)}", self.value[name], enc)
        return self.variants[key]

    def written(self, ours: str) -> str:
        """The name a node writes our activation under, before its Q/DQ."""
        if units.is_int(self.graph.tensor(ours).encoding) and ours in self.outputs:
            return self.fresh(f"{ours}/float")
        return ours

    def finish(self, ours: str, float_name: str) -> None:
        """Our activation `ours` now holds `float_name`: quantize it (when encoded) and record it."""
        enc = self.graph.tensor(ours).encoding
        if units.is_int(enc):
            self.taken.discard(ours)
            self.value[ours] = self.quantize(ours, float_name, enc, real=ours if ours in self.outputs else None)
        elif ours in self.outputs and float_name != ours:
            self.add_node("Identity", [float_name], [ours], f"{ours}/identity")
            self.value[ours] = ours
        else:
            self.value[ours] = float_name

    def intermediate(self, hint: str, op: str, inputs: list[str], enc, **attrs) -> str:
        """One node of a rule's expansion, its output quantized like `enc` (the tensor it stands for)."""
        name = self.fresh(hint)
        self.add_node(op, inputs, [name], name, **attrs)
        return self.quantize(name, name, enc) if units.is_int(enc) else name

    # -- nodes ---------------------------------------------------------------------------------
    def node(self, node: Node) -> None:
        if node.op_type in ALIASES:  # the output holds the input's values: no node of its own
            src, out = node.inputs[0], node.outputs[0]
            if out not in self.outputs and units.same(self.graph.tensor(src).encoding,
                                                      self.graph.tensor(out).encoding):
                self.value[out] = self.read(src)
            else:
                self.finish(out, self.read(src))
            return
        plan = units.plan(node, self.graph)
        raw = RAW_INPUTS.get(node.op_type, ())
        ins = ["" if k in raw else self._input(name, plan.inputs[k]) for k, name in enumerate(node.inputs)]
        outs = [self.written(o) if o else "" for o in node.outputs]
        wide = dict(plan.wide_outputs)  # output index -> the wider encoding the node computes it at
        for k, enc in wide.items():
            outs[k] = self.fresh(f"{node.outputs[k]}/{units.type_name(enc)}/float")
        RULES.get(node.op_type, as_attributes)(self, node, ins, outs)
        for k, (ours, name) in enumerate(zip(node.outputs, outs)):
            if not ours:
                continue
            if k in wide:
                name = self.quantize(f"{ours}/{units.type_name(wide[k])}", name, wide[k])
            self.finish(ours, name)

    def _input(self, name: str, need) -> str:
        if not name:
            return ""
        if self.graph.tensor(name).is_const:
            return self.read(name, need)
        return self.requantized(name, need) if need is not None else self.read(name)


def _value_info(graph: Graph, name: str) -> onnx.ValueInfoProto:
    t = graph.tensor(name)
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(t.dtype), list(t.shape))


def _unrolled(graph: Graph) -> Graph:
    """The graph with its UNROLLED recurrent nodes as primitive ops (float graphs only: quantized
    ones never hold them), constants back in float32 (fp16 values are exact in it)."""
    if not any(n.op_type in UNROLLED for n in graph.nodes):
        return graph
    original, graph = graph, copy.deepcopy(graph)
    for t in graph.tensors.values():
        if t.is_const and t.const.dtype == np.float16:
            t.const, t.dtype = t.const.astype(np.float32), np.dtype(np.float32)
    try:
        lower_recurrent(graph, ops=UNROLLED)
    except ConvertError:  # no primitive form (weights as inputs, ...): the reader refuses the node itself
        return original
    return graph


def export_qdq(graph: Graph, precision: str = "fp32") -> onnx.ModelProto:
    """The QDQ ONNX model of a converted graph (module docstring). Raises ConvertError naming the
    node when the model cannot be expressed or does not check."""
    graph = _unrolled(graph)
    x = Exporter(graph)
    for name in graph.inputs:
        enc = graph.tensor(name).encoding
        x.value[name] = x.quantize(name, name, enc) if units.is_int(enc) else name
    for node in graph.nodes:
        x.node(node)
    for name in graph.outputs:  # an output that is an input or a constant
        if x.read(name) != name:
            x.add_node("Identity", [x.read(name)], [name], f"{name}/identity")
    onnx_graph = helper.make_graph(
        x.nodes, graph.source or "model", [_value_info(graph, n) for n in graph.inputs],
        [_value_info(graph, n) for n in graph.outputs], list(x.inits.values()))
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="qnn-build", producer_version=__version__)
    model.ir_version = 10
    helper.set_model_props(model, {"qnn_build.precision": precision})
    _check(model, graph)
    return model


def _check(model: onnx.ModelProto, graph: Graph) -> None:
    """onnx's checker, then shape inference: every tensor of ours must get the shape we hold."""
    try:
        onnx.checker.check_model(model)
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        raise ConvertError(f"the QDQ ONNX export does not check: {str(e).strip().splitlines()[0]}") from None
    shapes = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    producer = {o: n for n in model.graph.node for o in n.output}
    for name, t in graph.tensors.items():
        vi = shapes.get(name)
        if vi is None or t.is_const or not vi.type.tensor_type.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
        if dims != list(t.shape):
            node = producer.get(name)
            where = f"node '{node.name}' ({node.op_type})" if node is not None else f"tensor '{name}'"
            raise ConvertError(f"the QDQ ONNX export of {where} gives shape {dims}, not {list(t.shape)}")


def qdq_bytes(graph: Graph, precision: str = "fp32") -> bytes:
    return export_qdq(graph, precision).SerializeToString()
