"""Normalisation ops: Softmax, LogSoftmax, LayerNormalization, InstanceNormalization, GroupNormalization,
LRN, and standalone inference-mode BatchNormalization (lowered to Mul + Add with per-channel constants)."""

import numpy as np

from ..ir.graph import Node
from .base import OpRule, norm_axis, rank_of, require_const, require_dtype, same, unsupported


def _present(names):
    return [n for n in names if n]


def _softmax(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs)
    rank = rank_of(graph, node.inputs[0])
    if rank == 0:
        raise unsupported(node, "a scalar input")
    # Before opset 13 the input is coerced to 2-D at `axis` (default 1); from 13 one axis (default -1).
    legacy = graph.opset < 13
    axis = norm_axis(node, int(node.attrs.get("axis", 1 if legacy else -1)), rank)
    return [same(node, axis=axis, coerce_2d=int(legacy))]


def _fits(shape, target) -> bool:
    """`shape` holds exactly `target`'s elements in the same order (differing only by unit dims)."""
    try:
        return np.broadcast_shapes(shape, target) == tuple(target) and np.prod(shape) == np.prod(target)
    except ValueError:
        return False


def _per_element(node, graph, name, norm_shape, what):
    """An input laid out as the normalised shape: as is, or a constant broadcast to it."""
    shape = graph.tensor(name).shape
    if _fits(shape, norm_shape):
        return name
    value = graph.const(name)
    try:
        ok = value is not None and np.broadcast_shapes(shape, norm_shape) == tuple(norm_shape)
    except ValueError:
        ok = False
    if not ok:
        raise unsupported(node, f"{what} of shape {shape} does not broadcast to the normalised shape {norm_shape}"
                          + ("" if value is not None else " (or is not a constant)"))
    full = np.broadcast_to(value, norm_shape).astype(np.float32)
    return graph.add_const(f"{name}_{node.name}_full", full)


def _layer_norm(node, graph):
    require_dtype(node, graph, _present(node.inputs + node.outputs))
    shape = graph.tensor(node.inputs[0]).shape
    if len(node.inputs) < 2 or not node.inputs[1]:
        raise unsupported(node, "Scale is required")
    axis = norm_axis(node, int(node.attrs.get("axis", -1)), len(shape))
    norm_shape = shape[axis:]
    inputs = [node.inputs[0], _per_element(node, graph, node.inputs[1], norm_shape, "Scale")]
    if len(node.inputs) > 2 and node.inputs[2]:
        inputs.append(_per_element(node, graph, node.inputs[2], norm_shape, "B"))
    # Mean and InvStdDev are computed when the model names them (stash_type only matters below float32).
    return [same(node, inputs=inputs, axis=axis, epsilon=float(node.attrs.get("epsilon", 1e-5)))]


def _instance_norm(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs)
    shape = graph.tensor(node.inputs[0]).shape
    if len(shape) < 2:
        raise unsupported(node, f"input of rank {len(shape)}; expected [N, C, ...]")
    for name in node.inputs[1:3]:
        if int(np.prod(graph.tensor(name).shape)) != shape[1]:
            raise unsupported(node, f"'{name}' must hold one value per channel ({shape[1]})")
    return [same(node, epsilon=float(node.attrs.get("epsilon", 1e-5)))]


