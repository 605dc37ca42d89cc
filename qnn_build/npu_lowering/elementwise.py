"""npu parameters for Add, Sub and Mul: docs/npu.md (N4), (N5)."""

from ..ir.graph import Graph, Node
from .common import enc, mults, scale


def add_sub(node: Node, graph: Graph) -> dict:
    """(N4)."""
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    sa, sb, sy = scale(graph, a), scale(graph, b), scale(graph, y)
    bits = max(enc(graph, n).bitwidth for n in (a, b, y))
    left = 20 if bits <= 8 else 30
    twice_max = 2.0 * max(sa, sb)
    return {"npu_left_shift": left, **mults(sa / twice_max, sb / twice_max, twice_max / ((1 << left) * sy))}


def mul(node: Node, graph: Graph) -> dict:
    """(N5)."""
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    return mults(scale(graph, a) * scale(graph, b) / scale(graph, y))


RULES = {"Add": add_sub, "Sub": add_sub, "Mul": mul}
