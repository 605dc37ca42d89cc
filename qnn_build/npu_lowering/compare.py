"""npu parameters for the comparisons Equal, Greater, GreaterOrEqual, Less, LessOrEqual of encoded
operands: docs/npu.md (N35). Each operand's float32 scale as a 24-bit integer mantissa, and the left
shifts that put both operands' products on one exponent."""

import math

import numpy as np

from ..ir.graph import Graph, Node
from .common import scale

COMPARISONS = ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual")
MAX_SHIFT = 20  # (N35): a nonzero product is >= 2^23, the other < 2^40: a larger shift changes nothing


def float32_mantissa(value: float) -> tuple[int, int]:
    """(m, e) with float32(value) = m * 2^(e - 24), m in [2^23, 2^24): the scale the runtime holds."""
    mantissa, exponent = math.frexp(float(np.float32(value)))
    return int(mantissa * (1 << 24)), exponent


def compare(node: Node, graph: Graph) -> dict:
    """(N35)."""
    (ma, ea), (mb, eb) = (float32_mantissa(scale(graph, n)) for n in node.inputs[:2])
    d = ea - eb
    return {"npu_scale_mantissa": [ma, mb], "npu_scale_shift": [min(max(d, 0), MAX_SHIFT), min(max(-d, 0), MAX_SHIFT)]}


def reads_codes(node: Node, graph: Graph) -> bool:
    """A comparison of two integer-encoded operands (its bool output has no encoding)."""
    encodings = [graph.tensor(n).encoding for n in node.inputs[:2] if n]
    return node.op_type in COMPARISONS and len(encodings) == 2 and all(
        e is not None and not e.is_float for e in encodings)


RULES = {op: compare for op in COMPARISONS}
