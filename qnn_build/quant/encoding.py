"""Encodings: computing them from ranges, applying them to arrays. Equations: docs/quantization.md."""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Encoding:
    bitwidth: int
    is_signed: bool
    scales: np.ndarray           # float32 [count]
    offsets: np.ndarray          # int32 [count]
    axis: int = -1               # per-channel axis, -1 per tensor
    block_axis: int = -1         # block-wise axis (4-bit weights), -1 none
    block_size: int = 0
    is_float: bool = False       # fp16: no scales
    mins: np.ndarray = field(default=None)
    maxs: np.ndarray = field(default=None)

    def key(self) -> tuple:
        """Equal for two encodings that quantize alike."""
        return (self.bitwidth, self.is_signed, self.is_float, self.axis, self.block_axis, self.block_size,
                self.scales.astype(np.float32).tobytes(), self.offsets.astype(np.int64).tobytes())

    @property
    def qmin(self) -> int:
        return -(2 ** (self.bitwidth - 1)) if self.is_signed else 0

    @property
    def qmax(self) -> int:
        return 2 ** (self.bitwidth - 1) - 1 if self.is_signed else 2 ** self.bitwidth - 1


# The smallest scale stored: a positive scale below it would round to zero or a subnormal in
# float32 (a dead weight channel times a small input scale), and quantizing would divide by zero.
MIN_SCALE = float(np.finfo(np.float32).tiny)


def float32_scales(scales) -> np.ndarray:
    return np.maximum(np.asarray(scales, np.float64), MIN_SCALE).astype(np.float32)


def fp16_encoding() -> Encoding:
    return Encoding(16, True, np.zeros(0, np.float32), np.zeros(0, np.int32), is_float=True)


def float16_constant(values: np.ndarray) -> np.ndarray:
    """A float32 constant as float16, its finite values saturated at ±65504 instead of overflowing to
    ±inf (as onnxconverter-common's float16 conversion clips): an attention mask's finfo.min stays
    finite, so a row whose every key is masked is uniform after Softmax as in float32, not NaN."""
    values = np.asarray(values, np.float32)
    top = float(np.finfo(np.float16).max)
    return np.where(np.isfinite(values), np.clip(values, -top, top), values).astype(np.float16)


