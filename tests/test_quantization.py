"""Quantization end to end on a small conv net: every precision's accuracy, encodings JSON and
overrides, statistics reuse, determinism, packed 4-bit weights, and bad input.

Accuracy floors sit 1-1.5 dB under the SQNR measured when they were set (MEASURED_DB), so a
regression of a precision or an option shows. A change of the default quantization moves them: re-
measure with `python -m pytest tests/test_quantization.py -k "rank or options or cle or bias" -s`
(each test prints what it measured), then update MEASURED_DB in the same commit as the change and
say why the values moved."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.codegen.weights import read_weights
from qnn_build.convert import calibrate, convert
from qnn_build.errors import QnnBuildError
from qnn_build.quant import QuantOptions
from qnn_build.quant.encoding import activation_encoding, bias_encoding, fake_quantize, quantize, symmetric_encoding
from qnn_build.runtime import load
from qnn_build.toolchain import build_model_lib

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("quant")
    w1 = (RNG.standard_normal((8, 3, 3, 3)) * 0.5).astype(np.float32)
    b1 = RNG.standard_normal(8).astype(np.float32)
    w2 = (RNG.standard_normal((4, 8, 3, 3)) * 0.3).astype(np.float32)
    wf = (RNG.standard_normal((144, 64)) * 0.1).astype(np.float32)
    wo = (RNG.standard_normal((64, 5)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
             helper.make_node("Flatten", ["c2"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "wf"], ["h"], name="fc1"),
             helper.make_node("Tanh", ["h"], ["t"], name="tanh"),
             helper.make_node("MatMul", ["t", "wo"], ["y"], name="fc2")]
    graph = helper.make_graph(nodes, "qnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
                              [numpy_helper.from_array(v, k) for k, v in
                               dict(w1=w1, b1=b1, w2=w2, wf=wf, wo=wo).items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "model.onnx")
    calib = RNG.standard_normal((64, 1, 3, 8, 8)).astype(np.float32)
    np.savez(d / "calib.npz", x=calib)
    # Test inside the calibrated ranges, so that clipping does not hide the precisions' differences.
    np.savez(d / "test.npz", x=calib[:16])
    return d


def run_precision(model_dir, name, precision, **kw):
    out = model_dir / name
    convert(model_dir / "model.onnx", out, precision=precision, calibration=model_dir / "calib.npz", **kw)
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    model = load(lib)
    xs = np.load(model_dir / "test.npz")["x"]
    sess = ort.InferenceSession(str(model_dir / "model.onnx"))
    ours = np.concatenate([model.run({"x": x})["y"] for x in xs])
    ref = np.concatenate([sess.run(None, {"x": x})[0] for x in xs])
    return 10 * np.log10(np.sum(ref ** 2) / max(np.sum((ours - ref) ** 2), 1e-30)), out


# SQNR (dB) against onnxruntime's float model on the 16 test samples, measured at the commit that set
# them; fp32 differs from onnxruntime by float32 rounding only, in an order that depends on the BLAS
# kernels of the machine, so its floor is lower.
MEASURED_DB = {"fp32": 127.9, "fp16": 61.2, "w16a16": 75.3, "w8a16": 32.0, "w8a8": 28.3, "w4a16": 9.2,
               "w8a8 mse": 27.4, "w8a8 per_tensor": 27.6, "w8a8 cle": 27.4}
MARGIN_DB = {"fp32": 8.0}


def above_floor(name: str, sqnr: float) -> bool:
    print(f"{name}: {sqnr:.2f} dB (set at {MEASURED_DB[name]})")
    return sqnr > MEASURED_DB[name] - MARGIN_DB.get(name, 1.5)


def test_precisions_rank_by_accuracy(model_dir):
    sqnr = {p: run_precision(model_dir, p, p)[0] for p in ["fp32", "fp16", "w16a16", "w8a16", "w8a8", "w4a16"]}
    for name, value in sqnr.items():
        assert above_floor(name, value), f"{name}: {value:.2f} dB, measured {MEASURED_DB[name]}"
    assert sqnr["w16a16"] > sqnr["w8a16"] > sqnr["w8a8"] > sqnr["w4a16"]


def test_encodings_json_is_aimet_shaped(model_dir):
    _, out = run_precision(model_dir, "enc", "w8a8")
    doc = json.loads((out / "model.encodings.json").read_text())
    assert set(doc) >= {"activation_encodings", "param_encodings", "version"}
    act = doc["activation_encodings"]["r1"][0]
    assert act["bitwidth"] == 8 and act["is_symmetric"] == "False" and act["min"] == 0.0
    assert abs(act["scale"] * (act["offset"] + 255) - act["max"]) < 1e-6
    w1 = doc["param_encodings"]["w1"]
    assert len(w1) == 8 and all(e["is_symmetric"] == "True" and e["offset"] == -128 for e in w1)
    assert doc["param_encodings"]["b1"][0]["bitwidth"] == 32
    x_scale = doc["activation_encodings"]["x"][0]["scale"]
    np.testing.assert_allclose([e["scale"] for e in doc["param_encodings"]["b1"]],
                               [x_scale * e["scale"] for e in w1], rtol=1e-6)  # equation (8)


def test_overrides_keep_a_tensor_at_16_bits_or_fp16(model_dir):
    (model_dir / "ov.json").write_text(json.dumps({"activation_encodings": {"t": [{"bitwidth": 16, "dtype": "int"}],
                                                                            "h": [{"bitwidth": 16, "dtype": "float"}]},
                                                   "param_encodings": {"wo": [{"bitwidth": 16, "dtype": "int"}]}}))
    base, _ = run_precision(model_dir, "noov", "w8a8")
    mixed, out = run_precision(model_dir, "ov", "w8a8", overrides=model_dir / "ov.json")
    doc = json.loads((out / "model.encodings.json").read_text())
    assert doc["activation_encodings"]["t"][0]["bitwidth"] == 16
    assert doc["activation_encodings"]["h"][0]["dtype"] == "float"
    assert doc["param_encodings"]["wo"][0]["bitwidth"] == 16
    assert mixed > base


def test_statistics_artifact_gives_the_same_bytes(model_dir):
    calibrate(model_dir / "model.onnx", model_dir / "calib.npz", out_path=model_dir / "stats.npz")
    first = (model_dir / "stats.npz").read_bytes()
    calibrate(model_dir / "model.onnx", model_dir / "calib.npz", out_path=model_dir / "stats.npz")
    assert (model_dir / "stats.npz").read_bytes() == first
    # nearest rounding: GPTQ needs the samples themselves, which a statistics file does not hold
    options = QuantOptions(act_range="percentile", weight_rounding="nearest")
    convert(model_dir / "model.onnx", model_dir / "a", precision="w8a8", calibration=model_dir / "calib.npz",
            options=options)
    convert(model_dir / "model.onnx", model_dir / "b", precision="w8a8", calibration_stats=model_dir / "stats.npz",
            options=options)
    for f in ("model.cpp", "model.bin", "model.encodings.json"):
        assert (model_dir / "a" / f).read_bytes() == (model_dir / "b" / f).read_bytes(), f


@pytest.mark.parametrize("options", [QuantOptions(act_range="mse", weight_range="mse"), QuantOptions(per_channel=False)],
                         ids=["mse", "per_tensor"])
def test_range_options_convert_and_run(model_dir, request, options):
    sqnr, _ = run_precision(model_dir, "opt", "w8a8", options=options)
    name = f"w8a8 {request.node.callspec.id}"
    assert above_floor(name, sqnr), f"{name}: {sqnr:.2f} dB"


def test_cle_keeps_the_float_function(model_dir):
    sqnr, _ = run_precision(model_dir, "cle", "w8a8", cle=True)
    assert above_floor("w8a8 cle", sqnr), f"{sqnr:.2f} dB"


@pytest.fixture(scope="module")
def shifted_input_dir(tmp_path_factory):
    """A Gemm whose input has a mean far from zero (2-4 per feature, spread 0.5): quantizing its
    weight shifts every output by (Wq - W) E[x], which bias correction (12) removes."""
    d = tmp_path_factory.mktemp("biascorr")
    rng = np.random.default_rng(1)
    k, n = 32, 16
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    b = (0.1 * rng.standard_normal(n)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "model.onnx")
    x = (rng.uniform(2, 4, k) + 0.5 * rng.standard_normal((96, 1, k))).astype(np.float32)
    np.savez(d / "calib.npz", x=x[:64])
    np.savez(d / "test.npz", x=x[64:])  # held out
    return d


def test_bias_correction_removes_the_weight_error_mean(shifted_input_dir):
    """Measured: w4a16 18.8 dB plain, 31.4 dB corrected. Without (12) the two are the same bytes."""
    # fast: plain ranges and nearest rounding whatever the default (auto would itself choose (12) here)
    plain, out_plain = run_precision(shifted_input_dir, "plain", "w4a16", options=QuantOptions(fast=True))
    corrected, out_corrected = run_precision(shifted_input_dir, "corrected", "w4a16",
                                             options=QuantOptions(bias_correction=True, fast=True))
    print(f"w4a16: {plain:.2f} dB plain, {corrected:.2f} dB with bias correction")
    assert (out_plain / "model.bin").read_bytes() != (out_corrected / "model.bin").read_bytes()
    assert corrected > plain + 10, (plain, corrected)


def test_int4_weights_are_packed_and_block_wise(model_dir):
    _, out = run_precision(model_dir, "w4", "w4a16", options=QuantOptions(block_size=16))
    weights = read_weights((out / "model.bin").read_bytes())
    assert weights["wf"].dtype == np.int8 and weights["wf"].min() >= -8 and weights["wf"].max() <= 7
    doc = json.loads((out / "model.encodings.json").read_text())
    assert len(doc["param_encodings"]["wf"]) == 64 * (144 // 16)  # [channel][block], K=144 in blocks of 16
    assert len(doc["param_encodings"]["w1"]) == 8  # K=3 < 16: one scale per output channel


@pytest.mark.parametrize("backend", ["cpu", "npu"])
def test_runtime_rounds_by_the_equations(tmp_path, backend):
    """The C++ runtime's rounding of an activation (core/quant.cpp: the cpu's fake quantization, the
    npu's quantization on entry) is (2) then (1), round half to even. A Reshape's output shares its
    input's encoding, calibrated to [-8, 7.9375]: scale 1/16 exactly, so every (k + 1/2)/16 is an
    exact tie; values past the range saturate."""
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 600])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [20, 30])],
                              [numpy_helper.from_array(np.array([20, 30], np.int64), "shape")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "model.onnx")
    np.savez(tmp_path / "calib.npz", x=np.linspace(-8, 7.9375, 600, dtype=np.float32).reshape(1, 1, 600))
    convert(tmp_path / "model.onnx", tmp_path / "q", precision="w8a8", calibration=tmp_path / "calib.npz")
    enc = json.loads((tmp_path / "q" / "model.encodings.json").read_text())["activation_encodings"]["y"][0]
    assert (enc["scale"], enc["offset"]) == (0.0625, -128)
    ties = (np.arange(-129, 128) + 0.5) / 16
    x = np.concatenate([ties, np.random.default_rng(0).uniform(-9, 9, 600 - len(ties))]).astype(np.float32)
    q = np.clip(np.round(x / np.float32(0.0625)) + 128, 0, 255)                   # (2), half to even
    expected = (np.float32(0.0625) * (q - 128)).astype(np.float32).reshape(20, 30)  # (1)
    lib = build_model_lib(tmp_path / "q" / "model.cpp", tmp_path / "q" / "model.bin", tmp_path / "libq.so")
    np.testing.assert_array_equal(load(lib, backend=backend).run({"x": x[None]})["y"], expected)
    np.testing.assert_array_equal(fake_quantize(x, activation_encoding(-8, 7.9375, 8)).reshape(20, 30), expected)


@pytest.mark.parametrize("make,fragment", [
    (lambda d: np.savez(d / "bad.npz", x=np.zeros((0, 1, 3, 8, 8), np.float32)), "empty"),
    (lambda d: np.savez(d / "bad.npz", x=np.zeros((4, 1, 3, 7, 8), np.float32)), "does not hold samples"),
    (lambda d: np.savez(d / "bad.npz", y=np.zeros((4, 1, 3, 8, 8), np.float32)), "no array for input 'x'"),
    (lambda d: np.savez(d / "bad.npz", x=np.full((4, 1, 3, 8, 8), np.nan, np.float32)), "NaN"),
], ids=["empty", "shape", "missing_input", "nan"])
def test_bad_calibration_data(model_dir, tmp_path, make, fragment):
    make(tmp_path)
    with pytest.raises(QnnBuildError, match=fragment):
        convert(model_dir / "model.onnx", tmp_path / "o", precision="w8a8", calibration=tmp_path / "bad.npz")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("doc,fragment", [
    ({"activation_encodings": {"nope": [{"bitwidth": 16}]}}, "'nope' is not an activation"),
    ({"param_encodings": {"w1": [{"bitwidth": 12, "dtype": "int"}]}}, "unsupported bitwidth 12"),
], ids=["unknown_tensor", "bitwidth"])
def test_bad_overrides(model_dir, tmp_path, doc, fragment):
    (tmp_path / "ov.json").write_text(json.dumps(doc))
    with pytest.raises(QnnBuildError, match=fragment):
        convert(model_dir / "model.onnx", tmp_path / "o", precision="w8a8", calibration=model_dir / "calib.npz",
                overrides=tmp_path / "ov.json")
    assert not (tmp_path / "o").exists()


def test_block_size_must_divide_the_input_dimension(model_dir, tmp_path):
    with pytest.raises(QnnBuildError, match="block size 64 does not divide the input dimension 144 of weight 'wf'"):
        convert(model_dir / "model.onnx", tmp_path / "o", precision="w4a16", calibration=model_dir / "calib.npz",
                options=QuantOptions(block_size=64))
    assert not (tmp_path / "o").exists()


def test_missing_calibration_file(model_dir, tmp_path):
    with pytest.raises(QnnBuildError, match="calibration data not found"):
        convert(model_dir / "model.onnx", tmp_path / "o", precision="w8a8", calibration=tmp_path / "none.npz")


@pytest.mark.parametrize("make", [
    lambda: symmetric_encoding(np.array([1e-42, 1.0]), 16, axis=0),       # a nearly dead weight channel
    lambda: bias_encoding(1e-6, np.array([3e-41, 1e-3], np.float32), 0),   # its bias scale underflows
    lambda: activation_encoding(0.0, 1e-44, 16),                           # a range narrower than a subnormal
], ids=["weight", "bias", "activation"])
def test_scales_never_underflow_to_zero(make):
    enc = make()
    assert enc.scales.dtype == np.float32 and float(enc.scales.min()) >= np.finfo(np.float32).tiny
    with np.errstate(all="raise"):
        q = quantize(np.full(enc.scales.shape, 0.5, np.float32), enc)
    assert np.all((q >= enc.qmin) & (q <= enc.qmax))
