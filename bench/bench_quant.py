"""Post-training quantization accuracy: ours (w8a8, w8a16, w4a16) against onnxruntime's and NNCF's.

    python bench/bench_quant.py [--calib 100] [--calib-offset 0] [--test 200] [--models digits_cnn,transformer_block]
                                [--model PATH [--input-dim NAME DIMS] [--input-value NAME VALUE]
                                              [--calibration NPZ] [--test-data NPZ]]...
                                [--tools ours,ort,nncf] [--only TEXT,...] [--markdown FILE] [--smoke]

One run. For every shipped model (models/<name>/model.onnx with its calibration.npz and test.npz,
dynamic dims pinned to 1, or as a models/*.yaml spec pins them) and every extra `--model`, every
tool gets the SAME float model (dims pinned), the SAME --calib calibration samples (the first, or
from index --calib-offset on) and is measured on the SAME first --test test samples:

- ours: convert(precision=...) with a few settings, compiled and run on our cpu backend (the
  quantized float simulation: every rounding and clamp of the integer model);
- onnxruntime: quant_pre_process + quantize_static (QDQ, per-channel, activations QUInt8 or
  QUInt16, weights QInt8 or QInt4; MinMax and Percentile calibration), and MatMulNBitsQuantizer
  (4-bit weight-only, block 32, symmetric) where the model has MatMul with constant weights;
- NNCF: nncf.quantize on the ONNX model (default preset) and nncf.compress_weights INT4_SYM
  (group 32, weight-only) where it applies. The peers' models run on onnxruntime (its default graph
  optimizations, which fuse QDQ into integer kernels; one thread).

Metrics per output against the float model run by onnxruntime, by what the output is
(bench/output_kinds.py; a real model's entry in bench/common.py declares it, other outputs go by
their dtype): values: SQNR in dB, 10*log10(sum ref^2 / sum err^2) over all test samples, and for
classifier outputs ([1, C] logits) the top-1 agreement with the float model (and accuracy against
the labels when test data has them); ids (integer outputs, argmax choices): the share equal to the
float model's, no SQNR; detections (a ranked list of box + score (+ class) rows): the SQNR over the
rows matched one to one, whatever their rank, and recall and precision at IoU >= 0.5. Also
the wall time of each tool's quantization, calibration included (ours: convert, which
calibrates, plus compiling the model library; the runtime library is built before any timing).
Each setting of ours calibrates anew (no statistics reused), as a user's single convert would.
"quantized acts" counts the activation tensors a row quantizes (ours: entries of
model.encodings.json; peers: tensors a QuantizeLinear takes): peers leave some ops float (listed
under each table), so a peer's SQNR can come from quantizing less. "ours w16a16" is a diagnostic:
it tells how much of w8a16's error is the 8-bit weights'.
A tool that fails on a model is reported as "failed: <reason>" and the run goes on.

The summary answers, per model: is our best w8a8 SQNR >= onnxruntime MinMax's, and >= the best
w8a8 peer's? w8a16 - w8a8 in dB (target >= 15), and w4a16 vs w8a16 (target: within 3 dB on
transformer_block). A model's SQNR is its worst output's (ids have none). The default's table,
whose verdict also needs each ids output's agreement >= the peer's, gives its lead over
the best onnxruntime row with the standard deviation of that difference over the test samples (a
paired bootstrap; an ids output's agreement the same way, in points of %): a shortfall within two
of them is the test set's noise, not a method's.

Peers are benchmark-only dependencies: pip install nncf openvino onnx_ir.
"""

import argparse
import json
import re
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import quant_peers as peers  # noqa: E402
from output_kinds import Detections, Ids, Values, id_agreement, kinds_of, score_detections  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET_A16_GAIN_DB = 15.0
TARGET_W4_GAP_DB = 3.0


# --- what runs ---------------------------------------------------------------------------------------

@dataclass
class Setting:
    label: str
    tool: str          # ours | ort | nncf
    kind: str          # fp32 | w8a8 | w8a16 | w16a16 | w4a16 | w4 (weight-only, float activations)
    params: dict = field(default_factory=dict)


AUTO = {"act_range": "auto", "weight_rounding": "auto"}      # the default-to-be (docs/quantization.md)
# What every other row of ours starts from: minmax ranges and nearest rounding (what `--fast` makes
# of auto), so each row's label names all it changes whatever convert's defaults are.
FAST = {"act_range": "minmax", "weight_rounding": "nearest"}


