"""A small NumPy implementation of the npu's integer semantics (docs/npu.md), used only by tests:
the runtime must equal it exactly (0 LSB).

Independent of the code under test: every parameter (multipliers and shifts, lookup tables, exp
tables, biases, pad values) is derived here from the encodings and the ONNX attributes alone, by
the equations of docs/npu.md, and nothing is imported from the package's npu lowering (its
requantize included). The converted graph's `npu_*` parameters are never read: golden functions
take `onnx_attrs(node)`, which drops them. A rule change of the npu is a change of docs/npu.md and
of these modules, in one place each.

This module: (N1)-(N3) the requantization primitive, (N4) Add/Sub, (N5) Mul, (N6)/(N7) lookup
tables, (N7b) step tables. golden_conv.py: (N10)-(N14); golden_movement.py: (N20)-(N23);
golden_pool.py: (N24)-(N26); golden_norm.py: (N27)-(N29); golden_arith.py: (N30)-(N33)."""

import math

import numpy as np


def onnx_attrs(node) -> dict:
    """A converted node's attributes without the npu parameters the converter added."""
    return {k: v for k, v in node.attrs.items() if not k.startswith("npu_")}


def check_attrs(attrs) -> dict:
    assert not any(str(k).startswith("npu_") for k in attrs), "the golden model derives npu_* itself"
    return attrs


def zp(enc) -> int:
    return -int(enc.offsets[0])


def qmax(enc) -> int:
    return (1 << enc.bitwidth) - 1


def scale(enc, j: int = 0) -> float:
    return float(enc.scales[j])


# ---- (N1)-(N3) ----------------------------------------------------------------------------------

def multiplier(real: float) -> tuple[int, int]:
    """(N1): real = mult · 2^-(31 + shift), mult in [2^30, 2^31) from frexp; below 2^-62 zero."""
    real = float(real)
    assert real >= 0 and math.isfinite(real) and real < 2.0 ** 30, real
    if real < 2.0 ** -62:
        return 0, 0
    m, e = math.frexp(real)
    mult = round(m * 2 ** 31)
    if mult == 2 ** 31:
        mult, e = 2 ** 30, e + 1
    return mult, -e


def requantize(acc, real: float) -> np.ndarray:
    """(N2) with the multiplier of `real`: (acc · mult + 2^(t-1)) >> t, t = 31 + shift, in Python
    integers (object arrays: exact, no overflow)."""
    mult, shift = multiplier(real)
    t = 31 + shift
    prod = np.asarray(acc, dtype=object) * mult
    out = prod * (1 << -t) if t <= 0 else (prod + (1 << (t - 1))) >> t
    return np.asarray(out, dtype=object)


def requantize_out(acc, real: float, ey) -> np.ndarray:
    """(N3): clamp(requantize(acc, M) + zp_y, 0, 2^b - 1)."""
    return np.clip(requantize(acc, real) + zp(ey), 0, qmax(ey)).astype(np.int64)


# ---- (N4) / (N5) --------------------------------------------------------------------------------

def add_sub(a, b, ea, eb, ey, subtract=False):
    """(N4): both operands to the common scale 2·max(s_a, s_b) / 2^L, L = 20 when a, b and y are all
    8-bit, else 30."""
    left = 20 if max(ea.bitwidth, eb.bitwidth, ey.bitwidth) <= 8 else 30
    twice_max = 2.0 * max(scale(ea), scale(eb))
    va = (np.asarray(a, np.int64) - zp(ea)).astype(object) << left
    vb = (np.asarray(b, np.int64) - zp(eb)).astype(object) << left
    ra, rb = requantize(va, scale(ea) / twice_max), requantize(vb, scale(eb) / twice_max)
    return requantize_out(ra - rb if subtract else ra + rb, twice_max / ((1 << left) * scale(ey)), ey)


def mul(a, b, ea, eb, ey):
    """(N5)."""
    prod = (np.asarray(a, np.int64) - zp(ea)).astype(object) * (np.asarray(b, np.int64) - zp(eb))
    return requantize_out(prod, scale(ea) * scale(eb) / scale(ey), ey)


# ---- (N6) / (N7) --------------------------------------------------------------------------------

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def unary_function(op: str, attrs: dict):
    """The float64 function of a unary op, from the ONNX operator definitions."""
    a = check_attrs(attrs)
    alpha = float(a.get("alpha", {"LeakyRelu": 0.01, "HardSigmoid": 0.2}.get(op, 1.0)))
    return {
        "Relu": lambda x: np.maximum(x, 0.0),
        "LeakyRelu": lambda x: np.where(x >= 0, x, alpha * x),
        "Elu": lambda x: np.where(x >= 0, x, alpha * np.expm1(x)),
        "Clip": lambda x: np.minimum(np.maximum(x, float(a.get("min", -np.inf))), float(a.get("max", np.inf))),
        "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
        "HardSigmoid": lambda x: np.clip(alpha * x + float(a.get("beta", 0.5)), 0.0, 1.0),
        "HardSwish": lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
        "Tanh": np.tanh,
        "Erf": _erf,
        "Gelu": (lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))))
        if a.get("approximate", "none") == "tanh" else (lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))),
        "Softplus": lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0),
        "Exp": np.exp,
        "Sqrt": lambda x: np.sqrt(np.maximum(x, 0.0)),  # a negative input (below the range's zero) is 0
        "Neg": np.negative,
        "Abs": np.abs,
        "Sin": np.sin,
        "Cos": np.cos,
        "Softsign": lambda x: x / (1.0 + np.abs(x)),
        "Mish": lambda x: x * np.tanh(np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)),
        "Selu": lambda x: float(a.get("gamma", 1.05070102214813232421875)) *
        np.where(x > 0, x, float(a.get("alpha", 1.67326319217681884765625)) * np.expm1(x)),
        "Celu": lambda x: np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(x / alpha)),
    }[op]


