"""Helpers for the context-binary tests: zoo models built once per session, an independent XXH64
and header patching (to forge a header that passes the checksum)."""

import struct
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

M = 0xFFFFFFFFFFFFFFFF
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                      0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def _round(acc, v):
    return (_rotl((acc + v * P2) & M, 31) * P1) & M


def xxh64(data: bytes) -> int:
    """XXH64, seed 0 (the published algorithm; slow, for small files)."""
    n, p = len(data), 0
    if n >= 32:
        v = [(P1 + P2) & M, P2, 0, (-P1) & M]
        while p + 32 <= n:
            for k in range(4):
                v[k] = _round(v[k], struct.unpack_from("<Q", data, p + 8 * k)[0])
            p += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M
        for k in range(4):
            h = ((h ^ _round(0, v[k])) * P1 + P4) & M
    else:
        h = P5
    h = (h + n) & M
    while p + 8 <= n:
        h = (_rotl(h ^ _round(0, struct.unpack_from("<Q", data, p)[0]), 27) * P1 + P4) & M
        p += 8
    if p + 4 <= n:
        h = (_rotl(h ^ ((struct.unpack_from("<I", data, p)[0] * P1) & M), 23) * P2 + P3) & M
        p += 4
    while p < n:
        h = (_rotl(h ^ ((data[p] * P5) & M), 11) * P1) & M
        p += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


# Header fields (docs/context-binary.md): offset, size.
VERSION, CHECKSUM, BACKEND, TARGET = (8, 4), (16, 8), (32, 16), (64, 96)


def patch_header(data: bytes, field, value: bytes) -> bytes:
    """`data` with a header field replaced (NUL-padded) and the checksum made right again."""
    offset, size = field
    out = bytearray(data)
    out[offset:offset + size] = value.ljust(size, b"\0")
    out[16:24] = struct.pack("<Q", xxh64(bytes(out[24:])))
    return bytes(out)


def zoo_specs() -> dict[str, dict]:
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted(MODELS.glob("*.yaml"))}


def build_zoo_lib(name: str, precision: str, out_dir: Path) -> Path:
    """Convert a shipped model at a precision and compile its library (as the SCons build does)."""
    from qnn_build.convert import convert
    from qnn_build.toolchain import build_model_lib

    spec = zoo_specs()[name]
    dims = {k: (v["shape"] if isinstance(v, dict) else v) for k, v in spec["inputs"].items()}
    d = out_dir / f"{name}-{precision}"
    if not (d / "libmodel.so").is_file():
        calibration = MODELS / spec["calibration"] if precision not in ("fp32", "fp16") else None
        convert(MODELS / spec["source"], d, input_dims=dims, precision=precision, calibration=calibration)
        build_model_lib(d / "model.cpp", d / "model.bin", d / "libmodel.so")
    return d / "libmodel.so"


def zoo_feeds(name: str, model, count: int = 3) -> list[dict[str, np.ndarray]]:
    """The first test samples of a shipped model, shaped as the model's inputs."""
    spec = zoo_specs()[name]
    data = np.load(MODELS / spec["test"]["data"])
    return [{i.name: np.asarray(data[i.name][k], dtype=i.dtype).reshape(i.shape) for i in model.inputs}
            for k in range(count)]