def _group_norm(node, graph):
    """GroupNormalization as InstanceNormalization over [N, G, C/G * spatial] (one mean and variance
    per group). Before opset 21 scale and bias hold one value per group: InstanceNormalization's own.
    From 21 they hold one per channel: applied after, as Mul + Add over [C, 1, ...]."""
    require_dtype(node, graph, node.inputs + node.outputs)
    x, scale, bias = node.inputs[:3]
    out = node.outputs[0]
    shape = graph.tensor(x).shape
    groups = int(node.attrs["num_groups"])
    if len(shape) < 2 or groups < 1 or shape[1] % groups:
        raise unsupported(node, f"{groups} groups for an input of shape {shape}")
    per_group = graph.opset < 21
    for name in (scale, bias):
        if int(np.prod(graph.tensor(name).shape)) != (groups if per_group else shape[1]):
            raise unsupported(node, f"'{name}' must hold one value per {'group' if per_group else 'channel'}")
    grouped = (shape[0], groups, int(np.prod(shape[1:])) // groups)
    flat = graph.add_activation(f"{out}/grouped", np.float32, grouped)
    normed = graph.add_activation(f"{out}/normalized", np.float32, grouped)
    epsilon = {"epsilon": float(node.attrs.get("epsilon", 1e-5))}
    nodes = [Node(f"{node.name}/group", "Reshape", [x], [flat])]
    if per_group:
        return nodes + [Node(f"{node.name}/normalize", "InstanceNormalization", [flat, scale, bias], [normed], epsilon),
                        Node(node.name, "Reshape", [normed], [out])]
    ones = graph.add_const(f"{node.name}_ones", np.ones(groups, np.float32))
    zeros = graph.add_const(f"{node.name}_zeros", np.zeros(groups, np.float32))
    back = graph.add_activation(f"{out}/ungrouped", np.float32, shape)
    scaled = graph.add_activation(f"{out}/scaled", np.float32, shape)
    param_shape = (shape[1],) + (1,) * (len(shape) - 2)
    per_channel = []
    for name in (scale, bias):
        view = graph.add_activation(f"{name}/{node.name}/per_channel", np.float32, param_shape)
        nodes.append(Node(f"{node.name}/{name}_view", "Reshape", [name], [view]))
        per_channel.append(view)
    return nodes + [Node(f"{node.name}/normalize", "InstanceNormalization", [flat, ones, zeros], [normed], epsilon),
                    Node(f"{node.name}/ungroup", "Reshape", [normed], [back]),
                    Node(f"{node.name}/scale", "Mul", [back, per_channel[0]], [scaled]),
                    Node(node.name, "Add", [scaled, per_channel[1]], [out])]


def _lrn(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs)
    if len(graph.tensor(node.inputs[0]).shape) < 2:
        raise unsupported(node, "input of rank < 2")
    size = int(node.attrs.get("size", 0))
    if size < 1:
        raise unsupported(node, "size must be a positive integer")
    return [same(node, size=size, alpha=float(node.attrs.get("alpha", 1e-4)),
                 beta=float(node.attrs.get("beta", 0.75)), bias=float(node.attrs.get("bias", 1.0)))]


def _extra_outputs_used(node, graph) -> bool:
    extra = set(_present(node.outputs[1:]))
    return bool(extra & set(graph.outputs)) or any(extra & set(n.inputs) for n in graph.nodes)


def _batch_norm(node, graph):
    """Inference BatchNormalization: y = x * s + t, s = gamma / sqrt(var + eps), t = beta - mean * s,
    as Mul + Add with constant s and t when the parameters are constants."""
    require_dtype(node, graph, node.inputs + node.outputs[:1])
    if int(node.attrs.get("training_mode", 0)):
        raise unsupported(node, "training_mode=1")
    if _extra_outputs_used(node, graph):
        raise unsupported(node, "running/saved mean and variance outputs (training only)")
    shape = graph.tensor(node.inputs[0]).shape
    if len(shape) < 2:
        raise unsupported(node, f"input of rank {len(shape)}; expected [N, C, ...]")
    names = ("scale", "B", "mean", "var")
    spatial = int(node.attrs.get("spatial", 1)) if graph.opset < 9 else 1
    epsilon = float(node.attrs.get("epsilon", 1e-5))
    if any(graph.const(n) is None for n in node.inputs[1:5]):
        # Parameters known only at run time: the runtime's own inference-mode kernel.
        if not spatial:
            raise unsupported(node, "spatial=0 with non-constant parameters")
        for name in node.inputs[1:5]:
            if int(np.prod(graph.tensor(name).shape)) != shape[1]:
                raise unsupported(node, f"'{name}' must hold one value per channel ({shape[1]})")
        return [same(node, inputs=node.inputs[:5], outputs=node.outputs[:1], epsilon=epsilon)]
    gamma, beta, mean, var = (require_const(node, graph, i + 1, names[i]).astype(np.float64) for i in range(4))
    # Per-channel parameters broadcast over [C, 1, ...]; opset 7's spatial=0 has one per element of x[0].
    param_shape = (shape[1],) + (1,) * (len(shape) - 2) if spatial else tuple(shape[1:])
    for name, value in zip(names, (gamma, beta, mean, var)):
        if value.size != int(np.prod(param_shape)):
            raise unsupported(node, f"{name} has {value.size} values; expected {int(np.prod(param_shape))}")
    s = gamma / np.sqrt(var + epsilon)
    t = beta - mean * s
    s_name = graph.add_const(f"{node.name}_bn_scale", s.reshape(param_shape).astype(np.float32))
    t_name = graph.add_const(f"{node.name}_bn_shift", t.reshape(param_shape).astype(np.float32))
    out = node.outputs[0]
    scaled = graph.add_activation(f"{out}/bn_scaled", np.float32, shape)
    return [Node(f"{node.name}/scale", "Mul", [node.inputs[0], s_name], [scaled]),
            Node(node.name, "Add", [scaled, t_name], [out])]


RULES = [
    OpRule("Softmax", _softmax),
    OpRule("LogSoftmax", _softmax),
    OpRule("LayerNormalization", _layer_norm),
    OpRule("InstanceNormalization", _instance_norm),
    OpRule("GroupNormalization", _group_norm),
    OpRule("LRN", _lrn),
    OpRule("BatchNormalization", _batch_norm),
]
