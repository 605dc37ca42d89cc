"""A constant per-column scale after a product by a constant weight is folded into the weight:

    Mul(MatMul(x, W) [+ b], g)  ->  MatMul(x, W * g) [+ b * g]

with g a constant that varies along the last axis only ([N], [1, ..., N] or one value): the
layer scale of ViT/DeiT/ConvNeXt-style blocks after their projections. Why: quantized, the product
got its own 8-bit encoding before the scale changed its range and the Mul ran as its own pass over
the tensor, requantized; folded, the product is rounded once, into the scaled output's encoding.
Runs before the bias fusion (ir/bias_fusion.py), which then makes the pair one Gemm. Every tensor
in between must have that one reader and not be a graph output.
"""

import numpy as np

from .graph import Graph
from .patterns import only_reader, other_input, private


def fold_column_scale(graph: Graph) -> None:
    users = graph.consumers()
    producer = graph.producers()
    removed: set[int] = set()
    for mul in graph.nodes:
        if mul.op_type != "Mul" or len(mul.inputs) != 2:
            continue
        for mine in mul.inputs:
            chain = _product_chain(graph, producer.get(mine), users, producer)
            other = other_input(mul, mine)
            scale = graph.const(other) if other else None
            if chain is None or scale is None or scale.dtype.kind != "f":
                continue
            mm, add = chain
            w = graph.const(mm.inputs[1])
            n = w.shape[-1]
            if scale.size not in (1, n) or (scale.size == n and scale.shape[-1] != n) \
                    or scale.ndim > len(graph.tensor(mul.outputs[0]).shape):
                continue
            g = scale.reshape(-1).astype(np.float64)
            mm.inputs[1] = graph.add_const(mm.inputs[1] + "_scaled", (w * g).astype(w.dtype))
            last = mm
            if add is not None:
                b_name = other_input(add, mm.outputs[0])
                b = graph.const(b_name)
                add.inputs = [mm.outputs[0], graph.add_const(b_name + "_scaled", (b * g).astype(b.dtype))]
                last = add
            last.outputs = [mul.outputs[0]]
            removed.add(id(mul))
            break
    if removed:
        graph.nodes = [n for n in graph.nodes if id(n) not in removed]
        graph.prune()


def _product_chain(graph, node, users, producer):
    """(MatMul, its bias Add or None) when `node` is MatMul(x, W) or Add(MatMul(x, W), b) with W a 2-D
    constant, b a constant along the last axis, every output in between read once."""
    if node is None or not private(graph, node, users):
        return None
    add = None
    if node.op_type == "Add" and len(node.inputs) == 2:
        add = node
        node = next((producer.get(i) for i in add.inputs if graph.const(i) is None), None)
        if node is None or not private(graph, node, users) or only_reader(node, users) is not add:
            return None
        b = graph.const(other_input(add, node.outputs[0]) or "")
        w = graph.const(node.inputs[1]) if node.op_type == "MatMul" else None
        if b is None or w is None or b.dtype.kind != "f" or b.ndim > 1 and any(d != 1 for d in b.shape[:-1]) \
                or b.size not in (1, w.shape[-1]):
            return None
    if node.op_type != "MatMul" or len(node.inputs) != 2:
        return None
    w = graph.const(node.inputs[1])
    if w is None or w.ndim != 2 or w.dtype.kind != "f" or graph.const(node.inputs[0]) is not None:
        return None
    return node, add
