"""`qnn-build`: one subcommand per workflow step, each usable by hand like the QNN tools.

    qnn-build convert MODEL.onnx -o DIR [--input-dim NAME 1,3,224,224] [--input-value NAME 16000] [--out-node NAME]
    qnn-build model-lib --cpp DIR/model.cpp --bin DIR/model.bin -o DIR/libmodel.so [--target aarch64-windows]
    qnn-build context-binary --backend npu --model libmodel.so -o model.ctx
    qnn-build net-run --backend cpu --model libmodel.so --input-list LIST --output-dir OUT
    qnn-build net-run --backend npu --retrieve-context model.ctx --input-list LIST --output-dir OUT
    qnn-build runtime -o out/runtime/x86_64-linux [--target aarch64-linux]
    qnn-build reference --config out/M/reference.config.json -o out/M/reference.npz
    qnn-build test --model libmodel.so --backend cpu --runtime libqnnb.so --reference reference.npz \
        --config test.config.json -o test.json
    qnn-build release --config out/release/release.config.json -o out/release/ZOO-VERSION.tar.gz

Every step also takes `--config FILE`: a JSON object whose keys are the step's long options (with
`_` for `-`); flags given on the command line win. The build writes these files, so a step's
settings are a file it depends on. Errors are one line on stderr and a non-zero exit.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from . import __version__
from .log import LEVELS
from .errors import QnnBuildError, os_error_line


def _dims(text: str) -> list[int]:
    try:
        return [int(d) for d in text.replace("x", ",").split(",") if d.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of integers") from None


def _at_least_one(text: str) -> int:
    """A count (inferences, threads, samples): a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _values(text: str):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of numbers") from None
    vals = [int(v) if v.is_integer() else v for v in vals]
    return vals[0] if len(vals) == 1 else vals


def _load_config(args, defaults: dict) -> None:
    """Fill options not given on the command line from --config, then from `defaults`."""
    config = {}
    if getattr(args, "config", None):
        path = Path(args.config)
        try:
            config = json.loads(path.read_text())
        except FileNotFoundError:
            raise QnnBuildError(f"{path}: config file not found") from None
        except json.JSONDecodeError as e:
            raise QnnBuildError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
        if not isinstance(config, dict):
            raise QnnBuildError(f"{path}: a config file must hold a JSON object")
    choices = {a.dest: a.choices for a in args.parser._actions if a.choices is not None} if config else {}
    for key, value in config.items():
        if not hasattr(args, key) or key in ("func", "parser"):
            raise QnnBuildError(f"{args.config}: unknown option '{key}' for this step")
        # argparse checks only the command line; null is "not set" (the build's per-step configs)
        if value is not None and key in choices and value not in choices[key]:
            raise QnnBuildError(f"{args.config}: {key}: unknown value {value!r} (one of "
                                f"{', '.join(str(c) for c in choices[key])})")
        if getattr(args, key) in (None, []):
            setattr(args, key, value)
    for key, value in defaults.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)


def _quant_options(args):
    from .quant import QuantOptions
    return QuantOptions(act_range=args.act_range, weight_range=args.weight_range, percentile=args.percentile,
                        per_channel=not args.per_tensor, block_size=args.block_size,
                        bias_correction=bool(args.bias_correction), recurrent_bits=args.recurrent_bits,
                        weight_rounding=args.weight_rounding)


_QUANT_DEFAULTS = {"precision": None, "act_range": "minmax", "weight_range": "minmax", "percentile": 99.99,
                   "per_tensor": False, "block_size": None, "cle": False, "bias_correction": False,
                   "weight_rounding": "nearest", "recurrent_bits": 16, "calibration": None, "calibration_stats": None,
                   "quantization_overrides": None, "float_fallback": False,
                   "ignore_encodings": False}


