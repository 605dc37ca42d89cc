"""Tails: channel counts and sizes past a vector width, where a kernel's last partial block runs other
code than its body. Regression: light_squeezenet (issue 16) gave 1e-41 instead of 0.001 for its last
four outputs, because the GEMM under its 512 -> 1000 1x1 Conv rounded the last output channels one
ulp apart from the rest, and its softmax of logits near 7e9 turns one ulp (512) into a factor e^512.

Each row makes every output channel (or row, or window) see the same numbers, so the outputs must be
equal bit for bit, wherever they fall in a vector or a tile, and match onnxruntime.
"""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from onnx_backend import run_onnx

from .opcase import OpCase, check_op, make_model

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def equal_channels(count, per_channel_shape):
    """A weight whose `count` output channels are one random channel repeated."""
    w = r(1, *per_channel_shape)
    return np.repeat(w, count, axis=0)


# (case, axis along which every slice of the output must be identical)
CASES = [
    (OpCase("Conv", {"x": r(1, 512, 13, 13)}, consts={"w": equal_channels(1000, (512, 1, 1)),
                                                      "b": np.full(1000, 0.5, np.float32)},
            id="conv1x1_1000_channels"), 1),
    (OpCase("Conv", {"x": r(1, 24, 9, 11)}, consts={"w": equal_channels(17, (24, 3, 3))},
            attrs={"pads": [1, 1, 1, 1]}, id="conv3x3_17_channels"), 1),
    (OpCase("Conv", {"x": r(1, 3, 15, 15)}, consts={"w": equal_channels(33, (3, 3, 3))},
            attrs={"strides": [2, 2]}, id="conv3x3_s2_33_channels"), 1),
    (OpCase("Conv", {"x": np.repeat(r(1, 7, 8, 8), 13, axis=0)}, consts={"w": r(19, 7, 1, 1)},
            id="conv1x1_13_equal_samples"), 0),
    (OpCase("Gemm", {"a": np.repeat(r(1, 70), 37, axis=0)}, consts={"b": r(70, 29), "c": r(29)},
            id="gemm_37_equal_rows"), 0),
    (OpCase("MatMul", {"a": np.repeat(r(1, 1, 33), 3, axis=0).repeat(21, axis=1)}, consts={"b": r(33, 45)},
            id="matmul_batched_equal_rows"), 1),
    (OpCase("GlobalAveragePool", {"x": np.repeat(r(1, 1, 13, 13), 1000, axis=1) * 4e8}, id="gap_1000x13x13"), 1),
    (OpCase("GlobalMaxPool", {"x": np.repeat(r(1, 1, 17, 3), 21, axis=1)}, id="gmp_21x17x3"), 1),
    (OpCase("AveragePool", {"x": np.repeat(r(1, 1, 19, 19), 18, axis=1)},
            attrs={"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, id="avgpool_ceil_18_channels"), 1),
    (OpCase("MaxPool", {"x": np.repeat(r(1, 1, 23, 17), 35, axis=1)},
            attrs={"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, id="maxpool_ceil_35_channels"), 1),
    (OpCase("Softmax", {"x": np.full((3, 1001), 6.7690895e9, np.float32)}, attrs={"axis": 1}, id="softmax_1001_equal"),
     1),
    (OpCase("Softmax", {"x": np.repeat(r(2, 1, 5), 1000, axis=1) * 1e3}, attrs={"axis": 2},
            id="softmax_strided_1000_rows"), 1),
]


@pytest.mark.parametrize("case,axis", CASES, ids=[str(c) for c, _ in CASES])
def test_equal_inputs_give_equal_outputs(case, axis):
    got = run_onnx(make_model(case), case.inputs)["y0"]
    first = np.take(got, [0], axis=axis)
    assert (got == first).all(), f"{case}: slices along axis {axis} differ (max {np.abs(got - first).max():.3g})"
    check_op(case)


def test_light_squeezenet_tail():
    """Its last four ops, as the model has them: Conv 512 -> 1000 (1x1) + Relu, GlobalAveragePool,
    Softmax, with equal channels and logits near 7e9: every output is 0.001."""
    w = np.full((1000, 512, 1, 1), 1.0, np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]), helper.make_node("Softmax", ["g"], ["y"])]
    graph = helper.make_graph(nodes, "tail", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 512, 13, 13])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 1000, 1, 1])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.zeros(1000, np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 7
    x = (np.abs(r(1, 512, 13, 13)) * 2.6e7).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = run_onnx(model, {"x": x})["y"]
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert (got == got.flat[0]).all()