def ours_settings(block_size: int) -> list[Setting]:
    b = f"b{block_size}"
    rows = [
        ("ours fp32 (sanity)", "fp32", {}),
        ("ours w8a8 minmax", "w8a8", {}),
        ("ours w8a8 minmax, 8-bit recurrence", "w8a8", {"recurrent_bits": 8}),  # LSTM/GRU at the precision's bits
        ("ours w8a8 percentile", "w8a8", {"act_range": "percentile"}),
        ("ours w8a8 search", "w8a8", {"act_range": "search"}),
        ("ours w8a8 gptq", "w8a8", {"weight_rounding": "gptq"}),  # error-feedback weight rounding
        ("ours w8a8 search+gptq", "w8a8", {"act_range": "search", "weight_rounding": "gptq"}),
        ("ours w8a8 gptq+biascorr", "w8a8", {"weight_rounding": "gptq", "bias_correction": True}),
        ("ours w8a8 auto", "w8a8", AUTO),  # the best fixed range method (21) and GPTQ
        ("ours w8a8 auto+biascorr", "w8a8", {**AUTO, "bias_correction": True}),
        ("ours w8a8 mse", "w8a8", {"act_range": "mse", "weight_range": "mse"}),
        ("ours w8a8 mse+cle", "w8a8", {"act_range": "mse", "weight_range": "mse", "cle": True}),
        ("ours w8a8 mse+cle+biascorr", "w8a8", {"act_range": "mse", "weight_range": "mse", "cle": True,
                                                "bias_correction": True}),
        ("ours w8a16 minmax", "w8a16", {}),
        ("ours w8a16 gptq", "w8a16", {"weight_rounding": "gptq"}),
        ("ours w16a16 minmax (diagnostic)", "w16a16", {}),
        (f"ours w4a16 {b} minmax", "w4a16", {"block_size": block_size}),
        (f"ours w4a16 {b} mse-weights", "w4a16", {"block_size": block_size, "weight_range": "mse"}),
        (f"ours w4a16 {b} gptq", "w4a16", {"block_size": block_size, "weight_rounding": "gptq"}),
        # What the weights alone cost: our quantized weights with every activation left float. No
        # activation encoding can beat these, so they bound w8a16 and w4a16 from above.
        ("ours w8 gptq, float acts (bound)", "w8", {"weight_rounding": "gptq"}),
        (f"ours w4 {b} gptq, float acts (bound)", "w4", {"block_size": block_size, "weight_rounding": "gptq"}),
    ]
    return [Setting(label, "ours", kind, params=p) for label, kind, p in rows]


def peer_settings(block_size: int) -> list[Setting]:
    return [
        Setting("ort w8a8 MinMax", "ort", "w8a8", params={"method": "minmax", "act_bits": 8, "weight_bits": 8}),
        Setting("ort w8a8 Percentile", "ort", "w8a8", params={"method": "percentile", "act_bits": 8, "weight_bits": 8}),
        Setting("ort w8a16 MinMax", "ort", "w8a16", params={"method": "minmax", "act_bits": 16, "weight_bits": 8}),
        Setting("ort w4a16 MinMax (QInt4 per-ch)", "ort", "w4a16",
                params={"method": "minmax", "act_bits": 16, "weight_bits": 4}),
        Setting(f"ort MatMulNBits w4 b{block_size} (fp act)", "ort-nbits", "w4", params={"block_size": block_size}),
        Setting("nncf w8a8 (default preset)", "nncf", "w8a8"),
        Setting(f"nncf int4_sym g{block_size} (fp act)", "nncf-int4", "w4", params={"group_size": block_size}),
    ]


# --- models and data ---------------------------------------------------------------------------------

@dataclass
class Bench:
    name: str
    path: Path
    dims: dict = field(default_factory=dict)
    calibration: Path | None = None
    test: Path | None = None
    values: dict = field(default_factory=dict)  # inputs pinned to a constant (--input-value)
    outputs: tuple = ()  # what its outputs are (output_kinds.py); undeclared ones by their dtype


def shipped_models() -> list[Bench]:
    """models/<name>/model.onnx with its npz files; pins from a models/*.yaml spec naming it, if any."""
    specs = {}
    try:
        import yaml
        for spec_path in sorted((ROOT / "models").glob("*.yaml")):
            spec = yaml.safe_load(spec_path.read_text()) or {}
            if "source" in spec:
                specs[(spec_path.parent / spec["source"]).resolve()] = (spec_path.parent, spec)
    except ImportError:
        pass
    out = []
    for d in sorted(p for p in (ROOT / "models").iterdir() if (p / "model.onnx").is_file()):
        path = (d / "model.onnx").resolve()
        base, spec = specs.get(path, (d, {}))
        pins = {k: (v["shape"] if isinstance(v, dict) else v) for k, v in (spec.get("inputs") or {}).items()}
        test = spec.get("test") or {}
        calib = base / spec["calibration"] if isinstance(spec.get("calibration"), str) else d / "calibration.npz"
        test = base / test["data"] if isinstance(test, dict) and isinstance(test.get("data"), str) else d / "test.npz"
        out.append(Bench(d.name, path, pins, calib, test))
    return out


def real_models(names: str, data_dir: Path, n_calib: int, n_test: int, app_sizes: bool = False) -> list[Bench]:
    """The real models of bench/common.py, each with calibration and test
    inputs of its kind (bench/real_data.py) written to `data_dir`. names: comma-separated, or "all".
    app_sizes: the sizes of bench/common.py (its apps'), not the smaller BENCH_DIMS of this benchmark."""
    from common import REAL_MODELS, fetch_real
    from real_data import BENCH_DIMS, samples

    known = {m.name: m for m in REAL_MODELS}
    wanted = list(known) if names == "all" else names.split(",")
    out = []
    for name in wanted:
        if name not in known:
            raise SystemExit(f"--real: unknown model '{name}' (known: {', '.join(known)})")
        m = known[name]
        dims = m.dims if app_sizes else BENCH_DIMS.get(name, m.dims)
        files = []
        for split, seed, count in (("calibration", 0, n_calib), ("test", 1, n_test)):
            files.append(data_dir / f"{name}_{split}.npz")
            np.savez(files[-1], **samples(name, dims, count, seed))
        out.append(Bench(name, fetch_real(m), dict(dims), files[0], files[1], dict(m.values), m.outputs))
    return out


