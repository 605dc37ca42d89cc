"""Broadcasting elementwise ops. Variadic Sum/Min/Max become chains of two-input nodes. Add, Sub,
Mul, Div, Min and Max also take int32/int64 (index arithmetic), all operands of one dtype."""

import numpy as np

from ..ir.graph import Node
from .base import OpRule, passthrough, require_dtype, same, unsupported
from .movement import require_movable


_INTS = (np.int32, np.int64)


def _require_one_dtype(node, graph, allowed):
    require_dtype(node, graph, node.inputs + node.outputs, allowed)
    if len({graph.tensor(n).dtype for n in node.inputs + node.outputs if n}) != 1:
        raise unsupported(node, "operands of different dtypes")


def _arith(node, graph):
    _require_one_dtype(node, graph, (np.float32, *_INTS))
    return [same(node)]


def _variadic(binary_op, allowed=(np.float32,)):
    def lower(node, graph):
        _require_one_dtype(node, graph, allowed)
        dtype = graph.tensor(node.outputs[0]).dtype
        inputs = [i for i in node.inputs if i]
        out = node.outputs[0]
        if len(inputs) == 1:
            return [same(node, "Identity", inputs=inputs)]
        nodes, acc = [], inputs[0]
        for k, name in enumerate(inputs[1:], start=1):
            last = k == len(inputs) - 1
            shape = np.broadcast_shapes(graph.tensor(acc).shape, graph.tensor(name).shape)
            dst = out if last else graph.add_activation(f"{out}/{binary_op}{k}", dtype, shape)
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
    OpRule("Add", _arith),
    OpRule("Sub", _arith),
    OpRule("Mul", _arith),
    OpRule("Div", _arith),
    OpRule("Pow", passthrough()),
    OpRule("PRelu", passthrough()),
    OpRule("Sum", _variadic("Add")),
    OpRule("Min", _variadic("Min", (np.float32, *_INTS))),
    OpRule("Max", _variadic("Max", (np.float32, *_INTS))),
    OpRule("Where", _where),
]
