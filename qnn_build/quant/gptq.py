"""GPTQ weight rounding (`weight_rounding: gptq`): each weight's input dimension quantized column by
column with the existing encodings, each column's rounding error fed back into the columns not yet
quantized through the Cholesky factor of the inverse of H = 2·E[x xᵀ] over the layer's float inputs.
Equations: docs/quantization.md (17)-(20).

H is accumulated in float64 over the calibration samples, one sample at a time, from the float model
run on our cpu backend (keep_tensors). Deterministic: one thread, the samples in order, a fixed
column order.
"""

import hashlib

import numpy as np
from threadpoolctl import threadpool_limits

from ..errors import QnnBuildError
from ..log import progress
from .encoding import Encoding, _broadcast_params

GPTQ_MAX_COLUMNS = 4096     # a layer whose H would be larger keeps nearest rounding
GPTQ_DAMP = 0.01            # (18): the fraction of H's mean diagonal added to its diagonal
GPTQ_BLOCK = 128            # columns updated together (lazy batch updates: the same maths, fewer passes)
# Input vectors of one sample that H takes per layer, at most: a conv over a large image has tens of
# thousands of positions per sample, far more than a K x K matrix needs, and forming them all cost
# more than the rest of the conversion (PP-OCRv4's detector). A fixed pseudo-random subset (no
# aliasing with the image's rows), the same for every sample.
GPTQ_MAX_ROWS = 1024


def _one_blas_thread():
    """numpy's BLAS on one thread for H's sums and the factorizations: the same bytes on a machine
    with any number of cores, and no CPU time spent in threads waiting for a core on a busy machine
    (there, two threads doubled GPTQ's CPU time)."""
    return threadpool_limits(limits=1, user_api="blas")


def gptq_layers(graph) -> dict:
    """Weight name -> the node that multiplies it, for every Conv, Gemm and MatMul by a 2-D constant
    whose weight feeds that node alone and whose H has at most GPTQ_MAX_COLUMNS columns."""
    uses = {}
    for node in graph.nodes:
        for name in node.inputs:
            if name:
                uses[name] = uses.get(name, 0) + 1
    out = {}
    for node in graph.nodes:
        if node.op_type not in ("Conv", "Gemm", "MatMul") or len(node.inputs) < 2:
            continue
        w = graph.tensors.get(node.inputs[1])
        x = graph.tensors.get(node.inputs[0])
        if w is None or not w.is_const or w.dtype != np.float32 or x is None or x.is_const or uses[w.name] != 1:
            continue
        if node.op_type == "MatMul" and len(w.shape) != 2:
            continue
        if _columns(node, w.shape) <= GPTQ_MAX_COLUMNS:
            out[w.name] = node
    return out


def _columns(node, w_shape) -> int:
    """K: the length of one input vector of the layer (per group for a conv)."""
    if node.op_type == "Conv":
        return int(np.prod(w_shape[1:]))
    if node.op_type == "Gemm":
        return w_shape[1] if node.attrs.get("trans_b") else w_shape[0]
    return w_shape[0]


def _subset(n: int, most: int | None):
    """All of n rows, or `most` of them: a fixed pseudo-random choice, in order."""
    if most is None or n <= most:
        return slice(None)
    return np.sort(np.random.default_rng(n).choice(n, most, replace=False))


def input_rows(node, x: np.ndarray, w_shape, max_rows: int | None = None) -> list[np.ndarray]:
    """The layer's input vectors as rows [n, K], one matrix per group (conv: im2col patches in the
    weight's (channel, kernel...) order, with the node's pads, strides and dilations); at most
    max_rows of them (_subset)."""
    # im2col in the tensor's own dtype: only the rows taken are widened to float64
    x = np.asarray(x)
    if node.op_type == "Gemm":  # A is [M, K], or [K, M] with trans_a
        a = x.T if node.attrs.get("trans_a") else x
        return [a[_subset(a.shape[0], max_rows)].astype(np.float64)]
    if node.op_type == "MatMul":
        a = x.reshape(-1, x.shape[-1])
        return [a[_subset(a.shape[0], max_rows)].astype(np.float64)]
    group = int(node.attrs.get("group", 1))
    kernel = list(w_shape[2:])
    r = len(kernel)
    strides = list(node.attrs.get("strides", [1] * r))
    dilations = list(node.attrs.get("dilations", [1] * r))
    pads = list(node.attrs.get("pads", [0] * 2 * r))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[r + i]) for i in range(r)])
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    win = np.lib.stride_tricks.sliding_window_view(xp, extents, axis=tuple(range(2, 2 + r)))
    # win: [N, C, out..., extent...]; take the strided outputs and the dilated kernel taps
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)
              + tuple(slice(None, None, d) for d in dilations)]
    n, c = win.shape[:2]
    per = c // group
    # -> [N, out..., C, kernel...] -> rows [N·out, C·kernel]
    win = np.moveaxis(win, 1, 1 + r)
    positions = win.shape[:1 + r]
    pick = _subset(int(np.prod(positions)), max_rows)
    if not isinstance(pick, slice):  # only the chosen positions are copied out of the view
        win = win[np.unravel_index(pick, positions)]
    rows = win.reshape(-1, c, int(np.prod(kernel)))
    return [rows[:, g * per:(g + 1) * per].reshape(rows.shape[0], -1).astype(np.float64) for g in range(group)]


