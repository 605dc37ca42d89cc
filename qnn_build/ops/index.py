"""Index ops (runtime/cpu/gather_scatter.cpp, topk.cpp, index_misc.cpp): gathers and scatters by
index tensors, TopK, CumSum, Trilu, OneHot. Axes are normalised and the values that must be known at
convert time (TopK's k, CumSum's axis, Trilu's k, OneHot's depth) become parameters."""

import numpy as np

from .base import OpRule, norm_axis, optional_const, rank_of, require_const, require_dtype, same, unsupported
from .movement import require_movable

_INDICES = (np.int64, np.int32)
_NUMBERS = (np.float32, np.int32, np.int64)


def _scalar(node, value, what) -> int:
    value = np.asarray(value)
    if value.size != 1:
        raise unsupported(node, f"{what} must be one value, got shape {value.shape}")
    return int(value.reshape(-1)[0])


def _gather_elements(node, graph):
    data, idx = node.inputs[:2]
    require_movable(node, graph, [data] + node.outputs)
    require_dtype(node, graph, [idx], _INDICES)
    return [same(node, axis=norm_axis(node, int(node.attrs.get("axis", 0)), rank_of(graph, data)))]


def _gather_nd(node, graph):
    data, idx = node.inputs[:2]
    require_movable(node, graph, [data] + node.outputs)
    require_dtype(node, graph, [idx], _INDICES)
    return [same(node, batch_dims=int(node.attrs.get("batch_dims", 0)))]


def _reduction(node, graph) -> str:
    how = node.attrs.get("reduction", "none")
    if how not in ("none", "add", "mul", "max", "min"):
        raise unsupported(node, f"reduction '{how}'")
    if how != "none":
        require_dtype(node, graph, [node.inputs[0]], _NUMBERS)
    return how


def _scatter_elements(node, graph):
    data, idx, updates = node.inputs[:3]
    require_movable(node, graph, [data, updates] + node.outputs)
    require_dtype(node, graph, [idx], _INDICES)
    axis = norm_axis(node, int(node.attrs.get("axis", 0)), rank_of(graph, data))
    return [same(node, "ScatterElements", axis=axis, reduction=_reduction(node, graph))]


def _scatter_nd(node, graph):
    data, idx, updates = node.inputs[:3]
    require_movable(node, graph, [data, updates] + node.outputs)
    require_dtype(node, graph, [idx], _INDICES)
    return [same(node, reduction=_reduction(node, graph))]


def _topk(node, graph):
    x = node.inputs[0]
    require_dtype(node, graph, [x, node.outputs[0]], _NUMBERS)
    require_dtype(node, graph, node.outputs[1:], (np.int64,))
    if graph.opset < 10:
        k = int(node.attrs["k"])
    else:
        k = _scalar(node, require_const(node, graph, 1, "k"), "k")
    axis = norm_axis(node, int(node.attrs.get("axis", -1)), rank_of(graph, x))
    # sorted=0 leaves the order to the implementation: ours is always sorted.
    outputs = list(node.outputs) + [""] * (2 - len(node.outputs))
    return [same(node, inputs=[x], outputs=outputs, k=k, axis=axis, largest=int(node.attrs.get("largest", 1)))]


def _cumsum(node, graph):
    x = node.inputs[0]
    require_dtype(node, graph, [x] + node.outputs, _NUMBERS)
    axis = norm_axis(node, _scalar(node, require_const(node, graph, 1, "axis"), "axis"), rank_of(graph, x))
    return [same(node, inputs=[x], axis=axis, exclusive=int(node.attrs.get("exclusive", 0)),
                 reverse=int(node.attrs.get("reverse", 0)))]


def _trilu(node, graph):
    x = node.inputs[0]
    require_movable(node, graph, [x] + node.outputs)
    if rank_of(graph, x) < 2:
        raise unsupported(node, "an input of rank < 2")
    k = optional_const(graph, node, 1)
    return [same(node, inputs=[x], k=0 if k is None else _scalar(node, k, "k"), upper=int(node.attrs.get("upper", 1)))]


def _onehot(node, graph):
    idx, depth, values = node.inputs[:3]
    require_dtype(node, graph, [idx], (np.int64, np.int32, np.int8, np.uint8, np.float32))
    require_movable(node, graph, [values] + node.outputs)
    out_rank = rank_of(graph, node.outputs[0])
    d = _scalar(node, require_const(node, graph, 1, "depth"), "depth")
    if graph.tensor(node.outputs[0]).shape[norm_axis(node, int(node.attrs.get("axis", -1)), out_rank)] != d:
        raise unsupported(node, "depth disagrees with the output shape")
    return [same(node, inputs=[idx, values], axis=norm_axis(node, int(node.attrs.get("axis", -1)), out_rank))]


RULES = [
    OpRule("GatherElements", _gather_elements),
    OpRule("GatherND", _gather_nd),
    OpRule("ScatterElements", _scatter_elements),
    OpRule("Scatter", _scatter_elements),
    OpRule("ScatterND", _scatter_nd),
    OpRule("TopK", _topk),
    OpRule("CumSum", _cumsum),
    OpRule("Trilu", _trilu),
    OpRule("OneHot", _onehot),
]
