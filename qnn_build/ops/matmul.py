"""Matrix products: Gemm with its attributes made explicit, and MatMul (numpy.matmul semantics)."""

import numpy as np

from .base import OpRule, require_dtype, same, unsupported


def _gemm(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs)
    a, b = (graph.tensor(n).shape for n in node.inputs[:2])
    if len(a) != 2 or len(b) != 2:
        raise unsupported(node, f"A and B must be 2-D, got shapes {a} and {b}")
    trans_a, trans_b = int(node.attrs.get("transA", 0)), int(node.attrs.get("transB", 0))
    m = a[1] if trans_a else a[0]
    n = b[0] if trans_b else b[1]
    c = node.inputs[2] if len(node.inputs) > 2 else ""
    if c:
        c_shape = graph.tensor(c).shape
        try:
            ok = np.broadcast_shapes(c_shape, (m, n)) == (m, n)
        except ValueError:
            ok = False
        if not ok:
            raise unsupported(node, f"C of shape {c_shape} does not broadcast to [{m}, {n}]")
    inputs = [node.inputs[0], node.inputs[1]] + ([c] if c else [])
    return [same(node, inputs=inputs, trans_a=trans_a, trans_b=trans_b,
                 alpha=float(node.attrs.get("alpha", 1.0)), beta=float(node.attrs.get("beta", 1.0)))]


def _matmul(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs)
    a, b = (graph.tensor(n).shape for n in node.inputs[:2])
    if not a or not b:
        raise unsupported(node, "MatMul of a scalar")
    return [same(node)]


RULES = [
    OpRule("Gemm", _gemm),
    OpRule("MatMul", _matmul),
]
