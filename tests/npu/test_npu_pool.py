"""The npu's pooling and reduction kernels (docs/npu.md (N24)-(N26)) against the NumPy golden model
(tests/npu/golden_pool.py), exactly (0 LSB), on randomized one-op graphs; and the same graphs on the
cpu float simulation within one output step."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from . import golden
from . import golden_pool as gm
from .harness import F, build_lib, check, enc_of, make_model, node_of, q_in, quantized, run, uniform


# ---- (N24) / (N25) pooling ---------------------------------------------------------------------

POOLS = [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 3], "strides": [1, 2], "pads": [0, 1, 1, 0], "dilations": [2, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    {"kernel_shape": [4], "strides": [3], "pads": [2, 1]},
    {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0]},
    {"kernel_shape": [5, 4], "strides": [1, 1], "pads": [2, 1, 2, 2]},  # MaxPool: > 16 taps, separable passes
]


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("window", range(len(POOLS)))
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "AveragePoolInclPad"])
def test_pools(tmp_path, op, window, precision):
    rng = np.random.default_rng(window)
    attrs = dict(POOLS[window])
    onnx_op = op
    if op == "AveragePoolInclPad":
        onnx_op, attrs["count_include_pad"] = "AveragePool", 1
    if onnx_op == "AveragePool" and "dilations" in attrs:
        attrs.pop("dilations")  # AveragePool has dilations only from opset 19
    shape = [2, 3, 7, 8] if len(attrs["kernel_shape"]) == 2 else [2, 3, 9]
    node = helper.make_node(onnx_op, ["x"], ["y"], **attrs)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"])
    pins = {"y": (-1.0, 2.0)} if onnx_op == "MaxPool" and window % 2 else None
    graph = quantized(path, precision, {"x": (-2.0, 2.5), "y": (-1.5, 2.0)}, pins=pins)
    feeds = {"x": uniform(rng, shape, -2.2, 2.7)}
    lowered = node_of(graph, onnx_op)
    fn = gm.max_pool if onnx_op == "MaxPool" else gm.average_pool
    expected = fn(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), graph.tensor("y").shape,
                  golden.onnx_attrs(lowered))
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{window}{precision}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["GlobalMaxPool", "GlobalAveragePool"])
def test_global_pools(tmp_path, op, precision):
    rng = np.random.default_rng(len(op))
    node = helper.make_node(op, ["x"], ["y"])
    path = make_model(tmp_path, [node], [("x", F, [2, 4, 5, 6])], ["y"])
    graph = quantized(path, precision, {"x": (-2.0, 2.5), "y": (-0.5, 1.0)}, pins={"y": (-0.5, 1.5)})
    feeds = {"x": uniform(rng, [2, 4, 5, 6], -2.2, 2.7)}
    expected = gm.global_pool(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"),
                              "max" if op == "GlobalMaxPool" else "avg")
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}")


# ---- (N24)-(N26) reductions --------------------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("axes,keep", [([1], 1), ([0, 2], 0), ([-1], 1), (None, 0)])
def test_reductions(tmp_path, op, axes, keep, precision):
    rng = np.random.default_rng(len(op) + keep)
    shape = [2, 3, 5]
    inputs, consts = ["x"], []
    if axes is not None:
        inputs.append("axes")
        consts.append(("axes", np.array(axes, np.int64)))
    node = helper.make_node(op, inputs, ["y"], keepdims=keep)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], consts, opset=18)
    y_range = (-6.0, 8.0) if op == "ReduceSum" else (-1.5, 2.0)
    graph = quantized(path, precision, {"x": (-2.0, 2.5), "y": y_range})
    feeds = {"x": uniform(rng, shape, -2.2, 2.7)}
    lowered = node_of(graph, op)
    expected = gm.reduce(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), op, lowered.attrs["axes"])
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}{keep}{len(axes or [])}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,last", [(1, 0), (2, 1), (0, 0)])
def test_arg(tmp_path, op, axis, last, precision):
    rng = np.random.default_rng(axis)
    shape = [3, 6, 4]
    node = helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=1, select_last_index=last)
    path = make_model(tmp_path, [node], [("x", F, shape)], [("y", TensorProto.INT64)])
    graph = quantized(path, precision, {"x": (-2.0, 2.5)})
    x = np.round(uniform(rng, shape, -2, 2.5) * 2) / 2  # ties in codes
    feeds = {"x": x}
    expected = gm.arg(q_in(graph, feeds, "x"), axis, last, op == "ArgMax")
    lib = build_lib(graph, tmp_path, f"{op}{axis}{precision}")
    for t in (1, 3):
        _, outs = run(lib, feeds, threads=t)
        np.testing.assert_array_equal(outs["y"].reshape(expected.shape), expected)
    _, cpu = run(lib, feeds, backend="cpu")
    np.testing.assert_array_equal(cpu["y"].reshape(expected.shape), expected)
