"""QDQ import: a model another tool quantized (onnxruntime's quantize_static, AIMET, AI Hub) holds
its encodings as QuantizeLinear/DequantizeLinear nodes. They are read here into our encodings and
the nodes removed, so what remains is the float model; convert then pins those encodings as an
overrides file would, unless told to ignore them (docs/quantization.md "QDQ models").

- DequantizeLinear of a constant (int8/uint8, int16/uint16, int4/uint4, int32 biases; per tensor,
  per channel, or block-wise at opset 21): the constant becomes its real value, named as the DQ
  output, and that name takes the encoding. QuantizeLinear of a float constant, then DQ (a
  fake-quantized weight, as PyTorch exports it), is read the same way.
- QuantizeLinear -> DequantizeLinear on an activation: the DQ output's readers read the Q input,
  which takes the encoding. A second pair with another encoding on the same tensor (a requantization)
  becomes an Identity that re-encodes, which is what the pair does.
- An integer graph input read by DequantizeLinear becomes a float input of the same name; a graph
  output written by QuantizeLinear becomes float, its name kept (net-run's native I/O reads and
  writes their codes).

ONNX's real = (q - zero_point) * scale is ours, (1), with offset = -zero_point. A signed activation
is held as the unsigned encoding of the same values; an unsigned weight whose zero point is the
middle code, as the signed symmetric one. Opsets 10 to 21, and com.microsoft's Q/DQ (the 16- and
4-bit types before opset 21).
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..errors import ConvertError
from ..options import PRECISIONS
from .encoding import Encoding

QDQ_DOMAINS = ("", "ai.onnx", "com.microsoft")
# ONNX element type -> (bits, signed)
_TYPES = {TensorProto.UINT8: (8, False), TensorProto.INT8: (8, True), TensorProto.UINT16: (16, False),
          TensorProto.INT16: (16, True), TensorProto.UINT4: (4, False), TensorProto.INT4: (4, True),
          TensorProto.INT32: (32, True)}
ACT_BITS = (8, 16)


def _is(node, op: str) -> bool:
    return node.op_type == op and node.domain in QDQ_DOMAINS


def has_qdq(model: onnx.ModelProto) -> bool:
    return any(_is(n, "QuantizeLinear") or _is(n, "DequantizeLinear") for n in model.graph.node)


def strip_qdq(model: onnx.ModelProto) -> dict[str, Encoding]:
    """Remove every Q/DQ node of `model` (in place); returns tensor name -> its encoding."""
    if not has_qdq(model):
        return {}
    return _Stripper(model).run()


class _Stripper:
    def __init__(self, model):
        self.g = model.graph
        self.consts = {i.name: numpy_helper.to_array(i) for i in self.g.initializer}
        self.const_types = {i.name: i.data_type for i in self.g.initializer}
        for n in self.g.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.attribute and n.attribute[0].name == "value":
                self.consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
                self.const_types[n.output[0]] = n.attribute[0].t.data_type
        self.producer = {o: n for n in self.g.node for o in n.output if o}
        self.input_types = {vi.name: vi.type.tensor_type.elem_type for vi in self.g.input}
        self.encodings: dict[str, Encoding] = {}
        self.rename: dict[str, str] = {}       # DQ output -> the name its readers read instead
        self.new_inits: list[onnx.TensorProto] = []
        self.extra_nodes: list[tuple[onnx.NodeProto, onnx.NodeProto]] = []  # (after node, Identity)

    def run(self) -> dict[str, Encoding]:
        outputs = {o.name for o in self.g.output}
        readers: dict[str, list] = {}
        for node in self.g.node:
            for i in node.input:
                readers.setdefault(i, []).append(node)
        for node in self.g.node:
            if not _is(node, "QuantizeLinear"):
                continue
            other = [r for r in readers.get(node.output[0], []) if not _is(r, "DequantizeLinear")]
            if other:
                raise ConvertError(f"{self._where(other[0])} reads the integer codes of {self._where(node)}: "
                                   f"QOperator models (QLinearConv and the like) are not supported, export QDQ")
        for node in self.g.node:
            if _is(node, "DequantizeLinear"):
                self._dequantize(node)
        for node in self.g.node:
            if _is(node, "QuantizeLinear") and node.output[0] in outputs:
                self._quantized_output(node)
        self._rewrite(outputs)
        return self.encodings

    # -- reading one Q/DQ node --------------------------------------------------------------
    def _where(self, node) -> str:
        return f"node '{node.name or node.output[0]}' ({node.op_type})"

    def _params(self, node, code_type: int | None):
        """(scale, zero point, bits, signed, axis, block_size) of a Q or DQ node."""
        scale = self.consts.get(node.input[1])
        if scale is None:
            raise ConvertError(f"{self._where(node)}: its scale '{node.input[1]}' is not a constant")
        zero = None
        if len(node.input) > 2 and node.input[2]:
            zero = self.consts.get(node.input[2])
            if zero is None:
                raise ConvertError(f"{self._where(node)}: its zero point '{node.input[2]}' is not a constant")
            code_type = self.const_types[node.input[2]]
        if code_type is None:  # QuantizeLinear without a zero point: output_dtype (opset 21), else uint8
            code_type = _attr(node, "output_dtype", TensorProto.UINT8) or TensorProto.UINT8
        if code_type not in _TYPES:
            name = TensorProto.DataType.Name(code_type)
            raise ConvertError(f"{self._where(node)}: codes of type {name} are not supported "
                               f"(int4/8/16, uint4/8/16, int32)")
        bits, signed = _TYPES[code_type]
        zero = np.zeros_like(scale, np.int64) if zero is None else np.asarray(zero).astype(np.int64)
        return (np.asarray(scale, np.float32), zero, bits, signed, int(_attr(node, "axis", 1)),
                int(_attr(node, "block_size", 0)))

    def _dequantize(self, node):
        x = node.input[0]
        if x in self.consts:
            codes = np.asarray(self.consts[x]).astype(np.int64)
            self._constant(node, codes, self._params(node, self.const_types[x]))
            return
        q = self.producer.get(x)
        if q is not None and _is(q, "QuantizeLinear"):
            params = self._params(q, None)
            if q.input[0] in self.consts:  # a fake-quantized constant
                codes = _quantize(np.asarray(self.consts[q.input[0]], np.float32), *params)
                self._constant(node, codes, params)
                return
            self._activation(node, q.input[0], params)
            return
        if x in self.input_types and self.input_types[x] in _TYPES:  # integer graph input
            self._integer_input(node, x)
            return
        what = f"the output of {self._where(q)}" if q is not None else f"'{x}'"
        raise ConvertError(f"{self._where(node)}: reads {what}, which is neither a constant nor a "
                           f"QuantizeLinear output")

    def _constant(self, node, codes, params):
        scale, zero, bits, signed, axis, block = params
        shape = codes.shape
        enc = self._param_encoding(node, scale, zero, bits, signed, axis, block, shape)
        real = _dequantize(codes, scale, zero, axis, block)
        out = node.output[0]
        self.new_inits.append(numpy_helper.from_array(real, out))
        self.encodings[out] = enc

    def _activation(self, dq, x, params):
        scale, zero, bits, signed, _, _ = params
        if scale.size != 1:
            raise ConvertError(f"{self._where(dq)}: an activation takes one scale, this has {scale.size}")
        if bits not in ACT_BITS:
            raise ConvertError(f"{self._where(dq)}: {bits}-bit activations are not supported (8 or 16)")
        dq_params = self._params(dq, None)
        if not (np.array_equal(dq_params[0], scale) and np.array_equal(dq_params[1], zero)):
            raise ConvertError(f"{self._where(dq)}: dequantizes with another scale or zero point than its "
                               f"QuantizeLinear")
        enc = _activation_encoding(float(scale.reshape(-1)[0]), int(zero.reshape(-1)[0]), bits, signed)
        src = self.rename.get(x, x)
        held = self.encodings.get(src)
        if held is None:
            self.encodings[src] = enc
            self.rename[dq.output[0]] = src
        elif held.key() == enc.key():
            self.rename[dq.output[0]] = src
        else:  # a requantization: an Identity that re-encodes
            name = dq.output[0]
            self.extra_nodes.append((dq, helper.make_node("Identity", [src], [name], name=f"{name}/requantize")))
            self.encodings[name] = enc

    def _integer_input(self, dq, x):
        scale, zero, bits, signed, _, _ = self._params(dq, self.input_types[x])
        if scale.size != 1 or bits not in ACT_BITS:
            raise ConvertError(f"{self._where(dq)}: an integer graph input needs one scale, 8 or 16 bits")
        self.encodings[x] = _activation_encoding(float(scale.reshape(-1)[0]), int(zero.reshape(-1)[0]), bits, signed)
        self.rename[dq.output[0]] = x
        for vi in self.g.input:
            if vi.name == x:
                vi.type.tensor_type.elem_type = TensorProto.FLOAT

    def _quantized_output(self, q):
        """A graph output written by QuantizeLinear: the float tensor takes the output's name."""
        x, out = q.input[0], q.output[0]
        scale, zero, bits, signed, _, _ = self._params(q, None)
        if scale.size != 1 or bits not in ACT_BITS:
            raise ConvertError(f"{self._where(q)}: an integer graph output needs one scale, 8 or 16 bits")
        self.encodings[out] = _activation_encoding(float(scale.reshape(-1)[0]), int(zero.reshape(-1)[0]), bits, signed)
        self.extra_nodes.append((q, helper.make_node("Identity", [self.rename.get(x, x)], [out], name=f"{out}/float")))
        for vi in self.g.output:
            if vi.name == out:
                vi.type.tensor_type.elem_type = TensorProto.FLOAT

    def _param_encoding(self, node, scale, zero, bits, signed, axis, block, shape) -> Encoding:
        rank = len(shape)
        axis = axis % rank if rank else 0
        block_axis = -1
        if block:
            scale, zero, axis, block_axis = self._blocks(node, scale, zero, axis, block, shape)
        elif scale.size == 1:
            axis = -1
        elif scale.ndim != 1 or rank == 0 or scale.size != shape[axis]:
            raise ConvertError(f"{self._where(node)}: {scale.size} scales for a tensor of shape {list(shape)}")
        zero = np.broadcast_to(zero.reshape(-1) if zero.size > 1 else zero.reshape(-1)[:1], (scale.size,))
        if not signed and bits < 32 and np.all(zero == 2 ** (bits - 1)):
            signed, zero = True, np.zeros_like(zero)  # unsigned around the middle code: symmetric
        offsets = (-zero).astype(np.int32)
        scales = scale.reshape(-1).astype(np.float32)
        qmax = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
        return Encoding(bits, signed, scales, offsets, axis, block_axis, block if block_axis >= 0 else 0,
                        mins=scales.astype(np.float64) * (offsets + (-qmax - 1 if signed else 0)),
                        maxs=scales.astype(np.float64) * (offsets + qmax))

    def _blocks(self, node, scale, zero, axis, block, shape):
        """ONNX's block-wise scales (the weight's shape with K / block along `axis`) as ours: one scale
        per (channel, block), the channel being the other axis of a 2-D weight, axis 0 of a conv's."""
        rank = len(shape)
        if rank < 2 or (rank > 2 and axis != 1) or shape[axis] % block or scale.ndim != rank:
            raise ConvertError(f"{self._where(node)}: block size {block} along axis {axis} of a tensor of "
                               f"shape {list(shape)} is not supported (blocks that divide K of a 2-D or conv weight)")
        channel = 1 - axis if rank == 2 else 0
        grid = (scale.shape[channel], scale.shape[axis], -1)
        s = np.moveaxis(scale, (channel, axis), (0, 1)).reshape(grid)
        z = np.moveaxis(np.broadcast_to(zero, scale.shape), (channel, axis), (0, 1)).reshape(grid)
        if not (np.all(s == s[..., :1]) and np.all(z == z[..., :1])):  # ours: one scale over a kernel window
            raise ConvertError(f"{self._where(node)}: block-wise scales that vary over the kernel window are not supported")
        return s[..., 0].reshape(-1), z[..., 0].reshape(-1), channel, axis

    # -- rewriting the graph ------------------------------------------------------------------------
    def _rewrite(self, outputs):
        g = self.g
        removed_dq = {n.output[0] for n in g.node if _is(n, "DequantizeLinear")}
        extra = {id(after): ident for after, ident in self.extra_nodes}
        nodes = []
        for n in g.node:
            if _is(n, "QuantizeLinear") or _is(n, "DequantizeLinear"):
                if id(n) not in extra:
                    continue
                n = extra[id(n)]
            n.input[:] = [self._read(i) for i in n.input]
            nodes.append(n)
        # A graph output that is a DQ output: the float tensor it stands for takes the output's name.
        for o in g.output:
            src = self._read(o.name)
            if src != o.name:
                if src in self.input_types or any(src == oo.name for oo in g.output) or src in self.consts:
                    nodes.append(helper.make_node("Identity", [src], [o.name], name=f"{o.name}/output"))
                else:
                    _rename_tensor(nodes, src, o.name)
                    if src in self.encodings:
                        self.encodings[o.name] = self.encodings.pop(src)
        del g.node[:]
        g.node.extend(nodes)
        used = {i for n in nodes for i in n.input}
        keep = [i for i in g.initializer if i.name in used or i.name in {o.name for o in g.output}]
        keep += [i for i in self.new_inits if i.name in used or i.name in outputs]
        del g.initializer[:]
        g.initializer.extend(keep)
        stale = removed_dq | {o for n in self.producer.values() if _is(n, "QuantizeLinear") for o in n.output}
        kept_vi = [vi for vi in g.value_info if vi.name not in stale]
        del g.value_info[:]
        g.value_info.extend(kept_vi)

    def _read(self, name):
        """The name a reader of `name` reads once the pairs are gone."""
        while name in self.rename:
            name = self.rename[name]
        return name


