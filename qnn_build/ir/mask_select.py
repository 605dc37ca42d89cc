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
            where, moves, infinite = chain
            scores = other_input(add, mask)
            if graph.tensor(add.outputs[0]).shape != graph.tensor(scores).shape:
                continue  # the mask would widen the scores: keep the Add's broadcast
            nodes = []
            if mask not in moved_conditions:
                moved_conditions[mask] = _move_condition(graph, where.inputs[0], moves, nodes)
            values = [where.inputs[1], scores] if infinite == 1 else [scores, where.inputs[2]]
            nodes.append(Node(add.name, "Where", [moved_conditions[mask], *values], list(add.outputs)))
            replaced[id(add)] = nodes
            break
    if not replaced:
        return
    graph.nodes = [m for n in graph.nodes for m in replaced.get(id(n), [n])]
    graph.prune()


def _mask_chain(graph: Graph, producer, name):
    """(the Where, the moves after it in order, the Where's input index of the infinity) when `name`
    is moves(Where(c, ±inf, 0)) or moves(Where(c, 0, ±inf)), else None."""
    moves = []
    node = producer.get(name)
    while node is not None and node.op_type in MOVES:
        moves.append(node)
        node = producer.get(node.inputs[0])
    if node is None or node.op_type != "Where":
        return None
    if graph.tensor(node.inputs[0]).shape != graph.tensor(node.outputs[0]).shape:
        return None  # the values widen the condition: the moves would not fit it
    a, b = graph.const(node.inputs[1]), graph.const(node.inputs[2])
    for index, infinite, zero in ((1, a, b), (2, b, a)):
        if _one_infinity(infinite) and zero is not None and zero.dtype.kind == "f" and not np.any(zero):
            return node, moves[::-1], index
    return None


def _one_infinity(value) -> bool:
    return value is not None and value.dtype.kind == "f" and value.size == 1 and bool(np.isinf(value).all())


def _move_condition(graph: Graph, condition: str, moves: list[Node], nodes: list[Node]) -> str:
    """The bool condition through copies of the mask's moves (appended to `nodes`): its new name."""
    for move in moves:
        shape = graph.tensor(move.outputs[0]).shape
        out = graph.add_activation(condition + "_" + move.op_type.lower(), np.bool_, shape)
        nodes.append(Node(move.name + "_condition", move.op_type,
                          [condition] + move.inputs[1:], [out], dict(move.attrs)))
        condition = out
    return condition