def cmd_convert(args) -> None:
    from .convert import convert

    _load_config(args, {"input_dims": None, "input_values": None, "out_nodes": None, "qdq": False,
                        **_QUANT_DEFAULTS})
    if not args.source:
        raise QnnBuildError("no source model given")
    if not args.output_dir:
        raise QnnBuildError("no output directory given (-o DIR)")
    dims = dict(args.input_dims) if isinstance(args.input_dims, (list, dict)) else {}
    values = dict(args.input_values) if isinstance(args.input_values, (list, dict)) else {}
    desc = convert(args.source, args.output_dir, dims, values, args.out_nodes or None, precision=args.precision,
                   calibration=args.calibration, calibration_stats=args.calibration_stats,
                   options=_quant_options(args), cle=bool(args.cle), overrides=args.quantization_overrides,
                   float_fallback=bool(args.float_fallback), qdq=bool(args.qdq),
                   ignore_encodings=bool(args.ignore_encodings))
    if "float_fallback" in desc:  # --float-fallback: which nodes stay in fp16
        from .quant.fallback import describe
        _say(args, describe(desc["float_fallback"]))
    _say(args, f"converted {args.source} -> {args.output_dir} ({len(desc['inputs'])} inputs, "
               f"{len(desc['outputs'])} outputs, {sum(desc['ops'].values())} nodes)")


def cmd_calibrate(args) -> None:
    from .convert import calibrate

    _load_config(args, {"input_dims": None, "input_values": None, "out_nodes": None, "cle": False})
    for flag, value in (("a source model", args.source), ("--calibration", args.calibration), ("-o", args.output)):
        if not value:
            raise QnnBuildError(f"calibrate needs {flag}")
    dims = dict(args.input_dims) if isinstance(args.input_dims, (list, dict)) else {}
    values = dict(args.input_values) if isinstance(args.input_values, (list, dict)) else {}
    stats = calibrate(args.source, args.calibration, dims, values, args.out_nodes or None, cle=bool(args.cle),
                      out_path=args.output)
    _say(args, f"calibrated {len(stats)} tensors -> {args.output}")


def cmd_model_lib(args) -> None:
    from .toolchain import get_target
    from .toolchain import build_model_lib

    _load_config(args, {})
    if not (args.cpp and args.bin and args.output):
        raise QnnBuildError("model-lib needs --cpp, --bin and -o")
    target = get_target(args.target)
    out = Path(args.output)
    if out.is_dir() or args.output.endswith(os.sep):
        out = out / target.model_lib_name()
    build_model_lib(args.cpp, args.bin, out, target=target)
    _say(args, f"built {out} ({target.name})")


def cmd_context_binary(args) -> None:
    from .backends import get_backend

    _load_config(args, {"backend": "cpu"})
    for flag, value in (("--model", args.model), ("-o", args.output)):
        if not value:
            raise QnnBuildError(f"context-binary needs {flag}")
    backend = get_backend(args.backend)
    placement = backend.placement(args.target)
    info = backend.build_context(args.model, args.output, placement=placement, precision=args.precision,
                                 runtime=args.runtime)
    _say(args, f"built {args.output} for {backend.name} on {placement.name}: {info['summary']}")


def _model_source(args, step: str) -> dict:
    """--model or --retrieve-context (exactly one) as Backend.load() arguments."""
    if bool(args.model) == bool(args.retrieve_context):
        raise QnnBuildError(f"{step} needs --model or --retrieve-context (one of them)")
    return {"model": args.model, "context": args.retrieve_context}


def cmd_net_run(args) -> None:
    from .backends import get_backend
    from .runtime.netrun import net_run

    _load_config(args, {"backend": "cpu", "threads": 1})
    source = _model_source(args, "net-run")
    for flag, value in (("--input-list", args.input_list), ("--output-dir", args.output_dir)):
        if not value:
            raise QnnBuildError(f"net-run needs {flag}")
    model = get_backend(args.backend).load(**source, threads=args.threads, runtime=args.runtime,
                                           precision=args.precision)
    profile = net_run(model, args.input_list, args.output_dir, args.num_inferences,
                      profiling_level=args.profiling_level, native_inputs=bool(args.use_native_input_files),
                      native_outputs=bool(args.use_native_output_files), input_layout=args.input_layout or "NCHW")
    _say(args, f"ran {profile['num_inferences']} inference(s) on {args.backend} -> {args.output_dir}")


