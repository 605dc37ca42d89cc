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

The options are declared once, in qnn_build/options.py; STEPS below says which step takes which
(with its own wording where a step reads one differently). Adding a step: a `cmd_` function and a
STEPS row. Adding an option: a row in options.py and its name in a STEPS row.
"""

import argparse
import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import __version__
from .data.json_file import read_json_object
from .errors import QnnBuildError, os_error_line
from .log import LEVELS, log, setup
from .options import OPTIONS, QUANTIZATION, Option, count, json_value, spellings


def cmd_convert(args) -> None:
    from .convert import convert
    from .quant.apply import QuantOptions
    from .quant.fallback import describe

    _need(args, "convert", source="no source model given", output_dir="no output directory given (-o DIR)")
    fields = {f.name for f in dataclasses.fields(QuantOptions)}
    options = QuantOptions(**{o.spec_key: o.to_spec(getattr(args, o.name)) for o in QUANTIZATION if o.spec_key in fields})
    desc = convert(args.source, args.output_dir, _mapping(args.input_dims), _mapping(args.input_values),
                   args.out_nodes or None, precision=args.precision, calibration=args.calibration,
                   calibration_stats=args.calibration_stats, options=options, cle=args.cle,
                   overrides=args.quantization_overrides, float_fallback=args.float_fallback, qdq=args.qdq,
                   ignore_encodings=args.ignore_encodings)
    if "float_fallback" in desc:  # --float-fallback: which nodes stay in fp16
        _say(args, describe(desc["float_fallback"]))
    _say(args, f"converted {args.source} -> {args.output_dir} ({len(desc['inputs'])} inputs, "
               f"{len(desc['outputs'])} outputs, {sum(desc['ops'].values())} nodes)")


def cmd_calibrate(args) -> None:
    from .convert import calibrate

    _need(args, "calibrate", source="a source model", calibration="--calibration", output="-o")
    stats = calibrate(args.source, args.calibration, _mapping(args.input_dims), _mapping(args.input_values),
                      args.out_nodes or None, cle=args.cle, out_path=args.output)
    _say(args, f"calibrated {len(stats)} tensors -> {args.output}")


def cmd_model_lib(args) -> None:
    from .toolchain import build_model_lib, get_target

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

    _need(args, "context-binary", model="--model", output="-o")
    backend = get_backend(args.backend)
    placement = backend.placement(args.target)
    info = backend.build_context(args.model, args.output, placement=placement, precision=args.precision,
                                 runtime=args.runtime)
    if args.qnn_saver:  # also the graph as the backend's API calls (QNN's libQnnSaver.so: the htp's)
        backend.record_api_calls(args.model, args.qnn_saver, placement=placement)
    _say(args, f"built {args.output} for {backend.name} on {placement.name}: {info['summary']}")


def _placement(backend, args):
    """--target (or --soc) as the backend's placement, when given: where net-run and test load it."""
    return backend.placement(args.target) if args.target else None


def _model_source(args, step: str) -> dict:
    """--model or --retrieve-context (exactly one) as Backend.load() arguments."""
    if bool(args.model) == bool(args.retrieve_context):
        raise QnnBuildError(f"{step} needs --model or --retrieve-context (one of them)")
    return {"model": args.model, "context": args.retrieve_context}


def cmd_net_run(args) -> None:
    from .backends import get_backend
    from .runtime.netrun import net_run

    source = _model_source(args, "net-run")
    _need(args, "net-run", input_list="--input-list", output_dir="--output-dir")
    backend = get_backend(args.backend)
    model = backend.load(**source, threads=args.threads, runtime=args.runtime, precision=args.precision,
                         placement=_placement(backend, args))
    profile = net_run(model, args.input_list, args.output_dir, args.num_inferences,
                      profiling_level=args.profiling_level, native_inputs=bool(args.use_native_input_files),
                      native_outputs=bool(args.use_native_output_files), input_layout=args.input_layout or "NCHW")
    _say(args, f"ran {profile['num_inferences']} inference(s) on {args.backend} -> {args.output_dir}")


