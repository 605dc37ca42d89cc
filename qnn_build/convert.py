"""The convert step: model.onnx -> model.cpp + model.bin + model.json (+ model.encodings.json when
quantized, + model.qdq.onnx on request) in one output directory; and the calibrate step it may depend on."""

import copy
import dataclasses
import json
import tempfile
from contextlib import contextmanager
from pathlib import Path


from . import __version__
from .atomic import write_bytes, write_text
from .backends import get_backend
from .codegen.cpp import generate_cpp
from .codegen.qdq import qdq_bytes
from .codegen.weights import pack_weights
from .data.samples import iter_samples
from .errors import ConvertError, QnnBuildError
from .ir.dtypes import dtype_name, supported_dtype
from .ir.graph import Graph
from .ir.onnx_import import import_onnx, load_onnx
from .ir.bias_fusion import fuse_matmul_bias
from .ir.passes import run_passes
from .ir.rnn_lowering import lower_recurrent
from .npu_lowering.lower import add_npu_params
from .ops import lower_graph
from .options import parse_precision
from .quant import QuantOptions, Stats, collect_stats, quantize_graph, resolve_auto
from .quant.calibrate import masked_tensors
from .quant.cle import equalize
from .quant.encodings_json import encodings_document, load_overrides
from .quant.fallback import apply_float_fallback, float_constants
from .quant.gptq import collect_hessians
from .quant.qdq_import import implied_precision, strip_qdq
from .quant.range_search import Reference, reference_outputs, search_ranges
from .runtime.binding import Model
from .toolchain import build_model_lib


# --float-fallback keeps in fp16 the nodes this backend cannot run in integers (the option's meaning).
FLOAT_FALLBACK_BACKEND = "npu"


def build_graph(source, input_dims=None, input_values=None, out_nodes=None, cle: bool = False,
                lower_rnn: bool = False) -> Graph:
    """The lowered float graph of an ONNX file, as convert and calibrate both see it (a QDQ model's
    without its Q/DQ nodes). lower_rnn: unroll LSTM/GRU/RNN into primitive ops (quantized precisions;
    ir/rnn_lowering.py)."""
    graph = import_graph(source, input_dims, input_values, out_nodes)
    graph.source_encodings = {}
    return prepare_graph(graph, cle, lower_rnn)


def import_graph(source, input_dims=None, input_values=None, out_nodes=None) -> Graph:
    """The imported graph of an ONNX file; a QDQ model's Q/DQ nodes removed, their encodings in
    graph.source_encodings (quant/qdq_import.py)."""
    model = load_onnx(source)
    encodings = strip_qdq(model)
    graph = import_onnx(model, input_dims, input_values, out_nodes, source=Path(source).name)
    graph.source_encodings = {k: v for k, v in encodings.items() if k in graph.tensors}
    return graph


def prepare_graph(graph: Graph, cle: bool = False, lower_rnn: bool = False) -> Graph:
    """Passes and lowering of an imported graph (build_graph). Passes keep the tensors that
    graph.source_encodings holds; empty it first to convert a QDQ model as a float one."""
    run_passes(graph)
    lower_graph(graph)
    if lower_rnn:  # hook: recurrent ops -> primitive ops, before calibration and quantization
        lower_recurrent(graph)
    fuse_matmul_bias(graph)
    _check_io(graph)
    if cle:
        equalize(graph)
    return graph


