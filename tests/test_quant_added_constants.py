"""A constant added to an activation (Add/Sub operand, LayerNorm's bias) is encoded at 16 bits at
every quantized precision; multiplied constants keep the precision's bits (docs/quantization.md,
"Other parameters"). The npu runs such a graph as the cpu simulation does."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("added")
    consts = {"pos": RNG.standard_normal((16, 32)) * 0.2, "gamma": 1 + RNG.standard_normal(32) * 0.1,
              "beta": RNG.standard_normal(32) * 0.05, "w": RNG.standard_normal((32, 24)) * 0.2,
              "shift": RNG.standard_normal(24) * 0.3, "gain": 1 + RNG.standard_normal(24) * 0.1}
    nodes = [helper.make_node("Add", ["x", "pos"], ["a"]),
             helper.make_node("LayerNormalization", ["a", "gamma", "beta"], ["n"], axis=-1),
             helper.make_node("MatMul", ["n", "w"], ["m"]),
             helper.make_node("Sub", ["m", "shift"], ["s"]),
             helper.make_node("Mul", ["s", "gain"], ["y"])]
    graph = helper.make_graph(nodes, "added", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 24])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in consts.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "model.onnx")
    np.savez(d / "calib.npz", x=RNG.standard_normal((32, 1, 16, 32)).astype(np.float32))
    return d


CASES = [
    # (precision, {constant: bitwidth})
    ("w8a8", {"pos": 16, "beta": 16, "shift": 16, "gamma": 8, "w": 8, "gain": 8}),
    ("w4a8", {"pos": 16, "beta": 16, "shift": 16, "gamma": 8, "w": 4, "gain": 8}),
    ("w8a16", {"pos": 16, "beta": 16, "shift": 16, "gamma": 8, "w": 8, "gain": 8}),
    ("w16a16", {"pos": 16, "beta": 16, "shift": 16, "gamma": 16, "w": 16, "gain": 16}),
]


@pytest.mark.parametrize("precision,bits", CASES, ids=[c[0] for c in CASES])
def test_added_constants_take_16_bits(model_dir, precision, bits):
    out = model_dir / precision
    convert(model_dir / "model.onnx", out, precision=precision, calibration=model_dir / "calib.npz")
    params = json.loads((out / "model.encodings.json").read_text())["param_encodings"]
    found = {name: params[name][0]["bitwidth"] for name in bits if name in params}
    assert found == bits


def test_the_npu_runs_16_bit_added_constants_beside_8_bit_activations(model_dir):
    out = model_dir / "w8a8-npu"
    convert(model_dir / "model.onnx", out, precision="w8a8", calibration=model_dir / "calib.npz")
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
    step = json.loads((out / "model.encodings.json").read_text())["activation_encodings"]["y"][0]["scale"]
    x = RNG.standard_normal((1, 16, 32)).astype(np.float32)
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        assert np.abs(cpu.run({"x": x})["y"] - npu.run({"x": x})["y"]).max() <= 1.01 * step
