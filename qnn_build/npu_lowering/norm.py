"""npu parameters for Softmax / LogSoftmax (docs/npu.md (N27), (N28)) and LayerNormalization /
InstanceNormalization (N29): exp tables, fixed-point reciprocal and log constants, and the
normalisation's epsilon, bias and output multiplier, all computed here in float64."""

import math

import numpy as np

from ..ir.graph import Graph, Node
from ..quant.encoding import dequantize
from .common import enc, mults, scale

EXP_BITS = 23        # (N27): exp(-s_x d) in Q23
KNOT_STEP = 64       # (N27): 16-bit inputs tabulate exp at every 64th code difference
KNOTS = 65536 // KNOT_STEP + 1
RECIP_BITS = 62      # (N27): the reciprocal of the sum is round(2^62 / S)
LOG_BITS = 20        # (N28): log2 in Q20
MEAN_BITS = 8        # (N29): the row mean carries 8 fractional bits
RSQRT_BITS_MAX = 32  # (N29): the normalised product carries at most 32 fractional bits
INT64_SAFE = 1 << 62


def exp_table(node: Node, graph: Graph) -> list[int]:
    """(N27): E[d] = round(2^23 exp(-s_x d)); exact per code difference for 8-bit inputs, knots
    every 64 differences (the last at 65536) for 16-bit inputs."""
    x = node.inputs[0]
    sx = scale(graph, x)
    d = np.arange(256, dtype=np.float64) if enc(graph, x).bitwidth <= 8 else np.arange(KNOTS, dtype=np.float64) * KNOT_STEP
    return [int(v) for v in np.round(np.exp(-sx * d) * (1 << EXP_BITS))]


def softmax(node: Node, graph: Graph) -> dict:
    """(N27): y = E[d] round(2^62 / S) requantized by 1 / (s_y 2^62)."""
    sy = scale(graph, node.outputs[0])
    return {"npu_exp_lut": exp_table(node, graph), "npu_exp_bits": EXP_BITS, "npu_recip_bits": RECIP_BITS,
            **mults(1.0 / (sy * 2.0 ** RECIP_BITS))}


def log_softmax(node: Node, graph: Graph) -> dict:
    """(N28): multipliers [s_x 2^20 / ln 2 (code difference to Q20 log2), ln 2 / (s_y 2^20)]."""
    sx, sy = scale(graph, node.inputs[0]), scale(graph, node.outputs[0])
    return {"npu_exp_lut": exp_table(node, graph), "npu_exp_bits": EXP_BITS, "npu_log_bits": LOG_BITS,
            **mults(sx * 2.0 ** LOG_BITS / math.log(2.0), math.log(2.0) / (sy * 2.0 ** LOG_BITS))}


def _clamp64(v: float) -> int:
    return int(max(-INT64_SAFE, min(INT64_SAFE, v)))


def normalization(node: Node, graph: Graph) -> dict:
    """(N29) for LayerNormalization (rows of the trailing dims from `axis`) and
    InstanceNormalization (planes of one channel)."""
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.tensor(x).shape
    if node.op_type == "LayerNormalization":
        n = int(np.prod(shape[int(node.attrs.get("axis", -1)) % len(shape):]))
    else:
        n = int(np.prod(shape[2:]))
    n = max(n, 1)
    sx, sy = scale(graph, x), scale(graph, y)
    gamma = node.inputs[1]
    sg = scale(graph, gamma)
    eps = float(node.attrs.get("epsilon", 1e-5))
    # R fraction bits: enough that one unit of u is below 2^-10 of an output step, no more (so an
    # in-range accumulator stays below 2^31 and requantizes in int64).
    r_bits = min(RSQRT_BITS_MAX, max(0, math.ceil(math.log2(sg * math.sqrt(n) / sy)) + 10))
    params = {"npu_mean_bits": MEAN_BITS, "npu_rsqrt_bits": r_bits,
              "npu_eps": max(1, _clamp64(round(eps * n * 4.0 ** MEAN_BITS / (sx * sx)))),
              **mults(sg * math.sqrt(n) / (2.0 ** r_bits * sy))}
    unsupported = [w for w in node.outputs[1:] if w]
    if unsupported:
        params["npu_unsupported"] = "the Mean / InvStdDev outputs"
    beta = node.inputs[2] if len(node.inputs) > 2 else ""
    if beta:
        t = graph.tensor(beta)
        if t.const is None or t.encoding is None or t.encoding.is_float:
            params["npu_unsupported"] = "a bias that is not a quantized constant"
        else:
            b = dequantize(t.const.astype(np.int64), t.encoding).astype(np.float64).reshape(-1)
            units = 2.0 ** r_bits / (sg * math.sqrt(n))
            params["npu_bias"] = [_clamp64(round(float(v) * units)) for v in b]
    return params


RULES = {"Softmax": softmax, "LogSoftmax": log_softmax, "LayerNormalization": normalization,
         "InstanceNormalization": normalization}
