"""The com.microsoft fusions that exporters and onnxruntime's transformer optimizer emit, rewritten
into default-domain nodes before anything else reads the model, so that shape inference, folding,
the quantizer and every backend see ops they know. fp32 forms only; anything else is refused here,
naming the node.

    Gelu(x)                      -> Gelu(x)                               (erf form)
    BiasGelu(x, b)               -> Gelu(x + b)
    FastGelu(x[, b])             -> Gelu(x [+ b], approximate="tanh")
    SkipLayerNormalization(x, skip, gamma[, beta[, bias]])
                                 -> s = x + skip [+ bias]; LayerNormalization(s, gamma, beta)
                                    (its output 3 is s; its mean / inv_std outputs are refused)
    Attention(x, W, b[, mask])   -> q, k, v = split(x W + b); softmax(q k^T * scale + mask) v
    MultiHeadAttention(q, k, v[, bias[, key_padding_mask]])
                                 -> the same from separate projections

Attention masks: a raw 2-D key mask [B, L] of 1 (attend) / 0 (masked), added as
(1 - mask) * mask_filter_value (default -10000), as onnxruntime does. Past/present state, relative
position bias, packed QKV, unidirectional and the other mask forms are refused.

Gelu and LayerNormalization are emitted whatever the model's opset (they are default-domain ops
from opsets 20 and 17): ir/fold.py types their outputs itself, and the converter has rules for them.
"""

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import ConvertError
from .fold import infer_shapes


class _Builder:
    """Makes the replacement nodes of one contrib node: unique names, constants as initializers."""

    def __init__(self, graph: onnx.GraphProto, node: onnx.NodeProto, index: int):
        self.graph, self.node, self.nodes = graph, node, []
        self.base = node.name or f"{node.op_type}_{index}"
        self.count = 0

    def refuse(self, why: str) -> ConvertError:
        return ConvertError(f"node '{self.base}' (com.microsoft.{self.node.op_type}): unsupported: {why}")

    def const(self, value) -> str:
        name = f"{self.base}/const{self.count}"
        self.count += 1
        self.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs, output: str | None = None, **attrs) -> str:
        out = output or f"{self.base}/{op_type.lower()}{self.count}"
        self.count += 1
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=f"{self.base}/{len(self.nodes)}",
                                           **attrs))
        return out

    def input(self, k: int) -> str:
        return self.node.input[k] if k < len(self.node.input) else ""

    def output(self, k: int) -> str:
        return self.node.output[k] if k < len(self.node.output) else ""

    def attr(self, name: str, default=None):
        for a in self.node.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return default


def _gelu(b: _Builder, approximate="none"):
    x = b.input(0)
    if b.input(1):
        x = b.op("Add", [x, b.input(1)])
    b.op("Gelu", [x], b.output(0), approximate=approximate)


def _fast_gelu(b: _Builder):
    _gelu(b, "tanh")


def _skip_layer_norm(b: _Builder):
    if b.output(1) or b.output(2):
        raise b.refuse("the mean / inv_std_var outputs (training only)")
    x, skip, gamma, beta, bias = (b.input(k) for k in range(5))
    s = b.op("Add", [x, skip], None if bias else (b.output(3) or None))
    if bias:
        s = b.op("Add", [s, bias], b.output(3) or None)
    b.op("LayerNormalization", [s, gamma] + ([beta] if beta else []), b.output(0), axis=-1,
         epsilon=float(b.attr("epsilon", 1e-12)))


def _heads(b: _Builder, x: str, n: int, head: int, transpose_k=False) -> str:
    """[B, S, n * head] -> [B, n, S, head] (or [B, n, head, S] for keys)."""
    r = b.op("Reshape", [x, b.const(np.array([0, 0, n, head], np.int64))])
    return b.op("Transpose", [r], perm=[0, 2, 3, 1] if transpose_k else [0, 2, 1, 3])


def _attend(b: _Builder, q: str, k: str, v: str, n: int, head: int, head_v: int, mask: str):
    """softmax(q k^T * scale + mask) v, over n heads; writes the node's output 0 as [B, S, n * head_v]."""
    scale = float(b.attr("scale", 0.0) or 1.0 / math.sqrt(head))
    scores = b.op("MatMul", [_heads(b, q, n, head), _heads(b, k, n, head, transpose_k=True)])
    scores = b.op("Mul", [scores, b.const(np.float32(scale))])
    if mask:  # [B, L] of 1 / 0 -> (1 - mask) * filter, broadcast over heads and queries
        m = b.op("Cast", [mask], to=onnx.TensorProto.FLOAT)
        m = b.op("Sub", [b.const(np.float32(1.0)), m])
        m = b.op("Mul", [m, b.const(np.float32(b.attr("mask_filter_value", -10000.0)))])
        m = b.op("Unsqueeze", [m, b.const(np.array([1, 2], np.int64))]) if b.opset >= 13 else \
            b.op("Unsqueeze", [m], axes=[1, 2])
        scores = b.op("Add", [scores, m])
    probs = b.op("Softmax", [scores], axis=3)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, _heads(b, v, n, head_v)])], perm=[0, 2, 1, 3])
    b.op("Reshape", [ctx, b.const(np.array([0, 0, n * head_v], np.int64))], b.output(0))


