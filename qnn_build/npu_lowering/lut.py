"""npu lookup tables for unary ops: docs/npu.md (N6) for 8-bit inputs, the knots of (N7) for
16-bit inputs, or (N7a) a whole table of every 16-bit code for the ops in EXACT_16BIT. The functions
are evaluated in float64 at convert time."""

import math

import numpy as np

from ..ir.graph import Graph, Node
from .common import enc, scale, zp

KNOT_STEP = 64
KNOTS = 65536 // KNOT_STEP + 1

# (N7a): ops whose slope is unbounded at a code (Sqrt at 0), where a straight line between two knots
# 64 codes apart is off by hundreds of output codes, get one entry per 16-bit code (65,536) instead.
EXACT_16BIT = ("Sqrt",)


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _unary_fn(node: Node):
    """The float64 function of a tabulated unary op, with its attributes."""
    p = node.attrs
    with np.errstate(all="ignore"):
        table = {
            "Relu": lambda x: np.maximum(x, 0.0),
            "LeakyRelu": lambda x: np.where(x < 0, float(p.get("alpha", 0.01)) * x, x),
            "Elu": lambda x: np.where(x < 0, float(p.get("alpha", 1.0)) * (np.exp(x) - 1.0), x),
            "Clip": lambda x: np.clip(x, float(p.get("min", -np.inf)), float(p.get("max", np.inf))),
            "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
            "HardSigmoid": lambda x: np.clip(float(p.get("alpha", 0.2)) * x + float(p.get("beta", 0.5)), 0.0, 1.0),
            "HardSwish": lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
            "Tanh": np.tanh,
            "Erf": _erf,
            "Gelu": (lambda x: 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))))
            if p.get("approximate", "none") == "tanh" else (lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))),
            "Softplus": lambda x: np.logaddexp(0.0, x),
            "Sqrt": lambda x: np.sqrt(np.maximum(x, 0.0)),
            "Exp": np.exp,
            "Log": lambda x: np.log(np.maximum(x, 1e-30)),
            "Neg": lambda x: -x,
            "Abs": np.abs,
            "Reciprocal": lambda x: 1.0 / np.where(x == 0, 1e-30, x),
        }
    return table[node.op_type]


def lut(node: Node, graph: Graph) -> dict:
    """(N6) for 8-bit inputs, (N7a) for a 16-bit input of an op in EXACT_16BIT, else the knots of (N7)."""
    x, y = node.inputs[0], node.outputs[0]
    ex, ey = enc(graph, x), enc(graph, y)
    f = _unary_fn(node)
    sx, zx, sy, zy = scale(graph, x), zp(graph, x), scale(graph, y), zp(graph, y)
    qmax = (1 << ey.bitwidth) - 1
    with np.errstate(all="ignore"):
        if ex.bitwidth <= 8 or node.op_type in EXACT_16BIT:
            q = np.arange(256 if ex.bitwidth <= 8 else 65536, dtype=np.float64)
            t = np.clip(np.round(f(sx * (q - zx)) / sy) + zy, 0, qmax)
        else:
            q = np.arange(KNOTS, dtype=np.float64) * KNOT_STEP
            t = np.round(f(sx * (q - zx)) / sy) + zy
            t = np.clip(np.nan_to_num(t, nan=0.0, posinf=2.0 ** 30, neginf=-2.0 ** 30), -2.0 ** 30, 2.0 ** 30)
    return {"npu_lut": [int(v) for v in t]}




UNARY_OPS = ("Relu", "LeakyRelu", "Elu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Gelu",
             "Softplus", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal")
RULES = {op: lut for op in UNARY_OPS}
