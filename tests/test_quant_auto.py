"""The default-to-be (docs/quantization.md, "The best fixed method"): act_range and weight_rounding
auto really score and round (no silent fallback to minmax), and model.encodings.json says what ran;
`--fast` makes auto the plain minmax and nearest rounding, byte for byte; on a zoo model auto is at
least as good as onnxruntime's quantize_static MinMax on the same calibration samples."""

import json

import numpy as np
import onnxruntime as ort
import pytest
from cli_util import qnn_build
from test_qdq_import import DIMS, ROOT, ort_qdq, samples

from qnn_build.convert import convert
from qnn_build.quant import QuantOptions
from qnn_build.quant.range_search import AUTO_METHODS
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

MODEL = "digits_cnn"
SOURCE = ROOT / "models" / MODEL / "model.onnx"
CALIBRATION = 32  # the samples ort_qdq calibrates onnxruntime with
AUTO = QuantOptions(act_range="auto", weight_rounding="auto")
PLAIN = QuantOptions(act_range="minmax", weight_rounding="nearest")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    d = tmp_path_factory.mktemp("default")
    calib = samples(MODEL, "calibration", CALIBRATION)
    np.savez(d / "calib.npz", **{k: np.stack([s[k] for s in calib]) for k in DIMS[MODEL]})
    for out, options in (("auto", AUTO), ("fast", QuantOptions(act_range="auto", weight_rounding="auto", fast=True)),
                         ("plain", PLAIN)):
        convert(SOURCE, d / out, input_dims=DIMS[MODEL], precision="w8a8", calibration=d / "calib.npz",
                options=options)
    return d


def record(folder) -> dict:
    return json.loads((folder / "model.encodings.json").read_text())


def test_auto_scores_and_says_what_it_chose(converted):
    said = record(converted / "auto")["quantization"]
    assert said["weight_rounding"] == "gptq"
    assert said["act_range"] in [m if p is None else f"{m} {p}" for m, p in AUTO_METHODS]
    # not a silent fallback to plain minmax: GPTQ moved weights off their nearest integers
    assert (converted / "auto" / "model.bin").read_bytes() != (converted / "plain" / "model.bin").read_bytes()


def test_fast_makes_auto_plain_byte_for_byte(converted):
    for name in ("model.cpp", "model.bin", "model.encodings.json"):
        assert (converted / "fast" / name).read_bytes() == (converted / "plain" / name).read_bytes(), name
    assert record(converted / "fast")["quantization"] == {
        "act_range": "minmax", "weight_rounding": "nearest", "bias_correction": False}


def test_fast_on_the_command_line(converted, tmp_path):
    dims = ",".join(map(str, DIMS[MODEL]["image"]))
    r = qnn_build("convert", SOURCE, "--input-dim", "image", dims, "--precision", "w8a8", "--calibration",
                  converted / "calib.npz", "--act-range", "auto", "--weight-rounding", "auto", "--fast",
                  "-o", tmp_path / "out", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "model.bin").read_bytes() == (converted / "fast" / "model.bin").read_bytes()


def sqnr(outputs, reference) -> float:
    ref = np.concatenate([r.ravel() for r in reference]).astype(np.float64)
    err = np.concatenate([o.ravel() for o in outputs]).astype(np.float64) - ref
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum(err ** 2)))


def test_auto_is_at_least_onnxruntime_minmax(converted, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # onnxruntime's shape inference writes scratch files here
    qdq = ort_qdq(MODEL, tmp_path / "ort.onnx")
    test = samples(MODEL, "test", 100)
    float_session = ort.InferenceSession(str(SOURCE), providers=["CPUExecutionProvider"])
    qdq_session = ort.InferenceSession(str(qdq), providers=["CPUExecutionProvider"])
    reference = [float_session.run(None, s)[0] for s in test]
    theirs = sqnr([qdq_session.run(None, s)[0] for s in test], reference)
    out = converted / "auto"
    with Model(build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")) as model:
        name = model.outputs[0].name
        ours = sqnr([model.run(s)[name] for s in test], reference)
    print(f"{MODEL} w8a8: auto {ours:.2f} dB, onnxruntime MinMax {theirs:.2f} dB")
    assert ours >= theirs
