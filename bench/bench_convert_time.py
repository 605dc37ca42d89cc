"""What the scored quantization costs: the CPU time of `convert` + `model-lib` at w8a8 with
`--act-range auto --weight-rounding auto` over the same with `--fast` (plain minmax and nearest
rounding), the budget of docs/quantization.md ("The best fixed method": at most 5x).

    python bench/bench_convert_time.py [--models yolov8n_320,ppocr_cls,silero_vad_seq] [--calib 16] [--smoke]

CPU seconds first: on a shared machine the wall time is mostly waiting for a core (it is printed
too). Each step runs as a command, as a user would run it; the time is that of the finished child
processes (the converter and the compilers it starts). The real models of bench/common.py,
calibrated on inputs of their kind (bench/real_data.py), or a zoo model (models/<name>.yaml) on its
own calibration set; the --fast row first, then the auto row, one model at a time.
"""

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

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


ZOO = Path(__file__).resolve().parent.parent / "models"


def timed(dims: dict, values: dict, source: Path, calibration: Path, out: Path, mode: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of convert + model-lib."""
    pins = [a for k, v in dims.items() for a in ("--input-dim", k, ",".join(map(str, v)))]
    pins += [a for k, v in values.items() for a in ("--input-value", k, ",".join(map(str, v)))]
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
    real = {m.name: m for m in REAL_MODELS}
    runtime_library(None)  # built (or found in its cache) outside the timing
    print("| model | --fast CPU s | auto CPU s | auto / --fast | --fast wall s | auto wall s |\n"
          "|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="qnnb-convert-time-") as tmp:
        for name in args.models.split(","):
            source, dims, values, calibration = _model(name, real, Path(tmp), args.calib)
            t = {mode: timed(dims, values, source, calibration, Path(tmp) / f"{name}-{mode}", mode) for mode in MODES}
            print(f"| {name} | {t['fast'][0]:.1f} | {t['auto'][0]:.1f} | {t['auto'][0] / t['fast'][0]:.2f}x "
                  f"| {t['fast'][1]:.1f} | {t['auto'][1]:.1f} |", flush=True)


def _model(name: str, real: dict, tmp: Path, count: int) -> tuple[Path, dict, dict, Path]:
    """(source, input dims, input values, calibration file) of a real model or a zoo model."""
    if name in real:
        model = real[name]
        calibration = tmp / f"{name}.npz"
        np.savez(calibration, **samples(name, model.dims, count, 1))
        return fetch_real(model), model.dims, model.values, calibration
    spec_file = ZOO / f"{name}.yaml"
    if not spec_file.is_file():
        sys.exit(f"{name}: neither a real model of bench/common.py nor models/{name}.yaml")
    spec = yaml.safe_load(spec_file.read_text())
    calibration = tmp / f"{name}.npz"
    with np.load(ZOO / spec["calibration"]) as z:
        np.savez(calibration, **{k: z[k][:count] for k in z.files})
    return ZOO / spec["source"], spec.get("inputs", {}), {}, calibration


if __name__ == "__main__":
    main()