def _check_mask(b: _Builder, k: int) -> str:
    mask = b.input(k)
    if mask and b.ranks.get(mask) not in (2, None):
        raise b.refuse(f"a mask of rank {b.ranks.get(mask)} (only a raw [batch, length] mask)")
    return mask


def _attention(b: _Builder):
    if any(b.input(k) for k in range(4, 8)) or b.output(1) or b.output(2):
        raise b.refuse("past / present state or attention bias inputs")
    if b.attr("unidirectional", 0) or b.attr("do_rotary", 0):
        raise b.refuse("unidirectional or rotary attention")
    n = int(b.attr("num_heads"))
    weights = b.consts.get(b.input(1))
    sizes = b.attr("qkv_hidden_sizes")
    if weights is None:
        raise b.refuse("the QKV weights must be a constant")
    total = weights.shape[1]
    sizes = list(sizes) if sizes else [total // 3] * 3
    if sizes[0] != sizes[1] or sum(sizes) != total or sizes[0] % n or sizes[2] % n:
        raise b.refuse(f"qkv_hidden_sizes {sizes} for {n} heads")
    qkv = b.op("MatMul", [b.input(0), b.input(1)])
    if b.input(2):
        qkv = b.op("Add", [qkv, b.input(2)])
    split = b.const(np.array(sizes, np.int64))
    q, k, v = (f"{b.base}/{part}" for part in ("q", "k", "v"))
    if b.opset >= 13:
        b.nodes.append(helper.make_node("Split", [qkv, split], [q, k, v], name=f"{b.base}/split", axis=2))
    else:
        b.nodes.append(helper.make_node("Split", [qkv], [q, k, v], name=f"{b.base}/split", axis=2, split=sizes))
    _attend(b, q, k, v, n, sizes[0] // n, sizes[2] // n, _check_mask(b, 3))


def _multi_head_attention(b: _Builder):
    if any(b.input(k) for k in range(5, 10)) or b.output(1) or b.output(2):
        raise b.refuse("past / present state or attention bias inputs")
    if b.attr("unidirectional", 0):
        raise b.refuse("unidirectional attention")
    q, k, v, bias = (b.input(i) for i in range(4))
    if not k or not v or b.ranks.get(q) != 3 or b.ranks.get(k) != 3 or b.ranks.get(v) != 3:
        raise b.refuse("query, key and value must be separate [batch, length, hidden] tensors")
    n = int(b.attr("num_heads"))
    dq, dv = b.dims[q][2], b.dims[v][2]
    if dq is None or dv is None or dq % n or dv % n:
        raise b.refuse(f"hidden sizes {dq}, {dv} for {n} heads")
    if bias:
        parts = [f"{b.base}/bias_{p}" for p in ("q", "k", "v")]
        if b.opset >= 13:
            b.nodes.append(helper.make_node("Split", [bias, b.const(np.array([dq, dq, dv], np.int64))], parts,
                                            name=f"{b.base}/split_bias", axis=0))
        else:
            b.nodes.append(helper.make_node("Split", [bias], parts, name=f"{b.base}/split_bias", axis=0,
                                            split=[dq, dq, dv]))
        q, k, v = (b.op("Add", [t, p]) for t, p in zip((q, k, v), parts))
    _attend(b, q, k, v, n, dq // n, dv // n, _check_mask(b, 4))


RULES = {
    "Gelu": _gelu,
    "BiasGelu": _gelu,
    "FastGelu": _fast_gelu,
    "SkipLayerNormalization": _skip_layer_norm,
    "Attention": _attention,
    "MultiHeadAttention": _multi_head_attention,
}


def expand_contrib_ops(model: onnx.ModelProto, opset: int) -> None:
    """Replace every com.microsoft node by its default-domain form, in place. Other custom domains
    are left for the importer to refuse."""
    g = model.graph
    if not any(n.domain == "com.microsoft" for n in g.node):
        return
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    inferred = infer_shapes(model).graph  # the shapes standard ops give the contrib nodes' inputs
    infos = {vi.name: vi for vi in list(inferred.input) + list(inferred.value_info) + list(inferred.output)}
    dims = {name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
            for name, vi in infos.items() if vi.type.tensor_type.HasField("shape")}
    nodes = []
    for i, node in enumerate(g.node):
        if node.domain != "com.microsoft":
            nodes.append(node)
            continue
        b = _Builder(g, node, i)
        rule = RULES.get(node.op_type)
        if rule is None:
            raise ConvertError(f"node '{b.base}' (com.microsoft.{node.op_type}): op not supported (custom domain)")
        b.opset, b.consts, b.dims = opset, consts, dims
        b.ranks = {name: len(d) for name, d in dims.items()}
        rule(b)
        nodes.extend(b.nodes)
    del g.node[:]
    g.node.extend(nodes)
    kept = [o for o in model.opset_import if o.domain != "com.microsoft"]
    del model.opset_import[:]
    model.opset_import.extend(kept)