def _rename_tensor(nodes, old, new):
    for n in nodes:
        n.input[:] = [new if i == old else i for i in n.input]
        n.output[:] = [new if o == old else o for o in n.output]


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _activation_encoding(scale: float, zero: int, bits: int, signed: bool) -> Encoding:
    """Ours holds activations unsigned: a signed code q is the unsigned code q + 2^(b-1) of the
    same value, so the zero point moves by as much."""
    if signed:
        zero += 2 ** (bits - 1)
    levels = 2 ** bits - 1
    return Encoding(bits, False, np.array([scale], np.float32), np.array([-zero], np.int32),
                    mins=np.array([scale * -zero]), maxs=np.array([scale * (levels - zero)]))


def _expand(params, axis, block, shape):
    """A per-axis or block-wise parameter broadcast against a tensor of `shape`."""
    p = np.asarray(params)
    if p.size == 1:
        return p.reshape(())
    if block:
        return np.repeat(p, block, axis=axis)[tuple(slice(0, d) for d in shape)]
    view = [1] * len(shape)
    view[axis % len(shape)] = p.size
    return p.reshape(view)


def _dequantize(codes, scale, zero, axis, block) -> np.ndarray:
    """ONNX DequantizeLinear, as onnxruntime computes it: (q - zero_point) in float32, times scale."""
    s = _expand(scale, axis, block, codes.shape).astype(np.float32)
    z = _expand(zero, axis, block, codes.shape)
    return np.ascontiguousarray(((codes - z).astype(np.float32) * s).astype(np.float32))


