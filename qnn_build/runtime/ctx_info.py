"""`qnn-build context-info FILE`: what a context binary holds, read without loading it (like
qnn-context-binary-utility): header, backend, target, precision, graph inputs and outputs with their
encodings, the memory plan and whether the checksum holds. Layout: docs/context-binary.md; this is
the reader's Python side, for display only (the runtime's reader, core/ctx_read.cpp, is the one that
checks a file before running it)."""

import hashlib
import json
import struct
from pathlib import Path

from onnx import helper

from ..errors import QnnBuildError

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
        return helper.tensor_dtype_to_np_dtype(code).name
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


def read_info(path) -> dict:
    """The description of a qnn-build context binary (model.ctx) and its sidecar (model.ctx.json), or
    of another backend's context by the sidecar beside it (PATH with the suffix .json)."""
    path = Path(path)
    data = path.read_bytes()
    if data[:8] != MAGIC:
        sidecar = path.with_suffix(".json")
        side = _json_object(sidecar)
        if side is not None and "backend" in side:
            return _from_sidecar(path, sidecar, side)
        raise QnnBuildError(f"{path}: not a context binary (no qnn-build magic, and no sidecar {sidecar.name} "
                            "beside it describing another backend's)")
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


def _json_object(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _from_sidecar(path: Path, sidecar: Path, side: dict) -> dict:
    """Another backend's context (the htp's: model.htp.onnx, model.htp.bin, model.htp.json), as its
    sidecar describes it; each file the sidecar names with a sha256 is checked against it."""
    states = []
    for role in ("binary", "wrapper"):
        entry = side.get(role)
        if isinstance(entry, dict) and entry.get("file") and entry.get("sha256"):
            f = sidecar.with_name(entry["file"])
            ok = f.is_file() and hashlib.sha256(f.read_bytes()).hexdigest() == entry["sha256"]
            states.append(f"{role} {entry['file']} {'ok' if ok else 'MISMATCH (corrupted or replaced)'}")
    target = " ".join(str(side[k]) for k in ("soc", "chip") if side.get(k)) + (
        f" (arch {side['htp_arch']})" if side.get("htp_arch") else "")

    def io(entries):
        out = []
        for t in entries or []:
            enc = t.get("encoding")
            if enc:
                enc = {"bitwidth": enc["bitwidth"], "signed": False, "scale": [enc["scale"]], "offset": [enc["offset"]]}
            out.append({"name": t["name"], "dtype": t.get("dtype", "?"), "shape": t.get("shape", []), "encoding": enc,
                        **({"context": t["context"]} if t.get("context") else {})})
        return out
    return {"file": str(path), "format": f"{side['backend']} context (described by {sidecar.name})",
            "format_version": side.get("format_version"), "file_bytes": path.stat().st_size,
            "backend": side["backend"], "target": target or side.get("target", "?"), "precision": side.get("precision"),
            **{k: side[k] for k in ("soc", "chip", "htp_arch", "qnn_version", "qnn_build_id", "onnxruntime_qnn")
               if side.get(k) is not None},
            "checksum": {"stored": "sha256", "state": "; ".join(states) or "not recorded"},
            "inputs": io(side.get("inputs")), "outputs": io(side.get("outputs")),
            "float_nodes": side.get("float_nodes", []), "sidecar": str(sidecar)}


def _encoding_text(enc: dict | None) -> str:
    if enc is None:
        return "float"
    if enc.get("kind") == "fp16":
        return "fp16"
    kind = f"{'int' if enc['signed'] else 'uint'}{enc['bitwidth']}"
    if len(enc["scale"]) == 1:
        return f"{kind} scale {enc['scale'][0]:.6g} offset {enc['offset'][0]}"
    return f"{kind} per-channel (axis {enc.get('axis')}, {len(enc['scale'])} scales)"


def format_info(info: dict) -> str:
    """The description as the text `context-info` prints."""
    lines = [f"{info['file']}: {info['format']}, format {info['format_version']}, {info['file_bytes']} bytes"]

    def row(key, value):
        lines.append(f"  {key:<13}{value}")
    row("backend", f"{info['backend']}" + (f" (runtime {info['runtime_version']})" if info.get("runtime_version") else ""))
    row("target", info["target"])
    if info.get("precision") or "sidecar" in info:
        row("precision", info.get("precision") or "fp32")
    for key in ("qnn_version", "qnn_build_id"):
        if info.get(key) is not None:
            row(key, info[key])
    row("checksum", f"{info['checksum']['stored']} {info['checksum']['state']}")
    if "nodes" in info:
        row("graph", f"{info['nodes']} nodes, {info['tensors']} tensors, {info['constants']} constants "
                     f"({info['constant_bytes']} bytes)")
        row("ops", ", ".join(f"{op} x{n}" for op, n in info["ops"].items()))
    if "memory_plan" in info:
        plan = info["memory_plan"]
        row("memory plan", ", ".join(f"{k.replace('_bytes', '')} {v} bytes" for k, v in plan.items()))
    for kind in ("inputs", "outputs"):
        lines.append(f"  {kind}")
        for t in info.get(kind, []):
            lines.append(f"    {t['name']}  {t['dtype']} {list(t['shape'])}  {_encoding_text(t.get('encoding'))}")
    return "\n".join(lines)
