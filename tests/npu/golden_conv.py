"""NumPy golden model of the npu's products (docs/npu.md (N10)-(N14)): Conv, ConvTranspose, Gemm and
MatMul in exact integer arithmetic (int64 sums, object-arithmetic requantize). Written from the
equations, not from the kernels' loops; the multipliers, block multipliers and biases are derived
here from the encodings (tests/npu/golden.py says why)."""

import numpy as np

from .golden import check_attrs, dequantize, qmax, requantize_out, scale

BLOCK_BITS = 20  # (N11)


def zp(enc) -> int:
    return -int(enc.offsets[0]) if enc is not None and not enc.is_signed else 0


def weight_scales(ew, channels: int, entries: int, channel_of=lambda c: c) -> np.ndarray:
    """[channels, blocks] float64 weight scales of every output channel. The encoding holds one
    scale (per tensor), or one per entry of its per-channel axis (`entries` of them), laid out
    [entry][block] when block-wise; output channel c uses entry channel_of(c)."""
    s = np.asarray(ew.scales, np.float64)
    if ew.axis < 0:
        return np.repeat(s.reshape(1, -1), channels, axis=0)
    table = s.reshape(entries, -1)
    return table[[channel_of(c) for c in range(channels)]]


def accumulator(ex, ew, s_w: np.ndarray, ey, alpha: float = 1.0):
    """(N10), (N11), (N13): the block multipliers m [channels, blocks], each channel's accumulator
    scale and output multiplier M_c, and the accumulator's sign σ."""
    sx = scale(ex)
    if ew.block_axis >= 0:  # (N11), even with a single block
        smax = s_w.max(axis=1)
        smax = np.where(smax > 0, smax, 1.0)
        m = np.round(s_w / smax[:, None] * (1 << BLOCK_BITS)).astype(np.int64)
        acc_scale = sx * smax / (1 << BLOCK_BITS)
    else:
        m = np.ones((s_w.shape[0], 1), np.int64)
        acc_scale = sx * s_w[:, 0]
    g = abs(alpha) if alpha != 0 else 1.0
    sign = 1 if alpha > 0 else (-1 if alpha < 0 else 0)
    return m, acc_scale, g * acc_scale / scale(ey), sign


def bias_units(bias, acc_scale: np.ndarray, blockwise: bool, gain: float = 1.0) -> np.ndarray:
    """(N10): the bias in accumulator units. The int32 tensor itself when it is encoded by (8) in
    the accumulator's own scale float32(s_x · s_w[c]) and the gain is 1; otherwise
    round(gain · (dequantized bias) / acc_scale), within ±2^62. `bias`: the converted constant
    (.const, .encoding) or None."""
    channels = len(acc_scale)
    if bias is None:
        return np.zeros(channels, np.int64)
    q, e = np.asarray(bias.const), bias.encoding
    if e is None or e.is_float:
        values = q.astype(np.float64).reshape(-1)
    else:
        scales = np.broadcast_to(np.asarray(e.scales, np.float32), (channels,))
        if (not blockwise and gain == 1.0 and e.bitwidth == 32 and q.size == channels
                and np.array_equal(scales, acc_scale.astype(np.float32))):
            return q.astype(np.int64).reshape(-1)
        values = dequantize(q.reshape(-1), e).astype(np.float64)
    units = np.round(np.broadcast_to(values, (channels,)) * gain / acc_scale)
    return np.clip(units, -(2.0 ** 62), 2.0 ** 62).astype(np.int64)


def _finish(total, mults, ey, channel_axis):
    """(N10): requantize each channel's totals with its own multiplier, add zp_y, clamp."""
    total = np.moveaxis(np.asarray(total, np.int64), channel_axis, 0)
    out = np.empty(total.shape, np.int64)
    for c in range(total.shape[0]):
        out[c] = requantize_out(total[c], mults[c], ey)
    return np.moveaxis(out, 0, channel_axis)


def _as3d(a, r):
    """[N, C, *r spatial] -> [N, C, D, H, W] with leading 1s."""
    return a.reshape(a.shape[:2] + (1,) * (3 - r) + a.shape[2:])


def _geometry(attrs, r):
    pad3 = lambda v, fill: [fill] * (3 - r) + list(v)
    k = pad3(attrs["kernel_shape"], 1)
    s = pad3(attrs.get("strides", [1] * r), 1)
    d = pad3(attrs.get("dilations", [1] * r), 1)
    pads = list(attrs.get("pads", [0] * 2 * r))
    return k, s, d, pad3(pads[:r], 0), pad3(pads[r:], 0), int(attrs.get("group", 1))


