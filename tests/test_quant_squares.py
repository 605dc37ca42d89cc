"""act_range auto's squares at 16 bits (docs/quantization.md (21c)): a magnitude sqrt(re² + im²) over
a spectrum that spans orders of magnitude, as silero VAD's STFT computes it. At 8 bits the power's
step, set by the largest bin, rounds the small bins' squares to zero; auto finds that 16 bits on
the squares and their sum pay, keeps them, and says so."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from qnn_build.convert import build_graph, convert
from qnn_build.quant import QuantOptions
from qnn_build.quant.range_search import SQUARE_BITS, square_tensors
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

BINS = 64
AUTO = QuantOptions(act_range="auto", weight_rounding="auto")


def spectrum(count, seed):
    rng = np.random.default_rng(seed)
    amplitude = np.exp(rng.normal(0.0, 1.0, (count, 1, BINS)))
    phase = rng.uniform(0.0, 2 * np.pi, (count, 1, BINS))
    return {"re": (amplitude * np.cos(phase)).astype(np.float32), "im": (amplitude * np.sin(phase)).astype(np.float32)}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("squares")
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    nodes = [helper.make_node("Pow", ["re", "two"], ["re2"]), helper.make_node("Mul", ["im", "im"], ["im2"]),
             helper.make_node("Add", ["re2", "im2"], ["power"]), helper.make_node("Sqrt", ["power"], ["magnitude"])]
    graph = helper.make_graph(nodes, "magnitude",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, BINS]) for n in ("re", "im")],
                              [helper.make_tensor_value_info("magnitude", TensorProto.FLOAT, [1, BINS])], [two])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "model.onnx")
    np.savez(d / "calib.npz", **spectrum(32, seed=0))
    for name, options in (("auto", AUTO), ("minmax", QuantOptions(act_range="minmax", weight_rounding="nearest"))):
        convert(d / "model.onnx", d / name, precision="w8a8", calibration=d / "calib.npz", options=options)
    return d


def sqnr(folder) -> float:
    test = spectrum(64, seed=1)
    ref = np.sqrt(test["re"].astype(np.float64) ** 2 + test["im"].astype(np.float64) ** 2)
    with Model(build_model_lib(folder / "model.cpp", folder / "model.bin", folder / "libmodel.so")) as model:
        out = np.stack([model.run({"re": test["re"][i], "im": test["im"][i]})["magnitude"] for i in range(len(ref))])
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum((out - ref) ** 2)))


def test_the_squares_and_their_sum_are_found(work):
    assert square_tensors(build_graph(work / "model.onnx")) == ["re2", "im2", "power"]


def test_auto_gives_the_squares_16_bits_and_gains(work):
    doc = json.loads((work / "auto" / "model.encodings.json").read_text())
    assert doc["quantization"]["act_range"].endswith(f"squares at {SQUARE_BITS} bits")
    bits = {name: e[0]["bitwidth"] for name, e in doc["activation_encodings"].items()}
    assert bits == {"re": 8, "im": 8, "re2": 16, "im2": 16, "power": 16, "magnitude": 8}
    auto, minmax = sqnr(work / "auto"), sqnr(work / "minmax")
    print(f"magnitude: auto {auto:.2f} dB, minmax {minmax:.2f} dB")
    assert auto > minmax + 1.5
