"""Kernels stage their working data (a padded copy of the input, im2col columns, accumulators) in
one scratch region that every node shares (graph.h, `take_scratch`): a node must not rely on what
an earlier node, or its own earlier run, left there. A chain of padded Conv, depthwise Conv,
ConvTranspose and Gemm, run on several inputs in one model: on the npu its fast paths give the
reference loops' bytes (QNNB_NPU_REFERENCE=1 stages nothing), on the cpu onnxruntime's outputs.
The graph's scratch is the largest node's, not the sum: one more node like an existing one adds
nothing."""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib


def chain_model(path, seed, depthwise_twice=False):
    rng = np.random.default_rng(seed)

    def weight(name, shape):
        return numpy_helper.from_array(rng.normal(0, 0.5, shape).astype(np.float32), name)

    # x [1, 3, 9, 12] -> c1 [8, 9, 12] -> c2 [8, 11, 12] (-> c2b, the same) -> c3 [6, 22, 24] -> c4 [5, 11, 12] -> y
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], group=8, pads=[2, 1, 2, 1], kernel_shape=[3, 3]),
        helper.make_node("ConvTranspose", ["c2b" if depthwise_twice else "c2", "w3"], ["c3"], strides=[2, 2],
                         kernel_shape=[2, 2]),
        helper.make_node("Conv", ["c3", "w4"], ["c4"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Flatten", ["c4"], ["f"]),
        helper.make_node("Gemm", ["f", "w5"], ["y"], transB=1),
    ]
    inits = [weight("w1", [8, 3, 3, 3]), weight("b1", [8]), weight("w2", [8, 1, 3, 3]), weight("w3", [8, 6, 2, 2]),
             weight("w4", [5, 6, 3, 3]), weight("w5", [10, 5 * 11 * 12])]
    if depthwise_twice:
        nodes.insert(3, helper.make_node("Conv", ["c2", "w2b"], ["c2b"], group=8, pads=[1, 1, 1, 1],
                                         kernel_shape=[3, 3]))
        inits.append(weight("w2b", [8, 1, 3, 3]))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def build(tmp_path, name, feeds, precision="w8a8", **kwargs):
    chain_model(tmp_path / f"{name}.onnx", seed=7, **kwargs)
    np.savez(tmp_path / "calibration.npz", x=np.stack([f["x"] for f in feeds]))
    calibration = tmp_path / "calibration.npz" if precision != "fp32" else None
    convert(tmp_path / f"{name}.onnx", tmp_path / name, {"x": [1, 3, 9, 12]}, {}, precision=precision,
            calibration=calibration)
    return build_model_lib(tmp_path / name / "model.cpp", tmp_path / name / "model.bin", tmp_path / f"lib{name}.so")


def inputs(count=3):
    rng = np.random.default_rng(3)
    # Shifted inputs, so zero points differ from node to node and the data from one run to the next.
    return [{"x": rng.uniform(-1 + i, 2 + i, [1, 3, 9, 12]).astype(np.float32)} for i in range(count)]


def test_npu_fast_paths_share_one_scratch_and_keep_the_reference_bytes(tmp_path, monkeypatch):
    feeds = inputs()
    lib = build(tmp_path, "chain", feeds)

    with Model(lib, backend="npu") as fast:
        got = [fast.run(f)["y"] for f in feeds + feeds[::-1]]
        plan = fast.memory_plan()
    monkeypatch.setenv("QNNB_NPU_REFERENCE", "1")
    with Model(lib, backend="npu") as reference:
        expected = [reference.run(f)["y"] for f in feeds + feeds[::-1]]
        assert reference.memory_plan()["scratch_bytes"] == 0, "the reference loops stage nothing"
    for i, (a, b) in enumerate(zip(got, expected)):
        assert a.tobytes() == b.tobytes(), f"run {i}: the fast paths differ from the reference loops"
    assert len({a.tobytes() for a in got[:3]}) == 3, "the inputs must give different outputs"

    monkeypatch.delenv("QNNB_NPU_REFERENCE")
    assert plan["scratch_bytes"] > 0
    with Model(build(tmp_path, "twice", feeds, depthwise_twice=True), backend="npu") as twice:
        assert twice.memory_plan()["scratch_bytes"] == plan["scratch_bytes"]


def test_cpu_kernels_share_one_scratch_and_match_onnxruntime(tmp_path):
    feeds = inputs()
    lib = build(tmp_path, "chain", feeds, precision="fp32")
    session = ort.InferenceSession(str(tmp_path / "chain.onnx"), providers=["CPUExecutionProvider"])
    with Model(lib, backend="cpu") as model:
        for f in feeds + feeds[::-1]:
            np.testing.assert_allclose(model.run(f)["y"], session.run(None, f)[0], rtol=1e-4, atol=1e-4)
        scratch = model.memory_plan()["scratch_bytes"]
    assert scratch > 0
    with Model(build(tmp_path, "twice", feeds, precision="fp32", depthwise_twice=True), backend="cpu") as twice:
        assert twice.memory_plan()["scratch_bytes"] == scratch