def pinned_model(bench: Bench, out_path: Path) -> tuple[Path, dict[str, list[int]]]:
    """A copy of the model with every input dim static: --input-dim pins, other symbolic dims -> 1.
    Inputs pinned by --input-value stay inputs (onnxruntime crashes folding some of them) and are
    left out of the returned dims: every feed carries their value (pinned_feeds). Such a model keeps
    its symbolic dims in the file: onnxruntime checks the branches the value would fold away too, and
    static dims can contradict them; ours gets the dims from `convert`."""
    model = onnx.load(str(bench.path))
    inits = {i.name for i in model.graph.initializer}
    dims = {}
    for vi in model.graph.input:
        if vi.name in inits or vi.name in bench.values:
            continue
        shape = vi.type.tensor_type.shape
        want = bench.dims.get(vi.name) or [d.dim_value if d.dim_value > 0 else 1 for d in shape.dim]
        dims[vi.name] = [int(v) for v in want]
        if bench.values:
            continue
        del shape.dim[:]
        for v in want:
            shape.dim.add().dim_value = int(v)
    del model.graph.value_info[:]  # inferred again from the pinned inputs by whoever needs them
    onnx.save(model, str(out_path))
    return out_path, dims


def input_dtypes(model, names=None) -> dict:
    """{graph input: its numpy dtype} (token ids and node indices stay integers), of `names` if given."""
    from onnx import helper
    return {vi.name: helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type) for vi in model.graph.input
            if names is None or vi.name in names}


def pinned_feeds(samples: list[dict], model, values: dict) -> list[dict]:
    """Each sample with the --input-value inputs added, in their ONNX dtypes."""
    types = input_dtypes(model)
    return [{**s, **{k: np.array(v, types[k]) for k, v in values.items()}} for s in samples]


def load_samples(npz: Path | None, dims: dict, dtypes: dict, count: int, seed: int) -> tuple[list[dict], np.ndarray | None]:
    """`count` feeds dicts from an npz ([N, *input shape] per input), or seeded random normal inputs."""
    if npz is None:
        rng = np.random.default_rng(seed)
        return [{k: rng.standard_normal(v).astype(dtypes[k]) for k, v in dims.items()} for _ in range(count)], None
    z = np.load(npz, allow_pickle=False)
    arrays = {}
    for k, shape in dims.items():
        if k not in z.files:
            raise ValueError(f"{npz}: no array for input '{k}' (arrays: {', '.join(z.files)})")
        arrays[k] = z[k].reshape(-1, *shape).astype(dtypes[k])
    n = min(count, *(len(a) for a in arrays.values()))
    labels = z["labels"][:n] if "labels" in z.files else None
    return [{k: a[i] for k, a in arrays.items()} for i in range(n)], labels


# --- metrics -------------------------------------------------------------------------------------------

def sqnr_db(ref: np.ndarray, out: np.ndarray) -> float:
    ref = ref.astype(np.float64)
    err = float(np.sum((out.astype(np.float64) - ref) ** 2))
    sig = float(np.sum(ref ** 2))
    if err == 0:
        return float("inf")
    return 10 * np.log10(max(sig, 1e-300) / err)


def is_classifier(shape) -> bool:
    return len(shape) == 2 and shape[0] == 1 and shape[1] >= 2


@dataclass
class Result:
    label: str
    tool: str
    kind: str
    # per measure of the model (info["measures"]; output_kinds.py), None where it does not apply:
    sqnr: list[float | None] | None = None       # values; detections: over the matched rows
    top1: list[float | None] | None = None       # values of a classifier
    agree: list[float | None] | None = None      # ids: the share equal to the float model's
    recall: list[float | None] | None = None     # detections, at IoU >= 0.5 and the same class
    precision: list[float | None] | None = None
    acc: float | None = None
    seconds: float | None = None
    error: str | None = None
    note: str = ""
    n_quantized: int | None = None            # activation tensors given an encoding / a QuantizeLinear
    left_float: list[str] = field(default_factory=list)  # op types whose outputs stay float (peers)
    # per SQNR measure: (squared error, squared reference) of each test sample, for the noise of a difference
    per_sample: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    # per ids measure: the share of each test sample's ids equal to the float model's
    ids_per_sample: list[np.ndarray] = field(default_factory=list)

    @property
    def score(self) -> float | None:
        """The model's SQNR for this setting: its worst measure's (ids have none)."""
        measured = [v for v in self.sqnr or [] if v is not None]
        return min(measured) if measured else None


def measure(setting, outs, ref, labels, seconds, kinds, names, note="", n_quantized=None, left_float=()) -> Result:
    """outs, ref: per model output (in `names` order) [test samples, ...]; kinds: the measures."""
    outs = {n: o.reshape(r.shape) for n, o, r in zip(names, outs, ref)}
    ref = dict(zip(names, ref))
    r = Result(setting.label, setting.tool, setting.kind, seconds=seconds, note=note, n_quantized=n_quantized,
               left_float=list(left_float))
    r.sqnr, r.top1, r.agree, r.recall, r.precision = ([None] * len(kinds) for _ in range(5))
    for k, kind in enumerate(kinds):
        if isinstance(kind, Ids):
            r.agree[k] = id_agreement(ref[kind.output], outs[kind.output])
            same = outs[kind.output] == ref[kind.output]
            r.ids_per_sample.append(same.reshape(len(same), -1).mean(axis=1))
        elif isinstance(kind, Detections):
            d = score_detections(kind, ref, outs)
            r.sqnr[k], r.recall[k], r.precision[k] = d.sqnr, d.recall, d.precision
            r.per_sample.append(d.per_sample)
        else:
            o, ref_o = outs[kind.output], ref[kind.output]
            r.sqnr[k] = sqnr_db(ref_o, o)
            r64 = ref_o.astype(np.float64).reshape(len(ref_o), -1)
            r.per_sample.append((np.sum((o.astype(np.float64).reshape(len(ref_o), -1) - r64) ** 2, axis=1),
                                 np.sum(r64 ** 2, axis=1)))
            if is_classifier(ref_o.shape[1:]):
                r.top1[k] = float(np.mean(np.argmax(o[:, 0], -1) == np.argmax(ref_o[:, 0], -1)))
                if labels is not None and r.acc is None:
                    r.acc = float(np.mean(np.argmax(o[:, 0], -1) == labels[: len(o)]))
    return r


