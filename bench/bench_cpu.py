"""Execution latency of the cpu backend against onnxruntime and OpenVINO, all at 1 thread.

    python bench/bench_cpu.py [--rounds 20] [--models digits_cnn,resnet50] [--no-light]

One run times every engine on the same input, warm-up first, then interleaved rounds; it prints the
median per model, the ratios ours/onnxruntime and ours/OpenVINO, and their geometric means.
OpenVINO is forced to f32 inference precision (its default here is bf16). Peers are
benchmark-only dependencies: pip install -e '.[bench]'.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # onnx_backend: the pipeline as an ONNX backend
from common import geomean, interleaved_medians, light_models, openblas_note, random_feeds, zoo_models  # noqa: E402

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
    core = ov.Core()
    model = core.read_model(str(path))
    model.reshape({name: list(v.shape) for name, v in feeds.items()})
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32",
                                                 "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
    request = compiled.create_infer_request()
    return lambda: request.infer(feeds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--models", help="comma-separated names to run (default: all)")
    ap.add_argument("--no-light", action="store_true", help="skip the onnx wheel's light models")
    args = ap.parse_args()

    models = zoo_models() + ([] if args.no_light else light_models())
    if args.models:
        wanted = set(args.models.split(","))
        models = [m for m in models if m[0] in wanted]
    rows = []
    print(f"{'model':<20} {'ours ms':>9} {'ort ms':>9} {'ov ms':>9} {'ours/ort':>9} {'ours/ov':>8}")
    for name, path, dims in models:
        feeds = random_feeds(path, dims)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                rep = QnnbBackend.prepare(onnx.load(str(path)), input_dims={k: list(v.shape) for k, v in feeds.items()})
            except Exception as e:  # a model we cannot run yet is reported, not fatal
                print(f"{name:<20} ours failed: {str(e).splitlines()[0][:100]}")
                continue
            runners = {"ours": lambda: rep.model.run(feeds), "ort": onnxruntime_runner(path, feeds)}
            ov_runner = openvino_runner(path, feeds)
            if ov_runner:
                runners["ov"] = ov_runner
            ours_out = list(rep.model.run(feeds).values())[0]
            ref_out = runners["ort"]()[0]
            err = float(np.max(np.abs(ours_out - ref_out)) / max(np.max(np.abs(ref_out)), 1e-30))
            t = interleaved_medians(runners, args.rounds)
        ov = t.get("ov")
        rows.append((name, t["ours"], t["ort"], ov))
        print(f"{name:<20} {t['ours'] * 1e3:9.3f} {t['ort'] * 1e3:9.3f} {ov * 1e3 if ov else float('nan'):9.3f} "
              f"{t['ours'] / t['ort']:9.2f} {t['ours'] / ov if ov else float('nan'):8.2f}   (rel err {err:.1e})")
    if rows:
        print(f"{'geomean':<20} {'':>9} {'':>9} {'':>9} {geomean(r[1] / r[2] for r in rows):9.2f} "
              f"{geomean(r[1] / r[3] for r in rows if r[3]):8.2f}")
    note = openblas_note()
    if note:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
