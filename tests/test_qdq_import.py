"""QDQ import (qnn_build/quant/qdq_import.py): a model quantized by onnxruntime's quantize_static, or
written as QDQ by qnn-build itself, converts at its own encodings.

- onnxruntime QDQ models of zoo models (per channel at opset 17; per tensor at opset 10; 16-bit
  activations through com.microsoft's Q/DQ; transformer_block, whose GELU division onnxruntime
  leaves float): our cpu and npu outputs equal onnxruntime's on the QDQ model within 1 LSB of the
  output's encoding, and every activation encoding is the model's scale and zero point;
- 4-bit block-wise weights (DequantizeLinear with block_size, opset 21): a hand-built model
  converts at fp32 to onnxruntime's values and, kept, to the model's very codes; our own w4a16
  block-32 export converts back to the same encodings and the same output bytes;
- --ignore-encodings re-quantizes, and model.encodings.json says which it did; a QOperator model
  and a tensor with no encoding (without calibration data) are refused in one line.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert
from qnn_build.errors import QnnBuildError
from qnn_build.quant import QuantOptions
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

ROOT = Path(__file__).resolve().parents[1]
DIMS = {"digits_cnn": {"image": [1, 1, 8, 8]}, "transformer_block": {"tokens": [1, 16, 32]}}


def samples(name: str, kind: str, count: int) -> list[dict]:
    data = np.load(ROOT / "models" / name / f"{kind}.npz")
    return [{k: data[k][i].reshape(d).astype(np.float32) for k, d in DIMS[name].items()} for i in range(count)]


def ort_qdq(name: str, out: Path, per_channel=True, act="QUInt8", opset=None, contrib=False, pre=True) -> Path:
    """onnxruntime's quantize_static of a zoo model (after quant_pre_process, which folds BatchNorm);
    opset: the default-domain opset written into the result (its ops exist there unchanged)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(samples(name, "calibration", 32))

        def get_next(self):
            return next(self.it, None)

    src = ROOT / "models" / name / "model.onnx"
    if pre:
        quant_pre_process(str(src), str(out.with_suffix(".pre.onnx")))
        src = out.with_suffix(".pre.onnx")
    quantize_static(str(src), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=getattr(QuantType, act), weight_type=QuantType.QInt8,
                    extra_options={"UseQDQContribOps": contrib})
    if opset:
        model = onnx.load(out)
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = opset
        onnx.checker.check_model(model)
        onnx.save(model, out)
    return out


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # onnxruntime's shape inference writes scratch files in the working directory