def cmd_runtime(args) -> None:
    from .atomic import write_bytes
    from .toolchain import get_target
    from .toolchain import INCLUDE_DIR, build_runtime

    _load_config(args, {})
    if not args.output_dir:
        raise QnnBuildError("runtime needs -o DIR")
    target = get_target(args.target)
    lib = build_runtime(out_dir=args.output_dir, target=target)
    header = Path(args.output_dir, "include", "qnnb.h")
    write_bytes(header, (INCLUDE_DIR / "qnnb.h").read_bytes())
    # Every output is new after this step, also those reused or copied with their old time: a build
    # tool that compares times (ninja) must not see them as older than their sources.
    built = [*Path(args.output_dir).glob("*.so"), *Path(args.output_dir).glob("*.dll"),
             Path(args.output_dir, target.runner), Path(args.output_dir, "runtime.key"), header]
    for path in built:
        os.utime(path)
    _say(args, f"built {lib}")


def cmd_reference(args) -> None:
    from .report.reference import run_reference

    args.input_dims = _pairs(args.input_dims, _dims)
    args.input_values = _pairs(args.input_values, _values)
    _load_config(args, {})
    for flag, value in (("a source model", args.source), ("--data", args.data), ("-o", args.output)):
        if not value:
            raise QnnBuildError(f"reference needs {flag}")
    info = run_reference(args.source, args.data, args.output, _mapping(args.input_dims), _mapping(args.input_values),
                         args.out_nodes or [], args.samples)
    _say(args, f"reference: {info['samples']} sample(s) of {args.source} -> {args.output}")


def cmd_test(args) -> None:
    from .report.testrun import run_test

    args.thresholds = _pairs(args.thresholds, float, "KEY=VALUE", "=")
    _load_config(args, {"backend": "cpu", "threads": 1})
    source = _model_source(args, "test")
    for flag, value in (("--reference", args.reference), ("--data", args.data), ("-o", args.output)):
        if not value:
            raise QnnBuildError(f"test needs {flag}")
    result = run_test(source["model"], args.reference, args.data, args.output, backend=args.backend,
                      runtime=args.runtime, labels=args.labels, samples=args.samples,
                      thresholds=_mapping(args.thresholds), name=args.name or "", precision=args.precision or "",
                      target=args.target or "", threads=args.threads, context=source["context"])
    _say(args, f"test passed: {result['samples']} sample(s) -> {args.output}")


def cmd_release(args) -> None:
    from .report.release import release

    _load_config(args, {"skipped": []})
    missing = [k for k in ("zoo", "zoo_version", "runtime", "tool_versions", "models") if getattr(args, k) is None]
    if missing or not args.output:
        raise QnnBuildError(f"release needs {'-o' if not missing else '--' + missing[0].replace('_', '-')} "
                            "(the build writes all of it to the --config file)")
    config = {k: getattr(args, k) for k in ("zoo", "zoo_version", "runtime", "tool_versions", "models", "skipped")}
    config["cross_runtimes"] = args.cross_runtimes or []
    manifest = release(config, args.output)
    _say(args, f"released {len(manifest['files'])} files -> {args.output}")


def _pairs(given, convert, form="NAME VALUE", sep=None):
    """Repeated `NAME VALUE` (or `KEY=VALUE`) options -> [(name, value)]; None stays None."""
    if not given:
        return None
    pairs = []
    for item in given:
        if sep:
            name, found, text = item.partition(sep)
            if not found:
                raise QnnBuildError(f"'{item}' is not {form}")
        else:
            name, text = item
        try:
            pairs.append((name, convert(text)))
        except (argparse.ArgumentTypeError, ValueError) as e:
            raise QnnBuildError(f"{name}: {e}") from None
    return pairs


def _mapping(value) -> dict:
    """Options that come as [(name, value)] from the command line or as {name: value} from --config."""
    return dict(value) if isinstance(value, (list, dict)) else {}


def _json_arg(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"invalid JSON: {e.msg}") from None


def cmd_context_info(args) -> None:
    from .runtime.ctx_info import format_info, read_info

    if not args.context:
        raise QnnBuildError("context-info needs a context binary")
    path = Path(args.context)
    if not path.exists():
        raise QnnBuildError(f"{path}: no such file")
    info = read_info(path)
    print(json.dumps(info, indent=1) if args.json else format_info(info))


