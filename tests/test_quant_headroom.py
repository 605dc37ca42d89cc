"""A 16-bit activation's range is its calibrated range widened about zero by HEADROOM
(docs/quantization.md (3c)); 8-bit ranges, and the inputs of saturating functions, keep theirs. The
headroom is what lets 16-bit activations hold values the calibration samples did not reach."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import calibrate, convert
from qnn_build.quant.encoding import HEADROOM
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """x -> Gemm -> h -> Sigmoid -> s -> Gemm -> y: h is read only by a saturating function."""
    d = tmp_path_factory.mktemp("headroom")
    consts = {"w1": RNG.standard_normal((16, 16)) * 0.5, "b1": RNG.standard_normal(16) * 0.1,
              "w2": RNG.standard_normal((16, 8)), "b2": RNG.standard_normal(8) * 0.1}
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
             helper.make_node("Sigmoid", ["h"], ["s"]),
             helper.make_node("Gemm", ["s", "w2", "b2"], ["y"])]
    graph = helper.make_graph(nodes, "headroom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in consts.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "model.onnx")
    np.savez(d / "calib.npz", x=RNG.standard_normal((64, 1, 16)).astype(np.float32))
    np.savez(d / "test.npz", x=1.2 * RNG.standard_normal((64, 1, 16)).astype(np.float32))  # past the calibration
    return d


CASES = [
    # (precision, tensor, widened)
    ("w8a8", "x", False),
    ("w8a8", "y", False),
    ("w8a16", "x", True),
    ("w8a16", "h", False),   # read only by Sigmoid: saturates instead of clipping
    ("w8a16", "s", True),
    ("w8a16", "y", True),    # a graph output
    ("w16a16", "s", True),
]


@pytest.mark.parametrize("precision,tensor,widened", CASES, ids=[f"{p}-{t}" for p, t, _ in CASES])
def test_16_bit_ranges_are_widened(model_dir, precision, tensor, widened):
    s = calibrate(model_dir / "model.onnx", model_dir / "calib.npz")[tensor]
    out = model_dir / precision
    convert(model_dir / "model.onnx", out, precision=precision, calibration=model_dir / "calib.npz")
    enc = json.loads((out / "model.encodings.json").read_text())["activation_encodings"][tensor][0]
    k = HEADROOM if widened else 1.0
    lo, hi = k * min(s.min, 0.0), k * max(s.max, 0.0)
    assert abs(enc["min"] - lo) <= enc["scale"] and abs(enc["max"] - hi) <= enc["scale"], (enc, lo, hi)


def test_a_bitwidth_only_override_at_16_bits_is_widened_too(model_dir):
    s = calibrate(model_dir / "model.onnx", model_dir / "calib.npz")["s"]
    (model_dir / "s16.json").write_text(json.dumps({"activation_encodings": {"s": [{"bitwidth": 16}]}}))
    out = model_dir / "s16"
    convert(model_dir / "model.onnx", out, precision="w8a8", calibration=model_dir / "calib.npz",
            overrides=model_dir / "s16.json")
    enc = json.loads((out / "model.encodings.json").read_text())["activation_encodings"]["s"][0]
    assert enc["bitwidth"] == 16 and abs(enc["max"] - HEADROOM * s.max) <= enc["scale"]


def sqnr_db(model_dir, out) -> float:
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    sess = ort.InferenceSession(str(model_dir / "model.onnx"))
    err = sig = 0.0
    with Model(lib, backend="cpu") as model:
        for x in np.load(model_dir / "test.npz")["x"]:
            ref = sess.run(None, {"x": x})[0]
            err += float(np.sum((model.run({"x": x})["y"] - ref) ** 2))
            sig += float(np.sum(ref ** 2))
    return 10 * np.log10(sig / err)


def test_the_headroom_keeps_values_past_the_calibration(model_dir):
    """Test inputs 1.2x the calibration's spread: w8a16 as it is against w8a16 with every activation
    pinned to its calibrated range (an overrides file with min/max, which is taken as given)."""
    stats = calibrate(model_dir / "model.onnx", model_dir / "calib.npz")
    pinned = {n: [{"bitwidth": 16, "min": float(stats[n].min), "max": float(stats[n].max)}] for n in ("x", "s", "y")}
    (model_dir / "pinned.json").write_text(json.dumps({"activation_encodings": pinned}))
    db = {}
    for name, overrides in (("headroom", None), ("pinned", model_dir / "pinned.json")):
        convert(model_dir / "model.onnx", model_dir / name, precision="w8a16", calibration=model_dir / "calib.npz",
                overrides=overrides)
        db[name] = sqnr_db(model_dir, model_dir / name)
    assert db["headroom"] > db["pinned"] + 6.0, db