BOOTSTRAP_ROUNDS = 1000


def difference_sd(a: Result, b: Result) -> float:
    """The standard deviation of a.score - b.score over the test samples: a paired bootstrap (the
    same resampled test samples for both, BOOTSTRAP_ROUNDS rounds, a fixed seed). A difference
    within two of it says more about which samples were drawn than about the methods."""
    n = len(a.per_sample[0][0])
    idx = np.random.default_rng(0).integers(0, n, size=(BOOTSTRAP_ROUNDS, n))

    def scores(r):  # [rounds]: the worst output's SQNR on each resampled set (inf where exact, as sqnr_db)
        out = []
        for err, sig in r.per_sample:
            e, p = err[idx].sum(1), sig[idx].sum(1)
            out.append(np.where(e == 0, np.inf, 10 * np.log10(np.maximum(p, 1e-300) / np.maximum(e, 1e-300))))
        return np.min(out, axis=0)
    with np.errstate(invalid="ignore"):
        d = scores(a) - scores(b)
    d = d[np.isfinite(d)]
    return float(np.std(d)) if len(d) else 0.0


def agreement_difference_sd(a: np.ndarray, b: np.ndarray) -> float:
    """The standard deviation of mean(a) - mean(b) for two rows' per-sample id agreements, by the
    same paired bootstrap as difference_sd."""
    idx = np.random.default_rng(0).integers(0, len(a), size=(BOOTSTRAP_ROUNDS, len(a)))
    return float(np.std(a[idx].mean(1) - b[idx].mean(1)))


