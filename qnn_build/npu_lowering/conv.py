"""npu parameters for Conv, ConvTranspose, Gemm and MatMul: docs/npu.md (N10)-(N14).

Every product kernel computes, per output channel c (the weight's per-channel axis: Conv's output
channels, the N columns of Gemm/MatMul):

    total = sign · Σ_j m[c][j] · acc_j + bias[c],   acc_j = Σ_{k in block j} (x_k − zp_x) · (w_k − zp_w)
    q_y   = clamp(requantize(total, npu_mult[c], npu_shift[c]) + zp_y, 0, 2^b − 1)

with one block (m = 1) unless the weight is block-wise. The rules below compute the multipliers,
the block multipliers m (integers, (N11)) and, where the bias tensor is not already an int32 in the
accumulator's scale, the bias re-expressed in it (`npu_bias`). Anything the kernels cannot honour
is reported through `npu_refuse`, which the kernel's prepare turns into its error.
"""

import numpy as np

from ..errors import QnnBuildError
from ..ir.graph import Graph, Node
from ..quant.encoding import dequantize
from .common import enc, mults, scale

BLOCK_BITS = 20  # (N11): block multipliers are round(2^20 · s_w[c][j] / max_j s_w[c][j]) in [0, 2^20]


def _weight_scales(e, channels: int, axis_len: int, channel_of=lambda c: c) -> np.ndarray:
    """[channels, blocks] weight scales for every output channel. The encoding holds one scale
    (per tensor), one per entry of its axis (`axis_len` of them), or [axis entry][block] when
    block-wise; `channel_of(c)` is the axis entry output channel c uses (ConvTranspose repeats its
    O/g scales over the groups)."""
    scales = np.asarray(e.scales, np.float64)
    rows = 1 if e.axis < 0 else axis_len
    table = scales.reshape(rows, len(scales) // rows)
    return table[[0 if rows == 1 else channel_of(c) for c in range(channels)]]


def _accumulator_params(graph: Graph, s_x: float, s_w: np.ndarray, out: str, bias: str | None,
                        beta: float = 1.0, alpha: float = 1.0, blockwise: bool = False) -> dict:
    """Multipliers, block multipliers and bias for per-channel weight scales s_w [channels, blocks].

    One unit of channel c's accumulator is acc_scale[c] = s_x · s_w[c] (non-block), or
    s_x · max_j s_w[c][j] / 2^20 when block-wise (N11). With g = |alpha| (1 when alpha = 0) the
    output multiplier is g · acc_scale[c] / s_y, the accumulator's sign is sign(alpha), and the bias
    is beta · C / (g · acc_scale[c])."""
    s_y = scale(graph, out)
    channels, blocks = s_w.shape
    params = {}
    blockwise = blockwise or blocks > 1  # a block-wise weight with one block still follows (N11)
    if blockwise:
        smax = s_w.max(axis=1)
        smax = np.where(smax > 0, smax, 1.0)
        m = np.round(s_w / smax[:, None] * (1 << BLOCK_BITS)).astype(np.int64)
        params["npu_block_mult"] = [int(v) for v in m.reshape(-1)]
        acc_scale = s_x * smax / (1 << BLOCK_BITS)
    else:
        acc_scale = s_x * s_w[:, 0]
    g = abs(alpha) if alpha != 0 else 1.0
    params.update(mults(*(g * acc_scale / s_y)))
    if alpha <= 0:
        params["npu_acc_sign"] = -1 if alpha < 0 else 0
    if bias:
        params.update(_bias_params(graph, bias, acc_scale, channels, blockwise, beta / g))
    return params


def _bias_params(graph: Graph, bias: str, acc_scale: np.ndarray, channels: int, blockwise: bool,
                 gain: float) -> dict:
    """The bias as int32 in accumulator units: the tensor itself when it is already that ((8) with
    the same scales, gain 1), else `npu_bias` computed here."""
    t = graph.tensor(bias)
    if not t.is_const:
        return {"npu_refuse": f"bias '{bias}' is not a constant (the npu adds a constant int32 bias)"}
    if t.encoding is None or t.encoding.is_float:
        values = np.asarray(t.const, np.float64)
    else:
        e = t.encoding
        if (not blockwise and gain == 1.0 and e.bitwidth == 32 and t.const.size == channels
                and np.allclose(np.broadcast_to(np.asarray(e.scales, np.float64), (channels,)),
                                acc_scale, rtol=1e-6, atol=0)):
            return {}
        values = dequantize(np.asarray(t.const), e).astype(np.float64)
    values = values.reshape(-1)
    if values.size not in (1, channels):
        return {"npu_refuse": f"bias '{bias}' of {values.size} values does not broadcast over {channels} channels "
                              f"(the npu adds one bias per output channel)"}
    q = np.round(np.broadcast_to(values, (channels,)) * gain / acc_scale)
    q = np.clip(q, -(2.0 ** 62), 2.0 ** 62)
    return {"npu_bias": [int(v) for v in q]}


def _blockwise(graph: Graph, name: str) -> bool:
    e = enc(graph, name)
    return e is not None and e.block_axis >= 0


def _scales_for(graph: Graph, name: str, channels: int, axis_len: int, channel_of=lambda c: c) -> np.ndarray:
    return _weight_scales(enc(graph, name), channels, axis_len, channel_of)


def conv(node: Node, graph: Graph) -> dict:
    """(N10), (N11): Conv weight [O, I/g, k...], per-channel axis 0, blocks along axis 1."""
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    channels = graph.tensor(w).shape[0]
    s_w = _scales_for(graph, w, channels, channels)
    return _accumulator_params(graph, scale(graph, x), s_w, y, bias, blockwise=_blockwise(graph, w))


def conv_transpose(node: Node, graph: Graph) -> dict:
    """(N12): ConvTranspose weight [I, O/g, k...], per-channel axis 1 (O/g scales repeated over the
    groups), blocks along axis 0 (input channels)."""
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    per_group = graph.tensor(w).shape[1]
    channels = per_group * int(node.attrs.get("group", 1))
    s_w = _scales_for(graph, w, channels, per_group, lambda c: c % per_group)
    return _accumulator_params(graph, scale(graph, x), s_w, y, bias, blockwise=_blockwise(graph, w))


def _product_scales(node: Node, graph: Graph, b: str, n: int) -> np.ndarray:
    """[N, blocks] scales of B: its per-channel (per-column) weight scales, or its one scale."""
    e = enc(graph, b)
    if e.axis < 0 and e.block_axis < 0:
        return np.full((n, 1), float(e.scales[0]))
    return _scales_for(graph, b, n, n)


def gemm(node: Node, graph: Graph) -> dict:
    """(N13): Y = alpha · A·B + beta · C; alpha goes into the multiplier (its sign into
    npu_acc_sign), beta / alpha into the bias."""
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    c = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    b_shape = graph.tensor(b).shape
    n = b_shape[0] if node.attrs.get("trans_b") else b_shape[1]
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    s_w = _product_scales(node, graph, b, n)
    params = _accumulator_params(graph, scale(graph, a), s_w, y, c if beta != 0 else None,
                                 beta=beta, alpha=alpha, blockwise=_blockwise(graph, b))
    if c and beta != 0 and not graph.tensor(c).is_const:
        params["npu_refuse"] = (f"Gemm C '{c}' is an activation; the npu adds only a constant bias that "
                                f"broadcasts along N")
    elif c and beta != 0:
        shape = list(graph.tensor(c).shape)
        if len(shape) == 2 and shape[0] != 1:
            params["npu_refuse"] = f"Gemm C of shape {shape} varies along M; the npu adds a bias per column only"
    if c and beta == 0:
        params["npu_ignore_bias"] = 1
    return params


def matmul(node: Node, graph: Graph) -> dict:
    """(N14): MatMul with a constant (per-channel or block-wise) weight B, or two activations."""
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    n = graph.tensor(b).shape[-1] if len(graph.tensor(b).shape) >= 2 else 1
    s_w = _product_scales(node, graph, b, n)
    return _accumulator_params(graph, scale(graph, a), s_w, y, None, blockwise=_blockwise(graph, b))


def _guarded(rule):
    """The rule, or `npu_refuse` (reported by the kernel at prepare) when an operand is not an
    integer tensor or a multiplier is out of the npu's range: the model still converts for cpu."""
    def run(node: Node, graph: Graph) -> dict:
        for name in node.inputs[:2] + node.outputs[:1]:
            e = graph.tensor(name).encoding if name else None
            if e is None or e.is_float:
                return {"npu_refuse": f"operand '{name}' is not an integer tensor"}
        try:
            return rule(node, graph)
        except QnnBuildError as e:
            return {"npu_refuse": str(e)}
    run.__doc__ = rule.__doc__
    return run


RULES = {"Conv": _guarded(conv), "ConvTranspose": _guarded(conv_transpose), "Gemm": _guarded(gemm),
         "MatMul": _guarded(matmul)}
