"""model.bin: every constant tensor, 64-byte aligned, with an index.

Layout (little-endian), documented in docs/formats.md:
  header  64 bytes: magic "QNNBWTS\\0", u32 version, u32 tensor count, u64 index offset, u64 index size,
          zero padding
  payload each tensor's bytes at a 64-byte aligned offset; tensors with the same bytes share one
          payload (an unrolled loop's copies of a transposed weight are stored once)
  index   per tensor: u32 name length, name (UTF-8), u32 dtype (ONNX code; 22 = INT4, packed two
          per byte, low nibble first), u32 rank, i64 dims[rank], u64 offset, u64 size
"""

import hashlib
import struct
from dataclasses import dataclass

import numpy as np
from onnx import helper

MAGIC = b"QNNBWTS\0"
VERSION = 1
ALIGN = 64
_HEADER = struct.Struct("<8sIIQQ")


@dataclass(frozen=True)
class WeightEntry:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int
    size: int


INT4_CODE = 22


def pack_int4(q: np.ndarray) -> bytes:
    """Two signed 4-bit values per byte, the lower index in the low nibble (ONNX INT4 packing)."""
    flat = (np.asarray(q, np.int64).reshape(-1) & 0x0F).astype(np.uint8)
    if flat.size % 2:
        flat = np.append(flat, np.uint8(0))
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()


def pack_weights(tensors: list[tuple[str, np.ndarray, bool]]) -> tuple[bytes, dict[str, WeightEntry]]:
    """model.bin bytes and where each tensor landed. The flag marks 4-bit tensors, stored packed."""
    payload = bytearray(ALIGN)  # room for the header
    entries: dict[str, WeightEntry] = {}
    codes: dict[str, int] = {}
    # Payload length -> {digest: offset}. A length met once is kept unhashed (under None) until a
    # second payload of that length comes: most tensors have a length of their own, and hashing
    # every byte of a large model was a second of its conversion.
    same_size: dict[int, dict[bytes | None, int]] = {}
    for name, value, is_int4 in tensors:
        if is_int4:
            data = pack_int4(value)
            codes[name] = INT4_CODE
        else:
            data = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False).tobytes()
            codes[name] = helper.np_dtype_to_tensor_dtype(value.dtype)
        n = len(data)
        stored = same_size.setdefault(n, {})
        if None in stored:
            first = stored.pop(None)
            stored[_digest(payload[first:first + n])] = first
        digest = _digest(data) if stored else None
        offset = stored.get(digest)
        if offset is None or payload[offset:offset + n] != data:
            payload.extend(b"\0" * (-len(payload) % ALIGN))
            offset = stored[digest] = len(payload)
            payload.extend(data)
        entries[name] = WeightEntry(name, value.dtype, tuple(value.shape), offset, n)
    payload.extend(b"\0" * (-len(payload) % ALIGN))
    index = bytearray()
    for e in entries.values():
        raw = e.name.encode("utf-8")
        index += struct.pack("<I", len(raw)) + raw
        index += struct.pack("<II", codes[e.name], len(e.shape))
        index += struct.pack(f"<{len(e.shape)}q", *e.shape)
        index += struct.pack("<QQ", e.offset, e.size)
    header = _HEADER.pack(MAGIC, VERSION, len(entries), len(payload), len(index))
    payload[: len(header)] = header
    payload.extend(index)
    return bytes(payload), entries


def _digest(data) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def read_weights(data: bytes) -> dict[str, np.ndarray]:
    """The tensors of a model.bin, for tests and inspection."""
    magic, version, count, index_off, index_size = _HEADER.unpack_from(data, 0)
    if magic != MAGIC or version != VERSION:
        raise ValueError("not a qnn-build model.bin (bad magic or version)")
    out, pos = {}, index_off
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        name = data[pos + 4: pos + 4 + n].decode("utf-8")
        pos += 4 + n
        code, rank = struct.unpack_from("<II", data, pos)
        dims = struct.unpack_from(f"<{rank}q", data, pos + 8)
        offset, size = struct.unpack_from("<QQ", data, pos + 8 + 8 * rank)
        pos += 8 + 8 * rank + 16
        if code == INT4_CODE:
            packed = np.frombuffer(data, np.uint8, count=size, offset=offset)
            nibbles = np.stack([packed & 0x0F, packed >> 4], axis=1).reshape(-1)[: int(np.prod(dims))]
            out[name] = np.where(nibbles >= 8, nibbles.astype(np.int8) - 16, nibbles).astype(np.int8).reshape(dims)
            continue
        dtype = helper.tensor_dtype_to_np_dtype(code)
        out[name] = np.frombuffer(data, dtype, count=size // dtype.itemsize, offset=offset).reshape(dims)
    return out
