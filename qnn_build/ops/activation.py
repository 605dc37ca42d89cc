"""Unary float ops: the runtime takes each with its ONNX attributes, defaults made explicit."""

import numpy as np

from ..ir.graph import Node
from .base import OpRule, optional_const, passthrough, require_dtype, same


def _with_params(*names_and_defaults):
    def lower(node, graph):
        require_dtype(node, graph, node.inputs + node.outputs)
        params = {name: float(node.attrs.get(name, default)) for name, default in names_and_defaults}
        return [same(node, **params)]
    return lower


def _clip(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs)
    if graph.opset < 11:
        lo, hi = node.attrs.get("min", -np.inf), node.attrs.get("max", np.inf)
        return [same(node, inputs=node.inputs[:1], min=float(lo), max=float(hi))]
    bounds = [node.inputs[i] if i < len(node.inputs) else "" for i in (1, 2)]
    if any(b and graph.const(b) is None for b in bounds):
        return _clip_by_tensors(node, graph, bounds)
    lo_v, hi_v = optional_const(graph, node, 1), optional_const(graph, node, 2)
    lo = -np.inf if lo_v is None else float(lo_v)
    hi = np.inf if hi_v is None else float(hi_v)
    return [same(node, inputs=node.inputs[:1], min=lo, max=hi)]


def _clip_by_tensors(node, graph, bounds):
    """Bounds computed at run time: Clip(x, lo, hi) = Min(Max(x, lo), hi), as ONNX defines it."""
    lo, hi = bounds
    x, y = node.inputs[0], node.outputs[0]
    if lo and hi:
        mid = graph.add_activation(f"{y}/max", np.float32, graph.tensor(x).shape)
        return [Node(f"{node.name}/max", "Max", [x, lo], [mid]), Node(node.name, "Min", [mid, hi], [y])]
    return [Node(node.name, "Max" if lo else "Min", [x, lo or hi], [y])]


def _gelu(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs)
    return [same(node, approximate=node.attrs.get("approximate", "none"))]


RULES = [
    OpRule("Relu", passthrough()),
    OpRule("LeakyRelu", _with_params(("alpha", 0.01))),
    OpRule("Elu", _with_params(("alpha", 1.0))),
    OpRule("Clip", _clip),
    OpRule("Sigmoid", passthrough()),
    OpRule("HardSigmoid", _with_params(("alpha", 0.2), ("beta", 0.5))),
    OpRule("HardSwish", passthrough()),
    OpRule("Tanh", passthrough()),
    OpRule("Erf", passthrough()),
    OpRule("Gelu", _gelu),
    OpRule("Softplus", passthrough()),
    OpRule("Sqrt", passthrough()),
    OpRule("Exp", passthrough()),
    OpRule("Log", passthrough()),
    OpRule("Neg", passthrough()),
    OpRule("Abs", passthrough()),
    OpRule("Reciprocal", passthrough()),
]
