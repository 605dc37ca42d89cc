"""An additive attention mask becomes a selection:

    Add(scores, moves(Where(c, FILL, 0)))              ->  Where(moves(c), FILL, scores)
    Add(scores, moves(Where(Cast(x, bool), FILL, x)))  ->  Where(moves(Cast(x, bool)), FILL, scores)
    Add(scores, moves(Mul(f, FILL)))                   ->  Where(moves(Equal(f, 0)), scores, FILL)

where `moves` is a chain of shape-only nodes (Reshape, Expand, Unsqueeze, Squeeze, Flatten,
Transpose) and FILL a one-element constant that means "never" (`is_fill`): an infinity of either
sign, or a dtype's lowest finite value as PyTorch and Hugging Face write it (torch.finfo(dtype).min).
PyTorch exports a key-padding mask as masked_fill(~mask, -inf) reshaped to [B, heads, 1, S]; Hugging
Face as masked_fill of the inverted mask (1 - mask) by finfo.min (the Cast form), or as
(1 - mask) * finfo.min (the Mul form, f the inverted 0/1 mask); either added to the scores before Softmax.
Where f is 1 - Cast(m) of a bool or integer mask m, both forms become Where(moves(m as bool), scores,
FILL): the condition never passes through float.

In float the two are equal element by element: s + -inf = -inf; s + finfo.min rounds to finfo.min for
any |s| < 1e31 (half its float32 step); s + 0 = s. The Mul form holds so for a 0/1 mask (f = 0 gives
s + -0 = s, f = 1 gives s + FILL); a fractional f, which no mask holds, would differ before Softmax
only. float16's lowest is not absorbed (-65504 + s): a row with a key unmasked still gives the masked
ones e^-65000 = 0 after Softmax, a row with every key masked differs. So the cpu path keeps
onnxruntime's results. Quantized they are not equal: the mask alone
holds only 0 and FILL, and an Add of codes would add nothing, or destroy the scores' range. The
Where instead writes the scores' own encoding, and a masked position the lowest code of it (docs/
quantization.md "Attention masks of -inf"). The condition's chain runs on bools: it moves bytes only.
"""

import numpy as np
import onnx

from .graph import Graph, Node
from .patterns import other_input

MOVES = {"Reshape", "Expand", "Unsqueeze", "Squeeze", "Flatten", "Transpose", "Identity"}

# A finite fill is a magnitude no score reaches: float32's and bfloat16's lowest (-3.4e38) and the
# -1e30 some code writes lie beyond it; float16's lowest (-65504), where a model was float16, exactly.
HUGE = 1e30
FLOAT16_MAX = float(np.finfo(np.float16).max)


def fill_values(values: np.ndarray) -> np.ndarray:
    """Where `values` holds a mask's "never": an infinity, a magnitude of at least HUGE, or ±65504."""
    magnitude = np.abs(values)
    return (magnitude >= HUGE) | (magnitude == FLOAT16_MAX)


def is_fill(value) -> bool:
    """A float constant holding a mask's "never" (any entry of it)."""
    return value is not None and value.dtype.kind == "f" and bool(fill_values(value).any())


def select_masked_scores(graph: Graph) -> None:
    producer = graph.producers()
    moved_conditions: dict[str, tuple[str, bool]] = {}  # a mask tensor -> (its condition moved, masks when true)
    replaced: dict[int, list[Node]] = {}
    for add in graph.nodes:
        if add.op_type != "Add" or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
            continue
        for mask in add.inputs:
            found = _mask_chain(graph, producer, mask)
            if found is None:
                continue
            source, moves, fill, factor = found
            scores = other_input(add, mask)
            if graph.tensor(add.outputs[0]).shape != graph.tensor(scores).shape:
                continue  # the mask would widen the scores: keep the Add's broadcast
            nodes = []
            if mask not in moved_conditions:
                condition, masks_when_true = _condition(graph, producer, source, fill, factor, nodes)
                moved_conditions[mask] = _move_condition(graph, condition, moves, nodes), masks_when_true
            condition, masks_when_true = moved_conditions[mask]
            values = [fill, scores] if masks_when_true else [scores, fill]
            nodes.append(Node(add.name, "Where", [condition, *values], list(add.outputs)))
            replaced[id(add)] = nodes
            break
    if not replaced:
        return
    graph.nodes = [m for n in graph.nodes for m in replaced.get(id(n), [n])]
    graph.prune()