def cmd_runtime(args) -> None:
    from .atomic import write_bytes
    from .toolchain import INCLUDE_DIR, build_runtime, get_target

    _need(args, "runtime", output_dir="-o DIR")
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

    _need(args, "reference", source="a source model", data="--data", output="-o")
    info = run_reference(args.source, args.data, args.output, _mapping(args.input_dims), _mapping(args.input_values),
                         args.out_nodes or [], args.samples)
    _say(args, f"reference: {info['samples']} sample(s) of {args.source} -> {args.output}")


def cmd_test(args) -> None:
    from .backends import get_backend
    from .report.testrun import run_test

    source = _model_source(args, "test")
    _need(args, "test", reference="--reference", data="--data", output="-o")
    result = run_test(source["model"], args.reference, args.data, args.output, backend=args.backend,
                      runtime=args.runtime, labels=args.labels, samples=args.samples,
                      thresholds=_mapping(args.thresholds), name=args.name or "", precision=args.precision or "",
                      target=args.target or "", threads=args.threads, context=source["context"],
                      placement=_placement(get_backend(args.backend), args), agree_with=args.agree_with)
    _say(args, f"test passed: {result['samples']} sample(s) -> {args.output}")


def cmd_release(args) -> None:
    from .report.release import release

    missing = [k for k in ("zoo", "zoo_version", "runtime", "tool_versions", "models") if getattr(args, k) is None]
    if missing or not args.output:
        raise QnnBuildError(f"release needs {'-o' if not missing else '--' + missing[0].replace('_', '-')} "
                            "(the build writes all of it to the --config file)")
    config = {k: getattr(args, k) for k in ("zoo", "zoo_version", "runtime", "tool_versions", "models", "skipped")}
    config["cross_runtimes"] = args.cross_runtimes or []
    manifest = release(config, args.output)
    _say(args, f"released {len(manifest['files'])} files -> {args.output}")


def cmd_context_info(args) -> None:
    from .backends import describe_context
    from .report.context_info import format_info

    _need(args, "context-info", context="a context binary")
    path = Path(args.context)
    if not path.exists():
        raise QnnBuildError(f"{path}: no such file")
    backend, info = describe_context(path)
    print(json.dumps(info, indent=1) if args.json else format_info(info, backend.context_rows))


def cmd_profile_viewer(args) -> None:
    from .atomic import write_text
    from .report.profile_view import (chrome_trace, compare, format_compare, format_profile, load_profile,
                                      op_table)

    _need(args, "profile-viewer", profile="a profile.json (or net-run's output folder)")
    profile = load_profile(args.profile)
    if args.chrome_trace:
        write_text(args.chrome_trace, json.dumps(chrome_trace(profile)) + "\n", only_if_changed=False)
    if args.compare:
        c = compare(profile, load_profile(args.compare))
        print(json.dumps(c, indent=1) if args.json else format_compare(c, args.top))
    elif args.json:
        print(json.dumps({"ops": op_table(profile), **{k: v for k, v in profile.items() if k != "_path"}}, indent=1))
    else:
        print(format_profile(profile, args.top))
    if args.chrome_trace:
        _say(args, f"wrote {args.chrome_trace} (open it in ui.perfetto.dev or chrome://tracing)")


def cmd_accuracy_debug(args) -> None:
    from .report.accuracy_debug import JUMP_DB, accuracy_debug, format_report, write_report

    source = _model_source(args, "accuracy-debug")
    _need(args, "accuracy-debug", source="a source model", data="--data")
    report = accuracy_debug(args.source, args.data, **source, backend=args.backend, runtime=args.runtime,
                            input_values=_mapping(args.input_values), samples=args.samples,
                            jump_db=JUMP_DB if args.jump_db is None else args.jump_db)
    if args.output_dir:
        write_report(report, args.output_dir)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        _say(args, format_report(report) + (f"\n-> {args.output_dir}/index.html, accuracy.json" if args.output_dir else ""))


