"""Comparisons and logic: bool outputs from float32 / integer operands (comparisons), from bools,
or from float32 (IsNaN: graphs that mask what a featurizer left undefined)."""

import numpy as np

from .base import OpRule, require_dtype, same, unsupported

_COMPARABLE = (np.float32, np.int32, np.int64, np.int16, np.uint16, np.int8, np.uint8, np.bool_)


def _compare(node, graph):
    a, b = node.inputs[:2]
    require_dtype(node, graph, [a, b], _COMPARABLE)
    require_dtype(node, graph, node.outputs, (np.bool_,))
    if graph.tensor(a).dtype != graph.tensor(b).dtype:
        raise unsupported(node, f"operands of dtypes {graph.tensor(a).dtype} and {graph.tensor(b).dtype}")
    return [same(node)]


def _logic(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs, (np.bool_,))
    return [same(node)]


def _is_nan(node, graph):
    require_dtype(node, graph, node.inputs, (np.float32,))
    require_dtype(node, graph, node.outputs, (np.bool_,))
    return [same(node)]


RULES = [OpRule(op, _compare) for op in ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual")] + [
    OpRule(op, _logic) for op in ("And", "Or", "Xor", "Not")] + [OpRule("IsNaN", _is_nan)]
