"""The npu against Qualcomm's HTP, op by op (issue 15): one-op (and small multi-op) graphs quantized at
chosen encodings, run on our npu backend and on the HTP backend (onnxruntime-qnn, HTP emulation)
with the same input codes, compared in output codes.

A case (npu_vs_htp_cases.py) is a few ONNX nodes over its own tensor names with pinned ranges for
its activations. All cases of one op at one precision go into one graph of independent subgraphs
(tensor names prefixed by the case), so each op costs one model library and one HTP context; a graph
the HTP refuses is retried case by case, so a refusal names its case.

Both backends get the same codes: the feeds are dequantized codes, which (2) maps back to
themselves on both sides (HtpModel quantizes with our (1)-(2) and the sidecar's encodings). Where
the outputs differ, `ideal` (the op's float value before the output's quantize, from onnxruntime's
CPU on the exported QDQ model, in output-code units) says how: a tie (exactly .5: the rounding
mode), a saturated value, or which of the two is nearer the exact value.

The HTP's outputs of a graph are a function of the exported model and the feeds: they are cached
by that hash (QNNB_NPU_VS_HTP_CACHE, default ~/.cache/qnn-build/npu-vs-htp), since emulation is slow.
"""

import copy
import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from qnn_build.codegen.qdq import export_qdq
from qnn_build.convert import build_graph, write_artifacts
from qnn_build.errors import QnnBuildError
from qnn_build.npu_lowering.lower import add_npu_params
from qnn_build.quant import QuantOptions, Stats, quantize_graph
from qnn_build.quant.apply import activation_names
from qnn_build.quant.calibrate import TensorStats
from qnn_build.quant.encoding import activation_encoding, dequantize
from qnn_build.options import PRECISIONS
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib
from tests.npu.harness import make_model

SOC = "x-elite"
# The int64 index outputs, by position, compared as they are: ArgMax/ArgMin's one, TopK's second.
INDEX_OUTPUTS = {"ArgMax": (0,), "ArgMin": (0,), "TopK": (1,)}
BOOL_OUTPUTS = {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "IsNaN"}  # one output each
DEFAULT_RANGE = (-4.0, 4.0)


@dataclass
class Case:
    """nodes over local names; inputs: name -> (shape, (lo, hi)); outputs: name -> (lo, hi) pinned, or
    None (the quantizer's choice: a value keeper's input encoding); pins: intermediate ranges;
    inits: constants (float: quantized as the precision says; int64: indices)."""
    op: str
    name: str
    nodes: list
    inputs: dict
    outputs: dict
    inits: dict = field(default_factory=dict)
    pins: dict = field(default_factory=dict)
    weights: int = 8
    bits: tuple = (8, 16)
    opset: int = 17

    def precision(self, bits: int) -> str:
        return f"w{self.weights}a{bits}"


@dataclass
class Outcome:
    """One output of one case: npu and htp codes and the float value between them."""
    case: Case
    bits: int
    output: str = ""
    npu: np.ndarray | None = None
    htp: np.ndarray | None = None
    ideal: np.ndarray | None = None
    qmax: int = 0
    zp: int = 0
    refused: str = ""       # why a backend did not run it

    @property
    def diff(self) -> np.ndarray:
        return self.npu - self.htp

    def pattern(self) -> dict:
        """Counts of the differing values by kind: tie_up / tie_down (the HTP rounded an exact .5 up or
        down), saturated, npu_nearer / htp_nearer (to the exact value), equal_distance, undefined (0/0)."""
        out = {}
        ties = self.ties()
        for i in np.flatnonzero(self.diff):
            ideal, h, n = self.ideal[i], self.htp[i], self.npu[i]
            if np.isnan(ideal):
                kind = "undefined"  # 0/0
            elif ideal < -0.5 or ideal > self.qmax + 0.5:
                kind = "saturated"
            elif ties[i]:
                kind = "tie_up" if h > ideal else "tie_down"
            elif abs(abs(ideal - n) - abs(ideal - h)) < TIE_TOLERANCE * max(abs(ideal), 256):
                kind = "equal_distance"
            else:
                kind = "npu_nearer" if abs(ideal - n) < abs(ideal - h) else "htp_nearer"
            out[kind] = out.get(kind, 0) + 1
        return out

    def ties(self) -> np.ndarray:
        """Where the exact value lies at .5 (within float32's error of the reference; 0/0 is no tie)."""
        with np.errstate(invalid="ignore"):
            frac = self.ideal - np.floor(self.ideal)
            return np.abs(frac - 0.5) < TIE_TOLERANCE * np.maximum(np.abs(self.ideal), 256)

    def tie_rule(self) -> dict:
        """How the htp rounds every exact .5 in range: {pos_up, pos_down, neg_up, neg_down} (the sign of
        the real value, q - zp): half up rounds both up, half away from zero pos up and neg down."""
        out = {}
        inside = (self.ideal > 0) & (self.ideal < self.qmax)
        for i in np.flatnonzero(self.ties() & inside):
            key = ("pos" if self.ideal[i] > self.zp else "neg") + ("_up" if self.htp[i] > self.ideal[i] else "_down")
            out[key] = out.get(key, 0) + 1
        return out


