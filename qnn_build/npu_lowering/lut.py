"""npu lookup tables for unary ops: docs/npu.md (N6) for 8-bit inputs, the knots of (N7) for
16-bit inputs with (N7c) the exact entries of every knot interval where they miss by more than one
code (a kink between two knots), or (N7a) a whole table of every 16-bit code for the ops in
EXACT_16BIT. The smooth
functions are evaluated in float64 at convert time; the step functions (STEP_OPS, (N7b)) in the
cpu simulation's own float32 arithmetic, one entry per code at any width."""

import math

import numpy as np

from ..ir.graph import Graph, Node
from ..quant.encoding import dequantize, quantize
from .common import enc, scale, zp

KNOT_STEP = 64

# (N7a): ops where a straight line between two knots 64 codes apart is off by many output codes get
# one entry per 16-bit code (65,536) instead: Sqrt, whose slope is unbounded at 0 (hundreds of
# codes); Sin and Cos, whose curvature never fades and whose inputs (angles, positions) can span many
# periods, a period of a few knots at a range of hundreds; Selu, whose slope jumps at 0 from γα to γ
# (14-19 codes at the ranges of tests/npu/test_npu_lut_ops.py).
EXACT_16BIT = ("Sqrt", "Sin", "Cos", "Selu")


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _unary_fn(node: Node):
    """The float64 function of a tabulated smooth unary op, with its attributes."""
    p = node.attrs
    alpha = float(p.get("alpha", 1.0))
    with np.errstate(all="ignore"):
        table = {
            "Relu": lambda x: np.maximum(x, 0.0),
            "LeakyRelu": lambda x: np.where(x < 0, float(p.get("alpha", 0.01)) * x, x),
            "Elu": lambda x: np.where(x < 0, alpha * (np.exp(x) - 1.0), x),
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
            "Sin": np.sin,
            "Cos": np.cos,
            "Softsign": lambda x: x / (1.0 + np.abs(x)),
            "Mish": lambda x: x * np.tanh(np.logaddexp(0.0, x)),
            # the ONNX lowering (ops/math.py) made the defaults of Selu's alpha/gamma and Celu's alpha explicit
            "Selu": lambda x: float(p["gamma"]) * np.where(x > 0, x, float(p["alpha"]) * np.expm1(x)),
            "Celu": lambda x: np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(x / alpha)),
        }
    return table[node.op_type]


def lut(node: Node, graph: Graph) -> dict:
    """(N6) for 8-bit inputs; for 16-bit inputs (N7a) for an op in EXACT_16BIT, else the knots of (N7)
    and (N7c) the exact entries of the intervals where the knots miss (N7a)'s table by more than one code."""
    x, y = node.inputs[0], node.outputs[0]
    ex, ey = enc(graph, x), enc(graph, y)
    f = _unary_fn(node)
    sx, zx, sy, zy = scale(graph, x), zp(graph, x), scale(graph, y), zp(graph, y)
    qmax = (1 << ey.bitwidth) - 1
    q = np.arange(256 if ex.bitwidth <= 8 else 65537, dtype=np.float64)  # 16 bits: the last knot too
    with np.errstate(all="ignore"):
        t = np.round(f(sx * (q - zx)) / sy) + zy
    t = np.clip(np.nan_to_num(t, nan=0.0, posinf=2.0 ** 30, neginf=-2.0 ** 30), -2.0 ** 30, 2.0 ** 30).astype(np.int64)
    if ex.bitwidth <= 8:
        return {"npu_lut": [int(v) for v in np.clip(t, 0, qmax)]}
    exact, knots = np.clip(t[:65536], 0, qmax), t[::KNOT_STEP]
    if node.op_type in EXACT_16BIT:
        return {"npu_lut": [int(v) for v in exact]}
    missed = np.flatnonzero((np.abs(interpolate(knots, qmax) - exact) > 1).reshape(-1, KNOT_STEP).any(axis=1))
    if missed.size == 0:
        return {"npu_lut": [int(v) for v in knots]}
    patches = exact.reshape(-1, KNOT_STEP)[missed].ravel()  # (N7c): those intervals' exact entries
    return {"npu_lut": [int(v) for v in np.concatenate([knots, patches])], "npu_lut_patches": [int(k) for k in missed]}


def interpolate(knots: np.ndarray, qmax: int) -> np.ndarray:
    """(N7) for every 16-bit code, as runtime/npu/lut.cpp computes it from the knots."""
    k, r = np.divmod(np.arange(65536, dtype=np.int64), KNOT_STEP)
    lo, hi = knots[k], knots[k + 1]
    return np.clip(lo + (((hi - lo) * r + KNOT_STEP // 2) >> 6), 0, qmax)


def _mod_fn(node: Node, graph: Graph):
    """Mod by a constant divisor d as the cpu kernel computes it in float32 (C's fmod; with fmod=0 a
    nonzero remainder of the other sign than d moves by d), or the reason the npu cannot."""
    t = graph.tensor(node.inputs[1])
    if node.inputs[0] == node.inputs[1] or t.const is None or t.encoding is None or t.encoding.is_float:
        return "a divisor computed at run time"
    d = np.unique(dequantize(t.const.astype(np.int64), t.encoding))
    if d.size != 1:
        return "a divisor that differs between elements"
    if d[0] == 0:
        return "a zero divisor"
    if graph.tensor(node.inputs[0]).shape != graph.tensor(node.outputs[0]).shape:
        return "a divisor that broadcasts the dividend"
    d, keep_sign = d[0], int(node.attrs.get("fmod", 0)) == 1

    def mod(x):
        r = np.fmod(x, d)
        return r if keep_sign else np.where((r != 0) & ((r < 0) != (d < 0)), r + d, r)
    return mod


def step_table(node: Node, graph: Graph) -> dict:
    """(N7b): T[q] = (2)(f((1)(q))) for every input code, in float32 as the cpu simulation computes
    it, so an input a float32 rounding away from a step lands on the step's side the cpu sees."""
    x, y = node.inputs[0], node.outputs[0]
    f = STEP_FUNCTIONS.get(node.op_type) or _mod_fn(node, graph)
    if isinstance(f, str):
        return {"npu_unsupported": f}
    ex = enc(graph, x)
    values = dequantize(np.arange(1 << ex.bitwidth, dtype=np.int64), ex)  # every input code, (1)
    return {"npu_lut": [int(v) for v in quantize(f(values).astype(np.float32), enc(graph, y))]}


# float32 in, float32 out, exact (no rounding of their own): the cpu kernels' floorf, ceilf,
# nearbyint (half to even, as ONNX Round), sign.
STEP_FUNCTIONS = {"Floor": np.floor, "Ceil": np.ceil, "Round": np.rint, "Sign": np.sign}
STEP_OPS = (*STEP_FUNCTIONS, "Mod")

UNARY_OPS = ("Relu", "LeakyRelu", "Elu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Gelu",
             "Softplus", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Sin", "Cos", "Softsign", "Mish", "Selu",
             "Celu")
RULES = {**{op: lut for op in UNARY_OPS}, **{op: step_table for op in STEP_OPS}}
