"""An activation read only by HardSwish has its range cut at -3, below which HardSwish is 0
(docs/quantization.md (3b)); a tensor with another reader, or a graph output, keeps its range. The
cut lowers the error, and the npu runs such a graph as the cpu simulation does."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import calibrate, convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("flat")
    consts = {"w1": RNG.standard_normal((8, 4, 3, 3)) * 0.6, "b1": np.full(8, -4.0),
              "w2": RNG.standard_normal((8, 8, 1, 1)) * 0.5, "b2": np.full(8, -2.0),
              "w3": RNG.standard_normal((4, 8, 1, 1)) * 0.5, "b3": np.full(4, -2.0)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("HardSwish", ["c1"], ["h1"]),
             helper.make_node("Conv", ["h1", "w2", "b2"], ["c2"]),
             helper.make_node("HardSwish", ["c2"], ["h2"]),
             helper.make_node("Add", ["h2", "c2"], ["a"]),
             helper.make_node("Conv", ["a", "w3", "b3"], ["c3"]),
             helper.make_node("HardSwish", ["c3"], ["y"])]
    graph = helper.make_graph(nodes, "flat", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8]),
                               helper.make_tensor_value_info("c3", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in consts.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "model.onnx")
    calib = RNG.standard_normal((32, 1, 4, 8, 8)).astype(np.float32)
    np.savez(d / "calib.npz", x=calib)
    np.savez(d / "test.npz", x=calib[:16])
    return d


CASES = [
    # (tensor, its readers, cut at -3)
    ("c1", "HardSwish only", True),
    ("c2", "HardSwish and Add", False),
    ("c3", "HardSwish, and a graph output", False),
]


@pytest.mark.parametrize("tensor,readers,cut", CASES, ids=[c[0] for c in CASES])
def test_a_range_read_only_by_hardswish_starts_at_minus_3(model_dir, tensor, readers, cut):
    stats = calibrate(model_dir / "model.onnx", model_dir / "calib.npz")
    assert stats[tensor].min < -4, "the fixture must reach below the cut"
    out = model_dir / "w8a8"
    convert(model_dir / "model.onnx", out, precision="w8a8", calibration=model_dir / "calib.npz")
    enc = json.loads((out / "model.encodings.json").read_text())["activation_encodings"][tensor][0]
    low = -3.0 if cut else stats[tensor].min
    assert abs(enc["min"] - low) <= enc["scale"] / 2 + 1e-6, readers  # (3b), then (5) rounds the offset


def sqnr_db(model_dir, out, backend="cpu") -> float:
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    sess = ort.InferenceSession(str(model_dir / "model.onnx"))
    err = sig = 0.0
    with Model(lib, backend=backend) as model:
        for x in np.load(model_dir / "test.npz")["x"]:
            got = model.run({"x": x})
            for name, ref in zip(("y", "c3"), sess.run(["y", "c3"], {"x": x})):
                err += float(np.sum((got[name].reshape(ref.shape) - ref) ** 2))
                sig += float(np.sum(ref ** 2))
    return 10 * np.log10(sig / err)


def test_the_cut_lowers_the_error(model_dir):
    """c1 at 8 bits, every other activation at 16: with the cut, against c1's full calibrated range
    pinned by an overrides file (pinned tensors are not cut)."""
    stats = calibrate(model_dir / "model.onnx", model_dir / "calib.npz")
    wide = {name: [{"bitwidth": 16}] for name in ("x", "h1", "c2", "h2", "a", "c3", "y")}
    full = {**wide, "c1": [{"bitwidth": 8, "min": stats["c1"].min, "max": stats["c1"].max}]}
    db = {}
    for name, acts in (("cut", wide), ("full", full)):
        (model_dir / f"{name}.json").write_text(json.dumps({"activation_encodings": acts}))
        convert(model_dir / "model.onnx", model_dir / name, precision="w8a8", calibration=model_dir / "calib.npz",
                overrides=model_dir / f"{name}.json")
        db[name] = sqnr_db(model_dir, model_dir / name)
    # c1's step halves here ([-17.8, 11.8] -> [-3, 11.8]); the 8-bit weights' error stays
    assert db["cut"] > db["full"] + 1.0, db


def test_the_npu_runs_the_cut_range_as_the_cpu_does(model_dir):
    out = model_dir / "w8a8-npu"
    convert(model_dir / "model.onnx", out, precision="w8a8", calibration=model_dir / "calib.npz")
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    step = json.loads((out / "model.encodings.json").read_text())["activation_encodings"]["y"][0]["scale"]
    x = RNG.standard_normal((1, 4, 8, 8)).astype(np.float32)
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        assert np.abs(cpu.run({"x": x})["y"] - npu.run({"x": x})["y"]).max() <= 1.01 * step
