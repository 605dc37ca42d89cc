"""npu parameters for pooling and reductions: docs/npu.md (N24) MaxPool / GlobalMaxPool /
ReduceMax / ReduceMin on codes, (N25) AveragePool / GlobalAveragePool / ReduceMean / ReduceSum
as an integer sum requantized with the count folded into the multiplier, (N26) ArgMax/ArgMin
(codes only: no parameters)."""

import numpy as np

from ..ir.graph import Graph, Node
from .common import mults, scale


def extreme(node: Node, graph: Graph) -> dict:
    """(N24): max/min of codes, then re-encoded to the output (N20) with s_x / s_y."""
    return mults(scale(graph, node.inputs[0]) / scale(graph, node.outputs[0]))


def average_pool(node: Node, graph: Graph) -> dict:
    """(N25): multiplier c-1 divides by a window count c, for c = 1 .. kernel volume."""
    ratio = scale(graph, node.inputs[0]) / scale(graph, node.outputs[0])
    volume = int(np.prod(node.attrs["kernel_shape"]))
    return mults(*[ratio / c for c in range(1, volume + 1)])


def global_average_pool(node: Node, graph: Graph) -> dict:
    """(N25): one count, the spatial size."""
    shape = graph.tensor(node.inputs[0]).shape
    count = int(np.prod(shape[2:]))
    return mults(scale(graph, node.inputs[0]) / (scale(graph, node.outputs[0]) * max(count, 1)))


def reduce_sum_mean(node: Node, graph: Graph) -> dict:
    """(N25): ReduceSum s_x / s_y; ReduceMean s_x / (s_y count)."""
    shape = graph.tensor(node.inputs[0]).shape
    count = int(np.prod([shape[a] for a in node.attrs.get("axes", [])])) if node.op_type == "ReduceMean" else 1
    return mults(scale(graph, node.inputs[0]) / (scale(graph, node.outputs[0]) * max(count, 1)))


RULES = {"MaxPool": extreme, "GlobalMaxPool": extreme, "ReduceMax": extreme, "ReduceMin": extreme,
         "AveragePool": average_pool, "GlobalAveragePool": global_average_pool,
         "ReduceSum": reduce_sum_mean, "ReduceMean": reduce_sum_mean}
