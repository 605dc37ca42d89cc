"""Elementwise math beyond the activations (runtime/cpu/math.cpp): rounding, trigonometry, Sign,
Softsign/Mish/Selu/Celu and Mod. Defaults of attributes are made explicit here."""

import numpy as np

from .base import OpRule, passthrough, require_dtype, same, unsupported

_INTS = (np.int32, np.int64)


def _with_params(*names_and_defaults):
    def lower(node, graph):
        require_dtype(node, graph, node.inputs + node.outputs)
        return [same(node, **{k: float(node.attrs.get(k, d)) for k, d in names_and_defaults})]
    return lower


def _mod(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs, (np.float32, *_INTS))
    fmod = int(node.attrs.get("fmod", 0))
    if len({graph.tensor(n).dtype for n in node.inputs + node.outputs}) != 1:
        raise unsupported(node, "operands of different dtypes")
    return [same(node, fmod=fmod)]  # a float fmod=0 is numpy.mod (the divisor's sign), as onnx's tests


RULES = [
    OpRule("Sin", passthrough()),
    OpRule("Cos", passthrough()),
    OpRule("Floor", passthrough()),
    OpRule("Ceil", passthrough()),
    OpRule("Round", passthrough()),
    OpRule("Sign", passthrough((np.float32, *_INTS))),
    OpRule("Softsign", passthrough()),
    OpRule("Mish", passthrough()),
    OpRule("Selu", _with_params(("alpha", 1.67326319217681884765625), ("gamma", 1.05070102214813232421875))),
    OpRule("Celu", _with_params(("alpha", 1.0))),
    OpRule("Mod", _mod),
]