def activation_encoding(lo: float, hi: float, bits: int) -> Encoding:
    """Unsigned asymmetric per-tensor encoding of [lo, hi]: equations (3)-(5)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)             # (3)
    levels = 2 ** bits - 1
    scale = (hi - lo) / levels if hi > lo else 1.0                # (4)
    scale = float(float32_scales(scale))
    offset = int(np.round(lo / scale))                            # (5)
    return Encoding(bits, False, np.array([scale], np.float32), np.array([offset], np.int32),
                    mins=np.array([scale * offset]), maxs=np.array([scale * (offset + levels)]))


# Ops whose outputs hold integers only; Mod's do when both operands do (a constant divisor of integers).
INTEGER_OPS = ("Floor", "Ceil", "Round", "Sign")


def integer_valued(graph) -> set[str]:
    """The float activations of `graph` that hold integers only, by the ops that produce them."""
    found = set()
    for node in graph.nodes:
        if node.op_type in INTEGER_OPS or node.op_type == "Mod" and all(
                n in found or (c := graph.const(n)) is not None and np.array_equal(c, np.round(c))
                for n in node.inputs):
            found.update(node.outputs)
    return found


def integer_encoding(lo: float, hi: float, bits: int) -> Encoding:
    """(3e): the range rounded out to integers, the finest scale 2^−j (j ≥ 0) whose codes reach across
    it and the zero point at its lowest integer: every integer in it is a code, exactly also in float32.
    Where the range holds more integers than codes, (3)-(5)'s encoding."""
    lo, hi = int(np.floor(min(lo, 0.0))), int(np.ceil(max(hi, 0.0)))
    levels = 2 ** bits - 1
    if hi - lo > levels or hi == lo:
        return activation_encoding(lo, hi, bits)
    steps = 1 << ((levels // (hi - lo)).bit_length() - 1)  # codes per integer, a power of two
    scale, offset = 1.0 / steps, lo * steps
    return Encoding(bits, False, np.array([scale], np.float32), np.array([offset], np.int32),
                    mins=np.array([scale * offset]), maxs=np.array([scale * (offset + levels)]))


# (3c): a 16-bit activation's range is widened by this factor about zero. It costs 1.9 dB of the
# range's ~90 dB resolution, while a value past the calibrated range is clipped, and clipping was
# what held 16-bit activations back. 2 and 4 cost a model whose 16-bit resolution matters (silero
# VAD's front end) 7 dB and more (docs/benchmarks.md, "Headroom at 16 bits").
HEADROOM_BITS, HEADROOM = 16, 1.25


def headroom(lo: float, hi: float, bits: int) -> tuple[float, float]:
    """(3c): [min, max] of a range at HEADROOM_BITS bits or more, widened about zero."""
    if bits < HEADROOM_BITS:
        return lo, hi
    return min(lo, 0.0) * HEADROOM, max(hi, 0.0) * HEADROOM


def symmetric_encoding(absmax: np.ndarray, bits: int, axis: int = -1, block_axis: int = -1,
                       block_size: int = 0) -> Encoding:
    """Signed symmetric encoding, one scale per entry of `absmax`: equation (6)."""
    absmax = np.asarray(absmax, np.float64).reshape(-1)
    qmax = 2 ** (bits - 1) - 1
    scales = float32_scales(np.where(absmax > 0, absmax / qmax, 1.0))
    return Encoding(bits, True, scales, np.zeros(len(scales), np.int32), axis, block_axis, block_size,
                    mins=-scales.astype(np.float64) * qmax, maxs=scales.astype(np.float64) * qmax)


def bias_encoding(input_scale: float, weight_scales: np.ndarray, axis: int, values=None) -> Encoding:
    """int32 bias, scale = input scale x weight scale (8), widened where the bias would not fit (8b)."""
    scales = np.float64(input_scale) * weight_scales.astype(np.float64)
    if values is not None:
        scales = np.maximum(scales, np.abs(np.asarray(values, np.float64)) / (2 ** 31 - 1))  # (8b)
    scales = float32_scales(scales)
    return Encoding(32, True, scales, np.zeros(len(scales), np.int32), axis if len(scales) > 1 else -1)


def _broadcast_params(enc: Encoding, shape: tuple[int, ...]):
    """Scales and offsets shaped to broadcast against an array of `shape`."""
    scales, offsets = enc.scales.astype(np.float32), enc.offsets.astype(np.float32)
    if enc.axis < 0 and enc.block_axis < 0:
        return scales[0], offsets[0]
    view = [1] * len(shape)
    if enc.block_axis >= 0:
        channels = shape[enc.axis] if enc.axis >= 0 else 1
        blocks = shape[enc.block_axis] // enc.block_size
        grid = [1] * len(shape)
        if enc.axis >= 0:
            grid[enc.axis] = channels
        grid[enc.block_axis] = blocks
        s = scales.reshape(channels, blocks)
        o = offsets.reshape(channels, blocks)
        if enc.axis >= 0 and enc.axis > enc.block_axis:
            s, o = s.T, o.T
        s, o = s.reshape(grid), o.reshape(grid)
        return np.repeat(s, enc.block_size, axis=enc.block_axis), np.repeat(o, enc.block_size, axis=enc.block_axis)
    view[enc.axis] = shape[enc.axis]
    return scales.reshape(view), offsets.reshape(view)


def quantize(x: np.ndarray, enc: Encoding) -> np.ndarray:
    """Equation (2), round half to even; returns int64."""
    scales, offsets = _broadcast_params(enc, x.shape)
    with np.errstate(over="ignore"):  # a mask's finfo.min over a scale below 1 is -inf: the clip's q_min
        q = np.round(x.astype(np.float32) / scales) - offsets
    # Clip in float64, which holds 2^31 - 1 exactly (a float32 clip of an int32 bias would round up
    # to 2^31 and wrap to -2^31), and before the integer cast, which a value far out of range (a
    # weight over a minimal scale) would overflow.
    return np.clip(q.astype(np.float64), enc.qmin, enc.qmax).astype(np.int64)


def dequantize(q: np.ndarray, enc: Encoding) -> np.ndarray:
    """Equation (1)."""
    scales, offsets = _broadcast_params(enc, q.shape)
    return (scales * (q.astype(np.float32) + offsets)).astype(np.float32)


def fake_quantize(x: np.ndarray, enc: Encoding) -> np.ndarray:
    if enc.is_float:
        return x.astype(np.float16).astype(np.float32)
    return dequantize(quantize(x, enc), enc)


STORAGE_DTYPE = {4: np.int8, 8: np.int8, 16: np.int16, 32: np.int32}


def storage_dtype(enc: Encoding):
    """The numpy dtype a quantized constant is stored in (4-bit is packed at codegen)."""
    return STORAGE_DTYPE[enc.bitwidth] if enc.is_signed else {8: np.uint8, 16: np.uint16}[enc.bitwidth]
