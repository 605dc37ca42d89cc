"""Init time: load to ready-to-execute, from a context binary against from the model library
(compose + finalize) and against onnxruntime's session creation, for every shipped model.

    python bench/bench_init.py [--rounds 20] [--models digits_cnn,unet_tiny] [--npu] [--smoke]

Each model is converted (fp32; with --npu also w8a8 for the npu), compiled and serialized once;
then every round times the three inits in rotating order, each inside the process: `retrieve_us`
(create the graph, map and check the file, bind), `compose_us + finalize_us` (the model library
already loaded), `load_us + compose_us + finalize_us` (the library dlopen'ed afresh: a copy of it
that is dlclose'd after each round), and `onnxruntime.InferenceSession(model.onnx)` (1 thread).
Prints the median per model, the ratios and their geometric means. --smoke: digits_cnn, cpu and
npu, 2 rounds: checks that it runs (CI), measures nothing.
"""

import _ctypes
import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, geomean, zoo_models  # noqa: E402

from qnn_build.runtime.binding import Model, load_context  # noqa: E402


def build(name, source, dims, precision, out: Path, backend: str):
    from qnn_build.convert import convert
    from qnn_build.toolchain import build_model_lib

    d = out / f"{name}-{precision}"
    spec = yaml.safe_load((ROOT / "models" / f"{name}.yaml").read_text())
    calibration = ROOT / "models" / spec["calibration"] if precision != "fp32" else None
    convert(source, d, input_dims=dims, precision=precision, calibration=calibration)
    lib = build_model_lib(d / "model.cpp", d / "model.bin", d / "libmodel.so")
    ctx = d / "model.ctx"
    with Model(lib, backend=backend) as m:
        ctx.write_bytes(m.context_binary())
    return lib, ctx


def ort_session_us(source) -> float:
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    t0 = time.perf_counter()
    ort.InferenceSession(str(source), opts, providers=["CPUExecutionProvider"])
    return (time.perf_counter() - t0) * 1e6


def time_model(lib, ctx, source, backend, rounds) -> dict[str, float]:
    def from_ctx():
        with load_context(ctx, backend=backend) as m:
            return m.timings["retrieve_us"]

    def from_lib():
        with Model(lib, backend=backend) as m:
            return m.timings["compose_us"] + m.timings["finalize_us"]

    cold_lib = Path(lib).with_name("libmodel_cold.so")  # loaded by this runner only
    shutil.copyfile(lib, cold_lib)

    def from_lib_cold():
        """The library's own load too: dlopen of a library not yet mapped (dlclose'd each round)."""
        with Model(cold_lib, backend=backend) as m:
            us = m.timings["load_us"] + m.timings["compose_us"] + m.timings["finalize_us"]
        _ctypes.dlclose(m._lib._handle)
        return us

    runners = {"ctx_us": from_ctx, "lib_us": from_lib, "cold_us": from_lib_cold,
               "ort_us": lambda: ort_session_us(source)}
    for fn in runners.values():  # warm-up: libraries loaded, caches filled
        fn()
    samples = {k: [] for k in runners}
    names = list(runners)
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            samples[n].append(runners[n]())
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20, help="timed rounds per model (median; at least 10)")
    ap.add_argument("--models", help="comma-separated subset of the zoo")
    ap.add_argument("--npu", action="store_true", help="also w8a8 on the npu")
    ap.add_argument("--smoke", action="store_true", help="digits_cnn, cpu and npu, 2 rounds: checks that it runs")
    args = ap.parse_args()
    rounds = max(args.rounds, 10)
    if args.smoke:
        args.models, args.npu, rounds = "digits_cnn", True, 2
    wanted = set(args.models.split(",")) if args.models else None
    configs = [("fp32", "cpu")] + ([("w8a8", "npu")] if args.npu else [])
    print(f"{'model':<18} {'prec':<5} {'backend':<7} {'ctx us':>9} {'lib us':>9} {'cold us':>9} {'ort us':>9} "
          f"{'lib/ctx':>8} {'cold/ctx':>8} {'ort/ctx':>8}")
    ratios = {"lib": [], "cold": [], "ort": []}
    with tempfile.TemporaryDirectory(prefix="qnnb-bench-init-") as tmp:
        for name, source, dims in zoo_models():
            if wanted and name not in wanted:
                continue
            for precision, backend in configs:
                lib, ctx = build(name, source, dims, precision, Path(tmp), backend)
                t = time_model(lib, ctx, source, backend, rounds)
                x = {k: t[f"{k}_us"] / t["ctx_us"] for k in ratios}
                for k in ratios:
                    ratios[k].append(x[k])
                print(f"{name:<18} {precision:<5} {backend:<7} {t['ctx_us']:>9.1f} {t['lib_us']:>9.1f} "
                      f"{t['cold_us']:>9.1f} {t['ort_us']:>9.1f} {x['lib']:>7.2f}x {x['cold']:>7.2f}x "
                      f"{x['ort']:>7.2f}x", flush=True)
    print(f"geometric mean over {len(ratios['lib'])} builds (median of {rounds} rounds each): context load is "
          f"{geomean(ratios['lib']):.2f}x as fast as compose+finalize of a loaded library, "
          f"{geomean(ratios['cold']):.2f}x as fast as load+compose+finalize of an unloaded one, "
          f"{geomean(ratios['ort']):.2f}x as fast as onnxruntime session creation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