def short_reason(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else type(e).__name__
    if not lines and e.__traceback__ is not None:  # a bare assert: where it fired
        frame = traceback.extract_tb(e.__traceback__)[-1]
        text += f" in {Path(frame.filename).name}:{frame.lineno} ({frame.line})"
    if type(e).__name__ not in text and not isinstance(e, peers.PeerUnavailable):
        text = f"{type(e).__name__}: {text}"
    return text[:160]


# --- running each tool ------------------------------------------------------------------------------

def run_ours(setting, float_path, dims, values, calib_npz, test, workdir, block_size, percentile):
    """(outputs over the test samples, seconds, note, quantized activations, op types left float)."""
    from qnn_build.convert import convert
    from qnn_build.errors import QnnBuildError
    from qnn_build.quant import QuantOptions
    from qnn_build.runtime.binding import Model, runtime_library
    from qnn_build.toolchain import build_model_lib

    runtime_library(None)  # built (or rebuilt after a failure) outside the timing
    p = {"percentile": percentile, **FAST, **setting.params}
    cle = p.pop("cle", False)
    out = Path(tempfile.mkdtemp(prefix="ours-", dir=workdir))
    note = ""
    kw = {"input_values": values}
    if setting.kind != "fp32":
        kw["calibration"] = calib_npz
    precision = {"w8": "w8a16", "w4": "w4a16"}.get(setting.kind, setting.kind)
    write = convert_weights_only if setting.kind in ("w8", "w4") else convert  # w8/w4: the "(bound)" rows
    t0 = time.perf_counter()
    try:
        write(float_path, out, input_dims=dims, precision=precision, options=QuantOptions(**p), cle=cle, **kw)
    except QnnBuildError as e:
        if "block size" not in str(e) or not p.get("block_size"):
            raise
        # Block-wise needs the block to divide every input dimension it applies to: per-channel instead.
        m = re.search(r"input dimension (\d+) of weight '([^']+)'", str(e))
        note = (f"per-channel: block {block_size} does not divide K={m.group(1)} of {m.group(2)}" if m
                else f"per-channel: {str(e)[:80]}")
        p.pop("block_size")
        t0 = time.perf_counter()
        write(float_path, out, input_dims=dims, precision=precision, options=QuantOptions(**p), cle=cle, **kw)
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    seconds = time.perf_counter() - t0
    model = Model(lib, threads=1)
    try:
        names = [o.name for o in model.outputs]
        runs = [model.run({k: v for k, v in feeds.items() if k in dims}) for feeds in test]
    finally:
        model.close()
    enc = out / "model.encodings.json"
    n_q = len(json.loads(enc.read_text())["activation_encodings"]) if enc.is_file() else 0
    return [np.stack([r[n] for r in runs]) for n in names], seconds, note, n_q, []


def convert_weights_only(float_path, out, input_dims, precision, options, cle, input_values, calibration):
    """convert()'s quantization with the activation encodings dropped afterwards: the quantized
    weights (and biases) in an otherwise float graph, which our cpu backend runs in float."""
    from qnn_build.convert import _from_samples, build_graph, write_artifacts
    from qnn_build.options import parse_precision
    from qnn_build.quant import quantize_graph

    prec = parse_precision(precision)
    graph = build_graph(float_path, input_dims, input_values, None, cle=cle, lower_rnn=True)
    stats, hessians = _from_samples(graph, calibration, None, options)
    quantize_graph(graph, prec, stats, options, None, None, hessians)
    for t in graph.tensors.values():
        if not t.is_const:
            t.encoding = None
    write_artifacts(graph, out, Path(float_path).name, prec.name)


def run_peer(setting, float_path, calib, test, workdir, percentile):
    """(outputs over the test samples, seconds, note, quantized activations, op types left float)."""
    dst = Path(tempfile.mkdtemp(prefix=f"{setting.tool}-", dir=workdir)) / "model.onnx"
    t0 = time.perf_counter()
    note = ""
    if setting.tool == "ort":
        note = peers.ort_static(float_path, dst, calib, percentile=percentile, **setting.params)
    elif setting.tool == "ort-nbits":
        peers.ort_matmul_nbits(float_path, dst, **setting.params)
    elif setting.tool == "nncf":
        peers.nncf_ptq(float_path, dst, calib)
    elif setting.tool == "nncf-int4":
        peers.nncf_int4(float_path, dst, **setting.params)
    else:
        raise ValueError(setting.tool)
    seconds = time.perf_counter() - t0
    weight_only = setting.kind == "w4"  # activations float by design: no list of float ops
    return (peers.run_onnx(dst, test), seconds, note, peers.quantized_activations(dst),
            [] if weight_only else peers.float_ops(dst))


def bench_model(bench: Bench, args, settings) -> tuple[list[Result], dict]:
    with tempfile.TemporaryDirectory(prefix=f"qnnb-bench-quant-{bench.name}-") as tmp:
        tmp = Path(tmp)
        info = {"name": bench.name}
        try:
            float_path, dims = pinned_model(bench, tmp / "float.onnx")
            model = onnx.load(str(float_path), load_external_data=False)
            dtypes = input_dtypes(model, dims)
            calib, _ = load_samples(bench.calibration, dims, dtypes, args.calib_offset + args.calib, seed=0)
            calib = calib[args.calib_offset:]
            test, labels = load_samples(bench.test, dims, dtypes, args.test, seed=1)
            np.savez(tmp / "calibration.npz", **{k: np.stack([s[k] for s in calib]) for k in dims})
            calib, test = pinned_feeds(calib, model, bench.values), pinned_feeds(test, model, bench.values)
            ref = peers.run_onnx(float_path, test)
        except Exception as e:  # noqa: BLE001 - the model itself cannot be prepared: say so, go on
            info["error"] = short_reason(e)
            return [], info
        out_names = [o.name for o in model.graph.output]
        measures = kinds_of(bench.outputs, out_names, ref)
        shapes = dict(zip(out_names, (r.shape[1:] for r in ref)))
        info.update(outputs=out_names, measures=measures, dims=dims, n_calib=len(calib),
                    calib_offset=args.calib_offset, n_test=len(test), n_float_acts=peers.float_activations(float_path),
                    random_data=bench.calibration is None or bench.test is None,
                    classifier=[isinstance(k, Values) and is_classifier(shapes[k.output]) for k in measures])
        if labels is not None and is_classifier(ref[0].shape[1:]):
            info["float_acc"] = float(np.mean(np.argmax(ref[0][:, 0], -1) == labels))
        results = []
        for s in settings:
            try:
                if s.tool == "ours":
                    outs, sec, note, n_q, left = run_ours(s, float_path, dims, bench.values, tmp / "calibration.npz",
                                                          test, tmp, args.block_size, args.percentile)
                else:
                    outs, sec, note, n_q, left = run_peer(s, float_path, calib, test, tmp, args.percentile)
                r = measure(s, outs, ref, labels, sec, measures, out_names, note, n_q, left)
            except peers.PeerUnavailable as e:
                r = Result(s.label, s.tool, s.kind, error=str(e))
            except Exception as e:  # noqa: BLE001 - reported in the table, the run continues
                if args.verbose:
                    traceback.print_exc()
                r = Result(s.label, s.tool, s.kind, error=f"failed: {short_reason(e)}")
            results.append(r)
            if args.live:
                print_row(r, info)
        return results, info


# --- reporting ------------------------------------------------------------------------------------------

def fmt_db(v) -> str:
    return "inf" if v == float("inf") else f"{v:.2f}"


def measure_columns(kind) -> list[str]:
    if isinstance(kind, Ids):
        return [f"{kind.output} ids agree"]
    if isinstance(kind, Detections):
        return [f"{kind.name} matched SQNR dB", f"{kind.name} recall", f"{kind.name} precision"]
    return [f"{kind.output} SQNR dB"]


def fmt_share(v, percent=False) -> str:
    return "n/a" if v is None else f"{v * 100:.2f} %" if percent else f"{v:.3f}"


def measure_cells(r: Result, k: int, kind) -> list[str]:
    if isinstance(kind, Ids):
        return [fmt_share(r.agree[k], percent=True)]
    if isinstance(kind, Detections):
        return [fmt_db(r.sqnr[k]), fmt_share(r.recall[k]), fmt_share(r.precision[k])]
    return [fmt_db(r.sqnr[k])]


def table_rows(results: list[Result], info: dict) -> tuple[list[str], list[list[str]]]:
    kinds = info["measures"]
    header = ["tool / setting"] + [c for kind in kinds for c in measure_columns(kind)]
    header += [f"{kind.output} top-1" for kind, c in zip(kinds, info["classifier"]) if c]
    has_acc = "float_acc" in info
    if has_acc:
        header.append("accuracy")
    header += ["quantized acts", "time s"]
    rows = []
    for r in results:
        if r.error:
            rows.append([r.label, r.error] + [""] * (len(header) - 2))
            continue
        row = [r.label + (" *" if r.note else "")] + [c for k, kind in enumerate(kinds) for c in measure_cells(r, k, kind)]
        row += [f"{v * 100:.1f} %" for v, c in zip(r.top1, info["classifier"]) if c]
        if has_acc:
            row.append(f"{r.acc * 100:.1f} %" if r.acc is not None else "")
        row.append("" if r.n_quantized is None else str(r.n_quantized))
        row.append(f"{r.seconds:.2f}")
        rows.append(row)
    return header, rows


def _failed(row) -> bool:
    return row[-1] == ""  # a measured row always has its time


def render_text(header, rows) -> str:
    ok = [r for r in rows if not _failed(r)]
    widths = [max([len(header[i])] + [len(r[i]) for r in ok]) for i in range(len(header))]
    widths[0] = max([widths[0]] + [len(r[0]) for r in rows])
    lines = ["  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(header))]
    for r in rows:
        if _failed(r):  # the reason spans the metric columns
            lines.append(r[0].ljust(widths[0]) + "  " + r[1])
        else:
            lines.append("  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
    return "\n".join(lines)


def render_md(header, rows) -> str:
    esc = [[c.replace("|", "\\|") for c in r] for r in rows]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in esc]
    return "\n".join(lines)


def model_heading(info) -> str:
    if "error" in info:
        return f"{info['name']}: cannot prepare the model: {info['error']}"
    dims = ", ".join(f"{k} {v}" for k, v in info["dims"].items())
    offset = f" (from sample {info['calib_offset']})" if info.get("calib_offset") else ""
    text = (f"{info['name']} ({dims}; {info['n_calib']} calibration{offset}, {info['n_test']} test samples; "
            f"{info['n_float_acts']} float activations")
    if info.get("random_data"):
        text += ", random normal inputs"
    if "float_acc" in info:
        text += f"; float accuracy {info['float_acc'] * 100:.1f} %"
    return text + ")"


def left_float_lines(results) -> list[str]:
    return [f"{r.label}: {', '.join(r.left_float)}" for r in results if r.left_float]


def note_lines(results) -> list[str]:
    return [f"{r.label}: {r.note}" for r in results if r.note and not r.error]


def print_row(r, info):
    _, rows = table_rows([r], info)
    row = rows[0]
    print(row[0].ljust(44) + "  " + ("  ".join(c.rjust(9) for c in row[1:]) if not _failed(row) else row[1]),
          flush=True)


def best(results, pred) -> Result | None:
    ok = [r for r in results if pred(r) and r.score is not None]
    return max(ok, key=lambda r: r.score) if ok else None


def summary_rows(all_results) -> tuple[list[str], list[list[str]]]:
    header = ["model", "ours best w8a8", "ort w8a8 MinMax", ">= ort MinMax", "best w8a8 peer", ">= best peer",
              "ours w8a16", "w8a16 - w8a8 (>= 15)", "ours best w4a16", "w4a16 - w8a16 (within 3)",
              "best w8a16 peer", "best w4 peer"]
    rows = []

    def cell(r, acts=False):
        if r is None:
            return "n/a"
        label = r.label.replace("ours ", "").replace("w8a8 ", "").replace("w4a16 ", "").replace(" (default preset)", "")
        n = f"; {r.n_quantized} acts" if acts and r.n_quantized is not None else ""
        return f"{fmt_db(r.score)} ({label}{n})"

    for info, results in all_results:
        if "error" in info:
            rows.append([info["name"], f"cannot prepare: {info['error']}"] + [""] * (len(header) - 2))
            continue
        o8 = best(results, lambda r: r.tool == "ours" and r.kind == "w8a8")
        o16 = best(results, lambda r: r.tool == "ours" and r.kind == "w8a16")
        o4 = best(results, lambda r: r.tool == "ours" and r.kind == "w4a16")
        ort_mm = best(results, lambda r: r.label == "ort w8a8 MinMax")
        p8 = best(results, lambda r: r.tool != "ours" and r.kind == "w8a8")
        p16 = best(results, lambda r: r.tool != "ours" and r.kind == "w8a16")
        p4 = best(results, lambda r: r.tool != "ours" and r.kind in ("w4", "w4a16"))

        def ge(a, b):
            if a is None or b is None:
                return "n/a"
            return "yes" if a.score >= b.score else f"NO ({a.score - b.score:+.2f})"

        gain = f"{o16.score - o8.score:+.2f}" + ("" if o16.score - o8.score >= TARGET_A16_GAIN_DB else " (below)") \
            if o8 and o16 else "n/a"
        gap = f"{o4.score - o16.score:+.2f}" + ("" if o16.score - o4.score <= TARGET_W4_GAP_DB else " (beyond)") \
            if o4 and o16 else "n/a"
        rows.append([info["name"], cell(o8, True), cell(ort_mm, True), ge(o8, ort_mm), cell(p8, True), ge(o8, p8),
                     fmt_db(o16.score) if o16 else "n/a", gain, cell(o4), gap, cell(p16), cell(p4)])
    return header, rows


SUMMARY_MEASURE = ("SQNR in dB of each model's worst output vs the float model; detections: over the matched rows; "
                   "ids: not in it")
DEFAULT_LABEL = "ours w8a8 auto"   # the default the issue measures (act_range and weight_rounding auto)


def measure_text(kinds) -> str:
    """Which measures a model's verdict uses: "SQNR" where all its outputs are values."""
    values = [k.output for k in kinds if isinstance(k, Values)]
    if len(values) == len(kinds):
        return "SQNR"
    parts = [f"SQNR of {', '.join(values)}"] if values else []
    parts += [f"matched SQNR, recall, precision of {k.describe()}" for k in kinds if isinstance(k, Detections)]
    parts += [f"ids agreement of {k.output}" for k in kinds if isinstance(k, Ids)]
    return "; ".join(parts)


def default_cell(r: Result, kinds) -> str:
    """The model's SQNR (the worst output's), then each detections' recall and precision and each ids'
    agreement."""
    parts = [] if r.score is None else [fmt_db(r.score)]
    parts += [f"R {fmt_share(r.recall[k])} P {fmt_share(r.precision[k])}" for k, kind in enumerate(kinds)
              if isinstance(kind, Detections)]
    parts += [fmt_share(r.agree[k], percent=True) for k, kind in enumerate(kinds) if isinstance(kind, Ids)]
    return " / ".join(parts)


def noted(d: float, sd: float, text: str) -> str:
    return text + (", within noise" if d < 0 and -d <= 2 * sd else "")


def ids_leads(ours: Result, measured: list[Result], kinds) -> list[str]:
    """Each ids output's agreement over the best peer's (in points of %), with its σ."""
    out = []
    for n, (k, kind) in enumerate((k, kind) for k, kind in enumerate(kinds) if isinstance(kind, Ids)):
        top = max(measured, key=lambda r: r.agree[k])
        d, sd = ours.agree[k] - top.agree[k], agreement_difference_sd(ours.ids_per_sample[n], top.ids_per_sample[n])
        out.append(noted(d, sd, f"{kind.output} {d * 100:+.2f} % ({sd * 100:.2f})"))
    return out


def differences(ours: Result, peer: Result, kinds) -> tuple[list[str], bool]:
    """(ours - peer, per measure of the verdict: the SQNR and each ids' agreement; ours >= peer on all)."""
    texts, ok = [], True
    if ours.score is not None and peer.score is not None:
        texts.append(f"{ours.score - peer.score:+.2f}")
        ok = ours.score >= peer.score
    for k, kind in enumerate(kinds):
        if isinstance(kind, Ids):
            d = ours.agree[k] - peer.agree[k]
            texts.append(f"{kind.output} {d * 100:+.1f} %")
            ok = ok and d >= 0
    return texts, ok


def default_rows(all_results) -> tuple[list[str], list[list[str]]]:
    """The default alone against onnxruntime's fixed methods, with its conversion time over plain
    minmax's, by the measures of each output's kind (the last column says which). A peer that
    quantizes no activation (silero VAD: its graph is inside If branches) is not a w8a8 result and
    shows as n/a."""
    header = ["model", DEFAULT_LABEL, "ort w8a8 MinMax", "ort w8a8 Percentile", ">= both",
              "default - best peer (σ)", "time: default / minmax", "measure"]
    rows = []
    for info, results in all_results:
        by = {r.label: r for r in results if not r.error}
        ours, plain = by.get(DEFAULT_LABEL), by.get("ours w8a8 minmax")
        if ours is None:
            continue
        kinds = info["measures"]
        peers = [by.get(label) for label in header[2:4]]
        peers = [r if r is not None and r.n_quantized else None for r in peers]
        cells = [default_cell(r, kinds) if r else "n/a" for r in peers]
        measured = [r for r in peers if r]
        compared = [differences(ours, r, kinds) for r in measured]
        verdict = "n/a" if not measured else "yes" if all(ok for _, ok in compared) else \
            "NO (" + "; ".join(", ".join(texts) for texts, _ in compared) + ")"
        leads = []
        scored = [r for r in measured if r.score is not None]
        if scored and ours.score is not None:
            top = max(scored, key=lambda r: r.score)
            d, sd = ours.score - top.score, difference_sd(ours, top)
            leads.append(noted(d, sd, f"{d:+.2f} ({sd:.2f})"))
        if measured:
            leads += ids_leads(ours, measured, kinds)
        lead = "; ".join(leads) or "n/a"
        ratio = f"{ours.seconds / plain.seconds:.1f}x" if plain and plain.seconds and ours.seconds else "n/a"
        rows.append([info["name"], default_cell(ours, kinds), *cells, verdict, lead, ratio, measure_text(kinds)])
    return header, rows


def failures(all_results) -> list[str]:
    out = []
    for info, results in all_results:
        out += [f"{info['name']}: {r.label}: {r.error}" for r in results if r.error and r.error.startswith("failed")]
    return out


# --- command line ---------------------------------------------------------------------------------------

class ExtraModel(argparse.Action):
    """--model PATH starts an extra model; --input-dim/--calibration/--test-data after it belong to it."""

    def __call__(self, parser, ns, values, option_string=None):
        extras = getattr(ns, "extra", None) or []
        if option_string == "--model":
            p = Path(values).resolve()
            extras.append(Bench(p.stem if p.stem != "model" else p.parent.name, p))
        else:
            if not extras:
                parser.error(f"{option_string} must follow the --model it applies to")
            m = extras[-1]
            if option_string == "--input-dim":
                name, text = values
                m.dims[name] = [int(d) for d in text.replace("x", ",").split(",") if d]
            elif option_string == "--input-value":
                name, text = values
                m.values[name] = float(text)
            elif option_string == "--calibration":
                m.calibration = Path(values)
            elif option_string == "--test-data":
                m.test = Path(values)
        ns.extra = extras


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calib", type=int, default=100, help="calibration samples per model (default 100)")
    ap.add_argument("--calib-offset", type=int, default=0,
                    help="calibrate on the samples from this index on (default 0: the first --calib)")
    ap.add_argument("--test", type=int, default=200, help="test samples per model (default 200)")
    ap.add_argument("--models", help="comma-separated shipped model names (default: all)")
    ap.add_argument("--no-zoo", action="store_true", help="only the --model files (and --real models)")
    ap.add_argument("--real", metavar="NAMES",
                    help="also the real models of bench/common.py and ddddocr's recogniser ('all', or "
                         "comma-separated names), on inputs of their kind (bench/real_data.py)")
    ap.add_argument("--model", action=ExtraModel, metavar="PATH", help="an extra ONNX model (repeatable)")
    ap.add_argument("--input-dim", action=ExtraModel, nargs=2, metavar=("NAME", "DIMS"),
                    help="pin an input of the preceding --model, e.g. x 1,3,48,192 (other symbolic dims -> 1)")
    ap.add_argument("--input-value", action=ExtraModel, nargs=2, metavar=("NAME", "VALUE"),
                    help="pin an input of the preceding --model to a constant, e.g. sr 16000")
    ap.add_argument("--calibration", action=ExtraModel, metavar="NPZ",
                    help="calibration data of the preceding --model (default: random normal)")
    ap.add_argument("--test-data", action=ExtraModel, metavar="NPZ",
                    help="test data of the preceding --model (default: random normal, another seed)")
    ap.add_argument("--tools", default="ours,ort,nncf", help="which tools (default ours,ort,nncf)")
    ap.add_argument("--only", metavar="TEXT,...",
                    help="only the settings whose label holds one of these texts, e.g. 'w8a8 minmax,search,MinMax' "
                         "(a text after '=' must be the whole label)")
    ap.add_argument("--block-size", type=int, default=32, help="4-bit block size, all tools (default 32)")
    ap.add_argument("--percentile", type=float, default=99.99,
                    help="percentile for ours and onnxruntime's Percentile calibration (default 99.99)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the tables as markdown")
    ap.add_argument("--live", action="store_true", help="print each row as it is measured")
    ap.add_argument("--verbose", action="store_true", help="tracebacks of failures on stderr")
    ap.add_argument("--smoke", action="store_true",
                    help="digits_cnn, 8 calibration and 16 test samples, three settings: checks that it runs "
                         "(a failed row is an error)")
    ap.set_defaults(extra=[])
    args = ap.parse_args(argv)
    if args.smoke:
        args.models, args.calib, args.test = "digits_cnn", 8, 16
        args.tools, args.only = "ours,ort", "ours w8a8 minmax,ours w4a16 b32 minmax,ort w8a8 MinMax"

    models = [] if args.no_zoo else shipped_models()
    if args.models:
        wanted = set(args.models.split(","))
        models = [m for m in models if m.name in wanted]
    models += args.extra
    data_dir = Path(tempfile.mkdtemp(prefix="qnnb-bench-quant-data-"))
    if args.real:
        models += real_models(args.real, data_dir, args.calib_offset + args.calib, args.test)
    tools = set(args.tools.split(","))
    settings = []
    if "ours" in tools:
        settings += ours_settings(args.block_size)
    settings += [s for s in peer_settings(args.block_size) if s.tool.split("-")[0] in tools]
    if args.only:
        settings = [s for s in settings if any(s.label == text[1:] if text.startswith("=") else text in s.label
                                               for text in args.only.split(","))]

    versions = peers.versions()
    print("peers: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    if "ours" in tools:
        try:  # built (or found) once, before any timing
            from qnn_build.runtime.binding import runtime_library
            runtime_library(None)  # the cache key Model uses
        except Exception as e:  # noqa: BLE001 - every row of ours will then say why
            print(f"note: our runtime library does not build: {short_reason(e)}")
    all_results = []
    md = []
    for bench in models:
        print()
        if args.live:
            print(f"== {bench.name}", flush=True)
        results, info = bench_model(bench, args, settings)
        all_results.append((info, results))
        print(f"== {model_heading(info)}")
        if results:
            header, rows = table_rows(results, info)
            print(render_text(header, rows), flush=True)
            md += [f"#### {model_heading(info)}", "", render_md(header, rows), ""]
            notes = note_lines(results)
            if notes:
                print("* " + "\n* ".join(notes))
                md += ["\\* " + "; ".join(notes) + ".", ""]
            lf = left_float_lines(results)
            if lf:
                print("outputs left in float (op types):\n" + "\n".join("  " + x for x in lf))
                md += ["Outputs left in float (op types): " + "; ".join(lf) + ".", ""]
        else:
            md += [f"#### {model_heading(info)}", ""]
    header, rows = summary_rows(all_results)
    print(f"\n== summary ({SUMMARY_MEASURE})")
    print(render_text(header, rows))
    d_header, d_rows = default_rows(all_results)
    if d_rows:
        print("\n== the default (" + DEFAULT_LABEL + ") against onnxruntime's fixed methods")
        print(render_text(d_header, d_rows))
    fails = failures(all_results)
    if fails:
        print("\nfailures:\n" + "\n".join("  " + f for f in fails))
    if args.markdown:
        text = ["### Summary", "", SUMMARY_MEASURE[0].upper() + SUMMARY_MEASURE[1:] + ".", "",
                render_md(header, rows), ""]
        if d_rows:
            text += ["### The default", "", render_md(d_header, d_rows), ""]
        text += md
        if fails:
            text += ["Failures:", ""] + [f"- {f}" for f in fails] + [""]
        text += ["Peers: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "."]
        Path(args.markdown).write_text("\n".join(text) + "\n")
    return 1 if args.smoke and fails else 0


if __name__ == "__main__":
    sys.exit(main())