def session(path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def activation_qdq(model: onnx.ModelProto) -> dict[str, tuple[float, int]]:
    """Float tensor -> (scale, zero point) of each QuantizeLinear of an activation."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = {}
    for n in model.graph.node:
        if n.op_type == "QuantizeLinear" and n.input[0] not in inits:
            out[n.input[0]] = (float(inits[n.input[1]]), int(inits[n.input[2]]))
    return out


CASES = {  # id -> (zoo model, ort_qdq options, needs calibration for what onnxruntime leaves float)
    "cnn-w8a8-opset17": ("digits_cnn", {}, False),
    "cnn-w8a8-per-tensor-opset10": ("digits_cnn", {"per_channel": False, "opset": 10}, False),
    "cnn-a16-com.microsoft": ("digits_cnn", {"act": "QUInt16", "contrib": True}, False),
    "transformer-w8a8": ("transformer_block", {}, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_onnxruntime_qdq_model_runs_at_its_encodings(case, tmp_path):
    name, options, calibrate = CASES[case]
    qdq = ort_qdq(name, tmp_path / "qdq.onnx", **options)
    model = onnx.load(qdq)
    if options.get("contrib"):
        assert {n.domain for n in model.graph.node if n.op_type == "QuantizeLinear"} == {"com.microsoft"}
    calibration = ROOT / "models" / name / "calibration.npz" if calibrate else None
    desc = convert(qdq, tmp_path, DIMS[name], calibration=calibration)
    assert desc["precision"] == ("w8a16" if options.get("act") == "QUInt16" else "w8a8")

    doc = json.loads((tmp_path / "model.encodings.json").read_text())
    assert doc["source_encodings"]["mode"] == "kept"
    acts = doc["activation_encodings"]
    theirs = activation_qdq(model)
    for tensor, (scale, zero) in theirs.items():
        ours = tensor if tensor in acts else tensor.replace("_QuantizeLinear_Input", "")  # the output's float name
        assert (acts[ours][0]["scale"], acts[ours][0]["offset"]) == (np.float32(scale), -zero), tensor

    lib = build_model_lib(tmp_path / "model.cpp", tmp_path / "model.bin", tmp_path / "libmodel.so")
    feeds = samples(name, "test", 16)
    reference = session(qdq)
    out_name = reference.get_outputs()[0].name
    expected = [reference.run(None, f)[0] for f in feeds]
    lsb = acts[out_name][0]["scale"]
    for backend in ("cpu", "npu"):
        with Model(lib, backend=backend) as ours:
            got = [ours.run(f)[out_name] for f in feeds]
        worst = max(float(np.max(np.abs(g - e))) for g, e in zip(got, expected))
        assert worst <= lsb * 1.001, f"{case} on {backend}: {worst / lsb:.2f} LSB from onnxruntime"


def test_ignore_encodings_requantizes(tmp_path):
    qdq = ort_qdq("digits_cnn", tmp_path / "qdq.onnx")
    calibration = ROOT / "models" / "digits_cnn" / "calibration.npz"
    convert(qdq, tmp_path / "kept", DIMS["digits_cnn"], precision="w8a8", calibration=calibration)
    convert(qdq, tmp_path / "fresh", DIMS["digits_cnn"], precision="w8a8", calibration=calibration,
            ignore_encodings=True)
    kept, fresh = (json.loads((tmp_path / d / "model.encodings.json").read_text()) for d in ("kept", "fresh"))
    assert kept["source_encodings"]["mode"] == "kept" and "image" in kept["source_encodings"]["tensors"]
    assert fresh["source_encodings"] == {"mode": "ignored", "tensors": []}
    # 200 calibration samples, not onnxruntime's 32: the logits' range differs
    assert kept["activation_encodings"]["logits"] != fresh["activation_encodings"]["logits"]


def test_missing_encoding_without_calibration_is_named(tmp_path):
    qdq = ort_qdq("transformer_block", tmp_path / "qdq.onnx")
    with pytest.raises(QnnBuildError, match=r"tensor '.*Div_output_0' has no encoding in the QDQ model: give "
                                            r"calibration data \(--calibration\)"):
        convert(qdq, tmp_path, DIMS["transformer_block"])


def test_qoperator_model_is_refused(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    inits = [numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.uint8(128), "z"),
             numpy_helper.from_array(np.full((4, 4), 130, np.uint8), "b")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
             helper.make_node("QLinearMatMul", ["q", "s", "z", "b", "s", "z", "s", "z"], ["p"], name="mul"),
             helper.make_node("DequantizeLinear", ["p", "s", "z"], ["y"], name="dequant")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    result = subprocess.run([sys.executable, "-m", "qnn_build", "convert", str(tmp_path / "m.onnx"),
                             "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].endswith(
        "node 'mul' (QLinearMatMul) reads the integer codes of node 'quant' (QuantizeLinear): QOperator models "
        "(QLinearConv and the like) are not supported, export QDQ")


def block_model(path: Path) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """x [1, 64] -> MatMul by int4 W1 [64, 32] (blocks of 32 along K) -> Relu -> Gemm (transB) by int4
    W2 [16, 32] (blocks of 16 along K): opset 21's block-wise DequantizeLinear. Returns codes, scales."""
    rng = np.random.default_rng(0)
    c1, c2 = rng.integers(-8, 8, (64, 32)), rng.integers(-8, 8, (16, 32))
    s1 = rng.uniform(0.01, 0.05, (2, 32)).astype(np.float32)   # [K / 32, N]
    s2 = rng.uniform(0.01, 0.05, (16, 2)).astype(np.float32)   # [N, K / 16]
    inits = [helper.make_tensor("w1", TensorProto.INT4, [64, 32], c1.reshape(-1).tolist()),
             numpy_helper.from_array(s1, "s1"),
             helper.make_tensor("w2", TensorProto.INT4, [16, 32], c2.reshape(-1).tolist()),
             numpy_helper.from_array(s2, "s2")]
    nodes = [helper.make_node("DequantizeLinear", ["w1", "s1"], ["w1f"], axis=0, block_size=32),
             helper.make_node("DequantizeLinear", ["w2", "s2"], ["w2f"], axis=1, block_size=16),
             helper.make_node("MatMul", ["x", "w1f"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2f"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), path)
    return [c1, c2], [s1, s2]


def test_block_wise_int4_weights(tmp_path):
    codes, scales = block_model(tmp_path / "m.onnx")
    x = np.random.default_rng(1).standard_normal((8, 1, 64)).astype(np.float32)
    np.savez(tmp_path / "cal.npz", x=x)
    expected = [session(tmp_path / "m.onnx").run(None, {"x": v})[0] for v in x]

    convert(tmp_path / "m.onnx", tmp_path / "fp32", precision="fp32")  # the DQs fold at any opset
    lib = build_model_lib(tmp_path / "fp32/model.cpp", tmp_path / "fp32/model.bin", tmp_path / "fp32/lib.so")
    with Model(lib) as ours:
        for v, want in zip(x, expected):
            np.testing.assert_allclose(ours.run({"x": v})["y"], want, rtol=1e-5, atol=1e-5)

    desc = convert(tmp_path / "m.onnx", tmp_path / "kept", calibration=tmp_path / "cal.npz")
    assert desc["precision"] == "w4a16"  # weight-only: what the model leaves float takes 16 bits
    params = json.loads((tmp_path / "kept/model.encodings.json").read_text())["param_encodings"]
    w1, w2 = params["w1f"], params["w2f"]
    assert {e["bitwidth"] for e in w1 + w2} == {4} and {e["block_size"] for e in w1} == {32}
    # ours: one scale per (output channel, block), channels first
    assert [e["scale"] for e in w1] == scales[0].T.reshape(-1).tolist()
    assert [e["scale"] for e in w2] == scales[1].reshape(-1).tolist()


def test_our_w4a16_block_export_converts_back_to_itself(tmp_path):
    """model.qdq.onnx (codegen/qdq.py) of transformer_block at w4a16, block 32, read back: every
    activation encoding, and the output bytes on the cpu and the npu, are the first conversion's."""
    dims = DIMS["transformer_block"]
    convert(ROOT / "models/transformer_block/model.onnx", tmp_path / "a", dims, precision="w4a16",
            calibration=ROOT / "models/transformer_block/calibration.npz", options=QuantOptions(block_size=32),
            qdq=True)
    convert(tmp_path / "a/model.qdq.onnx", tmp_path / "b", dims)
    docs = [json.loads((tmp_path / d / "model.encodings.json").read_text()) for d in "ab"]
    assert docs[1]["source_encodings"]["mode"] == "kept"
    assert docs[0]["activation_encodings"] == docs[1]["activation_encodings"]
    blocks = [e for e in docs[1]["param_encodings"].values() if e[0].get("block_size")]
    assert blocks and all(e[0]["bitwidth"] == 4 for e in blocks)
    libs = [build_model_lib(tmp_path / d / "model.cpp", tmp_path / d / "model.bin", tmp_path / d / "lib.so")
            for d in "ab"]
    feeds = samples("transformer_block", "test", 8)
    for backend in ("cpu", "npu"):
        outs = []
        for lib in libs:
            with Model(lib, backend=backend) as m:
                outs.append([m.run(f)["logits"].tobytes() for f in feeds])
        assert outs[0] == outs[1], backend
