"""Helpers for the context-binary tests: zoo models built once per session, an independent XXH3-64
and header patching (to forge a header that passes the checksum)."""

import struct
from pathlib import Path

import numpy as np
import xxhash
import yaml

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def xxh3_64(data: bytes) -> int:
    """XXH3-64, seed 0, from the xxhash package: an implementation independent of the runtime's."""
    return xxhash.xxh3_64_intdigest(data)


# Header fields (docs/context-binary.md): offset, size.
VERSION, CHECKSUM, BACKEND, TARGET = (8, 4), (16, 8), (32, 16), (64, 96)


def rechecksummed(data) -> bytes:
    """`data` with its header's checksum made right again."""
    out = bytearray(data)
    out[16:24] = struct.pack("<Q", xxh3_64(bytes(out[24:])))
    return bytes(out)


def patch_header(data: bytes, field, value: bytes) -> bytes:
    """`data` with a header field replaced (NUL-padded) and the checksum made right again."""
    offset, size = field
    out = bytearray(data)
    out[offset:offset + size] = value.ljust(size, b"\0")
    return rechecksummed(out)


def sections(data: bytes) -> dict[int, tuple[int, int]]:
    """Section id -> (offset, size), from the section table after the 256-byte header."""
    count = struct.unpack_from("<I", data, 160)[0]
    table = (struct.unpack_from("<IIQQ", data, 256 + 24 * i) for i in range(count))
    return {sid: (offset, size) for sid, _, offset, size in table}


PREPARED = 4  # the prepared-arrays section's id


def prepared_entries(data: bytes) -> list[tuple[int, int, int, int]]:
    """(node, slot, offset, size) of every prepared array."""
    at = sections(data)[PREPARED][0]
    count = struct.unpack_from("<I", data, at)[0]
    return [struct.unpack_from("<IIQQ", data, at + 8 + 24 * i) for i in range(count)]


def zoo_specs() -> dict[str, dict]:
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted(MODELS.glob("*.yaml"))}


def build_zoo_lib(zoo_folder, name: str, precision: str) -> Path:
    """A shipped model's host library at a precision: the session's conversion (tests/conftest.py's
    zoo_folder, tests/targets_util.py), shared with the npu and target tests."""
    from qnn_build.toolchain import host_target
    from targets_util import model_lib

    return model_lib(zoo_folder(name, precision), host_target().name)


def zoo_feeds(name: str, model, count: int = 3) -> list[dict[str, np.ndarray]]:
    """The first test samples of a shipped model, shaped as the model's inputs."""
    spec = zoo_specs()[name]
    data = np.load(MODELS / spec["test"]["data"])
    return [{i.name: np.asarray(data[i.name][k], dtype=i.dtype).reshape(i.shape) for i in model.inputs}
            for k in range(count)]
