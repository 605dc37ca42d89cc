"""model.htp.json, the sidecar of an htp context binary, and the checks every htp load makes.

    {"format_version": 1, "backend": "htp", "soc", "chip", "soc_model", "htp_arch", "precision",
     "qnn_version", "qnn_build_id", "onnxruntime_qnn", "onnxruntime",
     "binary": {"file", "bytes", "sha256"}, "wrapper": {"file", "sha256"},
     "inputs"/"outputs": [{"name", "shape", "dtype", "context": {"name", "dtype"}, "encoding"}],
     "float_nodes": [...]}

QNN does not check a context binary's payload (a byte flipped past its header loads and runs with
other outputs), so every htp load in this project first checks the sha256 of the .bin and of the
wrapper against the sidecar, then that the binary is for the SoC asked for and for the QNN version
installed: both are in the binary itself (its build id `v2.51.0.<date>` and its preparation string
`soc_type=SC8380XP;arch=73`), and must agree with the sidecar. Each refusal is one line.
`qnn-build context-info` describes an htp context by its sidecar (context_info), without loading it.
"""

import hashlib
import json
import re
from pathlib import Path

from .ep import HtpError, versions

FORMAT_VERSION = 1
EXTENSIONS = {"binary": ".bin", "sidecar": ".json"}
_BUILD_ID = re.compile(rb"v(\d+\.\d+\.\d+)\.\d{6,}")
_PREPARED_FOR = re.compile(rb"soc_type=([A-Z0-9]+);arch=(\d+)")


def artifact_paths(wrapper) -> dict[str, Path]:
    """model.htp.onnx -> {"wrapper", "binary": model.htp.bin, "sidecar": model.htp.json}."""
    wrapper = Path(wrapper)
    stem = wrapper.name[:-len(".onnx")] if wrapper.name.endswith(".onnx") else wrapper.name
    return {"wrapper": wrapper, **{k: wrapper.with_name(stem + ext) for k, ext in EXTENSIONS.items()}}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def precision_of(model, path) -> str:
    """The precision convert recorded in a model.qdq.onnx (its `qnn_build.precision` property)."""
    props = {p.key: p.value for p in model.metadata_props}
    if "qnn_build.precision" not in props:
        raise HtpError(f"{path}: not a model.qdq.onnx of qnn-build (no qnn_build.precision property); "
                       "convert with --qdq")
    return props["qnn_build.precision"]


def binary_facts(binary: bytes) -> dict:
    """What a QNN HTP context binary says of itself: QNN version, chip and HTP architecture."""
    build, prepared = _BUILD_ID.search(binary), _PREPARED_FOR.search(binary)
    return {"qnn_version": build.group(1).decode() if build else None,
            "qnn_build_id": build.group(0).decode() if build else None,
            "chip": prepared.group(1).decode() if prepared else None,
            "htp_arch": int(prepared.group(2)) if prepared else None}


def _initializers(wrapper) -> dict:
    from onnx import numpy_helper
    return {i.name: numpy_helper.to_array(i) for i in wrapper.graph.initializer}


def _io(wrapper, is_output: bool) -> list[dict]:
    """The graph's inputs (outputs) and the context's integer tensors behind them, with encodings."""
    from onnx import helper
    inits = _initializers(wrapper)
    graph_io = wrapper.graph.output if is_output else wrapper.graph.input
    out = []
    for vi in graph_io:
        t = vi.type.tensor_type
        entry = {"name": vi.name, "shape": [d.dim_value for d in t.shape.dim],
                 "dtype": helper.tensor_dtype_to_np_dtype(t.elem_type).name}
        for node in wrapper.graph.node:
            hit = (node.op_type == "DequantizeLinear" and node.output[0] == vi.name) if is_output else \
                (node.op_type == "QuantizeLinear" and node.input[0] == vi.name)
            if hit:
                scale, zero = inits[node.input[1]], inits[node.input[2]]
                entry["context"] = {"name": node.input[0] if is_output else node.output[0], "dtype": zero.dtype.name}
                entry["encoding"] = {"bitwidth": zero.dtype.itemsize * 8, "scale": float(scale),
                                     "offset": -int(zero)}
        out.append(entry)
    return out


def describe(wrapper, binary: bytes, wrapper_bytes: bytes, soc_name: str, soc: dict, precision: str, paths,
             float_nodes: list[str]) -> dict:
    """The sidecar of a freshly generated context (generate.py)."""
    facts = binary_facts(binary)
    v = versions()
    if facts["chip"] != soc["chip"]:
        raise HtpError(f"the QNN EP prepared the context for {facts['chip']}, not {soc['chip']} ({soc_name})")
    return {"format_version": FORMAT_VERSION, "backend": "htp", "soc": soc_name, "chip": soc["chip"],
            "soc_model": soc["soc_model"], "htp_arch": facts["htp_arch"], "precision": precision,
            "qnn_version": v["qnn"], "qnn_build_id": facts["qnn_build_id"], "onnxruntime_qnn": v["onnxruntime_qnn"],
            "onnxruntime": v["onnxruntime"],
            "binary": {"file": paths["binary"].name, "bytes": len(binary), "sha256": sha256(binary)},
            "wrapper": {"file": paths["wrapper"].name, "sha256": sha256(wrapper_bytes)},
            "inputs": _io(wrapper, False), "outputs": _io(wrapper, True), "float_nodes": float_nodes}