def cmd_profile_viewer(args) -> None:
    from .atomic import write_text
    from .report.profile_view import chrome_trace, compare, format_compare, format_profile, load_profile

    if not args.profile:
        raise QnnBuildError("profile-viewer needs a profile.json (or net-run's output folder)")
    profile = load_profile(args.profile)
    top = args.top or 20
    if args.chrome_trace:
        write_text(args.chrome_trace, json.dumps(chrome_trace(profile)) + "\n", only_if_changed=False)
    if args.compare:
        c = compare(profile, load_profile(args.compare))
        print(json.dumps(c, indent=1) if args.json else format_compare(c, top))
    elif args.json:
        from .report.profile_view import op_table
        print(json.dumps({"ops": op_table(profile), **{k: v for k, v in profile.items() if k != "_path"}}, indent=1))
    else:
        print(format_profile(profile, top))
    if args.chrome_trace:
        _say(args, f"wrote {args.chrome_trace} (open it in ui.perfetto.dev or chrome://tracing)")


def cmd_accuracy_debug(args) -> None:
    from .report.accuracy_debug import JUMP_DB, accuracy_debug, format_report, write_report

    args.input_values = _pairs(args.input_values, _values)
    _load_config(args, {"backend": "cpu"})
    source = _model_source(args, "accuracy-debug")
    for flag, value in (("a source model", args.source), ("--data", args.data)):
        if not value:
            raise QnnBuildError(f"accuracy-debug needs {flag}")
    report = accuracy_debug(args.source, args.data, **source, backend=args.backend, runtime=args.runtime,
                            input_values=_mapping(args.input_values), samples=args.samples,
                            jump_db=JUMP_DB if args.jump_db is None else args.jump_db)
    if args.output_dir:
        write_report(report, args.output_dir)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        _say(args, format_report(report) + (f"\n-> {args.output_dir}/index.html, accuracy.json" if args.output_dir else ""))


def cmd_ops(args) -> None:
    from .ops import supported_ops
    print("\n".join(supported_ops()))


