"""Data movement rules. These ops only move elements, so any dtype the runtime knows is accepted.

Shapes are static, so the reshaping ops (Reshape, Flatten, Squeeze, Unsqueeze) all become one byte
copy, "Reshape", whatever their opset takes axes or shapes from. Everything else gets explicit,
normalised parameters: Slice per-dim starts/steps, Pad full begin/end pads, Split sizes, ...
DepthToSpace and SpaceToDepth are a Transpose of a reshaped view (param `in_shape`).
"""

import numpy as np
from onnx import helper

from ..ir.dtypes import supported_dtype
from ..ir.graph import Node
from .base import OpRule, norm_axis, optional_const, rank_of, require_const, same, unsupported


def require_movable(node: Node, graph, names) -> None:
    for name in names:
        if name and not supported_dtype(graph.tensor(name).dtype):
            raise unsupported(node, f"tensor '{name}' has dtype {graph.tensor(name).dtype}, which the runtime "
                                    f"does not support")


def _shape(graph, name) -> tuple[int, ...]:
    return tuple(graph.tensor(name).shape)


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def _identity(node, graph):
    require_movable(node, graph, node.inputs[:1] + node.outputs[:1])
    return [same(node, "Identity", inputs=node.inputs[:1], outputs=node.outputs[:1])]


def _reshape(node, graph):
    """Reshape, Flatten, Squeeze, Unsqueeze: the output shape is known, so a copy of the bytes."""
    x, y = node.inputs[0], node.outputs[0]
    require_movable(node, graph, [x, y])
    if int(np.prod(_shape(graph, x))) != int(np.prod(_shape(graph, y))):
        raise unsupported(node, f"output shape {_shape(graph, y)} does not hold the input's {_shape(graph, x)}")
    return [same(node, "Reshape", inputs=[x], outputs=[y])]


def _transpose(node, graph):
    require_movable(node, graph, node.inputs[:1] + node.outputs)
    r = rank_of(graph, node.inputs[0])
    perm = _ints(node.attrs["perm"]) if node.attrs.get("perm") is not None else list(range(r))[::-1]
    if sorted(perm) != list(range(r)):
        raise unsupported(node, f"perm {perm} is not a permutation of {r} dims")
    return [same(node, perm=perm)]


def _concat(node, graph):
    inputs = [i for i in node.inputs if i]
    require_movable(node, graph, inputs + node.outputs)
    dtypes = {graph.tensor(i).dtype for i in inputs}
    if len(dtypes) != 1:
        raise unsupported(node, "inputs of different dtypes")
    axis = node.attrs.get("axis", 1 if graph.opset < 4 else None)
    if axis is None:
        raise unsupported(node, "missing attribute axis")
    axis = norm_axis(node, int(axis), rank_of(graph, node.outputs[0]))
    return [same(node, inputs=inputs, axis=axis)]


