"""The op table: ONNX op type -> the rule that lowers it to runtime nodes.

Each family module lists its rules; this table lists the families. Adding an op is one rule in its
family's module, one kernel in the matching runtime source, and one row in its table-driven test.
"""

from ..errors import ConvertError
from ..ir.graph import Graph
from . import (activation, conv, einsum, elementwise, index, logic, math, matmul, movement, norm, pool, reduce,
               resize, rnn)
from .base import OpRule

FAMILIES = [elementwise, activation, math, logic, conv, matmul, einsum, pool, reduce, norm, movement, index, resize, rnn]

RULES: dict[str, OpRule] = {}
for _family in FAMILIES:
    for _rule in _family.RULES:
        assert _rule.op_type not in RULES, f"two rules for {_rule.op_type}"
        RULES[_rule.op_type] = _rule


def supported_ops() -> list[str]:
    return sorted(RULES)


def lower_graph(graph: Graph) -> Graph:
    """Replace every ONNX node by its runtime nodes. An op without a rule is refused here."""
    lowered = []
    for node in graph.nodes:
        rule = RULES.get(node.op_type)
        if rule is None:
            raise ConvertError(f"{node.describe()}: op not supported by qnn-build "
                               f"(supported: see `qnn-build ops`)")
        lowered.extend(rule.lower(node, graph))
    graph.nodes = lowered
    graph.prune()
    return graph
