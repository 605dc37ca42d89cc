"""The scatters on the npu: docs/npu.md (N37). ScatterElements and ScatterND without a reduction only
move codes once their data and updates hold the output's encoding: an operand whose encoding
differs is re-encoded first, a constant at convert time, an activation by an inserted Identity
(N20). The runtime then runs the cpu kernel on the codes (runtime/npu/registry.cpp)."""

import numpy as np

from ..ir.graph import Graph, Node
from ..quant.encoding import dequantize, quantize, storage_dtype
from .common import is_integer_node

SCATTERS = ("ScatterElements", "ScatterND")


def _codes_at(graph: Graph, name: str, enc) -> str:
    """`name`'s values as codes of `enc`: the tensor itself when they already are."""
    t = graph.tensor(name)
    if t.encoding.key() == enc.key() and (not t.is_const or t.dtype == np.dtype(storage_dtype(enc))):
        return name
    if t.is_const:
        values = dequantize(t.const.astype(np.int64), t.encoding)
        moved = graph.add_const(f"{name}/codes", quantize(values, enc).astype(storage_dtype(enc)))
    else:
        moved = graph.add_activation(f"{name}/codes", np.float32, t.shape)
    graph.tensor(moved).encoding = enc
    return moved


def unify_operands(graph: Graph) -> None:
    """(N37): every integer scatter's data and updates in its output's encoding."""
    out = []
    for node in graph.nodes:
        encs = [graph.tensor(n).encoding for n in (node.inputs[0], node.inputs[2])] if node.op_type in SCATTERS else []
        if (node.attrs.get("reduction", "none") == "none" and encs and is_integer_node(node, graph)
                and all(e is not None and not e.is_float and len(e.scales) == 1 for e in encs)):
            y = graph.tensor(node.outputs[0]).encoding
            for k in (0, 2):
                name = node.inputs[k]
                moved = _codes_at(graph, name, y)
                if moved != name and not graph.tensor(name).is_const:
                    out.append(Node(f"{moved}/reencode", "Identity", [name], [moved]))
                node.inputs[k] = moved
        out.append(node)
    graph.nodes = out


def scatter(node: Node, graph: Graph) -> dict:
    """The cpu kernel adds or multiplies what it scatters: on codes only the plain move (N37)."""
    how = node.attrs.get("reduction", "none")
    return {} if how == "none" else {"npu_unsupported": f"reduction '{how}'"}


RULES = {op: scatter for op in SCATTERS}
