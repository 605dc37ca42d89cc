"""npu parameters for the remaining elementwise ops: docs/npu.md (N30) Div, (N31) Min / Max /
Where, (N32) PRelu, (N33) Pow with a constant exponent of 2, 1 or 0.5."""

import math

import numpy as np

from ..ir.graph import Graph, Node
from ..quant.encoding import dequantize
from .common import mults, scale

DIV_MAX_SHIFT = 44
SQRT_BITS = 16  # (N33): isqrt(v << 32) = sqrt(v) in Q16


def div(node: Node, graph: Graph) -> dict:
    """(N30): quotient of (v_a << D) by v_b, requantized by K / 2^D, K = s_a / (s_b s_y), with D
    chosen so the quotient's rounding is below 1/64 of an output step."""
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    k = scale(graph, a) / (scale(graph, b) * scale(graph, y))
    d = max(0, min(DIV_MAX_SHIFT, math.ceil(math.log2(k)) + 6))
    return {"npu_div_shift": d, **mults(k / 2.0 ** d)}


def reencode_operands(node: Node, graph: Graph) -> dict:
    """(N31): each data operand re-encoded to the output: s_operand / s_y."""
    data = node.inputs[1:3] if node.op_type == "Where" else node.inputs[:2]
    sy = scale(graph, node.outputs[0])
    return mults(*[scale(graph, n) / sy for n in data])


def prelu(node: Node, graph: Graph) -> dict:
    """(N32): [s_x / s_y for x >= 0, s_x s_slope / s_y for x < 0]."""
    sx, ss, sy = scale(graph, node.inputs[0]), scale(graph, node.inputs[1]), scale(graph, node.outputs[0])
    return mults(sx / sy, sx * ss / sy)


def pow_(node: Node, graph: Graph) -> dict:
    """(N33)."""
    x, e, y = node.inputs[0], node.inputs[1], node.outputs[0]
    t = graph.tensor(e)
    if t.const is None or t.encoding is None or t.encoding.is_float:
        return {"npu_unsupported": "a non-constant exponent"}
    values = dequantize(t.const.astype(np.int64), t.encoding).astype(np.float64).reshape(-1)
    if values.size == 0 or np.ptp(values) > 1e-6:
        return {"npu_unsupported": "an exponent that differs between elements"}
    c = float(values[0])
    sx, sy = scale(graph, x), scale(graph, y)
    for target, mode, real in ((2.0, "square", sx * sx / sy), (1.0, "identity", sx / sy),
                               (0.5, "sqrt", math.sqrt(sx) / (sy * 2.0 ** SQRT_BITS))):
        if abs(c - target) <= 1e-3 * target:
            return {"npu_pow": mode, **mults(real)}
    return {"npu_unsupported": f"exponent {c:g}"}


RULES = {"Div": div, "Min": reencode_operands, "Max": reencode_operands, "Where": reencode_operands,
         "PRelu": prelu, "Pow": pow_}
