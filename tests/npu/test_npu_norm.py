"""The npu's Softmax, LogSoftmax, LayerNormalization and InstanceNormalization kernels (docs/npu.md
(N27)-(N29)) against the NumPy golden model (tests/npu/golden_norm.py), exactly (0 LSB), on
randomized one-op graphs; and the same graphs on the cpu float simulation within one output step."""

import numpy as np
import pytest
from onnx import helper

from . import golden
from . import golden_norm as gm
from .harness import ALL_PRECISIONS, F, check, enc_of, make_model, node_of, q_in, quantized, uniform


# ---- (N27) / (N28) Softmax, LogSoftmax ---------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis,shape,opset", [(-1, [3, 10], 17), (1, [2, 5, 3], 17), (1, [2, 3, 4], 11),
                                              (-1, [2, 300], 17)])
def test_softmax(tmp_path, op, axis, shape, opset, precision):
    rng = np.random.default_rng(len(shape) + opset)
    node = helper.make_node(op, ["x"], ["y"], axis=axis)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], opset=opset)
    y_range = (0.0, 1.0) if op == "Softmax" else (-12.0, 0.0)
    graph = quantized(path, precision, {"x": (-6.0, 5.0), "y": y_range})
    feeds = {"x": uniform(rng, shape, -6, 5)}
    q = q_in(graph, feeds, "x")
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    if opset < 13:  # coerced to 2-D at the axis
        flat = q.reshape(int(np.prod(shape[:axis])), -1)
        expected = gm.softmax(flat, ex, ey, -1, log=op == "LogSoftmax").reshape(shape)
    else:
        expected = gm.softmax(q, ex, ey, axis, log=op == "LogSoftmax")
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}{opset}{len(shape)}{shape[-1]}")


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape,x_range,feed_range", [
    ([6, 70], (-6.0, 5.0), (-1.5, 0.5)),       # fewer distinct codes than codes: the table of a row
    ([2, 3, 257], (-40.0, 40.0), (-40, 40)),   # attention's rows; steep exp: most d give the floor
    ([3, 9], (-40.0, 40.0), (-2, 2)),          # a short row of few codes
])
def test_softmax_rows_by_table(tmp_path, op, shape, x_range, feed_range):
    """w8a8 rows whose outputs are looked up per code difference (norm.cpp softmax_row), exactly."""
    rng = np.random.default_rng(shape[-1])
    node = helper.make_node(op, ["x"], ["y"], axis=-1)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"])
    graph = quantized(path, "w8a8", {"x": x_range, "y": (0.0, 1.0) if op == "Softmax" else (-12.0, 0.0)})
    feeds = {"x": uniform(rng, shape, *feed_range)}
    expected = gm.softmax(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), -1, log=op == "LogSoftmax")
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}table{shape[-1]}")


# ---- (N29) LayerNormalization, InstanceNormalization -------------------------------------------

@pytest.mark.parametrize("precision", ALL_PRECISIONS)
@pytest.mark.parametrize("bias,axis", [(True, -1), (False, -1), (True, 1)])
def test_layer_norm(tmp_path, precision, bias, axis):
    rng = np.random.default_rng(int(bias) + axis + 5)
    shape = [3, 4, 16]
    norm_shape = shape[axis:]
    gamma = rng.uniform(0.5, 1.5, norm_shape).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, norm_shape).astype(np.float32)
    inputs = ["x", "gamma"] + (["beta"] if bias else [])
    consts = [("gamma", gamma)] + ([("beta", beta)] if bias else [])
    node = helper.make_node("LayerNormalization", inputs, ["y"], axis=axis, epsilon=1e-5)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], consts)
    graph = quantized(path, precision, {"x": (-3.0, 5.0), "y": (-3.0, 3.0)})
    x = uniform(rng, shape, -3, 5)
    x[0, 0] = 1.0  # a constant row: the variance is epsilon alone
    feeds = {"x": x}
    node = node_of(graph, "LayerNormalization")
    g, b = graph.tensor(node.inputs[1]), graph.tensor(node.inputs[2]) if bias else None
    expected = gm.layer_norm(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), g,
                             golden.onnx_attrs(node), b)
    check(tmp_path, graph, feeds, {"y": expected}, f"ln{precision}{bias}{axis}")


@pytest.mark.parametrize("isa", ["", "x86-64-v3"])
@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_layer_norm_vector_tails(tmp_path, monkeypatch, precision, isa):
    """Rows of 43 codes (whole vectors of 8 and a tail) on the AVX-512 loop and on the baseline one."""
    if isa:
        monkeypatch.setenv("QNNB_ISA", isa)
    rng = np.random.default_rng(43)
    shape = [2, 5, 43]
    gamma = rng.uniform(-1.5, 1.5, shape[-1:]).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, shape[-1:]).astype(np.float32)
    node = helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-5)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], [("gamma", gamma), ("beta", beta)])
    graph = quantized(path, precision, {"x": (-3.0, 5.0), "y": (-2.5, 2.5)})
    feeds = {"x": uniform(rng, shape, -3, 5)}
    node = node_of(graph, "LayerNormalization")
    expected = gm.layer_norm(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"),
                             graph.tensor(node.inputs[1]), golden.onnx_attrs(node), graph.tensor(node.inputs[2]))
    check(tmp_path, graph, feeds, {"y": expected}, f"lntail{precision}{isa}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
def test_instance_norm(tmp_path, precision):
    rng = np.random.default_rng(21)
    shape = [2, 3, 5, 4]
    gamma = rng.uniform(0.5, 1.5, [3]).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, [3]).astype(np.float32)
    node = helper.make_node("InstanceNormalization", ["x", "gamma", "beta"], ["y"], epsilon=1e-5)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], [("gamma", gamma), ("beta", beta)])
    graph = quantized(path, precision, {"x": (-3.0, 5.0), "y": (-3.0, 3.0)})
    feeds = {"x": uniform(rng, shape, -3, 5)}
    expected = gm.instance_norm(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), graph.tensor("gamma"),
                                graph.tensor("beta"), golden.onnx_attrs(node_of(graph, "InstanceNormalization")))
    check(tmp_path, graph, feeds, {"y": expected}, f"in{precision}")
