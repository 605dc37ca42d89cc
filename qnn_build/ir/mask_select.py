"""An additive attention mask becomes a selection:

    Add(scores, moves(Where(c, -inf, 0)))  ->  Where(moves(c), -inf, scores)

where `moves` is a chain of shape-only nodes (Reshape, Expand, Unsqueeze, Squeeze, Flatten,
Transpose) and the infinity is a one-element constant of either sign, on either side of the Where
(Where(c, 0, -inf) gives Where(moves(c), scores, -inf)). PyTorch exports a key-padding mask so
(masked_fill(~mask, -inf) reshaped to [B, heads, 1, S]), added to the scores before Softmax.

In float the two are equal element by element (s + -inf = -inf, s + 0 = s), so the cpu path keeps
onnxruntime's results. Quantized they are not: the mask alone holds only 0 and -inf, its range from
its finite values is [0, 0], and an Add of codes would add nothing where the mask is -inf. The Where
instead writes the scores' own encoding, and a masked position the lowest code of it (docs/
quantization.md "Attention masks of -inf"). The condition's chain runs on bools: it moves bytes only.
"""

import numpy as np

from .graph import Graph, Node
from .patterns import other_input

MOVES = {"Reshape", "Expand", "Unsqueeze", "Squeeze", "Flatten", "Transpose", "Identity"}


def select_masked_scores(graph: Graph) -> None:
    producer = graph.producers()
    moved_conditions: dict[str, str] = {}  # a mask tensor -> its condition moved the same way
    replaced: dict[int, list[Node]] = {}
    for add in graph.nodes:
        if add.op_type != "Add" or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
            continue
        for mask in add.inputs:
            chain = _mask_chain(graph, producer, mask)
            if chain is None:
                continue
            where, moves = chain
            scores = other_input(add, mask)
            if graph.tensor(add.outputs[0]).shape != graph.tensor(scores).shape:
                continue  # the mask would widen the scores: keep the Add's broadcast
            nodes = []
            if mask not in moved_conditions:
                moved_conditions[mask] = _move_condition(graph, where.inputs[0], moves, nodes)
            infinite_first = graph.const(where.inputs[1]) is not None and not np.all(np.isfinite(graph.const(where.inputs[1])))
            values = [where.inputs[1], scores] if infinite_first else [scores, where.inputs[2]]
            nodes.append(Node(add.name, "Where", [moved_conditions[mask], *values], list(add.outputs)))
            replaced[id(add)] = nodes
            break
    if not replaced:
        return
    graph.nodes = [m for n in graph.nodes for m in replaced.get(id(n), [n])]
    graph.prune()


def _mask_chain(graph: Graph, producer, name):
    """(the Where, the moves after it in order) when `name` is moves(Where(c, ±inf, 0)), else None."""
    moves = []
    node = producer.get(name)
    while node is not None and node.op_type in MOVES:
        moves.append(node)
        node = producer.get(node.inputs[0])
    if node is None or node.op_type != "Where" or not _is_mask(graph, node):
        return None
    return node, moves[::-1]


def _is_mask(graph: Graph, where: Node) -> bool:
    """Where(c, ±inf, 0) or Where(c, 0, ±inf), whose condition already has the output's shape."""
    a, b = graph.const(where.inputs[1]), graph.const(where.inputs[2])
    if a is None or b is None or a.dtype.kind != "f" or b.dtype.kind != "f":
        return False
    infinite, zero = (a, b) if a.size == 1 and np.isinf(a).all() else (b, a)
    if infinite.size != 1 or not np.isinf(infinite).all() or np.any(zero != 0):
        return False
    return graph.tensor(where.inputs[0]).shape == graph.tensor(where.outputs[0]).shape


def _move_condition(graph: Graph, condition: str, moves: list[Node], nodes: list[Node]) -> str:
    """The bool condition through copies of the mask's moves (appended to `nodes`): its new name."""
    for move in moves:
        out = graph.add_activation(condition + "_" + move.op_type.lower(), np.bool_, graph.tensor(move.outputs[0]).shape)
        nodes.append(Node(move.name + "_condition", move.op_type,
                          [condition] + move.inputs[1:], [out], dict(move.attrs)))
        condition = out
    return condition