def _quantize(x, scale, zero, bits, signed, axis, block) -> np.ndarray:
    """ONNX QuantizeLinear of a constant: saturate(round_half_even(x / scale) + zero_point)."""
    s = _expand(scale, axis, block, x.shape).astype(np.float32)
    z = _expand(zero, axis, block, x.shape)
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    return np.clip(np.round(x / s).astype(np.float64) + z, lo, hi).astype(np.int64)


def implied_precision(graph) -> str:
    """The precision a QDQ model's encodings are at: the most common bitwidth of its weights (the
    constants Conv, ConvTranspose, Gemm and MatMul multiply by) and of its activations; what
    convert quantizes any tensor they leave float at."""
    weights = {n.inputs[1] for n in graph.nodes if n.op_type in ("Conv", "ConvTranspose", "Gemm", "MatMul")
               and len(n.inputs) > 1}
    w_bits, a_bits = [], []
    for name, enc in graph.source_encodings.items():
        if graph.tensor(name).is_const:
            if name in weights:
                w_bits.append(enc.bitwidth)
        else:
            a_bits.append(enc.bitwidth)
    w, a = _most_common(w_bits, 8), _most_common(a_bits, 16)  # weight-only: activations as near float
    name = f"w{w}a{a}"
    if name not in PRECISIONS:
        raise ConvertError(f"the model's encodings are {w}-bit weights and {a}-bit activations, not a precision "
                           f"of ours: give --precision")
    return name


def _most_common(values, default: int) -> int:
    if not values:
        return default
    counts = {v: values.count(v) for v in values}
    return max(counts, key=lambda v: (counts[v], v))
