"""What the scored quantization costs: the CPU time of `convert` + `model-lib` at w8a8 with
`--act-range auto --weight-rounding auto` over the same with `--fast` (plain minmax and nearest
rounding), the budget of docs/quantization.md ("The best fixed method": at most 5x).

    python bench/bench_convert_time.py [--models yolov8n_320,ppocr_cls,silero_vad_seq] [--calib 16] [--smoke]

CPU seconds, not wall: on a shared machine the wall time is mostly waiting for a core. Each step runs
as a command, as a user would run it; the time is that of the finished child processes (the
converter and the compilers it starts). The real models of bench/common.py, calibrated on inputs of
their kind (bench/real_data.py), the --fast row first, then the auto row, one model at a time.
"""

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import REAL_MODELS, fetch_real  # noqa: E402
from real_data import samples  # noqa: E402

from qnn_build.runtime.binding import runtime_library  # noqa: E402

MODES = {"fast": ["--act-range", "auto", "--weight-rounding", "auto", "--fast"],
         "auto": ["--act-range", "auto", "--weight-rounding", "auto"]}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def qnn_build(*args):
    subprocess.run([sys.executable, "-m", "qnn_build.cli", *map(str, args), "-q"], check=True)


def timed(model, source: Path, calibration: Path, out: Path, mode: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of convert + model-lib."""
    pins = [a for k, v in model.dims.items() for a in ("--input-dim", k, ",".join(map(str, v)))]
    pins += [a for k, v in model.values.items() for a in ("--input-value", k, v)]
    cpu, wall = children_cpu(), time.perf_counter()
    qnn_build("convert", source, "--precision", "w8a8", "--calibration", calibration, "-o", out, *pins, *MODES[mode])
    qnn_build("model-lib", "--cpp", out / "model.cpp", "--bin", out / "model.bin", "-o", out / "libmodel.so")
    return children_cpu() - cpu, time.perf_counter() - wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="yolov8n_320,ppocr_cls,silero_vad_seq")
    ap.add_argument("--calib", type=int, default=16, help="calibration samples (default 16)")
    ap.add_argument("--smoke", action="store_true", help="silero_vad_seq on 2 samples: that the script runs")
    args = ap.parse_args()
    if args.smoke:
        args.models, args.calib = "silero_vad_seq", 2
    wanted = args.models.split(",")
    models = [m for m in REAL_MODELS if m.name in wanted]
    runtime_library(None)  # built (or found in its cache) outside the timing
    print("| model | --fast CPU s | auto CPU s | auto / --fast |\n|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="qnnb-convert-time-") as tmp:
        for model in models:
            calibration = Path(tmp) / f"{model.name}.npz"
            np.savez(calibration, **samples(model.name, model.dims, args.calib, 1))
            source = fetch_real(model)
            cpu = {mode: timed(model, source, calibration, Path(tmp) / f"{model.name}-{mode}", mode)[0]
                   for mode in MODES}
            print(f"| {model.name} | {cpu['fast']:.1f} | {cpu['auto']:.1f} | {cpu['auto'] / cpu['fast']:.2f}x |",
                  flush=True)


if __name__ == "__main__":
    main()
