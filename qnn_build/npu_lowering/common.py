"""Shared by the npu parameter rules: encodings of a node's tensors and multiplier lists."""

from ..ir.graph import Graph, Node
from .fixedpoint import quantize_multiplier


def enc(graph: Graph, name: str):
    return graph.tensor(name).encoding


def scale(graph: Graph, name: str) -> float:
    return float(enc(graph, name).scales[0])


def zp(graph: Graph, name: str) -> int:
    return -int(enc(graph, name).offsets[0])


def is_integer_node(node: Node, graph: Graph) -> bool:
    out = graph.tensor(node.outputs[0])
    return out.encoding is not None and not out.encoding.is_float


def mults(*reals) -> dict:
    """`npu_mult` and `npu_shift` lists for real multipliers, (N1)."""
    pairs = [quantize_multiplier(r) for r in reals]
    return {"npu_mult": [p[0] for p in pairs], "npu_shift": [p[1] for p in pairs]}
