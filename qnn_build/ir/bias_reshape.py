"""A bias added after a Reshape that splits a MatMul's columns moves before the Reshape:

    Add(Reshape(MatMul(x, W)), b)  ->  Reshape(Add(MatMul(x, W), b'))

when the Reshape keeps the product's rows and splits (or keeps) its last axis into trailing dims that
b covers (tf2onnx's dense layers: a [S, 128] product reshaped to [1, S, 8, 16] heads, then a bias of
[8, 16]); b' is b flattened to the product's columns. The bias fusion (ir/bias_fusion.py) then makes
MatMul + Add one Gemm whose bias is int32 at the accumulator's scale, and the Add no longer runs as a
requantized pass of its own. The product's and the Reshape's outputs must have that one reader.
"""

import numpy as np

from .graph import Graph, Node
from .patterns import other_input, private


def move_bias_before_reshape(graph: Graph) -> None:
    users = graph.consumers()
    producer = graph.producers()
    moved: dict[int, list[Node]] = {}  # id(Add) -> the Add before the Reshape, then the Reshape
    dropped: set[int] = set()
    for add in graph.nodes:
        if add.op_type != "Add" or len(add.inputs) != 2:
            continue
        for operand in add.inputs:
            reshape = producer.get(operand)
            bias = graph.const(other_input(add, operand) or "")
            if reshape is None or reshape.op_type != "Reshape" or bias is None or bias.dtype.kind != "f":
                continue
            mm = producer.get(reshape.inputs[0])
            flat = _flat_bias(graph, mm, reshape, add, bias)
            if flat is None or not private(graph, mm, users) or not private(graph, reshape, users):
                continue
            product = mm.outputs[0]
            biased = graph.add_activation(product + "_biased", np.float32, graph.tensor(product).shape)
            moved[id(add)] = [Node(add.name + "_before_reshape", "Add",
                                   [product, graph.add_const(add.name + "_bias", flat)], [biased]),
                              Node(reshape.name, "Reshape", [biased] + reshape.inputs[1:], [add.outputs[0]],
                                   dict(reshape.attrs))]
            dropped.add(id(reshape))
            break
    if not moved:
        return
    nodes = []
    for node in graph.nodes:
        if id(node) not in dropped:
            nodes.extend(moved.get(id(node), [node]))
    graph.nodes = nodes
    graph.prune()


def _flat_bias(graph, mm, reshape, add, bias):
    """b as one value per column of the product [.., N], or None when the pattern does not hold."""
    if mm is None or mm.op_type != "MatMul" or graph.const(mm.inputs[1]) is None:
        return None
    src, dst = graph.tensor(mm.outputs[0]).shape, graph.tensor(reshape.outputs[0]).shape
    if graph.tensor(add.outputs[0]).shape != dst or not src or not dst:
        return None
    n = src[-1]
    for j in range(len(dst) - 1, -1, -1):  # the trailing dims of Y that hold one row's N columns
        if int(np.prod(dst[j:])) == n:
            break
    else:
        return None
    if int(np.prod(src[:-1])) != int(np.prod(dst[:j])) or bias.ndim > len(dst):
        return None
    padded = bias.reshape((1,) * (len(dst) - bias.ndim) + bias.shape)
    if any(d != 1 for d in padded.shape[:j]):
        return None  # varies along the rows
    try:
        return np.ascontiguousarray(np.broadcast_to(padded.reshape(padded.shape[j:]), dst[j:]).reshape(n))
    except ValueError:
        return None
