"""If whose condition is data (ir/fold.py): both branches are computed and each output selected with
Where, so the model converts and matches onnxruntime whichever way the condition goes; branches whose
outputs differ in shape are refused with the node's name and what to pin."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_backend import run_onnx
from qnn_build.errors import ConvertError


def branch(name, nodes, outputs):
    return helper.make_graph(nodes, name, [], outputs)


def if_model(else_shape=(2, 3)) -> onnx.ModelProto:
    """y = x * 2 + b if sum(x) > 0 else x - 1 (b an outer-scope constant); z = an int64 count each way;
    inside the then branch, a nested If on the same condition."""
    f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)  # noqa: E731
    nested = helper.make_node("If", ["positive"], ["inner"], then_branch=branch("t2", [
        helper.make_node("Mul", ["x", "two"], ["t2_out"])], [f("t2_out", [2, 3])]), else_branch=branch("e2", [
            helper.make_node("Identity", ["x"], ["e2_out"])], [f("e2_out", [2, 3])]))
    then_b = branch("then", [nested, helper.make_node("Add", ["inner", "b"], ["t_y"]),
                             helper.make_node("Constant", [], ["t_z"], value=numpy_helper.from_array(np.array([7])))],
                    [f("t_y", [2, 3]), helper.make_tensor_value_info("t_z", TensorProto.INT64, [1])])
    else_nodes = [helper.make_node("Sub", ["x", "one"], ["e_full"])]
    if else_shape != (2, 3):
        else_nodes.append(helper.make_node("ReduceSum", ["e_full"], ["e_y"], keepdims=0))
    else:
        else_nodes.append(helper.make_node("Identity", ["e_full"], ["e_y"]))
    else_nodes.append(helper.make_node("Constant", [], ["e_z"], value=numpy_helper.from_array(np.array([-3]))))
    else_b = branch("else", else_nodes, [f("e_y", list(else_shape)),
                                         helper.make_tensor_value_info("e_z", TensorProto.INT64, [1])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["positive"]),
             helper.make_node("If", ["positive"], ["y", "z"], name="choose", then_branch=then_b, else_branch=else_b)]
    inits = [numpy_helper.from_array(v, k) for k, v in {
        "zero": np.float32(0), "one": np.float32(1), "two": np.float32(2),
        "b": np.arange(3, dtype=np.float32)}.items()]
    graph = helper.make_graph(nodes, "if", [f("x", [2, 3])], [f("y", [2, 3]), helper.make_tensor_value_info(
        "z", TensorProto.INT64, [1])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["then", "else"])
def test_if_on_data_matches_onnxruntime_both_ways(sign):
    model = if_model()
    x = (np.abs(np.random.default_rng(0).standard_normal((2, 3))) * sign).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = run_onnx(model, {"x": x})
    np.testing.assert_allclose(got["y"], expected[0], rtol=1e-6)
    np.testing.assert_array_equal(got["z"], expected[1])


def test_if_whose_branches_differ_in_shape_is_refused():
    with pytest.raises(ConvertError, match=r"node 'choose' \(If\): its condition depends on the data.*--input-value"):
        run_onnx(if_model(else_shape=()), {"x": np.ones((2, 3), np.float32)})
