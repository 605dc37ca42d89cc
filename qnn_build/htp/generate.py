"""The htp context-binary step: model.qdq.onnx -> a real QNN context binary for one SoC.

    model.htp.onnx   the EPContext wrapper: the graph's input quantize / output dequantize (which the
                     QNN EP keeps outside the context) around one EPContext node pointing at
    model.htp.bin    the QNN HTP context binary, Qualcomm's format, prepared for the SoC
    model.htp.json   the sidecar (sidecar.py): SoC, QNN version, precision, graph I/O, sha256s

The QNN EP of onnxruntime-qnn compiles the QDQ model for the HTP backend (soc_model, htp_arch) and
writes the context (`ep.context_enable`). Each generation runs in a fresh process (`python -m
qnn_build.htp.generate`): two generations in one process differ in the graph's counters
(`_token_547`), one per process gives the same bytes every time. The model is handed over as bytes,
so the graph name the EP derives from it is a function of its content, not of its path.

Every node of the model must run on the HTP: a node the EP leaves to onnxruntime's CPU (beside the
graph's input quantize / output dequantize) fails the step with one line naming it and the EP's
reason. Nodes of a quantized model that the HTP runs in float (a constant it cannot take in the
node's integer type) are listed in the sidecar as `float_nodes`.
"""

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..atomic import remove_quietly, write_bytes
from .ep import HtpError, require, session_options
from .sidecar import artifact_paths
from .socs import get_soc

def generate_context(qdq_path, output, soc_name: str, precision: str | None = None) -> dict:
    """Write the wrapper `output` (model.htp.onnx), its .bin and .json; returns the sidecar.
    precision: refuse a model exported at another one. Nothing is written when a step fails."""
    import onnx

    from .sidecar import describe, precision_of

    require()
    soc = get_soc(soc_name)
    qdq_path = Path(qdq_path)
    if not qdq_path.is_file():
        raise HtpError(f"{qdq_path}: QDQ model not found (convert --qdq writes model.qdq.onnx)")
    model_bytes = qdq_path.read_bytes()
    qdq = onnx.load_from_string(model_bytes)
    actual = precision_of(qdq, qdq_path)
    if precision and actual != precision:
        raise HtpError(f"{qdq_path}: this model was exported at {actual}, not {precision}")
    if actual == "fp32":
        raise HtpError(f"{qdq_path}: the HTP has no fp32 arithmetic; convert at fp16 (the HTP's float precision) "
                       "or a quantized precision")
    paths = artifact_paths(output)
    with tempfile.TemporaryDirectory(prefix="qnnb-htp-") as tmp:
        start = time.perf_counter()
        log = _run_worker(qdq_path, Path(tmp), soc, actual == "fp16")
        seconds = time.perf_counter() - start
        wrapper = onnx.load(Path(tmp) / "model.htp.onnx", load_external_data=False)
        _check_taken(wrapper, qdq, log, qdq_path)
        binary = (Path(tmp) / "model.htp_qnn.bin").read_bytes()
        _point_at(wrapper, paths["binary"].name)
        wrapper_bytes = wrapper.SerializeToString()
        info = describe(wrapper, binary, wrapper_bytes, soc_name, soc, actual, paths,
                        float_nodes=_float_nodes(log) if actual != "fp16" else [])
    try:
        write_bytes(paths["binary"], binary)
        write_bytes(paths["wrapper"], wrapper_bytes)
        write_bytes(paths["sidecar"], (json.dumps(info, indent=1, sort_keys=True) + "\n").encode())
    except BaseException:
        remove_quietly(*paths.values())
        raise
    info["generate_seconds"] = seconds  # not in the file: the sidecar is a pure function of the inputs
    return info


def _run_worker(qdq_path: Path, tmp: Path, soc: dict, fp16: bool) -> str:
    """Compile in a fresh process; returns the EP's log (verbose: it names each node it refuses)."""
    request = json.dumps({"model": str(qdq_path.absolute()), "out": str(tmp), "soc": soc, "fp16": fp16})
    result = subprocess.run([sys.executable, "-m", "qnn_build.htp.generate", request], capture_output=True,
                            text=True, errors="replace")
    if result.returncode != 0 or not (tmp / "model.htp.onnx").is_file():
        refused = _refusals(result.stderr)
        if refused:
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            raise HtpError(f"{qdq_path}: {refused[0]}{more}")
        raise HtpError(f"{qdq_path}: the QNN EP could not prepare the model for {soc['name']}: "
                       f"{_last_error(result.stderr)}")
    return result.stderr


_FAILED = re.compile(r"Validation FAILED for \d+ nodes in OrtNodeUnit \((\w+)\) :\n(.*?)\n\s*REASON : ([^\n]*)",
                     re.S)
_UNIT_NODE = re.compile(r"Operator type: (\w+) Node name: (\S*) Node index")
_IO_REASONS = ("not take Q nodes that consume a graph input", "not take DQ nodes that generate a graph output")


def _refusals(log: str) -> list[str]:
    """'node NAME (Op): the HTP does not take it: REASON' for each node unit the EP refused."""
    out = []
    for op, members, reason in _FAILED.findall(log):
        if any(r in reason for r in _IO_REASONS):
            continue
        nodes = [(t, n) for t, n in _UNIT_NODE.findall(members) if t == op] or _UNIT_NODE.findall(members)[:1]
        for node_op, name in nodes:
            line = f"node '{_plain(name)}' ({node_op}): the HTP does not take it: {reason.strip()}"
            if line not in out:
                out.append(line)
    return out