def _split_sizes(node, graph, dim: int) -> list[int]:
    """The split along the axis, as the spec of the model's opset gives it."""
    split = node.attrs.get("split") if graph.opset < 13 else optional_const(graph, node, 1)
    n = len(node.outputs)
    if split is not None and np.asarray(split).size:
        return _ints(split)
    if "num_outputs" in node.attrs:  # opset 18: the last part may be smaller
        n = int(node.attrs["num_outputs"])
        chunk = -(-dim // n)
        return [chunk] * (n - 1) + [dim - chunk * (n - 1)]
    if dim % n:
        raise unsupported(node, f"dim {dim} does not split into {n} equal parts")
    return [dim // n] * n


def _split(node, graph):
    x = node.inputs[0]
    require_movable(node, graph, [x] + node.outputs)
    shape = _shape(graph, x)
    axis = norm_axis(node, int(node.attrs.get("axis", 0)), len(shape))
    sizes = _split_sizes(node, graph, shape[axis])
    if len(sizes) != len(node.outputs) or sum(sizes) != shape[axis] or min(sizes) < 0:
        raise unsupported(node, f"split {sizes} does not divide dim {shape[axis]} into {len(node.outputs)} outputs")
    for name, size in zip(node.outputs, sizes):
        if name and graph.tensor(name).shape[axis] != size:
            raise unsupported(node, f"output '{name}' has shape {graph.tensor(name).shape}; expected {size} "
                                    f"along axis {axis}")
    return [same(node, inputs=[x], axis=axis, split=sizes)]


def _slice_dim(start: int, end: int, step: int, dim: int) -> tuple[int, int]:
    """(first index, length) of start:end:step over a dim, clamped as ONNX Slice does."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return start, max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, max(0, -(-(start - end) // -step))


def _slice(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    require_movable(node, graph, [x, y])
    shape = _shape(graph, x)
    if graph.opset < 10:
        starts, ends = node.attrs["starts"], node.attrs["ends"]
        axes, steps = node.attrs.get("axes"), None
    else:
        starts = require_const(node, graph, 1, "starts")
        ends = require_const(node, graph, 2, "ends")
        axes, steps = optional_const(graph, node, 3), optional_const(graph, node, 4)
    starts, ends = _ints(starts), _ints(ends)
    axes = list(range(len(starts))) if axes is None else [norm_axis(node, a, len(shape)) for a in _ints(axes)]
    steps = [1] * len(starts) if steps is None else _ints(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps) or len(set(axes)) != len(axes):
        raise unsupported(node, "starts, ends, axes and steps must have one value per distinct axis")
    begin, stride = [0] * len(shape), [1] * len(shape)
    for axis, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            raise unsupported(node, "a step of 0")
        begin[axis], length = _slice_dim(s, e, st, shape[axis])
        stride[axis] = st
        if length != graph.tensor(y).shape[axis]:
            raise unsupported(node, f"slice length {length} along axis {axis} disagrees with the output shape")
    return [same(node, inputs=[x], starts=begin, steps=stride)]


def _gather(node, graph):
    x, idx = node.inputs[0], node.inputs[1]
    require_movable(node, graph, [x] + node.outputs)
    if graph.tensor(idx).dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise unsupported(node, f"indices have dtype {graph.tensor(idx).dtype}; only int64/int32 are supported")
    axis = norm_axis(node, int(node.attrs.get("axis", 0)), rank_of(graph, x))
    return [same(node, axis=axis)]


def _expand(node, graph):
    require_movable(node, graph, node.inputs[:1] + node.outputs)
    return [same(node, inputs=node.inputs[:1])]


def _tile(node, graph):
    x = node.inputs[0]
    require_movable(node, graph, [x] + node.outputs)
    repeats = _ints(require_const(node, graph, 1, "repeats"))
    if len(repeats) != rank_of(graph, x) or min(repeats, default=0) < 0:
        raise unsupported(node, f"repeats {repeats} must give one non-negative count per dim")
    return [same(node, inputs=[x], repeats=repeats)]


def _pad(node, graph):
    x = node.inputs[0]
    require_movable(node, graph, [x] + node.outputs)
    dtype, r = graph.tensor(x).dtype, rank_of(graph, x)
    mode = node.attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise unsupported(node, f"mode '{mode}'")
    value = None
    if graph.opset < 11:
        pads = _ints(node.attrs.get("pads", node.attrs.get("paddings", [])))
        fill = float(node.attrs.get("value", 0.0))
    else:
        pads = _ints(require_const(node, graph, 1, "pads"))
        fill = 0.0
        if len(node.inputs) > 2 and node.inputs[2]:
            value = node.inputs[2]
            require_movable(node, graph, [value])
            if graph.tensor(value).dtype != dtype or int(np.prod(_shape(graph, value))) != 1:
                raise unsupported(node, "constant_value must be one value of the data's dtype")
        axes = optional_const(graph, node, 3) if graph.opset >= 18 else None
        if axes is not None:
            axes = [norm_axis(node, a, r) for a in _ints(axes)]
            if len(pads) != 2 * len(axes):
                raise unsupported(node, f"{len(pads)} pads for {len(axes)} axes")
            full = [0] * (2 * r)
            for k, a in enumerate(axes):
                full[a], full[r + a] = pads[k], pads[len(axes) + k]
            pads = full
    if len(pads) != 2 * r:
        raise unsupported(node, f"{len(pads)} pads for rank {r}")
    inputs = [x]
    if mode == "constant":
        inputs.append(value or graph.add_const(f"{node.name}/pad_value", np.array(fill, dtype=dtype)))
    return [same(node, inputs=inputs, pads=pads, mode=mode)]


def _depth_to_space(node, graph):
    x = node.inputs[0]
    require_movable(node, graph, [x] + node.outputs)
    shape = _shape(graph, x)
    b, mode = int(node.attrs["blocksize"]), node.attrs.get("mode", "DCR")
    if len(shape) != 4 or shape[1] % (b * b):
        raise unsupported(node, f"input shape {shape} with blocksize {b}")
    n, c, h, w = shape
    if mode == "DCR":
        view, perm = [n, b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2]
    elif mode == "CRD":
        view, perm = [n, c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3]
    else:
        raise unsupported(node, f"mode '{mode}'")
    return [same(node, "Transpose", inputs=[x], perm=perm, in_shape=view)]


def _space_to_depth(node, graph):
    x = node.inputs[0]
    require_movable(node, graph, [x] + node.outputs)
    shape = _shape(graph, x)
    b, mode = int(node.attrs["blocksize"]), node.attrs.get("mode", "DCR")
    if len(shape) != 4 or shape[2] % b or shape[3] % b:
        raise unsupported(node, f"input shape {shape} with blocksize {b}")
    n, c, h, w = shape
    view = [n, c, h // b, b, w // b, b]
    perms = {"DCR": [0, 3, 5, 1, 2, 4], "CRD": [0, 1, 3, 5, 2, 4]}
    if mode not in perms:
        raise unsupported(node, f"mode '{mode}'")
    return [same(node, "Transpose", inputs=[x], perm=perms[mode], in_shape=view)]


def _cast_to(node, graph, target) -> list[Node]:
    x, y = node.inputs[0], node.outputs[0]
    require_movable(node, graph, [x, y])
    if np.dtype(target) != graph.tensor(y).dtype:
        raise unsupported(node, f"cast target {np.dtype(target)} disagrees with the output's dtype")
    if graph.tensor(x).dtype == graph.tensor(y).dtype:
        return [same(node, "Identity", inputs=[x], outputs=[y])]
    return [same(node, "Cast", inputs=[x], outputs=[y])]


def _cast(node, graph):
    to = node.attrs["to"]
    try:
        target = helper.tensor_dtype_to_np_dtype(int(to))
    except (KeyError, ValueError, TypeError):
        raise unsupported(node, f"cast to dtype code {to}") from None
    if not supported_dtype(target):
        raise unsupported(node, f"cast to {np.dtype(target)}, which the runtime does not support")
    return _cast_to(node, graph, target)


def _cast_like(node, graph):
    return _cast_to(node, graph, graph.tensor(node.inputs[1]).dtype)


RULES = [
    OpRule("Identity", _identity),
    OpRule("Reshape", _reshape),
    OpRule("Flatten", _reshape),
    OpRule("Squeeze", _reshape),
    OpRule("Unsqueeze", _reshape),
    OpRule("Transpose", _transpose),
    OpRule("Concat", _concat),
    OpRule("Split", _split),
    OpRule("Slice", _slice),
    OpRule("Gather", _gather),
    OpRule("Expand", _expand),
    OpRule("Tile", _tile),
    OpRule("Pad", _pad),
    OpRule("DepthToSpace", _depth_to_space),
    OpRule("SpaceToDepth", _space_to_depth),
    OpRule("Cast", _cast),
    OpRule("CastLike", _cast_like),
]
