"""MatMul by a constant weight, then Add of a constant bias -> one Gemm with that bias (runtime graph).

Why: quantized, a separate MatMul output gets its own 8-bit encoding before the bias moves its
range, and the bias itself becomes an 8-bit constant; as Gemm's C the bias is int32 at the
accumulator's scale (docs/quantization.md, eq. 8) and the product is rounded once, as onnxruntime's
`quant_pre_process` arranges it. Leading dims of A are folded into Gemm's rows by two Reshapes (byte
copies). Runs after lowering, so the MatMul + Add pairs of unrolled recurrences are fused too.
"""

import numpy as np

from .graph import Graph, Node


def fuse_matmul_bias(graph: Graph) -> None:
    users = graph.consumers()
    producer = graph.producers()
    fused: dict[int, list[Node]] = {}  # id(Add) -> the nodes that replace it
    dropped: set[int] = set()  # id(MatMul)
    for add in graph.nodes:
        mm, bias = _pattern(graph, add, users, producer)
        if mm is None:
            continue
        a, w = mm.inputs
        rows_shape = graph.tensor(a).shape[:-1]
        k, n = graph.const(w).shape
        c = graph.add_const(f"{mm.name}_bias", bias.reshape(n).astype(np.float32))
        y = add.outputs[0]
        if len(rows_shape) == 1:
            fused[id(add)] = [_gemm(mm.name, a, w, c, y)]
        else:
            rows = int(np.prod(rows_shape))
            a2 = graph.add_activation(f"{a}_rows", np.float32, (rows, k))
            y2 = graph.add_activation(f"{y}_rows", np.float32, (rows, n))
            fused[id(add)] = [Node(f"{mm.name}_rows", "Reshape", [a], [a2]), _gemm(mm.name, a2, w, c, y2),
                              Node(f"{add.name}_unrows", "Reshape", [y2], [y])]
        dropped.add(id(mm))
    if not fused:
        return
    nodes = []
    for node in graph.nodes:
        if id(node) in dropped:
            continue
        nodes.extend(fused.get(id(node), [node]))
    graph.nodes = nodes
    graph.prune()


def _pattern(graph: Graph, add: Node, users, producer):
    """(MatMul, bias array) when `add` adds a constant over the last dim to a fusable MatMul."""
    if add.op_type != "Add" or len(add.inputs) != 2:
        return None, None
    for mine, other in ((0, 1), (1, 0)):
        mm, bias = producer.get(add.inputs[mine]), graph.const(add.inputs[other])
        if mm is None or bias is None or mm.op_type != "MatMul" or mm.inputs[0] == mm.inputs[1]:
            continue
        w = graph.const(mm.inputs[1])
        a = graph.tensor(mm.inputs[0])
        if w is None or w.ndim != 2 or len(a.shape) < 2 or a.is_const or a.dtype != np.float32:
            continue
        out = add.inputs[mine]
        if len(users.get(out, [])) != 1 or out in graph.outputs or out in graph.source_encodings or bias.dtype != np.float32:
            continue
        n = w.shape[1]
        if bias.size != n or (bias.ndim and bias.shape[-1] != n) or bias.ndim > len(a.shape):
            continue
        if graph.tensor(add.outputs[0]).shape != graph.tensor(out).shape:
            continue
        return mm, bias
    return None, None


def _gemm(name, a, w, c, y) -> Node:
    return Node(name, "Gemm", [a, w, c], [y], {"trans_a": 0, "trans_b": 0, "alpha": 1.0, "beta": 1.0})