def conv(x, ex, w, ew, ey, attrs, bias=None):
    """(N10), (N11). x: stored input integers [N, C, *spatial]; w: weight integers [O, C/g, *k];
    bias: the converted bias constant or None. Per-channel scales along axis 0, blocks along 1."""
    r = x.ndim - 2
    k, s, d, pl, ph, groups = _geometry(check_attrs(attrs), r)
    xs = _as3d(x.astype(np.int64) - zp(ex), r)
    w3 = _as3d(np.asarray(w, np.int64), r)
    xs = np.pad(xs, [(0, 0), (0, 0)] + [(pl[i], ph[i]) for i in range(3)])  # padding: x - zp = 0
    n, c = xs.shape[:2]
    o = w3.shape[0]
    cg, mg = c // groups, o // groups
    out = [(xs.shape[2 + i] - (k[i] - 1) * d[i] - 1) // s[i] + 1 for i in range(3)]
    block = ew.block_size if ew.block_axis >= 0 else cg
    blocks = cg // block
    bm, acc_scale, mults, _ = accumulator(ex, ew, weight_scales(ew, o, o), ey)
    total = np.zeros((n, o, *out), np.int64)
    for g in range(groups):
        for j in range(blocks):
            ci = slice(g * cg + j * block, g * cg + (j + 1) * block)
            acc = np.zeros((n, mg, *out), np.int64)
            for kd in range(k[0]):
                for kh in range(k[1]):
                    for kw in range(k[2]):
                        patch = xs[:, ci,
                                   kd * d[0]: kd * d[0] + (out[0] - 1) * s[0] + 1: s[0],
                                   kh * d[1]: kh * d[1] + (out[1] - 1) * s[1] + 1: s[1],
                                   kw * d[2]: kw * d[2] + (out[2] - 1) * s[2] + 1: s[2]]
                        wt = w3[g * mg:(g + 1) * mg, j * block:(j + 1) * block, kd, kh, kw]
                        acc += np.einsum("nbdhw,mb->nmdhw", patch, wt)
            total[:, g * mg:(g + 1) * mg] += acc * bm[g * mg:(g + 1) * mg, j][None, :, None, None, None]
    total = total + bias_units(bias, acc_scale, ew.block_axis >= 0)[None, :, None, None, None]
    y = _finish(total, mults, ey, 1)
    return y.reshape(y.shape[:2] + y.shape[5 - r:])


def conv_transpose(x, ex, w, ew, ey, attrs, out_shape, bias=None):
    """(N12). w: [C, O/g, *k]; the output is the scatter of every input position, cropped by pads.
    Per-channel scales along axis 1 (O/g of them, repeated over the groups), blocks along axis 0."""
    r = x.ndim - 2
    k, s, d, pl, _, groups = _geometry(check_attrs(attrs), r)
    xs = _as3d(x.astype(np.int64) - zp(ex), r)
    w3 = _as3d(np.asarray(w, np.int64), r)
    n, c = xs.shape[:2]
    mg = w3.shape[1]
    o, cg = mg * groups, c // groups
    out = [1] * (3 - r) + list(out_shape[2:])
    full = [max((xs.shape[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1, pl[i] + out[i]) for i in range(3)]
    block = ew.block_size if ew.block_axis >= 0 else c
    bm, acc_scale, mults, _ = accumulator(ex, ew, weight_scales(ew, o, mg, lambda ch: ch % mg), ey)
    total = np.zeros((n, o, *full), np.int64)
    ins = xs.shape[2:]
    for g in range(groups):
        chans = np.arange(g * cg, (g + 1) * cg)
        for j in np.unique(chans // block):
            sel = chans[chans // block == j]
            acc = np.zeros((n, mg, *full), np.int64)
            for kd in range(k[0]):
                for kh in range(k[1]):
                    for kw in range(k[2]):
                        contrib = np.einsum("nbdhw,bm->nmdhw", xs[:, sel], w3[sel][:, :, kd, kh, kw])
                        acc[:, :, kd * d[0]: kd * d[0] + (ins[0] - 1) * s[0] + 1: s[0],
                            kh * d[1]: kh * d[1] + (ins[1] - 1) * s[1] + 1: s[1],
                            kw * d[2]: kw * d[2] + (ins[2] - 1) * s[2] + 1: s[2]] += contrib
            total[:, g * mg:(g + 1) * mg] += acc * bm[g * mg:(g + 1) * mg, j][None, :, None, None, None]
    total = total[:, :, pl[0]:pl[0] + out[0], pl[1]:pl[1] + out[1], pl[2]:pl[2] + out[2]]
    total = total + bias_units(bias, acc_scale, ew.block_axis >= 0)[None, :, None, None, None]
    y = _finish(total, mults, ey, 1)
    return y.reshape(y.shape[:2] + y.shape[5 - r:])


def product(a, ea, b, eb, ey, attrs, c=None):
    """(N13), (N14): numpy.matmul semantics on (a − zp_a) and (b − zp_b). A constant B's
    per-channel axis is its last (N), its blocks along K; Gemm's alpha scales the product and beta
    the constant C (`c`, the converted tensor, a bias along N; ignored when beta is 0)."""
    attrs = check_attrs(attrs)
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    if attrs.get("trans_a"):
        a = a.T
    if attrs.get("trans_b"):
        b = b.T
    xa = a - zp(ea)
    xb = b - zp(eb)
    squeeze_a, squeeze_b = xa.ndim == 1, xb.ndim == 1
    if squeeze_a:
        xa = xa[None, :]
    if squeeze_b:
        xb = xb[:, None]
    kdim, n = xa.shape[-1], xb.shape[-1]
    block = eb.block_size if eb.block_axis >= 0 else kdim
    blocks = kdim // block if kdim else 1
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    bm, acc_scale, mults, sign = accumulator(ea, eb, weight_scales(eb, n, n), ey, alpha)
    total = np.zeros(np.broadcast_shapes(xa.shape[:-2], xb.shape[:-2]) + (xa.shape[-2], n), np.int64)
    for j in range(blocks):
        part = np.matmul(xa[..., j * block:(j + 1) * block], xb[..., j * block:(j + 1) * block, :])
        total += part * bm[:, j]
    g = abs(alpha) if alpha != 0 else 1.0
    total = sign * total + bias_units(c if beta != 0 else None, acc_scale, eb.block_axis >= 0, beta / g)
    y = _finish(total, mults, ey, total.ndim - 1)
    if squeeze_b:
        y = y[..., 0]
    if squeeze_a:
        y = y[..., 0, :] if not squeeze_b else y[..., 0]
    return y
