"""MaxPool, AveragePool, LpPool and the global pools, with explicit windows.

Runtime params of MaxPool/AveragePool/LpPool: kernel_shape, strides, dilations (one int per spatial
dim), pads (begins then ends), plus count_include_pad (AveragePool) or p (LpPool). ceil_mode needs no
param: the output shape is static, so the kernel walks exactly the windows the graph's output holds.
MaxPool's Indices output is refused.
"""

import numpy as np

from .base import OpRule, passthrough, rank_of, require_dtype, same, unsupported
from .conv import AUTO_PADS, int_list, same_pads


def _window(node, graph):
    """kernel_shape, strides, dilations and explicit pads of a pooling node."""
    x = node.inputs[0]
    rank = rank_of(graph, x)
    if rank not in (3, 4, 5):
        raise unsupported(node, f"input rank {rank}; only 1D, 2D and 3D pooling (rank 3-5) is supported")
    r = rank - 2
    if "kernel_shape" not in node.attrs:
        raise unsupported(node, "kernel_shape is required")
    kernel = int_list(node, "kernel_shape", [], r)
    strides = int_list(node, "strides", [1] * r, r)
    dilations = int_list(node, "dilations", [1] * r, r)
    if min(kernel + strides + dilations) < 1:
        raise unsupported(node, "kernel_shape, strides and dilations must be >= 1")
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad not in AUTO_PADS:
        raise unsupported(node, f"auto_pad '{auto_pad}'")
    x_shape = graph.tensor(x).shape
    y_shape = graph.tensor(node.outputs[0]).shape
    if auto_pad == "NOTSET":
        pads = int_list(node, "pads", [0] * 2 * r, 2 * r)
    elif auto_pad == "VALID":
        pads = [0] * 2 * r
    else:
        pairs = [same_pads(auto_pad, x_shape[2 + i], y_shape[2 + i], strides[i], (kernel[i] - 1) * dilations[i] + 1)
                 for i in range(r)]
        pads = [p[0] for p in pairs] + [p[1] for p in pairs]
    if min(pads) < 0:
        raise unsupported(node, f"negative pads {pads}")
    if list(y_shape[:2]) != list(x_shape[:2]) or min(y_shape[2:]) < 1:
        raise unsupported(node, f"output shape {y_shape} does not fit input shape {x_shape}")
    return dict(kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads)


def _max_pool(node, graph):
    if len(node.outputs) > 1 and node.outputs[1]:
        raise unsupported(node, "the Indices output of MaxPool")
    require_dtype(node, graph, node.inputs[:1] + node.outputs[:1], (np.float32, np.int8, np.uint8))
    return [same(node, outputs=node.outputs[:1], **_window(node, graph))]


def _average_pool(node, graph):
    require_dtype(node, graph, node.inputs[:1] + node.outputs[:1])
    return [same(node, count_include_pad=int(node.attrs.get("count_include_pad", 0)), **_window(node, graph))]


def _lp_pool(node, graph):
    require_dtype(node, graph, node.inputs[:1] + node.outputs[:1])
    p = int(node.attrs.get("p", 2))
    if p < 1:
        raise unsupported(node, f"p={p}; only p >= 1 is supported")
    return [same(node, p=p, **_window(node, graph))]


RULES = [
    OpRule("MaxPool", _max_pool),
    OpRule("AveragePool", _average_pool),
    OpRule("LpPool", _lp_pool),
    OpRule("GlobalAveragePool", passthrough()),
    OpRule("GlobalMaxPool", passthrough()),
]
