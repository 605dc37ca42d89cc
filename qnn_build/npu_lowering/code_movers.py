"""Ops that only move codes once their operands hold the output's encoding: docs/npu.md (N37).
ScatterElements and ScatterND without a reduction (data and updates), OneHot (its [off, on]
values). An operand whose encoding differs is re-encoded first, a constant at convert time, an
activation by an inserted Identity (N20); the runtime then runs the cpu kernel on the codes
(runtime/npu/registry.cpp)."""

import numpy as np

from ..ir.graph import Graph, Node
from ..quant.encoding import dequantize, quantize, storage_dtype
from .common import is_integer_node

# op -> the inputs whose codes it moves into its output (runtime input order: OneHot's are [indices, values])
MOVED_OPERANDS = {"ScatterElements": (0, 2), "ScatterND": (0, 2), "OneHot": (1,)}


def _reduction(node: Node) -> str:
    """A scatter's reduction ("none": a plain move; else it adds or multiplies what it moves)."""
    return node.attrs.get("reduction", "none")


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
    """(N37): the moved operands of every integer code mover in its output's encoding."""
    out = []
    for node in graph.nodes:
        moved_inputs = MOVED_OPERANDS.get(node.op_type, ()) if _reduction(node) == "none" else ()
        encs = [graph.tensor(node.inputs[k]).encoding for k in moved_inputs]
        if encs and is_integer_node(node, graph) and all(
                e is not None and not e.is_float and len(e.scales) == 1 for e in encs):
            y = graph.tensor(node.outputs[0]).encoding
            for k in moved_inputs:
                name = node.inputs[k]
                moved = _codes_at(graph, name, y)
                if moved != name and not graph.tensor(name).is_const:
                    out.append(Node(f"{moved}/reencode", "Identity", [name], [moved]))
                node.inputs[k] = moved
        out.append(node)
    graph.nodes = out


def moves_codes(node: Node, graph: Graph) -> dict:
    """A scatter with a reduction adds or multiplies what it moves: on codes only the plain move."""
    how = _reduction(node)
    return {} if how == "none" else {"npu_unsupported": f"reduction '{how}'"}


RULES = {op: moves_codes for op in MOVED_OPERANDS}