# float32's error on the reference, relative: a value within it of .5 counts as a tie.
TIE_TOLERANCE = 2.0 ** -21


def graph_of(cases: list[Case], work: Path) -> Path:
    """work/model.onnx: the cases side by side, each tensor named '<case>__<name>'."""
    nodes, inputs, outputs, inits = [], [], [], []
    for case in cases:
        rename = _renamer(case)
        for node in case.nodes:
            n = copy.deepcopy(node)
            n.name = rename(n.name or n.output[0])
            n.input[:] = [rename(x) for x in n.input]
            n.output[:] = [rename(x) for x in n.output]
            nodes.append(n)
        inputs += [(rename(k), onnx.TensorProto.FLOAT, list(shape)) for k, (shape, _) in case.inputs.items()]
        int_out = {n.output[i] for n in case.nodes for i in INDEX_OUTPUTS.get(n.op_type, ())}
        bool_out = {n.output[0] for n in case.nodes if n.op_type in BOOL_OUTPUTS}
        outputs += [(rename(k), onnx.TensorProto.INT64 if k in int_out else
                     onnx.TensorProto.BOOL if k in bool_out else onnx.TensorProto.FLOAT) for k in case.outputs]
        inits += [(rename(k), v) for k, v in case.inits.items()]
    return make_model(work, nodes, inputs, outputs, inits, opset=max(c.opset for c in cases))


def _renamer(case: Case):
    return lambda name: f"{case.name}__{name}" if name else name


def quantized_graph(cases: list[Case], bits: int, path: Path):
    """The cases' graph quantized at the pinned ranges (unpinned activations: DEFAULT_RANGE), with
    the npu's parameters."""
    graph = build_graph(path)
    pins = {}
    for case in cases:
        rename = _renamer(case)
        pins.update({rename(k): r for k, (_, r) in case.inputs.items()})
        pins.update({rename(k): r for k, r in {**case.pins, **case.outputs}.items() if r is not None})
    stats = Stats({n: TensorStats(*pins.get(n, DEFAULT_RANGE), np.zeros(16, np.int64), None)
                   for n in activation_names(graph)})
    overrides = {"activations": {n: _pinned(*r) for n, r in pins.items() if n in graph.tensors}}
    precision = cases[0].precision(bits)
    quantize_graph(graph, PRECISIONS[precision], stats, QuantOptions(), overrides)
    add_npu_params(graph)
    return graph, precision


def _pinned(lo, hi):
    return lambda stats, bits: activation_encoding(lo, hi, bits)