def _plain(name: str) -> str:
    """A node name as ours (the EP's layout pass appends `_token_N`)."""
    return re.sub(r"_token_\d+$", "", name)


def _last_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if "Error" in ln or "FAIL" in ln or "[E:" in ln]
    text = lines[-1] if lines else (log.strip().splitlines() or ["no output"])[-1]
    return re.sub(r"\x1b\[[0-9;]*m", "", text)[:400]


def _check_taken(wrapper, qdq, log: str, qdq_path: Path) -> None:
    """Every node but the graph's input Q / output DQ went into the EPContext node."""
    inputs = {i.name for i in wrapper.graph.input}
    outputs = {o.name for o in wrapper.graph.output}
    left = [n for n in wrapper.graph.node if n.op_type != "EPContext"
            and not (n.op_type == "QuantizeLinear" and n.input[0] in inputs)
            and not (n.op_type == "DequantizeLinear" and n.output[0] in outputs)]
    if not left:
        return
    readers = {}
    for n in qdq.graph.node:
        for name in n.input:
            readers.setdefault(name, []).append(n)
    reasons = dict((m.split("'")[1], m) for m in _refusals(log))
    first = left[0]
    # A DQ of a constant left out is refused for its reader's sake: name the reader.
    reader = next((r for o in first.output for r in readers.get(o, []) if r.op_type not in ("QuantizeLinear",)), None)
    name = first.name or first.output[0]
    why = reasons.get(name, "").split(": the HTP does not take it: ")[-1] or "left to onnxruntime's CPU"
    if first.op_type == "DequantizeLinear" and reader is not None:
        message = f"node '{reader.name}' ({reader.op_type}): the HTP cannot read its input '{first.output[0]}': {why}"
    else:
        message = f"node '{name}' ({first.op_type}): the HTP does not take it: {why}"
    more = f" (and {len(left) - 1} more nodes left to the CPU)" if len(left) > 1 else ""
    raise HtpError(f"{qdq_path}: {message}{more}")


_PASSED_ALONE = re.compile(r"Validation PASSED for 1 nodes in OrtNodeUnit \((\w+)\) :\n\s*Operator type: \w+ "
                           r"Node name: (\S*)")


def _float_nodes(log: str) -> list[str]:
    """Nodes of a quantized model the HTP runs in float: units of one node that is not a Q/DQ."""
    names = []
    for op, name in _PASSED_ALONE.findall(log):
        if op not in ("QuantizeLinear", "DequantizeLinear") and _plain(name) not in names:
            names.append(_plain(name))
    return names


def _point_at(wrapper, binary_name: str) -> None:
    """The EPContext node reads its context from `binary_name`, beside the wrapper."""
    for node in wrapper.graph.node:
        if node.op_type == "EPContext":
            for attr in node.attribute:
                if attr.name == "ep_cache_context":
                    attr.s = binary_name.encode()


def record_qnn_api(qdq_path, out_dir, soc_name: str) -> list[Path]:
    """The model's QNN API calls through libQnnSaver.so: out_dir/saver_output.c (every call, as C
    source) and params.bin (its tensors), the QNN counterpart of model.cpp + model.bin, which the
    QAIRT SDK builds and replays. Recorded in a fresh process; the same model gives the same bytes."""
    import os
    import shutil

    require()
    soc, qdq_path = get_soc(soc_name), Path(qdq_path)
    with tempfile.TemporaryDirectory(prefix="qnnb-saver-") as tmp:
        request = json.dumps({"model": str(qdq_path.absolute()), "out": tmp, "soc": soc,
                              "fp16": _precision(qdq_path) == "fp16", "saver": True})
        result = subprocess.run([sys.executable, "-m", "qnn_build.htp.generate", request], capture_output=True,
                                text=True, errors="replace", cwd=tmp)
        recorded = [Path(tmp, "saver_output", name) for name in ("saver_output.c", "params.bin")]
        if result.returncode != 0 or not all(p.is_file() for p in recorded):
            raise HtpError(f"{qdq_path}: libQnnSaver.so recorded nothing: {_last_error(result.stderr)}")
        os.makedirs(out_dir, exist_ok=True)
        return [Path(shutil.copy(p, Path(out_dir) / p.name)) for p in recorded]


def _precision(qdq_path: Path) -> str:
    import onnx

    from .sidecar import precision_of
    return precision_of(onnx.load(qdq_path, load_external_data=False), qdq_path)


def _worker(request: dict) -> None:
    """In the fresh process: compile the model and write tmp/model.htp.onnx + model.htp_qnn.bin (or,
    with "saver", record its QNN API calls into ./saver_output/)."""
    import onnxruntime as ort

    from .ep import saver_library

    out = Path(request["out"])
    if request.get("saver"):
        options = session_options(request["soc"], request["fp16"], provider={"qnn_saver_path": saver_library()})
    else:
        options = session_options(request["soc"], request["fp16"], log_level=0, config={
            "ep.context_enable": 1, "ep.context_embed_mode": 0, "ep.context_file_path": out / "model.htp.onnx"})
    ort.InferenceSession(Path(request["model"]).read_bytes(), options)


if __name__ == "__main__":
    _worker(json.loads(sys.argv[1]))