def _say(args, text: str) -> None:
    if not args.quiet:
        print(text)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="qnn-build", description="ONNX models built like software.")
    p.add_argument("--version", action="version", version=f"qnn-build {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def step(name, help_text, fn):
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.add_argument("--config", help="JSON file of this step's options (command-line flags win)")
        sp.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
        sp.add_argument("--log-level", choices=LEVELS, help="what to say while working: error, warning, info "
                        "(progress; the default on a terminal), debug (also tracebacks)")
        sp.set_defaults(func=fn, parser=sp)  # parser: _load_config checks --config values by its choices
        return sp

    c = step("convert", "ONNX model -> model.cpp + model.bin + model.json", cmd_convert)
    c.add_argument("source", nargs="?", help="the .onnx model")
    c.add_argument("-o", "--output-dir", help="directory for model.cpp, model.bin, model.json")
    c.add_argument("--input-dim", dest="input_dims", nargs=2, action="append", metavar=("NAME", "DIMS"),
                   type=str, help="pin an input's shape, e.g. --input-dim image 1,3,224,224 (repeatable)")
    c.add_argument("--input-value", dest="input_values", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="pin an input to a constant, e.g. --input-value sample_rate 16000 (repeatable)")
    c.add_argument("--out-node", dest="out_nodes", action="append", metavar="NAME",
                   help="use this tensor as an output (repeatable; default: the model's outputs)")
    c.add_argument("--qdq", action="store_true", default=None,
                   help="also write model.qdq.onnx: the converted graph with QuantizeLinear/DequantizeLinear at "
                        "its encodings (what the htp backend reads; docs/formats.md)")
    q = c.add_argument_group("quantization (docs/quantization.md)")
    q.add_argument("--precision", help="fp32 (default; a QDQ model: the precision of its encodings), fp16, "
                                       "w8a8|int8, w8a16, w16a16|int16, w4a8, w4a16|int4")
    q.add_argument("--input-list", "--calibration", dest="calibration", metavar="FILE",
                   help="calibration data: a qnn-net-run input list or an .npz (key = input name, [N, *shape])")
    q.add_argument("--calibration-stats", metavar="FILE", help="statistics from `qnn-build calibrate` (skips running)")
    q.add_argument("--act-range", choices=["minmax", "percentile", "mse", "search", "auto"],
                   help="activation range algorithm (search: each range scored by the output error on the "
                        "calibration samples; auto: the fixed method that scores best)")
    q.add_argument("--weight-range", choices=["minmax", "mse"], help="weight range algorithm")
    q.add_argument("--weight-rounding", choices=["nearest", "gptq", "auto"],
                   help="nearest (default), gptq: error feedback over the calibration inputs of each layer, "
                        "or auto: gptq where calibration samples are given")
    q.add_argument("--percentile", type=float, help="percentile for --act-range percentile (default 99.99)")
    q.add_argument("--per-tensor", action="store_true", default=None, help="one weight scale per tensor")
    q.add_argument("--block-size", type=int, choices=[32, 64, 128], help="block-wise 4-bit weights")
    q.add_argument("--cle", action="store_true", default=None, help="cross-layer equalization")
    q.add_argument("--bias-correction", action="store_true", default=None, help="correct biases for weight error")
    q.add_argument("--recurrent-bits", type=int, choices=[8, 16],
                   help="bits of unrolled LSTM/GRU/RNN activations and weights, at least the precision's (default 16)")
    q.add_argument("--quantization-overrides", metavar="FILE", help="AIMET encodings JSON pinning tensors")
    q.add_argument("--ignore-encodings", action="store_true", default=None,
                   help="a QDQ model: quantize it afresh from the calibration data instead of keeping the encodings "
                        "its Q/DQ nodes hold (the default, as QAIRT's converter does)")
    q.add_argument("--float-fallback", action="store_true", default=None,
                   help="keep nodes the npu has no integer kernel for in fp16 (boundary Quantize/Dequantize "
                        "inserted); listed in model.json under float_fallback")

    cal = step("calibrate", "run the float model over calibration data; write statistics", cmd_calibrate)
    cal.add_argument("source", nargs="?", help="the .onnx model")
    cal.add_argument("--calibration", "--input-list", dest="calibration", help="an .npz or a qnn-net-run input list")
    cal.add_argument("-o", "--output", help="the statistics file (.npz) to write")
    cal.add_argument("--input-dim", dest="input_dims", nargs=2, action="append", metavar=("NAME", "DIMS"))
    cal.add_argument("--input-value", dest="input_values", nargs=2, action="append", metavar=("NAME", "VALUE"))
    cal.add_argument("--out-node", dest="out_nodes", action="append", metavar="NAME")
    cal.add_argument("--cle", action="store_true", default=None, help="equalize first, as convert --cle will")

    m = step("model-lib", "model.cpp + model.bin -> libmodel.so", cmd_model_lib)
    m.add_argument("--cpp", help="model.cpp from convert")
    m.add_argument("--bin", help="model.bin from convert")
    m.add_argument("-o", "--output", help="the library to write (or a directory for libmodel.so / model.dll)")
    m.add_argument("--target", help="the machine it runs on: a configs/targets/ name, e.g. aarch64-windows "
                                    "(default: this one)")

    x = step("context-binary", "libmodel.so -> model.ctx: the graph finalized on a backend, serialized "
                               "(docs/context-binary.md)", cmd_context_binary)
    x.add_argument("--backend", help="backend to finalize on: a configs/backends/ name (default cpu)")
    x.add_argument("--model", help="the model library (libmodel.so)")
    x.add_argument("-o", "--output", help="the context binary to write (model.ctx; also writes model.ctx.json)")
    x.add_argument("--runtime", help="the runtime library (default: built from the package's sources)")
    x.add_argument("--target", help="the machine that will load it: a configs/targets/ name, e.g. "
                                    "aarch64-windows (default: this one); --model stays this machine's library")
    x.add_argument("--precision", help="refuse a model library converted at another precision")

    n = step("net-run", "run a model library or a context binary over an input list", cmd_net_run)
    n.add_argument("--backend", help="backend to run on: a configs/backends/ name (default cpu)")
    n.add_argument("--model", help="the model library (libmodel.so)")
    n.add_argument("--retrieve-context", metavar="CTX", help="run from this context binary instead of --model")
    n.add_argument("--precision", help="refuse a model library converted at another precision")
    n.add_argument("--input-list", help="qnn-net-run input list: one line per inference of name:=path.raw")
    n.add_argument("--output-dir", help="where Result_N/<output>.raw go")
    n.add_argument("--num-inferences", type=_at_least_one, help="run this many inferences (default: one per line)")
    n.add_argument("--profiling-level", choices=["basic", "detailed"],
                   help="write OUT/profile.json: basic, execute times; detailed, also each node's (docs/formats.md)")
    n.add_argument("--threads", type=_at_least_one, help="threads for the backend (default 1)")
    n.add_argument("--runtime", help="the runtime library (default: built from the package's sources)")
    n.add_argument("--use-native-input-files", action="store_true", default=None,
                   help="raw inputs with an 8/16-bit encoding hold its uint8/uint16 codes, as qnn-net-run's")
    n.add_argument("--use-native-output-files", action="store_true", default=None,
                   help="write each output in its own dtype (an encoded one as its uint8/uint16 codes), not float32")
    n.add_argument("--input-layout", choices=["NCHW", "NHWC"],
                   help="NHWC: raw inputs of rank >= 3 are channel-last, as QNN-converted models take them")

    r = step("runtime", "build the runtime library (libqnnb.so + its OpenBLAS + qnnb.h) into a folder", cmd_runtime)
    r.add_argument("-o", "--output-dir", help="the folder, e.g. out/runtime/x86_64-linux")
    r.add_argument("--target", help="a configs/targets/ name (default: this machine); the folder also gets "
                                    "that target's native qnn-net-run")

    f = step("reference", "run onnxruntime on the source model over the test data -> reference .npz",
             cmd_reference)
    f.add_argument("source", nargs="?", help="the .onnx model (float)")
    f.add_argument("--data", help="test data .npz: one key per input, arr[i] = one input")
    f.add_argument("--samples", type=_at_least_one, help="use at most this many samples (default: all)")
    f.add_argument("--input-dim", dest="input_dims", nargs=2, action="append", metavar=("NAME", "DIMS"),
                   help="the input's shape; each sample is reshaped to it (repeatable)")
    f.add_argument("--input-value", dest="input_values", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="feed this input a constant instead of test data (repeatable)")
    f.add_argument("--out-node", dest="out_nodes", action="append", metavar="NAME",
                   help="record this tensor (repeatable; default: the model's outputs)")
    f.add_argument("-o", "--output", help="the .npz to write: one [samples, *shape] array per output")

    t = step("test", "run a model library over the test data, compare with the reference -> test.json",
             cmd_test)
    t.add_argument("--model", help="the model library (libmodel.so)")
    t.add_argument("--retrieve-context", metavar="CTX", help="run from this context binary instead of --model")
    t.add_argument("--backend", help="backend to run on: a configs/backends/ name (default cpu)")
    t.add_argument("--runtime", help="the runtime library (default: built from the package's sources)")
    t.add_argument("--reference", help="reference .npz from `qnn-build reference`")
    t.add_argument("--data", help="test data .npz (as for reference)")
    t.add_argument("--labels", help="the .npz key of int labels: adds top-1 accuracy")
    t.add_argument("--samples", type=_at_least_one, help="use at most this many samples (default: all)")
    t.add_argument("--threshold", dest="thresholds", action="append", metavar="KEY=VALUE",
                   help="a limit: sqnr_db, cosine, top1 (minimums), max_abs, rel_err (maximums) (repeatable)")
    t.add_argument("--threads", type=_at_least_one, help="threads for the backend (default 1)")
    t.add_argument("--name", help="model name, for test.json and messages")
    t.add_argument("--precision", help="precision of the build, for test.json and messages; a --model converted "
                                       "at another precision is refused")
    t.add_argument("--target", help="target of the build, for test.json and messages")
    t.add_argument("-o", "--output", help="test.json to write (also when a threshold is missed)")

    z = step("release", "pack the zoo's libraries, model.json, test.json, runtime and MANIFEST.json into a "
                        "reproducible .tar.gz", cmd_release)
    z.add_argument("--zoo", help="zoo name")
    z.add_argument("--zoo-version", help="zoo version")
    z.add_argument("--runtime", type=_json_arg, help="JSON {target, libraries, header} (normally from --config)")
    z.add_argument("--cross-runtimes", type=_json_arg,
                   help="JSON list of {target, libraries}: other targets' runtimes and runners (normally from --config)")
    z.add_argument("--tool-versions", help="the build's tool-versions.json")
    z.add_argument("--models", type=_json_arg, help="JSON list of models and their builds (normally from --config)")
    z.add_argument("--skipped", type=_json_arg, help="JSON list of builds left out, for the manifest")
    z.add_argument("-o", "--output", help="the .tar.gz to write")

    i = step("context-info", "describe a context binary: header, backend, target, precision, graph io with "
                             "encodings, memory plan, checksum (as qnn-context-binary-utility)", cmd_context_info)
    i.add_argument("context", nargs="?", help="the context binary (model.ctx, or an htp context's .bin)")
    i.add_argument("--json", action="store_true", default=None, help="print JSON instead of text")

    v = step("profile-viewer", "a profile.json as tables: init and execute times, time per op type and per node, "
                               "largest first (as qnn-profile-viewer); --compare a second one", cmd_profile_viewer)
    v.add_argument("profile", nargs="?", help="profile.json from net-run --profiling-level (or its output folder)")
    v.add_argument("--compare", metavar="PROFILE", help="a second profile: per-node times side by side, b/a")
    v.add_argument("--top", type=_at_least_one, help="show this many nodes (default 20)")
    v.add_argument("--chrome-trace", metavar="FILE", help="also write the Chrome trace / Perfetto JSON of it")
    v.add_argument("--json", action="store_true", default=None, help="print JSON instead of text")

    a = step("accuracy-debug", "compare a built model with its float source layer by layer: SQNR, cosine, max abs "
                               "error, encoding vs observed range, clipping; the first layer where the error jumps",
             cmd_accuracy_debug)
    a.add_argument("source", nargs="?", help="the source .onnx model (run in float by onnxruntime)")
    a.add_argument("--model", help="the built model library (libmodel.so) at any precision")
    a.add_argument("--retrieve-context", metavar="CTX", help="a context binary instead of --model")
    a.add_argument("--backend", help="backend to run the build on: cpu (its simulation of the precision) or npu")
    a.add_argument("--runtime", help="the runtime library (default: built from the package's sources)")
    a.add_argument("--data", help="test data .npz: one key per input, arr[i] = one input")
    a.add_argument("--samples", type=_at_least_one, help="use at most this many samples (default: all)")
    a.add_argument("--input-value", dest="input_values", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="an input convert pinned to a constant, fed to the source model (repeatable)")
    a.add_argument("--jump-db", type=float, help="SQNR a layer must lose to be where the error jumps (default 10)")
    a.add_argument("-o", "--output-dir", help="write accuracy.json and index.html (a plot of SQNR along the graph)")
    a.add_argument("--json", action="store_true", default=None, help="print JSON instead of text")

    o = sub.add_parser("ops", help="list the ONNX ops the converter supports")
    o.set_defaults(func=cmd_ops)
    return p


def _qnn_spellings(argv: list[str]) -> list[str]:
    """QNN's tools spell flags with underscores (--input_list, --output_dir): take them as ours."""
    out = []
    for token in argv:
        if token.startswith("--") and "_" in token.partition("=")[0]:
            flag, eq, value = token.partition("=")
            token = flag.replace("_", "-") + eq + value
        out.append(token)
    return out


def _step_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


def _stdout_failed(e: OSError) -> str:
    """stdout could not be written (a full disk, a closed pipe): later writes go nowhere, so that
    Python's own flush at exit does not print a second error."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return f"writing the output: {os_error_line(OSError(e.errno, e.strerror, '<stdout>'))}"


def main(argv=None) -> int:
    from .log import log, setup

    parser = build_parser()
    args, extra = parser.parse_known_args(_qnn_spellings(sys.argv[1:] if argv is None else list(argv)))
    if extra:  # the step's usage, not the top level's
        _step_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    setup(getattr(args, "log_level", None), getattr(args, "quiet", False))
    if args.command in ("convert", "calibrate"):
        try:
            args.input_dims = [(n, _dims(d)) for n, d in args.input_dims] if args.input_dims else None
            args.input_values = [(n, _values(v)) for n, v in args.input_values] if args.input_values else None
        except argparse.ArgumentTypeError as e:
            _step_parser(parser, args.command).error(str(e))
    error = None
    try:
        args.func(args)
        sys.stdout.flush()
    except QnnBuildError as e:
        error = str(e)
    except KeyboardInterrupt:
        print(f"qnn-build {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `qnn-build ... | head`: the reader has what it wanted
        _stdout_failed(BrokenPipeError())
        return 1
    except OSError as e:
        error = os_error_line(e) if e.filename is not None else _stdout_failed(e)
    except Exception as e:  # a bug of ours: still one line; the traceback at --log-level debug
        log.debug("internal error", exc_info=True)
        error = f"internal error: {type(e).__name__}: {e} (--log-level debug shows where)"
    if error is not None:
        print(f"qnn-build {args.command}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