def feeds_of(cases: list[Case], graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Dequantized codes for every input: every code in order when the input holds 2^b elements or
    more (a LUT's whole domain), otherwise random codes with both ends of the range first."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for case in cases:
        rename = _renamer(case)
        for name, (shape, _) in case.inputs.items():
            enc = graph.tensor(rename(name)).encoding
            top, size = 2 ** enc.bitwidth - 1, int(np.prod(shape))
            if size >= top + 1:
                codes = np.round(np.linspace(0, top, size))
            else:
                codes = rng.integers(0, top + 1, size)
                codes[:2] = [0, top][:size]
            feeds[rename(name)] = dequantize(codes.reshape(shape), enc)
    return feeds


def run_npu(graph, precision: str, feeds: dict, work: Path, threads: int = 1) -> dict[str, np.ndarray]:
    """Output codes of the npu backend."""
    out = work / "npu"
    write_artifacts(graph, out, "model.onnx", precision)
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    model = Model(lib, backend="npu", threads=threads, keep_tensors=True)
    model.run(feeds)
    tensors = model.tensors(float_only=False)
    return {o: tensors[o].astype(np.int64).reshape(-1) for o in graph.outputs}


def cache_dir() -> Path:
    return Path(os.environ.get("QNNB_NPU_VS_HTP_CACHE") or Path.home() / ".cache" / "qnn-build" / "npu-vs-htp")


def run_htp(qdq: onnx.ModelProto, feeds: dict, work: Path) -> dict[str, np.ndarray]:
    """Output codes of the HTP backend (a context generated for SOC, run in emulation), cached."""
    from qnn_build.htp.ep import versions
    from qnn_build.htp.generate import generate_context
    from qnn_build.htp.session import HtpModel

    data = qdq.SerializeToString()
    key = hashlib.sha256(data + repr(sorted(versions().items())).encode() + SOC.encode())
    for name in sorted(feeds):
        key.update(name.encode() + feeds[name].tobytes())
    cached = cache_dir() / f"{key.hexdigest()[:32]}.npz"
    if cached.is_file():
        with np.load(cached) as z:
            return {k: z[k] for k in z.files}
    (work / "model.qdq.onnx").write_bytes(data)
    generate_context(work / "model.qdq.onnx", work / "htp" / "model.htp.onnx", SOC)
    with HtpModel(work / "htp" / "model.htp.onnx") as htp:
        codes = {k: v.astype(np.int64).reshape(-1) for k, v in htp.run_codes(feeds).items()}
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp.npz")
    np.savez(tmp, **codes)
    tmp.replace(cached)
    return codes


def ideal_codes(qdq: onnx.ModelProto, feeds: dict, graph) -> dict[str, np.ndarray]:
    """Each output's float value before its final quantize, in output-code units (float64):
    onnxruntime's CPU on the export with graph fusions off (Q/DQ as float arithmetic)."""
    import onnxruntime as ort
    model = copy.deepcopy(qdq)
    producers = {o: n for n in model.graph.node for o in n.output}
    floats = {}
    for out in graph.outputs:
        dq = producers[out]
        q = producers.get(dq.input[0])
        if dq.op_type == "DequantizeLinear" and q is not None and q.op_type == "QuantizeLinear":
            floats[out] = q.input[0]
            model.graph.output.append(helper.make_tensor_value_info(q.input[0], onnx.TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    values = dict(zip([o.name for o in session.get_outputs()], session.run(None, {n: feeds[n] for n in names})))
    out = {}
    for name, float_name in floats.items():
        enc = graph.tensor(name).encoding
        out[name] = (values[float_name].astype(np.float64).reshape(-1) / float(enc.scales[0])
                     - float(enc.offsets[0]))
    return out


def run_cases(cases: list[Case], bits: int, work: Path) -> list[Outcome]:
    """Every output of every case at `bits`-bit activations; a group either backend refuses is run
    case by case, so the refusal names its case."""
    try:
        return _run_group(cases, bits, work)
    except QnnBuildError as e:
        if len(cases) == 1:
            return [Outcome(cases[0], bits, refused=_one_line(e))]
    return [o for i, c in enumerate(cases) for o in run_cases([c], bits, work / f"case{i}")]


def _one_line(error: Exception) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text.split(": ", 1)[1] if text.startswith("/") and ": " in text else text


def _run_group(cases: list[Case], bits: int, work: Path) -> list[Outcome]:
    work.mkdir(parents=True, exist_ok=True)
    graph, precision = quantized_graph(cases, bits, graph_of(cases, work))
    feeds = feeds_of(cases, graph)
    qdq = export_qdq(graph, precision)
    try:
        npu = run_npu(graph, precision, feeds, work)
    except Exception as e:  # the runtime raises its own error types for a refused node
        raise QnnBuildError(f"npu: {_one_line(e)}") from None
    htp = run_htp(qdq, feeds, work)
    ideal = ideal_codes(qdq, feeds, graph)
    outcomes = []
    for case in cases:
        rename = _renamer(case)
        for name in case.outputs:
            full = rename(name)
            enc = graph.tensor(full).encoding
            if enc is None:  # an index output
                outcomes.append(Outcome(case, bits, name, npu[full], htp[full]))
                continue
            outcomes.append(Outcome(case, bits, name, npu[full], htp[full], ideal.get(full),
                                    2 ** enc.bitwidth - 1, -int(enc.offsets[0])))
    return outcomes


def run_table(cases: list[Case], bits_list=(8, 16), work: Path | None = None) -> list[Outcome]:
    """Every case at each activation width it allows, grouped by (op, weight bits)."""
    groups = {}
    for case in cases:
        for bits in bits_list:
            if bits in case.bits:
                groups.setdefault((case.op, case.weights, bits), []).append(case)
    with tempfile.TemporaryDirectory(prefix="qnnb-npu-vs-htp-") as tmp:
        root = Path(work or tmp)
        out = []
        for i, ((op, weights, bits), group) in enumerate(groups.items()):
            out += run_cases(group, bits, root / f"{i:03d}_{op}_w{weights}a{bits}")
        return out


def summarize(outcomes: list[Outcome]) -> dict:
    """op -> bits -> {cases, exact, max_lsb, values, values_exact, within1, pattern, refused}."""
    table = {}
    for o in outcomes:
        row = table.setdefault(o.case.op, {}).setdefault(o.bits, {
            "cases": set(), "inexact": set(), "max_lsb": 0, "values": 0, "values_exact": 0, "within1": 0,
            "pattern": {}, "ties": {}, "refused": {}})
        row["cases"].add(o.case.name)
        if o.refused:
            row["refused"][o.case.name] = o.refused
            continue
        d = np.abs(o.diff)
        row["values"] += d.size
        row["values_exact"] += int((d == 0).sum())
        row["within1"] += int((d <= 1).sum())
        row["max_lsb"] = max(row["max_lsb"], int(d.max(initial=0)))
        if d.any():
            row["inexact"].add(o.case.name)
            if o.ideal is not None:
                for k, v in o.pattern().items():
                    row["pattern"][k] = row["pattern"].get(k, 0) + v
        if o.ideal is not None:
            for k, v in o.tie_rule().items():
                row["ties"][k] = row["ties"].get(k, 0) + v
    return table
