"""Reductions and ArgMax/ArgMin. Every reduction reaches the runtime with `axes`: the sorted,
non-negative axes it reduces, where an empty list means "reduce nothing" (noop_with_empty_axes);
ONNX's "no axes = all axes" is resolved here."""

import numpy as np

from .base import OpRule, norm_axis, rank_of, require_dtype, same, unsupported

# The opset from which `axes` is an input rather than an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}
_AXES_INPUT_SINCE_DEFAULT = 18


def _reduce(node, graph):
    # Bool ReduceMax / ReduceMin (opset 20) are any / all; int64 ReduceSum counts (a mask cast to int64).
    kinds = {"ReduceMax": (np.float32, np.bool_), "ReduceMin": (np.float32, np.bool_), "ReduceSum": (np.float32, np.int64)}
    require_dtype(node, graph, node.inputs[:1] + node.outputs, kinds.get(node.op_type, (np.float32,)))
    if graph.tensor(node.inputs[0]).dtype != graph.tensor(node.outputs[0]).dtype:
        raise unsupported(node, "input and output dtypes differ")
    rank = rank_of(graph, node.inputs[0])
    if graph.opset >= _AXES_INPUT_SINCE.get(node.op_type, _AXES_INPUT_SINCE_DEFAULT):
        name = node.inputs[1] if len(node.inputs) > 1 else ""
        if name and graph.const(name) is None:
            raise unsupported(node, "axes (input 1) must be a constant")
        axes = [int(a) for a in graph.const(name).reshape(-1)] if name else []
        noop = int(node.attrs.get("noop_with_empty_axes", 0))
    else:
        if len(node.inputs) > 1 and node.inputs[1]:
            raise unsupported(node, "axes as an input before the opset that made it one")
        axes = [int(a) for a in node.attrs.get("axes", [])]
        noop = 0
    if not axes and not noop:
        axes = list(range(rank))
    axes = sorted({norm_axis(node, a, rank) for a in axes})
    return [same(node, inputs=node.inputs[:1], axes=axes)]


def _arg(node, graph):
    require_dtype(node, graph, node.inputs)
    require_dtype(node, graph, node.outputs, (np.int64,))
    shape = graph.tensor(node.inputs[0]).shape
    if not shape:
        raise unsupported(node, "a scalar input")
    axis = norm_axis(node, int(node.attrs.get("axis", 0)), len(shape))
    if shape[axis] == 0:
        raise unsupported(node, "an empty axis")
    return [same(node, axis=axis, select_last_index=int(node.attrs.get("select_last_index", 0)))]


RULES = [OpRule(op, _reduce) for op in (
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")] + [
    OpRule("ArgMax", _arg),
    OpRule("ArgMin", _arg),
]
