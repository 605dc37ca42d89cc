"""`qnn-build accuracy-debug`: a zoo model built at w8a8 with one deliberately bad quantization
override (a residual Add pinned to [0, 0.05] while its float values span about [-5, 5]) is debugged
against its float source; the debugger must name the Add first, on the npu and on the cpu's
simulation, and say why (the encoding's range against the observed one, the clipped fraction)."""

import json

import numpy as np
import pytest
from targets_util import ROOT

from qnn_build.cli import main
from qnn_build.report import metrics
from qnn_build.report.accuracy_debug import _Sums, accuracy_debug

MODEL = ROOT / "models" / "mobile_tiny"
BAD = "/features/features.3/Add_output_0"  # the residual Add of the third block
LAYER = "/features/features.3/Add"


@pytest.fixture(scope="module")
def bad_build(tmp_path_factory):
    d = tmp_path_factory.mktemp("accuracy_debug")
    override = {"version": "0.6.1", "param_encodings": {}, "activation_encodings": {
        BAD: [{"bitwidth": 8, "dtype": "int", "is_symmetric": "False", "min": 0.0, "max": 0.05}]}}
    (d / "bad.json").write_text(json.dumps(override))
    assert main(["convert", str(MODEL / "model.onnx"), "-o", str(d), "--precision", "w8a8", "--calibration",
                 str(MODEL / "calibration.npz"), "--quantization-overrides", str(d / "bad.json"), "-q"]) == 0
    assert main(["model-lib", "--cpp", str(d / "model.cpp"), "--bin", str(d / "model.bin"), "-o",
                 str(d / "libmodel.so"), "-q"]) == 0
    return d


def test_names_the_overridden_layer_first_on_the_npu(bad_build, capsys):
    out = bad_build / "debug"
    assert main(["accuracy-debug", str(MODEL / "model.onnx"), "--model", str(bad_build / "libmodel.so"), "--backend",
                 "npu", "--data", str(MODEL / "test.npz"), "--samples", "4", "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["first_jump"] == LAYER and report["largest_jumps"][0] == LAYER
    row = next(r for r in report["layers"] if r["node"] == LAYER)
    assert row["encoding"]["min"] == 0 and row["encoding"]["max"] == pytest.approx(0.05, rel=0.02)
    assert row["observed"]["min"] < -1 and row["observed"]["max"] > 1 and row["clipped"] > 0.5
    assert row["sqnr_db"] < 3 and row["jump_db"] > 20
    before = [r for r in report["layers"][: report["layers"].index(row)]]
    assert before and all(r["sqnr_db"] > 25 for r in before)  # healthy until the override
    assert json.loads((out / "accuracy.json").read_text()) == report
    page = (out / "index.html").read_text()
    assert "<svg" in page and f"<b>{LAYER}</b>" in page and 'class="jump"' in page


def test_names_it_first_on_the_cpu_simulation_too(bad_build):
    report = accuracy_debug(MODEL / "model.onnx", MODEL / "test.npz", model=bad_build / "libmodel.so", backend="cpu",
                            samples=2)
    assert report["first_jump"] == LAYER and report["largest_jumps"][0] == LAYER


def test_streamed_metrics_equal_the_test_steps(tmp_path):
    """The per-layer numbers, summed sample by sample, are report/metrics.py's over the whole set."""
    rng = np.random.default_rng(0)
    b = rng.standard_normal((3, 50)).astype(np.float32)
    a = (b + 0.05 * rng.standard_normal(b.shape)).astype(np.float32)
    sums = _Sums()
    for k in range(3):
        sums.add(a[k], b[k], (-1.0, 1.0, 0.01))
    m, ref = sums.metrics(), metrics.compare(a, b)
    assert m["sqnr_db"] == pytest.approx(ref["sqnr_db"], abs=1e-3)
    assert m["cosine"] == pytest.approx(ref["cosine"], abs=1e-6)
    assert m["max_abs"] == pytest.approx(ref["max_abs"], rel=1e-5)
    assert m["clipped"] == pytest.approx(np.mean(np.abs(b) > 1.005), abs=1e-6)
