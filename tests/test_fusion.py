"""Activations fused into their producer at finalize on the cpu (core/fuse.cpp): Relu, Clip,
Sigmoid, HardSigmoid, HardSwish, and SiLU (a Sigmoid whose output a Mul multiplies by its input).
The fused schedule has one node where the graph had two or three, gives the bytes of the unfused
graph (keep_tensors turns fusion off), on the AVX-512 paths and the x86-64-v3 baseline alike
(QNNB_ISA), and matches onnxruntime; a pattern whose intermediate is read elsewhere is left alone."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

RNG = np.random.default_rng(0)
W = RNG.standard_normal((8, 4, 3, 3)).astype(np.float32)
B = RNG.standard_normal(8).astype(np.float32)
X = (3 * RNG.standard_normal((1, 4, 9, 20))).astype(np.float32)  # wide enough for vector tails


def conv_then(tail, extra_outputs=(), x=X, w=W, y_shape=(1, 8, 9, 20), **attrs):
    """Conv(x) -> c, then `tail` nodes reading c and ending in y."""
    attrs = attrs or {"pads": [1, 1, 1, 1]}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", **attrs)]
    nodes += tail
    outs = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, list(y_shape)) for o in ("y", *extra_outputs)]
    b = B[:w.shape[0]]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)], outs,
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = [
    ("Relu", [helper.make_node("Relu", ["c"], ["y"])], "Relu"),
    ("Clip", [helper.make_node("Clip", ["c", "lo", "hi"], ["y"])], "Clip"),
    ("Sigmoid", [helper.make_node("Sigmoid", ["c"], ["y"])], "Sigmoid"),
    ("HardSigmoid", [helper.make_node("HardSigmoid", ["c"], ["y"], alpha=0.25, beta=0.4)], "HardSigmoid"),
    ("HardSwish", [helper.make_node("HardSwish", ["c"], ["y"])], "HardSwish"),
    ("SiLU", [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])], "SiLU"),
    ("SiLU swapped", [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["s", "c"], ["y"])], "SiLU"),
]


def build(model, tmp_path):
    if any(n.op_type == "Clip" for n in model.graph.node):
        model.graph.initializer.extend([numpy_helper.from_array(np.array(-1.5, np.float32), "lo"),
                                        numpy_helper.from_array(np.array(2.0, np.float32), "hi")])
    onnx.save(model, tmp_path / "m.onnx")
    convert(tmp_path / "m.onnx", tmp_path)
    return build_model_lib(tmp_path / "model.cpp", tmp_path / "model.bin", tmp_path / "libmodel.so"), model


@pytest.mark.parametrize("name,tail,fused", CASES, ids=[c[0] for c in CASES])
def test_fused_activation_gives_the_unfused_bytes(tmp_path, monkeypatch, name, tail, fused):
    lib, model = build(conv_then(tail), tmp_path)
    fast, plain = Model(lib), Model(lib, keep_tensors=True)
    assert [(n.op, n.fused) for n in fast.nodes()] == [("Conv", fused)]
    assert len(plain.nodes()) == 1 + len(tail)
    y, y_plain = fast.run({"x": X})["y"], plain.run({"x": X})["y"]
    assert y.tobytes() == y_plain.tobytes()
    monkeypatch.setenv("QNNB_ISA", "x86-64-v3")  # the baseline tiles and epilogue
    assert Model(lib).run({"x": X})["y"].tobytes() == y.tobytes()
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_silu_whose_sigmoid_is_also_an_output_is_not_fused(tmp_path):
    tail = [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
    lib, _ = build(conv_then(tail, extra_outputs=("s",)), tmp_path)
    assert [(n.op, n.fused) for n in Model(lib).nodes()] == [("Conv", ""), ("Sigmoid", ""), ("Mul", "")]


SILU = [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
# The conv paths that apply the activation in their epilogue, and depthwise, which leaves it to the graph.
PATHS = [
    ("pointwise", dict(x=X, w=W[:, :, :1, :1], y_shape=(1, 8, 9, 20), kernel_shape=[1, 1])),
    ("direct_s2", dict(x=X, w=W, y_shape=(1, 8, 5, 10), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("direct_rows_are_output", dict(x=X, w=W[:, :, :, :1], y_shape=(1, 8, 7, 20), kernel_shape=[3, 1])),
    ("im2col_few_positions", dict(x=X[:, :, :3, :4], w=W, y_shape=(1, 8, 1, 2), kernel_shape=[3, 3])),
    ("depthwise", dict(x=X, w=W[:4, :1], y_shape=(1, 4, 9, 20), kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=4)),
]


@pytest.mark.parametrize("name,kw", PATHS, ids=[p[0] for p in PATHS])
def test_silu_fused_on_every_conv_path_gives_the_unfused_bytes(tmp_path, monkeypatch, name, kw):
    x = kw["x"]
    lib, model = build(conv_then(SILU, **kw), tmp_path)
    fast, plain = Model(lib), Model(lib, keep_tensors=True)
    assert [(n.op, n.fused) for n in fast.nodes()] == [("Conv", "SiLU")]
    y, y_plain = fast.run({"x": x})["y"], plain.run({"x": x})["y"]
    assert y.tobytes() == y_plain.tobytes()
    monkeypatch.setenv("QNNB_ISA", "x86-64-v3")  # the baseline tiles and epilogue
    assert Model(lib).run({"x": x})["y"].tobytes() == y.tobytes()
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