def load_checked(wrapper_path, soc: str | None = None, precision: str | None = None) -> tuple[dict, bytes, bytes]:
    """(sidecar, wrapper bytes, binary bytes) of a context, after every check in the module docstring."""
    paths = artifact_paths(wrapper_path)
    where = paths["wrapper"]
    for key in ("wrapper", "sidecar"):
        if not paths[key].is_file():
            raise HtpError(f"{paths[key]}: not found (an htp context is model.htp.onnx with its .bin and .json)")
    try:
        info = json.loads(paths["sidecar"].read_text())
        expected_bin = paths["wrapper"].with_name(info["binary"]["file"])
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise HtpError(f"{paths['sidecar']}: not an htp context sidecar ({e})") from None
    if info.get("format_version") != FORMAT_VERSION or info.get("backend") != "htp":
        raise HtpError(f"{paths['sidecar']}: not an htp context sidecar of format {FORMAT_VERSION}")
    if not expected_bin.is_file():
        raise HtpError(f"{expected_bin}: context binary not found")
    wrapper_bytes, binary = paths["wrapper"].read_bytes(), expected_bin.read_bytes()
    if sha256(binary) != info["binary"]["sha256"]:
        raise HtpError(f"{expected_bin}: the context binary does not match its sidecar's sha256 "
                       "(corrupted or replaced); refusing to load it")
    if sha256(wrapper_bytes) != info["wrapper"]["sha256"]:
        raise HtpError(f"{where}: the EPContext wrapper does not match its sidecar's sha256; refusing to load it")
    facts = binary_facts(binary)
    if (facts["chip"], facts["htp_arch"]) != (info["chip"], info["htp_arch"]):
        raise HtpError(f"{expected_bin}: prepared for {facts['chip']} v{facts['htp_arch']}, but its sidecar says "
                       f"{info['chip']} v{info['htp_arch']}; refusing to load it")
    if soc is not None and soc != info["soc"]:
        raise HtpError(f"{where}: this context binary is for {info['soc']} ({info['chip']}, HTP v{info['htp_arch']}), "
                       f"not {soc}; generate one for {soc} (context-binary --backend htp --soc {soc})")
    installed = versions()["qnn"]
    if facts["qnn_version"] != installed:
        raise HtpError(f"{where}: this context binary was prepared with QNN {facts['qnn_version']}, the installed "
                       f"onnxruntime-qnn has QNN {installed}; generate it again")
    if info["qnn_version"] != facts["qnn_version"]:
        raise HtpError(f"{paths['sidecar']}: says QNN {info['qnn_version']}, the context binary was prepared with "
                       f"QNN {facts['qnn_version']}; refusing to load it")
    if precision and info["precision"] != precision:
        raise HtpError(f"{where}: this context binary was converted at {info['precision']}, not {precision}")
    return info, wrapper_bytes, binary


def context_info(path) -> dict | None:
    """What an htp context holds, as its sidecar describes it (`qnn-build context-info` on
    model.htp.onnx, .bin or .json); None when no htp sidecar is beside `path`. Each file the sidecar
    names with a sha256 is checked against it: a mismatch is described, not refused."""
    path = Path(path)
    sidecar = path.with_suffix(EXTENSIONS["sidecar"])
    try:
        side = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(side, dict) or side.get("backend") != "htp":
        return None
    states = []
    for role in ("binary", "wrapper"):
        entry = side.get(role)
        if isinstance(entry, dict) and entry.get("file") and entry.get("sha256"):
            f = sidecar.with_name(entry["file"])
            ok = f.is_file() and sha256(f.read_bytes()) == entry["sha256"]
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
    return {"file": str(path), "format": f"htp context (described by {sidecar.name})",
            "format_version": side.get("format_version"), "file_bytes": path.stat().st_size,
            "backend": "htp", "target": target or side.get("target", "?"), "precision": side.get("precision"),
            **{k: side[k] for k in ("soc", "chip", "htp_arch", "qnn_version", "qnn_build_id", "onnxruntime_qnn")
               if side.get(k) is not None},
            "checksum": {"stored": "sha256", "state": "; ".join(states) or "not recorded"},
            "inputs": io(side.get("inputs")), "outputs": io(side.get("outputs")),
            "float_nodes": side.get("float_nodes", []), "sidecar": str(sidecar)}