class Hessians(dict):
    """weight name -> H per group (17), and the integers (20) each weight took at an encoding: the
    range search scores its candidates with the weights convert writes, and a candidate changes
    activation ranges only, never a weight's values or scales, so the rounding is done once."""

    def __init__(self, *args):
        super().__init__(*args)
        self._rounded = {}

    def rounded(self, node, name: str, values: np.ndarray, enc: Encoding) -> np.ndarray:
        """gptq_quantize of the weight `name`, remembered by its values and encoding."""
        key = (name, enc.key(), hashlib.sha256(np.ascontiguousarray(values).tobytes()).digest())
        if key not in self._rounded:
            self._rounded[key] = gptq_quantize(node, values, enc, self[name])
        return self._rounded[key]


def collect_hessians(graph, model, stream) -> Hessians:
    """(17) for every layer of gptq_layers: weight name -> H per group, float64. model: the float graph
    compiled and loaded with every tensor kept (convert.float_model); stream(): the calibration samples."""
    layers = gptq_layers(graph)
    if not layers:
        return Hessians()
    sums: dict[str, list] = {}
    rows = {name: 0 for name in layers}
    pending = {name: [] for name in layers}  # rows of the samples not yet summed: one product per batch

    def add(name):
        acc = sums.setdefault(name, [np.zeros((m.shape[1], m.shape[1])) for m in pending[name][0]])
        for g, a in enumerate(acc):
            m = np.concatenate([mats[g] for mats in pending[name]])
            a += m.T @ m
        pending[name] = []

    with _one_blas_thread():
        for feeds in progress(stream(), "GPTQ, layer inputs", unit="sample"):
            model.run(feeds)
            tensors = {**feeds, **model.tensors()}
            for name, node in layers.items():
                x = tensors.get(node.inputs[0])
                if x is None:
                    raise QnnBuildError(f"weight rounding gptq: the float model kept no tensor "
                                        f"'{node.inputs[0]}' (input of {node.describe()})")
                pending[name].append(input_rows(node, x, graph.tensor(name).shape, GPTQ_MAX_ROWS))
                rows[name] += pending[name][-1][0].shape[0]
                if sum(mats[0].shape[0] for mats in pending[name]) >= GPTQ_MAX_ROWS:
                    add(name)
        for name in layers:
            if pending[name]:
                add(name)
    return Hessians({name: [2.0 * a / max(rows[name], 1) for a in acc] for name, acc in sums.items()})


def _as_matrix(node, values):
    """The weight as matrices [out, K] per group, the K order that of input_rows; and the inverse."""
    if node.op_type == "Conv":
        group = int(node.attrs.get("group", 1))
        o = values.shape[0]
        flat = values.reshape(o, -1)
        per = o // group
        mats = [flat[g * per:(g + 1) * per] for g in range(group)]
        return mats, lambda ms: np.concatenate(ms, axis=0).reshape(values.shape)
    if node.op_type == "Gemm" and node.attrs.get("trans_b"):
        return [values], lambda ms: ms[0]
    return [values.T], lambda ms: ms[0].T


def gptq_quantize(node, values: np.ndarray, enc: Encoding, hessians: list[np.ndarray]) -> np.ndarray:
    """The weight's integers (int64, its shape) by (19)-(20); scales and encoding unchanged. They stay
    in the symmetric range ±(2^(b−1) − 1) of (6), as nearest rounding's do: the error feedback can
    push a weight past the channel's largest, and −2^(b−1) is a code HTP's symmetric weights lack."""
    qmin = -enc.qmax if enc.is_signed else enc.qmin
    scales, _ = _broadcast_params(enc, values.shape)
    scales = np.broadcast_to(np.asarray(scales, np.float64), values.shape)
    w_mats, back = _as_matrix(node, np.asarray(values, np.float64))
    s_mats, _ = _as_matrix(node, scales)
    with _one_blas_thread():
        q_mats = [_gptq_matrix(w, s, h, qmin, enc.qmax) for w, s, h in zip(w_mats, s_mats, hessians)]
    return back(q_mats).astype(np.int64)


def _gptq_matrix(w, s, h, qmin, qmax) -> np.ndarray:
    w0 = np.asarray(w, np.float64)
    w = w0.copy()                      # w0 moved by the errors of the columns before (20)
    h = np.array(h, np.float64)
    k = w.shape[1]
    dead = np.diag(h) == 0             # an input that was always zero: no feedback into or from it
    h[dead, dead] = 1.0
    h[np.diag_indices(k)] += GPTQ_DAMP * np.mean(np.diag(h))            # (18)
    try:  # (19): R upper with H = R Rᵀ, the Cholesky factor of H with its index order reversed
        r = np.linalg.cholesky(h[::-1, ::-1])[::-1, ::-1]
    except np.linalg.LinAlgError:
        return np.clip(np.round(w0 / s), qmin, qmax)
    feed = r / np.diag(r)              # (20'): column j's weights move by Σ_{i<j} d_i · R_ij / R_jj
    q = np.zeros_like(w)
    for start in range(0, k, GPTQ_BLOCK):
        end = min(start + GPTQ_BLOCK, k)
        d = np.zeros((w.shape[0], end - start))
        for j in range(start, end):                                     # (20)
            q[:, j] = np.clip(np.round(w[:, j] / s[:, j]), qmin, qmax)
            d[:, j - start] = w0[:, j] - q[:, j] * s[:, j]
            w[:, j + 1:end] += np.outer(d[:, j - start], feed[j, j + 1:end])
        w[:, end:] += d @ feed[start:end, end:]
    return q