def cmd_report(args) -> None:
    from .report.zoo_report import build_report

    if args.models is None or not args.output:
        raise QnnBuildError(f"report needs {'-o' if args.models is not None else '--models'} "
                            "(the build writes its --config: `scons report`)")
    config = {"zoo": args.zoo or "zoo", "zoo_version": args.zoo_version or "", "runtime": args.runtime,
              "models": args.models}
    result = build_report(config, args.output, samples=args.samples or 8)
    _say(args, f"report: {len(result['rows'])} builds -> {args.output}")


def cmd_ops(args) -> None:
    from .ops import supported_ops
    print("\n".join(supported_ops()))


# ---- the steps and their options ---------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    help: str
    run: Callable
    options: tuple = ()   # option names (options.py) or Options a step words its own way


O = OPTIONS
STEPS = {
    "convert": Step("ONNX model -> model.cpp + model.bin + model.json", cmd_convert, (
        O["source"], O["output_dir"].but(help="directory for model.cpp, model.bin, model.json"),
        "input_dims", "input_values", "out_nodes", "qdq",
        O["precision"].but(help=f"the precision: {', '.join(spellings())} (default fp32; a QDQ model: the "
                                "precision of its encodings)"),
        "calibration", "calibration_stats", *QUANTIZATION, "float_fallback",
        Option("ignore_encodings", "a QDQ model: quantize it afresh from the calibration data instead of keeping "
               "the encodings its Q/DQ nodes hold (the default, as QAIRT's converter does)", kind="switch",
               default=False))),
    "calibrate": Step("run the float model over calibration data; write statistics", cmd_calibrate, (
        "source", O["calibration"].but(flags=("--calibration", "--input-list")),
        O["output"].but(help="the statistics file (.npz) to write"), "input_dims", "input_values", "out_nodes",
        O["cle"].but(help="equalize first, as convert --cle will"))),
    "model-lib": Step("model.cpp + model.bin -> libmodel.so", cmd_model_lib, (
        Option("cpp", "model.cpp from convert"), Option("bin", "model.bin from convert"),
        O["output"].but(help="the library to write (or a directory for libmodel.so / model.dll)"), "target")),
    "context-binary": Step("libmodel.so -> model.ctx: the graph finalized on a backend, serialized "
                           "(docs/context-binary.md)", cmd_context_binary, (
        O["backend"].but(help="backend to finalize on: a configs/backends/ name (default cpu); htp: Qualcomm's "
                              "QNN HTP, a real QNN context binary (docs/htp.md)"),
        O["model"].but(help="the model library (libmodel.so); for the htp the model.qdq.onnx of convert --qdq"),
        O["output"].but(help="the context binary to write (model.ctx; also writes model.ctx.json); for the htp its "
                             "EPContext wrapper model.htp.onnx (also .bin and .json)"), "runtime",
        O["target"].but(flags=("--target", "--soc"), help="where it will be loaded: a configs/targets/ name, e.g. "
                        "aarch64-windows (default: this machine; --model stays this machine's library); for the "
                        "htp a configs/socs/ SoC, e.g. x-elite"),
        O["precision"].but(help="refuse a model converted at another precision"),
        Option("qnn_saver", "htp: also record the graph's QNN API calls through libQnnSaver.so: DIR/saver_output.c "
               "+ params.bin (QAIRT SDK)", metavar="DIR"))),
    "net-run": Step("run a model library or a context binary over an input list", cmd_net_run, (
        O["backend"].but(help="backend to run on: a configs/backends/ name (default cpu)"),
        O["model"].but(help="the model library (libmodel.so); for the htp a model.qdq.onnx (with --soc)"),
        O["retrieve_context"].but(help="run from this context binary instead of --model (the htp's: "
                                       "model.htp.onnx)"),
        O["target"].but(flags=("--target", "--soc"), help="the htp: the SoC (a configs/socs/ name); a context for "
                        "another SoC is refused"),
        O["precision"].but(help="refuse a model library converted at another precision"),
        Option("input_list", "qnn-net-run input list: one line per inference of name:=path.raw"),
        O["output_dir"].but(flags=("--output-dir",), help="where Result_N/<output>.raw go"),
        Option("num_inferences", "run this many inferences (default: one per line)", type=count),
        Option("profiling_level", "write OUT/profile.json: basic, execute times; detailed, also each node's "
               "(docs/formats.md)", choices=("basic", "detailed")),
        "threads", "runtime",
        Option("use_native_input_files", "raw inputs with an 8/16-bit encoding hold its uint8/uint16 codes, as "
               "qnn-net-run's", kind="switch", default=False),
        Option("use_native_output_files", "write each output in its own dtype (an encoded one as its uint8/uint16 "
               "codes), not float32", kind="switch", default=False),
        Option("input_layout", "NHWC: raw inputs of rank >= 3 are channel-last, as QNN-converted models take them",
               choices=("NCHW", "NHWC"), default="NCHW"))),
    "runtime": Step("build the runtime library (libqnnb.so, its runner, qnnb.h) into a folder", cmd_runtime, (
        O["output_dir"].but(help="the folder, e.g. out/runtime/x86_64-linux"),
        O["target"].but(help="a configs/targets/ name (default: this machine); the folder also gets that "
                             "target's native qnn-net-run"))),
    "reference": Step("run onnxruntime on the source model over the test data -> reference .npz", cmd_reference, (
        O["source"].but(help="the .onnx model (float)"), "data", "samples",
        O["input_dims"].but(help="the input's shape; each sample is reshaped to it (repeatable)"),
        O["input_values"].but(help="feed this input a constant instead of test data (repeatable)"),
        O["out_nodes"].but(help="record this tensor (repeatable; default: the model's outputs)"),
        O["output"].but(help="the .npz to write: one [samples, *shape] array per output"))),
    "test": Step("run a model library over the test data, compare with the reference -> test.json", cmd_test, (
        "model", "retrieve_context", O["backend"].but(help="backend to run on: a configs/backends/ name (default cpu)"),
        "runtime", Option("reference", "reference .npz from `qnn-build reference`"),
        O["data"].but(help="test data .npz (as for reference)"),
        Option("labels", "the .npz key of int labels: adds top-1 accuracy"), "samples",
        Option("thresholds", "a limit: sqnr_db, cosine, top1 (minimums), max_abs, rel_err (maximums) (repeatable)",
               flags=("--threshold",), kind="keyvalue", type=float, metavar="KEY=VALUE"),
        "threads", Option("name", "model name, for test.json and messages"),
        O["precision"].but(help="precision of the build, for test.json and messages; a --model converted at "
                                "another precision is refused"),
        O["target"].but(flags=("--target", "--soc"), help="where the build runs, for test.json and messages; the "
                        "htp loads its context only for this SoC"),
        Option("agree_with", "a context binary of the backend this one's tests compare with (its configs' "
               "agree_with: the htp's, the npu): record in test.json how its outputs agree with the build's "
               "(SQNR, LSB)", metavar="CTX"),
        O["output"].but(help="test.json to write (also when a threshold is missed)"))),
    "release": Step("pack the zoo's libraries, model.json, test.json, runtime and MANIFEST.json into a "
                    "reproducible .tar.gz", cmd_release, (
        Option("zoo", "zoo name"), Option("zoo_version", "zoo version"),
        Option("runtime", "JSON {target, libraries, header} (normally from --config)", type=json_value),
        Option("cross_runtimes", "JSON list of {target, libraries}: other targets' runtimes and runners "
               "(normally from --config)", type=json_value),
        Option("tool_versions", "the build's tool-versions.json"),
        Option("models", "JSON list of models and their builds (normally from --config)", type=json_value),
        Option("skipped", "JSON list of builds left out, for the manifest", type=json_value, default=()),
        O["output"].but(help="the .tar.gz to write"))),
    "context-info": Step("describe a context binary: header, backend, target, precision, graph io with encodings, "
                         "memory plan, checksum (as qnn-context-binary-utility)", cmd_context_info, (
        Option("context", "the context binary (model.ctx, or an htp context's .bin)", flags=()), "json")),
    "profile-viewer": Step("a profile.json as tables: init and execute times, time per op type and per node, largest "
                           "first (as qnn-profile-viewer); --compare a second one", cmd_profile_viewer, (
        Option("profile", "profile.json from net-run --profiling-level (or its output folder)", flags=()),
        Option("compare", "a second profile: per-node times side by side, b/a", metavar="PROFILE"),
        Option("top", "show this many nodes", type=count, default=20),
        Option("chrome_trace", "also write the Chrome trace / Perfetto JSON of it", metavar="FILE"), "json")),
    "accuracy-debug": Step("compare a built model with its float source layer by layer: SQNR, cosine, max abs error, "
                           "encoding vs observed range, clipping; the first layer where the error jumps",
                           cmd_accuracy_debug, (
        O["source"].but(help="the source .onnx model (run in float by onnxruntime)"),
        O["model"].but(help="the built model library (libmodel.so) at any precision"),
        O["retrieve_context"].but(help="a context binary instead of --model"),
        O["backend"].but(help="backend to run the build on: cpu (its simulation of the precision) or npu"),
        "runtime", "data", "samples",
        O["input_values"].but(help="an input convert pinned to a constant, fed to the source model (repeatable)"),
        Option("jump_db", "SQNR a layer must lose to be where the error jumps (default 15)", type=float),
        O["output_dir"].but(help="write accuracy.json and index.html (a plot of SQNR along the graph)"), "json")),
    "report": Step("the zoo's HTML report: per model, precision and backend SQNR, accuracy, size, init time, "
                   "latency, plots, profile and accuracy-debug pages (normally `scons report`)", cmd_report, (
        Option("zoo", "zoo name"), Option("zoo_version", "zoo version"), "runtime",
        Option("models", "JSON list of models and their builds (normally from --config)", type=json_value),
        O["samples"].but(help="test samples timed and debugged per build (default 8)"),
        O["output"].but(help="the index.html to write (its pages go beside it)"))),
}
# What every step takes besides its own options.
COMMON = (Option("config", "JSON file of this step's options (command-line flags win)"),
          Option("quiet", "print nothing on success", flags=("-q", "--quiet"), kind="switch", default=False),
          Option("log_level", "what to say while working: error, warning, info (progress; the default on a terminal), "
                 "debug (also tracebacks)", choices=LEVELS))


