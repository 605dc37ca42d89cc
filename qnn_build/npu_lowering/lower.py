"""Integer parameters for the npu kernels, computed at convert time and stored as node parameters
(`npu_*`), so every host runs the same integers. One module per op family, listed here; semantics
in docs/npu.md."""

import numpy as np

from ..ir.graph import Graph
from . import elementwise, lut
from . import conv
from . import arith, code_movers, compare, movement, norm, pool
from .common import is_integer_node

FAMILIES = [elementwise, lut]
FAMILIES += [conv]  # docs/npu.md (N10)-(N15)
FAMILIES += [movement, pool, norm, arith]  # docs/npu.md (N20)-(N33)
FAMILIES += [compare, code_movers]  # (N35), (N37)

RULES = {}
for _family in FAMILIES:
    for _op, _rule in _family.RULES.items():
        assert _op not in RULES, f"two npu rules for {_op}"
        RULES[_op] = _rule


def add_npu_params(graph: Graph) -> None:
    """Attach the npu parameters to every integer node that has a rule."""
    code_movers.unify_operands(graph)
    for node in graph.nodes:
        if _has_rule(node, graph):
            node.attrs.update(RULES[node.op_type](node, graph))


def _has_rule(node, graph: Graph) -> bool:
    # Integer inputs without an encoding (Gather's indices, Where's condition) need none.
    # An fp16 input (kept at higher precision by an override) has no integer form to rescale.
    return node.op_type in RULES and (is_integer_node(node, graph) or compare.reads_codes(node, graph)) and all(
        (graph.tensor(n).encoding is not None and not graph.tensor(n).encoding.is_float)
        or graph.tensor(n).dtype != np.float32
        for n in node.inputs if n)


def refusal(node, graph: Graph) -> str | None:
    """What the npu kernel of a quantized node cannot honour, as its rule says (`npu_unsupported`,
    docs/npu.md (N34)); None when it can, or when the node gets no parameters."""
    return RULES[node.op_type](node, graph).get("npu_unsupported") if _has_rule(node, graph) else None
