"""Fusion at finalize: on the cpu, a Conv, Gemm or MatMul feeding only a Relu or Clip runs as one
node. The outputs are the bytes of the unfused graph (keep_tensors turns fusion off), the
intermediate takes no arena bytes, and a context binary keeps the fused schedule."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from qnn_build.runtime.binding import Model, load_context


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    from qnn_build.convert import convert
    from qnn_build.toolchain import build_model_lib

    d = tmp_path_factory.mktemp("fuse")
    rng = np.random.default_rng(1)
    init = [helper.make_tensor("w", TensorProto.FLOAT, [8, 3, 3, 3], rng.standard_normal(216).astype(np.float32)),
            helper.make_tensor("b", TensorProto.FLOAT, [8], rng.standard_normal(8).astype(np.float32)),
            helper.make_tensor("g", TensorProto.FLOAT, [288, 5], rng.standard_normal(1440).astype(np.float32)),
            helper.make_tensor("m", TensorProto.FLOAT, [5, 4], rng.standard_normal(20).astype(np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "g"], ["h"]),
             helper.make_node("Clip", ["h", "lo", "hi"], ["k"]),
             helper.make_node("MatMul", ["k", "m"], ["y"])]
    init += [helper.make_tensor("lo", TensorProto.FLOAT, [], [-0.5]),
             helper.make_tensor("hi", TensorProto.FLOAT, [], [0.75])]
    graph = helper.make_graph(nodes, "fuse", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], init)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(d / "m.onnx"))
    convert(d / "m.onnx", d)
    return build_model_lib(d / "model.cpp", d / "model.bin", d / "libmodel.so")


def test_fused_outputs_are_the_unfused_bytes(lib):
    x = {"x": np.random.default_rng(2).standard_normal((1, 3, 6, 6)).astype(np.float32)}
    fused, unfused = Model(lib), Model(lib, keep_tensors=True)
    assert fused.run(x)["y"].tobytes() == unfused.run(x)["y"].tobytes()
    assert load_context(fused.context_binary()).run(x)["y"].tobytes() == unfused.run(x)["y"].tobytes()


def test_the_fused_intermediates_take_no_memory(lib):
    fused = Model(lib).memory_plan()["tensor_bytes"]
    unfused = Model(lib, keep_tensors=True).memory_plan()["tensor_bytes"]
    # c (8x6x6 floats, 1152 bytes) and h (5 floats, one 64-byte slot) are never written
    assert unfused - fused == 1152 + 64


def test_the_context_keeps_the_fused_schedule(lib):
    data = Model(lib).context_binary()
    assert b"fused_activation" in data
    assert load_context(data).memory_plan() == Model(lib).memory_plan()
