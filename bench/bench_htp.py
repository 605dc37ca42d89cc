"""Qualcomm's HTP (emulated on x86-64) beside our npu: context-binary generation, inference time and
agreement, per model.

    python bench/bench_htp.py [--models digits_cnn,unet_tiny] [--precision w8a8] [--soc x-elite]
                              [--samples 50] [--rounds 20] [--real] [--smoke]

For every shipped model (--real: also the third-party models of tests/test_third_party.py, on
random inputs) it converts at the precision with --qdq, generates the QNN context binary for the SoC
(`generate s`: one fresh process, as the build runs it), then times one inference of the htp (HTP
emulation: its milliseconds are this machine's, not a phone's) and of our npu backend, interleaved,
and compares the two on `--samples` test inputs: the largest difference of their output codes (LSB)
and the SQNR of npu against htp. --smoke: digits_cnn, 4 samples, 3 rounds (CI: it runs, nothing more).
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REAL_MODELS, fetch_real, interleaved_medians, real_feeds

from qnn_build.convert import convert
from qnn_build.htp.generate import generate_context
from qnn_build.htp.session import HtpModel
from qnn_build.report.metrics import agreement
from qnn_build.runtime.binding import Model
from qnn_build.spec import load_spec
from qnn_build.toolchain import build_model_lib

ROOT = Path(__file__).resolve().parent.parent
THIRD_PARTY = ("ppocr_v4_det", "ppocr_v4_rec", "ppocr_cls", "silero_vad")


def zoo_cases(names):
    for spec_path in sorted((ROOT / "models").glob("*.yaml")):
        spec = load_spec(spec_path)
        if names and spec.name not in names:
            continue
        dims = {k: e["shape"] for k, e in spec.inputs.items()}
        data = np.load(spec.test["data"])
        samples = lambda n, dims=dims, data=data: [
            {k: data[k][i].reshape(dims[k]).astype(np.float32) for k in dims} for i in range(n)]
        yield spec.name, spec.source, dims, {}, spec.calibration, samples


def real_cases(names):
    for model in REAL_MODELS:
        if model.name not in THIRD_PARTY or (names and model.name not in names):
            continue
        path = fetch_real(model)

        def samples(n, model=model):
            return [real_feeds(model, seed=k)[0] for k in range(n)]
        yield model.name, path, model.dims, model.values, None, samples


def run_case(name, source, dims, values, calibration, samples, args, workdir):
    out = Path(workdir) / name
    if calibration is None:  # a real model: calibrate on 8 random inputs of its kind
        stacked = samples(8)
        np.savez(out.parent / f"{name}_cal.npz", **{k: np.stack([s[k] for s in stacked]) for k in stacked[0]})
        calibration = out.parent / f"{name}_cal.npz"
    convert(source, out, dims, values, precision=args.precision, calibration=calibration, qdq=True)
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    start = time.perf_counter()
    info = generate_context(out / "model.qdq.onnx", out / "htp" / "model.htp.onnx", args.soc)
    wall = time.perf_counter() - start
    feeds = samples(args.samples)
    with Model(lib, backend="npu", threads=1) as npu, HtpModel(out / "htp" / "model.htp.onnx") as htp:
        times = interleaved_medians({"htp": lambda: htp.run(feeds[0]), "npu": lambda: npu.run(feeds[0])},
                                    args.rounds, warmup=2)
        theirs, ours = [htp.run(f) for f in feeds], [npu.run(f) for f in feeds]
        worst = None
        for o in htp.outputs:
            a = agreement(np.stack([r[o.name] for r in ours]), np.stack([r[o.name] for r in theirs]),
                          htp.encoding(o.name))
            worst = a if worst is None or a["sqnr_db"] < worst["sqnr_db"] else worst
    lsb = worst.get("max_lsb", "-")
    print(f"{name:<18} {wall:>6.2f} {info['binary']['bytes'] / 1024:>9.0f} {times['htp'] * 1e3:>9.2f} "
          f"{times['npu'] * 1e3:>8.3f} {lsb:>7} {worst['sqnr_db']:>9.1f} {len(info['float_nodes']):>6}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated names (default: every shipped model)")
    ap.add_argument("--precision", default="w8a8")
    ap.add_argument("--soc", default="x-elite", help="a configs/socs/ name")
    ap.add_argument("--samples", type=int, default=50, help="test inputs compared (default 50)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--real", action="store_true", help="also the third-party models (random inputs)")
    ap.add_argument("--smoke", action="store_true", help="digits_cnn, 4 samples, 3 rounds: checks that it runs")
    args = ap.parse_args()
    if args.smoke:
        args.models, args.samples, args.rounds, args.real = "digits_cnn", 4, 3, False
    names = set(args.models.split(",")) if args.models else set()
    print(f"htp on {args.soc} (emulated) vs npu, {args.precision}")
    print(f"{'model':<18} {'gen s':>6} {'ctx KiB':>9} {'htp ms':>9} {'npu ms':>8} {'max LSB':>7} "
          f"{'SQNR dB':>9} {'float':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for case in zoo_cases(names):
            run_case(*case, args, tmp)
        if args.real:
            for case in real_cases(names):
                run_case(*case, args, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