EXACT_16BIT = ("Sqrt", "Sin", "Cos", "Selu")  # (N7a)


def lut_table(op, attrs, ex, ey, exact=None) -> np.ndarray:
    """(N6) for an 8-bit input: T[q] for q = 0..255; (N7a) for a 16-bit input of EXACT_16BIT: T[q] for
    q = 0..65535; (N7) for other 16-bit inputs: the 1025 knots at every 64th code, unclamped (the
    last at code 65536). `exact` overrides whether a 16-bit input gets (N7a)."""
    f = unary_function(op, attrs)
    if ex.bitwidth <= 8 or (op in EXACT_16BIT if exact is None else exact):
        return _codes(f, np.arange(256 if ex.bitwidth <= 8 else 65536), ex, ey, clamp=True)
    return _codes(f, np.arange(1025) * 64, ex, ey, clamp=False)


def _codes(f, q, ex, ey, clamp):
    with np.errstate(invalid="ignore"):
        t = np.round(f(scale(ex) * (q.astype(np.float64) - zp(ex))) / scale(ey)) + zp(ey)
    return (np.clip(t, 0, qmax(ey)) if clamp else t).astype(np.int64)


def interpolate(table, q):
    """(N7): K[k] + ((K[k+1] - K[k]) · r + 32) >> 6, k = q >> 6, r = q & 63 (unclamped)."""
    k, r = q >> 6, q & 63
    lo, hi = table[k], table[k + 1]
    return lo + (((hi - lo) * r + 32) >> 6)


def lut(x, ex, ey, op, attrs, exact=None, patched=True):
    """(N6) / (N7a) / (N7) with (N7c): a knot interval where (N7) misses (N7a) by more than one code
    somewhere takes (N7a)'s entries (not with `patched` False)."""
    table = lut_table(op, attrs, ex, ey, exact)
    q = np.asarray(x, np.int64)
    if len(table) != 1025:
        return table[q]
    every = np.arange(65536)
    knots = np.clip(interpolate(table, every), 0, qmax(ey))
    if patched:
        whole = lut_table(op, attrs, ex, ey, exact=True)
        missed = (np.abs(knots - whole) > 1).reshape(1024, 64).any(axis=1)
        knots = np.where(missed[every >> 6], whole, knots)
    return knots[q]


def patched_intervals(op, attrs, ex, ey) -> int:
    """How many knot intervals (N7c) patches for a 16-bit input."""
    every = np.arange(65536)
    if op in EXACT_16BIT:
        return 0
    knots = np.clip(interpolate(lut_table(op, attrs, ex, ey, exact=False), every), 0, qmax(ey))
    return int((np.abs(knots - lut_table(op, attrs, ex, ey, exact=True)) > 1).reshape(1024, 64).any(axis=1).sum())


def step_function(op: str, attrs: dict, divisor=None):
    """The float32 function of a step op (N7b), exactly as the cpu kernels compute it; Mod by
    `divisor` (its dequantized float32 value), with the sign of the divisor (fmod=0) or the dividend."""
    a = check_attrs(attrs)
    if op == "Mod":
        d = np.float32(divisor)

        def mod(x):
            r = np.fmod(x, d)
            return r if int(a.get("fmod", 0)) else np.where((r != 0) & ((r < 0) != (d < 0)), r + d, r)
        return mod
    return {"Floor": np.floor, "Ceil": np.ceil, "Round": np.rint, "Sign": np.sign}[op]


def step_table(op, attrs, ex, ey, divisor=None) -> np.ndarray:
    """(N7b): T[q] = (2)(f((1)(q))) in float32 for every code q of the input, 8 or 16 bits."""
    x = dequantize(np.arange(qmax(ex) + 1), ex)
    return quantize_input(step_function(op, attrs, divisor)(x).astype(np.float32), ey)


def quantize_input(x, enc):
    """The host's quantization of a float input, (2)."""
    q = np.round(x.astype(np.float32) / np.float32(enc.scales[0])) - enc.offsets[0]
    return np.clip(q, 0, qmax(enc)).astype(np.int64)


def dequantize(q, enc) -> np.ndarray:
    """docs/quantization.md (1) in float32, for a constant of one scale or a 1-D constant with one
    scale per element."""
    q = np.asarray(q).reshape(-1)
    s, o = np.asarray(enc.scales, np.float32), np.asarray(enc.offsets, np.float32)
    if len(s) > 1:
        assert len(s) == q.size, "one scale per element"
    return (s * (q.astype(np.float32) + o)).astype(np.float32)