def write_artifacts(graph: Graph, out_dir, source_name: str, precision: str = "fp32", extra: dict | None = None,
                    encodings_extra: dict | None = None, encodings_file: bool = True) -> dict:
    """model.cpp, model.bin, model.json and (quantized, unless not encodings_file: a library compiled only
    to be scored, whose encodings nobody reads) model.encodings.json in out_dir."""
    consts = []
    for name, t in graph.tensors.items():
        if not t.is_const:
            continue
        if not supported_dtype(t.const.dtype):
            raise ConvertError(f"constant '{name}': unsupported dtype {t.const.dtype}")
        is_int4 = t.encoding is not None and not t.encoding.is_float and t.encoding.bitwidth == 4
        consts.append((name, t.const, is_int4))
    bin_bytes, entries = pack_weights(consts)
    cpp = generate_cpp(graph, entries, precision)
    desc = io_description(graph, source_name, precision)
    desc.update(extra or {})  # e.g. "float_fallback": the nodes kept in fp16
    out_dir = Path(out_dir)
    write_bytes(out_dir / "model.bin", bin_bytes)
    write_text(out_dir / "model.cpp", cpp)
    if precision != "fp32" and encodings_file:
        doc = {**encodings_document(graph), **(encodings_extra or {})}
        write_text(out_dir / "model.encodings.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
    write_text(out_dir / "model.json", json.dumps(desc, indent=1, sort_keys=True) + "\n")
    return desc


def convert(source, out_dir, input_dims=None, input_values=None, out_nodes=None, precision: str | None = None,
            calibration=None, calibration_stats=None, options: QuantOptions | None = None, cle: bool = False,
            overrides=None, lower_rnn: bool | None = None, float_fallback: bool = False, qdq: bool = False,
            ignore_encodings: bool = False) -> dict:
    """Write DIR/model.cpp, model.bin, model.json (and model.encodings.json). Returns the io description.
    precision: None is fp32, or for a QDQ model the precision its encodings imply. A QDQ model keeps
    its encodings at a quantized precision unless ignore_encodings (then it is quantized as its
    float model would be). lower_rnn: unroll recurrent ops (default: for quantized precisions).
    float_fallback: keep nodes the npu has no integer kernel for in fp16 (quant/fallback.py). qdq:
    also write model.qdq.onnx (codegen/qdq.py), which the htp backend reads; a graph it cannot
    express stops convert, naming the node."""
    graph = import_graph(source, input_dims, input_values, out_nodes)
    in_model = graph.source_encodings
    prec = parse_precision(precision or (implied_precision(graph) if in_model else "fp32"))
    kept = in_model if prec.is_quantized and not ignore_encodings else {}
    graph.source_encodings = dict(kept)
    # a QDQ model's own encodings rule: what it leaves float is calibrated plainly, nothing is scored
    options = resolve_auto(options or QuantOptions(), bool(calibration) and not kept)
    lower_rnn = prec.is_quantized if lower_rnn is None else lower_rnn
    # CLE rescales weights, which a kept encoding pins: not with a QDQ model's encodings
    prepare_graph(graph, cle=cle and prec.is_quantized and not kept, lower_rnn=lower_rnn)
    extra, record = {}, {}
    if prec.name != "fp32":
        stats = hessians = act_ranges = reference = found = None
        if prec.is_quantized and (calibration or calibration_stats or not kept):
            if not calibration and not calibration_stats:
                raise QnnBuildError(f"precision {prec.name} needs calibration data (--input-list or --calibration-stats)")
            if options.weight_rounding == "gptq":
                _require_samples(calibration, "weight_rounding gptq runs the float model")
            stats, hessians, reference = _from_samples(graph, calibration, calibration_stats, options)
        pinned = _pins(graph, overrides)
        float_consts = float_constants(graph) if float_fallback and prec.is_quantized else None
        if prec.is_quantized and options.act_range in ("search", "auto"):  # hook: the range search, (13)-(16), (21)
            _require_samples(calibration, f"act_range {options.act_range} runs the model")
            with tempfile.TemporaryDirectory(prefix="qnnb-range-search-") as tmp, _naming(source):
                found = search_ranges(graph, prec, stats, options, pinned, reference, cpu_compiler(Path(tmp)), hessians)
            act_ranges = found.ranges
            if found.bias_correction:  # auto found that (12) pays, (21b)
                options = dataclasses.replace(options, bias_correction=True)
        if prec.is_quantized:
            chosen = found.method if found is not None and options.act_range == "auto" else None
            record = {"quantization": _quantization_record(options, chosen)}
        with _naming(source):
            quantize_graph(graph, prec, stats, options, pinned, act_ranges, hessians)
        if float_consts is not None:  # hook: --float-fallback, after quantization
            npu = get_backend(FLOAT_FALLBACK_BACKEND)
            extra["float_fallback"] = apply_float_fallback(graph, float_consts,
                                                           lambda node: npu.node_refusal(node, graph, prec.name))
        if prec.is_quantized:
            add_npu_params(graph)
    if qdq:  # before anything is written: a graph the export refuses leaves no partial output
        qdq_model = qdq_bytes(graph, prec.name)
    note = {**(_source_note(graph) if in_model else {}), **record}
    desc = write_artifacts(graph, out_dir, Path(source).name, prec.name, extra, note)
    if qdq:
        write_bytes(Path(out_dir) / "model.qdq.onnx", qdq_model)
    return desc


def _pins(graph: Graph, overrides) -> dict:
    """Encodings pinned for quantize_graph: a QDQ model's kept ones, then an overrides file's over them."""
    held = {n: enc for n, enc in graph.source_encodings.items() if n in graph.tensors}  # after the passes
    pinned = {"activations": {}, "params": {}, "from_model": set(held)}
    for name, enc in held.items():
        kind = "params" if graph.tensor(name).is_const else "activations"
        pinned[kind][name] = lambda *_, enc=enc: enc
    if overrides:
        for kind, pins in load_overrides(overrides, graph).items():
            pinned[kind].update(pins)
            pinned["from_model"] -= set(pins)
    return pinned


@contextmanager
def _naming(source):
    """A node's weight that cannot take the options (quantizing it, or scoring a candidate): the error
    says which model it is in."""
    try:
        yield
    except QnnBuildError as e:
        raise QnnBuildError(f"{source}: {e}") from None


def _quantization_record(used: QuantOptions, chosen: str | None) -> dict:
    """What model.encodings.json says of the quantizer's choices: what ran, whatever was asked (the
    step's config says that): the range method (auto's choice), GPTQ or nearest rounding, bias
    correction."""
    act_range = chosen or used.act_range
    if used.act_range == "percentile":
        act_range = f"percentile {used.percentile}"
    return {"act_range": act_range, "weight_rounding": used.weight_rounding, "bias_correction": used.bias_correction}


def _source_note(graph: Graph) -> dict:
    """What model.encodings.json says of a QDQ model's own encodings: "kept", with the tensors that
    hold them (the others were calibrated), or "ignored" (the model was quantized afresh)."""
    held = sorted(n for n, enc in graph.source_encodings.items()
                  if n in graph.tensors and graph.tensors[n].encoding is not None
                  and graph.tensors[n].encoding.key() == enc.key())
    return {"source_encodings": {"mode": "kept" if graph.source_encodings else "ignored", "tensors": held}}


def _require_samples(calibration, what: str) -> None:
    if not calibration:
        raise QnnBuildError(f"{what} over the calibration samples: give the calibration data (--calibration), "
                            f"not only statistics")


def _from_samples(graph, calibration, calibration_stats, options) -> tuple[Stats, dict | None, Reference | None]:
    """The calibration statistics (from their file, or by running the float graph over the samples);
    for weight_rounding gptq, GPTQ's H per layer (17); for act_range search or auto, the float
    outputs the range search compares with: one compiled float model for all three."""
    stats = Stats.load(calibration_stats) if calibration_stats else None
    gptq, search = options.weight_rounding == "gptq", options.act_range in ("search", "auto")
    if stats is not None and not gptq and not (search and calibration):
        return stats, None, None
    with float_model(graph) as model:
        count, stream = iter_samples(calibration, model.inputs)
        if stats is None:
            stats = collect_stats(model, count, stream, constants=constant_names(graph), masked=masked_tensors(graph))
        hessians = collect_hessians(graph, model, stream) if gptq else None
        reference = reference_outputs(model, stream) if search else None
    return stats, hessians, reference


def constant_names(graph: Graph) -> frozenset:
    return frozenset(name for name, t in graph.tensors.items() if t.is_const)


@contextmanager
def float_model(graph: Graph):
    """`graph` (left as it is) compiled at fp32 for this machine and loaded, every tensor kept: what
    calibration statistics and GPTQ's H are collected from."""
    with tempfile.TemporaryDirectory(prefix="qnnb-float-") as tmp:
        write_artifacts(copy.deepcopy(graph), tmp, "model.onnx")
        lib = build_model_lib(Path(tmp) / "model.cpp", Path(tmp) / "model.bin", Path(tmp) / "libmodel.so")
        with Model(lib, keep_tensors=True) as model:
            yield model


def cpu_compiler(folder: Path):
    """The range search's compile_graph: `graph` at `precision` compiled into a model library in
    folder/<precision>, and a function that loads it on the cpu backend (one thread), tensors replaced."""
    def compile_graph(graph: Graph, precision: str):
        out = folder / precision
        write_artifacts(graph, out, "model.onnx", precision, encodings_file=False)  # 10 s of JSON on tashkeel
        lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
        return lambda replace=None: Model(lib, threads=1, replace=replace)
    return compile_graph


def calibrate(source, calibration, input_dims=None, input_values=None, out_nodes=None, cle: bool = False,
              out_path=None, lower_rnn: bool = True) -> Stats:
    """Run the float graph over the calibration set on our cpu backend and collect statistics.
    lower_rnn: as convert does for quantized precisions, so the statistics cover the unrolled tensors."""
    graph = build_graph(source, input_dims, input_values, out_nodes, cle=cle, lower_rnn=lower_rnn)
    with float_model(graph) as model:
        stats = collect_stats(model, *iter_samples(calibration, model.inputs), constants=constant_names(graph),
                              masked=masked_tensors(graph))
    if out_path:
        stats.save(out_path)
    return stats


def io_description(graph: Graph, source_name: str, precision: str = "fp32") -> dict:
    def entry(name):
        t = graph.tensor(name)
        e = {"name": name, "shape": list(t.shape), "dtype": dtype_name(t.dtype),
             "layout": "NCHW" if len(t.shape) == 4 else "as-model"}
        if t.encoding is not None and not t.encoding.is_float:
            e["encoding"] = {"bitwidth": t.encoding.bitwidth, "scale": float(t.encoding.scales[0]),
                             "offset": int(t.encoding.offsets[0])}
        elif t.encoding is not None:
            e["encoding"] = {"bitwidth": 16, "dtype": "float"}
        return e

    ops: dict[str, int] = {}
    for n in graph.nodes:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return {
        "format_version": 1,
        "generator": f"qnn-build {__version__}",
        "source": source_name,
        "precision": precision,
        "inputs": [entry(n) for n in graph.inputs],
        "outputs": [entry(n) for n in graph.outputs],
        "ops": dict(sorted(ops.items())),
    }


def _check_io(graph: Graph) -> None:
    for name in graph.inputs + graph.outputs:
        dt = graph.tensor(name).dtype
        if not supported_dtype(dt):
            raise ConvertError(f"model input/output '{name}': unsupported dtype {dt}")
    if not graph.outputs:
        raise ConvertError("the model has no outputs")


__all__ = ["convert", "calibrate", "build_graph", "io_description"]