def step_options(step: Step) -> list[Option]:
    return [o if isinstance(o, Option) else OPTIONS[o] for o in step.options]


def _add(parser, o: Option) -> None:
    if not o.cli_flags:  # a positional
        parser.add_argument(o.name, nargs="?", help=o.help)
        return
    kw = {"dest": o.name, "help": o.help + (f" (default {o.default})" if o.default not in (None, False, ()) and
                                             "default" not in o.help else "")}
    if o.kind == "switch":
        kw.update(action="store_true", default=None)
    elif o.kind == "pairs":
        kw.update(nargs=2, action="append", metavar=o.metavar)
    elif o.kind in ("repeat", "keyvalue"):
        kw.update(action="append", metavar=o.metavar)
    else:
        kw.update(type=_parsed(o.type), choices=o.choices, metavar=o.metavar)
    parser.add_argument(*o.cli_flags, **kw)


def _parsed(convert):
    """A value parser whose ValueError message argparse shows as it is."""
    if convert in (str, int, float):
        return convert

    def parse(text):
        try:
            return convert(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    parse.__name__ = convert.__name__
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="qnn-build", description="ONNX models built like software.")
    p.add_argument("--version", action="version", version=f"qnn-build {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for name, step in STEPS.items():
        sp = sub.add_parser(name, help=step.help, description=step.help)
        options = [*COMMON, *step_options(step)]
        for o in options:
            _add(sp, o)
        sp.set_defaults(func=step.run, options=options, parser=sp)  # parser: usage errors show the step's
    ops = sub.add_parser("ops", help="list the ONNX ops the converter supports")
    ops.set_defaults(func=cmd_ops, options=[], parser=ops)
    return p


# ---- values: command line, then --config, then the defaults ------------------------------------

def _finish(args) -> None:
    """Parse the repeated NAME VALUE / KEY=VALUE options; fill what the command line left unset from
    --config, then from each option's default."""
    for o in args.options:
        given = getattr(args, o.name)
        if o.kind in ("pairs", "keyvalue") and given:
            try:
                setattr(args, o.name, [_pair(o, item) for item in given])
            except ValueError as e:
                args.parser.error(str(e))
    config = read_json_object(args.config, "config file", "a JSON object of the step's options") \
        if getattr(args, "config", None) else {}
    options = {o.name: o for o in args.options}
    for key, value in config.items():
        if key not in options or key == "config":
            raise QnnBuildError(f"{args.config}: unknown option '{key}' for this step")
        choices = options[key].choices
        # argparse checks only the command line; null is "not set" (the build's per-step configs)
        if value is not None and choices is not None and value not in choices:
            raise QnnBuildError(f"{args.config}: {key}: unknown value {value!r} (one of "
                                f"{', '.join(str(c) for c in choices)})")
        if getattr(args, key) in (None, []):
            setattr(args, key, value)
    for o in args.options:
        if getattr(args, o.name) is None:
            setattr(args, o.name, list(o.default) if isinstance(o.default, tuple) else o.default)


def _pair(o: Option, item) -> tuple:
    if o.kind == "keyvalue":
        name, found, text = item.partition("=")
        if not found:
            raise ValueError(f"'{item}' is not {o.metavar}")
    else:
        name, text = item
    try:
        return name, o.type(text)
    except ValueError as e:
        raise ValueError(f"{o.cli_flags[0]} {name}: {e}") from None


def _need(args, step: str, **messages) -> None:
    """Refuse a step missing an option: `option name -> what to say` (after 'STEP needs ')."""
    for name, what in messages.items():
        if not getattr(args, name):
            raise QnnBuildError(what if what.startswith("no ") else f"{step} needs {what}")


def _mapping(value) -> dict:
    """Options that come as [(name, value)] from the command line or as {name: value} from --config."""
    return dict(value) if isinstance(value, (list, dict)) else {}


def _say(args, text: str) -> None:
    if not args.quiet:
        print(text)


def _qnn_spellings(argv: list[str]) -> list[str]:
    """QNN's tools spell flags with underscores (--input_list, --output_dir): take them as ours."""
    out = []
    for token in argv:
        if token.startswith("--") and "_" in token.partition("=")[0]:
            flag, eq, value = token.partition("=")
            token = flag.replace("_", "-") + eq + value
        out.append(token)
    return out


def _stdout_failed(e: OSError) -> str:
    """stdout could not be written (a full disk, a closed pipe): later writes go nowhere, so that
    Python's own flush at exit does not print a second error."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return f"writing the output: {os_error_line(OSError(e.errno, e.strerror, '<stdout>'))}"


# Steps that load or build our runtime library, which compiles on first use.
RUNTIME_STEPS = ("runtime", "context-binary", "net-run", "test", "accuracy-debug", "report")


def _announce_first_compile(args) -> None:
    """On a machine with no runtime library built yet, say so before the imports and the compile that
    follow (seconds, then minutes): the first command a user runs must not sit silent. Looked up
    without importing the toolchain (toolchain/build.py's cache_root is the same folder)."""
    from .log import log

    if args.command not in RUNTIME_STEPS or getattr(args, "runtime", None) or os.environ.get("QNNB_RUNTIME"):
        return
    cache = Path(os.environ.get("QNNB_CACHE_DIR") or Path.home() / ".cache" / "qnn-build")
    if not any((cache / "runtime").glob("*/libqnnb.so")):
        log.info("first run here: the runtime library compiles before anything runs (1-3 minutes, once)")


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(_qnn_spellings(sys.argv[1:] if argv is None else list(argv)))
    if extra:  # the step's usage, not the top level's
        args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
    setup(getattr(args, "log_level", None), getattr(args, "quiet", False))
    _announce_first_compile(args)
    error = None
    try:
        _finish(args)
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