def _mask_chain(graph: Graph, producer, name):
    """(the Where or Mul, the moves after it in order, the fill's name, the inverted 0/1 mask f of
    the Cast and Mul forms or None) when `name` is one of the module's mask forms, else None."""
    moves = []
    node = producer.get(name)
    while node is not None and node.op_type in MOVES:
        moves.append(node)
        node = producer.get(node.inputs[0])
    if node is None or node.op_type not in ("Where", "Mul"):
        return None
    fill = _fill_index(graph, node)
    if fill is None:
        return None
    shaped = node.inputs[0] if node.op_type == "Where" else node.inputs[1 - fill]  # the condition or factor
    if graph.tensor(shaped).shape != graph.tensor(node.outputs[0]).shape:
        return None  # the values widen it: the moves would not fit it
    if node.op_type == "Mul":
        factor = node.inputs[1 - fill]
        if graph.const(factor) is not None or not np.isfinite(graph.const(node.inputs[fill])).all():
            return None  # 0 · inf is NaN: the source's own mask is not one where f = 0
        return node, moves[::-1], node.inputs[fill], factor
    other = node.inputs[3 - fill]
    zero = graph.const(other)
    if zero is not None and zero.dtype.kind == "f" and not np.any(zero):
        return node, moves[::-1], node.inputs[fill], None
    cast = producer.get(node.inputs[0])
    while cast is not None and (cast.op_type == "Identity" or _casts_to(cast, onnx.TensorProto.BOOL)
                                and graph.tensor(cast.inputs[0]).dtype == np.bool_):
        cast = producer.get(cast.inputs[0])  # a bool cast to bool again (transformers 4.x's sdpa path)
    if fill == 1 and _casts_to(cast, onnx.TensorProto.BOOL) and cast.inputs[0] == other:
        return node, moves[::-1], node.inputs[fill], other  # where the condition is false, f is 0
    return None


def _fill_index(graph: Graph, node: Node):
    """The input index of a one-element fill constant among the node's values, else None."""
    indices = (1, 2) if node.op_type == "Where" else (0, 1)
    if len(node.inputs) != len(indices) + (node.op_type == "Where"):
        return None
    for index in indices:
        value = graph.const(node.inputs[index])
        if value is not None and value.size == 1 and value.dtype.kind == "f" and fill_values(value).all():
            return index
    return None


def _casts_to(node, dtype: int) -> bool:
    return node is not None and node.op_type == "Cast" and int(node.attrs.get("to", -1)) == dtype


def _condition(graph: Graph, producer, source: Node, fill: str, factor, nodes: list[Node]) -> tuple[str, bool]:
    """(the bool condition of a mask form, whether true masks), new nodes appended to `nodes`. The
    Cast and Mul forms' f = 1 - Cast(m) of a bool or integer 0/1 mask m: m itself, as bools, so the
    condition never passes through float (and the Cast to float, which the npu has no kernel for,
    goes); another f: f = 0 where nothing is masked."""
    if factor is None:
        return source.inputs[0], source.inputs[1] == fill
    sub = producer.get(factor)
    if sub is not None and sub.op_type == "Sub" and _is_one(graph.const(sub.inputs[0])) \
            and _casts_to(producer.get(sub.inputs[1]), onnx.TensorProto.FLOAT):
        mask = producer[sub.inputs[1]].inputs[0]
        if graph.tensor(mask).dtype == np.bool_:
            return mask, False
        if graph.tensor(mask).dtype.kind in "iu":
            out = graph.add_activation(mask + "_bool", np.bool_, graph.tensor(mask).shape)
            nodes.append(Node(sub.name + "_condition", "Cast", [mask], [out], {"to": onnx.TensorProto.BOOL}))
            return out, False
    if source.op_type == "Where":
        return source.inputs[0], True
    zero = graph.add_const(factor + "_zero", np.zeros((), graph.tensor(factor).dtype))
    out = graph.add_activation(factor + "_is_zero", np.bool_, graph.tensor(factor).shape)
    nodes.append(Node(source.name + "_condition", "Equal", [factor, zero], [out]))
    return out, False


def _is_one(value) -> bool:
    return value is not None and value.size == 1 and float(value.reshape(())) == 1.0


def _move_condition(graph: Graph, condition: str, moves: list[Node], nodes: list[Node]) -> str:
    """The bool condition through copies of the mask's moves (appended to `nodes`): its new name."""
    for move in moves:
        shape = graph.tensor(move.outputs[0]).shape
        out = graph.add_activation(condition + "_" + move.op_type.lower(), np.bool_, shape)
        nodes.append(Node(move.name + "_condition", move.op_type,
                          [condition] + move.inputs[1:], [out], dict(move.attrs)))
        condition = out
    return condition
