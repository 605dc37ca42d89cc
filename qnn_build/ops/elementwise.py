"""Broadcasting elementwise ops. Variadic Sum/Min/Max become chains of two-input nodes."""

import numpy as np

from ..ir.graph import Node
from .base import OpRule, passthrough, require_dtype, same, unsupported
from .movement import require_movable


def _variadic(binary_op):
    def lower(node, graph):
        require_dtype(node, graph, node.inputs + node.outputs)
        inputs = [i for i in node.inputs if i]
        out = node.outputs[0]
        if len(inputs) == 1:
            return [same(node, "Identity", inputs=inputs)]
        nodes, acc = [], inputs[0]
        for k, name in enumerate(inputs[1:], start=1):
            last = k == len(inputs) - 1
            shape = np.broadcast_shapes(graph.tensor(acc).shape, graph.tensor(name).shape)
            dst = out if last else graph.add_activation(f"{out}/{binary_op}{k}", np.float32, shape)
            nodes.append(Node(node.name if last else f"{node.name}/{k}", binary_op, [acc, name], [dst]))
            acc = dst
        return nodes
    return lower


def _where(node, graph):
    """Any value dtype: Where only moves elements."""
    require_dtype(node, graph, node.inputs[:1], (np.bool_,))
    require_movable(node, graph, node.inputs[1:] + node.outputs)
    if len({graph.tensor(n).dtype for n in node.inputs[1:] + node.outputs}) != 1:
        raise unsupported(node, "the two values and the output must have one dtype")
    return [same(node)]


RULES = [
    OpRule("Add", passthrough()),
    OpRule("Sub", passthrough()),
    OpRule("Mul", passthrough()),
    OpRule("Div", passthrough()),
    OpRule("Pow", passthrough()),
    OpRule("PRelu", passthrough()),
    OpRule("Sum", _variadic("Add")),
    OpRule("Min", _variadic("Min")),
    OpRule("Max", _variadic("Max")),
    OpRule("Where", _where),
]
