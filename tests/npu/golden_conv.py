"""NumPy golden model of the npu's products (docs/npu.md (N10)-(N14)): Conv, ConvTranspose, Gemm and
MatMul in exact integer arithmetic (int64 sums, object-arithmetic requantize), from the same npu_*
parameters the kernels read. Written from the equations, not from the kernels' loops."""

import numpy as np

from qnn_build.npu.fixedpoint import requantize


def zp(enc) -> int:
    return -int(enc.offsets[0]) if enc is not None and not enc.is_signed else 0


def qmax(enc) -> int:
    return (1 << enc.bitwidth) - 1


def _bias(params, bias, channels):
    """(N10): npu_bias when the converter re-expressed the bias, else the int32 tensor, else 0."""
    if "npu_bias" in params:
        return np.asarray(params["npu_bias"], np.int64)
    if bias is not None and not params.get("npu_ignore_bias"):
        return np.asarray(bias, np.int64).reshape(channels)
    return np.zeros(channels, np.int64)


def _block_mult(params, channels, blocks):
    if "npu_block_mult" in params:
        return np.asarray(params["npu_block_mult"], np.int64).reshape(channels, blocks)
    return np.ones((channels, 1), np.int64)


def _finish(total, params, ey, channel_axis):
    """(N10): requantize each channel's totals with its own multiplier, add zp_y, clamp."""
    total = np.moveaxis(np.asarray(total, np.int64), channel_axis, 0)
    out = np.empty(total.shape, np.int64)
    for c in range(total.shape[0]):
        out[c] = requantize(total[c], params["npu_mult"][c], params["npu_shift"][c])
    out = np.clip(out + zp(ey), 0, qmax(ey))
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


def conv(x, ex, w, ew, ey, params, attrs, bias=None):
    """(N10), (N11). x: stored input integers [N, C, *spatial]; w: weight integers [O, C/g, *k]."""
    r = x.ndim - 2
    k, s, d, pl, ph, groups = _geometry(attrs, r)
    xs = _as3d(x.astype(np.int64) - zp(ex), r)
    w3 = _as3d(np.asarray(w, np.int64), r)
    xs = np.pad(xs, [(0, 0), (0, 0)] + [(pl[i], ph[i]) for i in range(3)])  # padding: x - zp = 0
    n, c = xs.shape[:2]
    o = w3.shape[0]
    cg, mg = c // groups, o // groups
    out = [(xs.shape[2 + i] - (k[i] - 1) * d[i] - 1) // s[i] + 1 for i in range(3)]
    block = ew.block_size if ew.block_axis >= 0 else cg
    blocks = cg // block
    bm = _block_mult(params, o, blocks)
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
    total = int(params.get("npu_acc_sign", 1)) * total + _bias(params, bias, o)[None, :, None, None, None]
    y = _finish(total, params, ey, 1)
    return y.reshape(y.shape[:2] + y.shape[5 - r:])


def conv_transpose(x, ex, w, ew, ey, params, attrs, out_shape, bias=None):
    """(N12). w: [C, O/g, *k]; the output is the scatter of every input position, cropped by pads."""
    r = x.ndim - 2
    k, s, d, pl, _, groups = _geometry(attrs, r)
    xs = _as3d(x.astype(np.int64) - zp(ex), r)
    w3 = _as3d(np.asarray(w, np.int64), r)
    n, c = xs.shape[:2]
    mg = w3.shape[1]
    o, cg = mg * groups, c // groups
    out = [1] * (3 - r) + list(out_shape[2:])
    full = [max((xs.shape[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1, pl[i] + out[i]) for i in range(3)]
    block = ew.block_size if ew.block_axis >= 0 else c
    bm = _block_mult(params, o, c // block)
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
    total = int(params.get("npu_acc_sign", 1)) * total + _bias(params, bias, o)[None, :, None, None, None]
    y = _finish(total, params, ey, 1)
    return y.reshape(y.shape[:2] + y.shape[5 - r:])


def product(a, ea, b, eb, ey, params, trans_a=False, trans_b=False, bias=None):
    """(N13), (N14): numpy.matmul semantics on (a − zp_a) and (b − zp_b); B's per-channel axis is
    its last (N); a block-wise B is blocked along K."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    if trans_a:
        a = a.T
    if trans_b:
        b = b.T
    xa = a - zp(ea)
    xb = b - zp(eb)
    squeeze_a, squeeze_b = xa.ndim == 1, xb.ndim == 1
    if squeeze_a:
        xa = xa[None, :]
    if squeeze_b:
        xb = xb[:, None]
    kdim, n = xa.shape[-1], xb.shape[-1]
    block = eb.block_size if eb is not None and eb.block_axis >= 0 else kdim
    blocks = kdim // block if kdim else 1
    bm = _block_mult(params, n, blocks)
    total = np.zeros(np.broadcast_shapes(xa.shape[:-2], xb.shape[:-2]) + (xa.shape[-2], n), np.int64)
    for j in range(blocks):
        part = np.matmul(xa[..., j * block:(j + 1) * block], xb[..., j * block:(j + 1) * block, :])
        total += part * bm[:, j]
    total = int(params.get("npu_acc_sign", 1)) * total + _bias(params, bias, n)
    y = _finish(total, params, ey, total.ndim - 1)
    if squeeze_b:
        y = y[..., 0]
    if squeeze_a:
        y = y[..., 0, :] if not squeeze_b else y[..., 0]
    return y
