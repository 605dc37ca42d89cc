"""What a context binary of our runtime (model.ctx) holds, read without loading it, as `qnn-build
context-info` shows it for the cpu and npu backends (Backend.describe_context): header, backend,
target, precision, graph inputs and outputs with their encodings, the memory plan and whether the
checksum holds. Layout: docs/context-binary.md; this is the reader's Python side, for display only
(the runtime's reader, core/ctx_read.cpp, is the one that checks a file before running it)."""

import json
import struct
from pathlib import Path

from ..errors import QnnBuildError
from ..data.dtypes import numpy_dtype

MAGIC = b"QNNBCTX\0"
HEADER_BYTES = 256
CHECKSUMMED_FROM = 24
SECTIONS = {1: "graph", 2: "plan", 3: "data", 4: "prepared"}


class _Reader:
    """Little-endian fields of one section, with a clear error past its end."""

    def __init__(self, data: bytes, where: str):
        self.data, self.pos, self.where = data, 0, where

    def take(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise QnnBuildError(f"{self.where}: truncated at byte {self.pos}")
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return values if len(values) > 1 else values[0]

    def array(self, code: str) -> list:
        n = self.take("I")
        values = self.take(f"{n}{code}") if n else ()
        return list(values) if isinstance(values, tuple) else [values]

    def string(self) -> str:
        n = self.take("I")
        return self.take(f"{n}s").decode("utf-8", "replace")


def _dtype(code: int) -> str:
    try:
        return numpy_dtype(code).name
    except (KeyError, ValueError):
        return f"onnx dtype {code}"


def _encoding(r: _Reader) -> dict | None:
    kind, bits, signed, axis, block_axis, block_size = r.take("IiIiii")
    scales, offsets = r.array("f"), r.array("i")
    if bits == 0:
        return None
    if kind == 1:
        return {"kind": "fp16"}
    enc = {"bitwidth": bits, "signed": bool(signed), "scale": [round(s, 9) for s in scales], "offset": offsets}
    if axis >= 0:
        enc["axis"] = axis
    if block_size:
        enc["block_axis"], enc["block_size"] = block_axis, block_size
    return enc


def _graph(data: bytes, where: str) -> dict:
    r = _Reader(data, f"{where}: graph section")
    tensors = []
    for _ in range(r.take("I")):
        name, dtype, shape = r.string(), _dtype(r.take("I")), r.array("q")
        flags, _offset, size = r.take("IQQ")
        tensors.append({"name": name, "dtype": dtype, "shape": shape, "constant": bool(flags & 1),
                        "bytes": size, "encoding": _encoding(r)})
    ops: dict[str, int] = {}
    for _ in range(r.take("I")):
        r.string()
        op = r.string()
        ops[op] = ops.get(op, 0) + 1
        r.array("i"), r.array("i")
        for _ in range(r.take("I")):
            r.string()
            kind = r.take("I")
            r.array("q") if kind == 1 else r.array("f") if kind == 2 else r.string()

    def io():
        out = []
        for _ in range(r.take("I")):
            tid, dtype = r.take("iI")
            if not 0 <= tid < len(tensors):
                raise QnnBuildError(f"{where}: graph section: io tensor id {tid} out of range")
            t = tensors[tid]
            out.append({"name": t["name"], "dtype": _dtype(dtype), "shape": t["shape"], "encoding": t["encoding"]})
        return out
    inputs = io()
    outputs = io()
    constants = [t for t in tensors if t["constant"]]
    return {"inputs": inputs, "outputs": outputs, "nodes": sum(ops.values()), "ops": dict(sorted(ops.items())),
            "tensors": len(tensors), "constants": len(constants), "constant_bytes": sum(t["bytes"] for t in constants),
            "_tensors": tensors}


def _sections(data: bytes, where: str) -> dict[str, tuple[int, int]]:
    """Section name -> (offset, size), each checked to lie inside the file."""
    count = struct.unpack_from("<I", data, 160)[0]
    if count > 8 or HEADER_BYTES + 24 * count > len(data):
        raise QnnBuildError(f"{where}: section table of {count} entries does not fit the file")
    sections = {}
    for k in range(count):
        sid, _zero, offset, size = struct.unpack_from("<IIQQ", data, HEADER_BYTES + 24 * k)
        if offset + size > len(data):
            raise QnnBuildError(f"{where}: section {SECTIONS.get(sid, sid)} ends at {offset + size}, beyond the "
                                f"file's {len(data)} bytes")
        sections[SECTIONS.get(sid, str(sid))] = (offset, size)
    return sections


def tensor_encodings(data: bytes) -> dict[str, dict]:
    """Every encoded tensor of a context binary's graph (bytes, e.g. Model.context_binary()): name ->
    encoding, as the finalized graph holds it (what the accuracy debugger compares ranges with)."""
    o, s = _sections(data, "context binary").get("graph", (0, 0))
    return {t["name"]: t["encoding"] for t in _graph(data[o:o + s], "context binary")["_tensors"] if t["encoding"]}


def _checksum(data: bytes) -> int | None:
    try:
        import xxhash
    except ImportError:  # the check is then the runtime's, at load
        return None
    return xxhash.xxh3_64_intdigest(data[CHECKSUMMED_FROM:])


def read_info(path) -> dict | None:
    """The description of a context binary of our runtime (model.ctx, whichever of its backends made
    it: the header names it) and its sidecar (model.ctx.json); None when `path` is not one (no
    qnn-build magic). A file with the magic is described even when corrupted, its checksum marked."""
    path = Path(path)
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            return None
    data = path.read_bytes()
    if len(data) < HEADER_BYTES:
        raise QnnBuildError(f"{path}: truncated: {len(data)} bytes, the header alone needs {HEADER_BYTES}")
    version, header_size, checksum, file_size = struct.unpack_from("<IIQQ", data, 8)
    backend, backend_version, target = (data[a:b].split(b"\0")[0].decode("ascii", "replace")
                                        for a, b in ((32, 48), (48, 64), (64, 160)))
    info = {"file": str(path), "format": "qnn-build context binary", "format_version": version,
            "header_bytes": header_size, "file_bytes": len(data), "backend": backend,
            "runtime_version": backend_version, "target": target}
    actual = _checksum(data)
    info["checksum"] = {"stored": f"{checksum:016x}", "state": "not checked (xxhash not installed)" if actual is None
                        else "ok" if actual == checksum and file_size == len(data) else
                        f"MISMATCH (computed {actual:016x}; the file is corrupted)" if file_size == len(data) else
                        f"MISMATCH (the header says {file_size} bytes, the file has {len(data)})"}
    sections = _sections(data, str(path))
    info["sections"] = {name: {"offset": o, "bytes": s} for name, (o, s) in sections.items()}
    if "graph" in sections:
        o, s = sections["graph"]
        graph = _graph(data[o:o + s], str(path))
        graph.pop("_tensors")
        info.update(graph)
    if "plan" in sections:
        o, s = sections["plan"]
        arena, planned = struct.unpack_from("<QQ", data, o) if s >= 16 else (0, 0)
        info["memory_plan"] = {"arena_bytes": arena, "tensor_bytes": planned}
    sidecar = Path(str(path) + ".json")
    if sidecar.is_file():
        try:
            side = json.loads(sidecar.read_text())
        except json.JSONDecodeError as e:
            raise QnnBuildError(f"{sidecar}:{e.lineno}: invalid JSON: {e.msg}") from None
        info["precision"] = side.get("precision")
        if "scratch_bytes" in side:
            info.setdefault("memory_plan", {})["scratch_bytes"] = side["scratch_bytes"]
        info["sidecar"] = str(sidecar)
    return info
