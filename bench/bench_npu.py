"""Latency of the npu backend at w8a8 against onnxruntime and OpenVINO on their own int8 models, 1 thread.

    python bench/bench_npu.py [--rounds 30] [--models digits_cnn,mobile_tiny] [--calib 100] [--smoke]

For every shipped model, one run quantizes it three ways from the same calibration samples:
ours (`convert --precision w8a8`, run on the npu backend), onnxruntime's `quantize_static` QDQ model
(after `quant_pre_process`, per-channel, MinMax; run by onnxruntime, which fuses QDQ into its integer
kernels) and NNCF's int8 model (run by OpenVINO, which does the same). Then it times the three on one
test sample, warm-up first, in interleaved rounds, and prints the medians, the ratios and their
geometric means. Peers are benchmark-only dependencies: pip install -e '.[bench]' nncf. --smoke:
digits_cnn, 8 calibration samples, 3 rounds: checks that it runs (CI), measures nothing.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quant_peers as peers
from bench_cpu import openvino_runner
from bench_quant import load_samples, pinned_model, shipped_models, short_reason
from common import geomean, interleaved_medians

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib


def ours_runner(float_path, dims, calib_npz, feeds, workdir):
    out = Path(workdir) / "ours"
    convert(float_path, out, input_dims=dims, precision="w8a8", calibration=calib_npz)
    model = Model(build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so"), backend="npu",
                  threads=1)
    return lambda: model.run(feeds)


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--models", help="comma-separated names to run (default: all)")
    ap.add_argument("--calib", type=int, default=100, help="calibration samples per model (default 100)")
    ap.add_argument("--smoke", action="store_true", help="digits_cnn, 8 samples, 3 rounds: checks that it runs")
    args = ap.parse_args()
    if args.smoke:
        args.models, args.calib, args.rounds = "digits_cnn", 8, 3

    models = shipped_models()
    if args.models:
        models = [m for m in models if m.name in set(args.models.split(","))]
    print(f"{'model':<20} {'npu ms':>9} {'ort ms':>9} {'ov ms':>9} {'npu/ort':>8} {'npu/ov':>7} {'npu/best':>9}")
    rows = []
    for bench in models:
        with tempfile.TemporaryDirectory() as tmp:
            float_path, dims = pinned_model(bench, Path(tmp) / "float.onnx")
            dtypes = {name: np.float32 for name in dims}
            calib, _ = load_samples(bench.calibration, dims, dtypes, args.calib, seed=0)
            test, _ = load_samples(bench.test, dims, dtypes, 1, seed=1)
            feeds = {k: v.reshape(dims[k]) for k, v in test[0].items()}
            calib = [{k: v.reshape(dims[k]) for k, v in sample.items()} for sample in calib]
            runners = {"npu": ours_runner(float_path, dims, bench.calibration, feeds, tmp)}
            missing = {}
            for name, runner in peer_runners(float_path, calib, feeds, tmp).items():
                if callable(runner):
                    runners[name] = runner
                else:
                    missing[name] = runner
            t = interleaved_medians(runners, args.rounds)
        ort, ov = t.get("ort"), t.get("ov")
        best = min(v for v in (ort, ov) if v) if (ort or ov) else None
        rows.append((t["npu"], ort, ov, best))

        def ms(v):
            return f"{v * 1e3:9.3f}" if v else f"{'-':>9}"

        def ratio(v, width, npu=t["npu"]):
            return f"{npu / v:{width}.2f}" if v else f"{'-':>{width}}"

        print(f"{bench.name:<20} {ms(t['npu'])} {ms(ort)} {ms(ov)} {ratio(ort, 8)} {ratio(ov, 7)} {ratio(best, 9)}"
              + "".join(f"   ({name}: {why})" for name, why in missing.items()))
    if rows:
        print(f"{'geomean':<20} {'':>9} {'':>9} {'':>9} {geomean(r[0] / r[1] for r in rows if r[1]):8.2f} "
              f"{geomean(r[0] / r[2] for r in rows if r[2]):7.2f} {geomean(r[0] / r[3] for r in rows if r[3]):9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
