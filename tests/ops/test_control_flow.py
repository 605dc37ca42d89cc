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


# Loop (ir/control_flow.py): unrolled when its iterations can be counted at convert time, or, when
# its condition is data, unrolled up to its trip count with the state frozen once the condition fails.

def loop_model(trip_count, counted: bool, scan: bool = False) -> onnx.ModelProto:
    """A loop over the state s (starts as x): s = s * 0.5 + x, n = n + 1, scanning s + 1 if asked.
    counted: the condition is a counter test (n + 1 < 4, the int64 counter carried as exporters
    write `for i in range(4)`); else it is data (sum(s) < 40: the number of iterations depends on
    x, and so does n, which the runtime's integer Add computes)."""
    f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)  # noqa: E731
    i64 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.INT64, s)  # noqa: E731
    b = lambda n: helper.make_tensor_value_info(n, TensorProto.BOOL, [])  # noqa: E731
    body_nodes = [helper.make_node("Mul", ["s_in", "half"], ["scaled"]),
                  helper.make_node("Add", ["scaled", "x"], ["s_out"]),
                  helper.make_node("Add", ["n_in", "one_i"], ["n_out"])]
    if counted:
        body_nodes.append(helper.make_node("Less", ["n_out", "four"], ["cond_out"]))
    else:
        body_nodes += [helper.make_node("ReduceSum", ["s_out"], ["total"], keepdims=0),
                       helper.make_node("Less", ["total", "forty"], ["cond_out"])]
    outputs = [b("cond_out"), f("s_out", [2, 3]), i64("n_out", [])]
    if scan:
        body_nodes.append(helper.make_node("Add", ["s_out", "one"], ["scanned"]))
        outputs.append(f("scanned", [2, 3]))
    iteration = helper.make_tensor_value_info("i", TensorProto.INT64, [])
    body = helper.make_graph(body_nodes, "body", [iteration, b("cond_in"), f("s_in", [2, 3]), i64("n_in", [])],
                             outputs)
    loop_outputs = ["s", "n"] + (["ys"] if scan else [])
    nodes = [helper.make_node("Loop", ["trips" if trip_count is not None else "", "go", "x", "zero_i"],
                              loop_outputs, name="steps", body=body)]
    consts = {"half": np.float32(0.5), "one": np.float32(1), "forty": np.float32(40), "one_i": np.int64(1),
              "four": np.int64(4), "zero_i": np.int64(0), "go": np.array(True)}
    if trip_count is not None:
        consts["trips"] = np.int64(trip_count)
    graph = helper.make_graph(nodes, "loop", [f("x", [2, 3])], [f("s", [2, 3]), i64("n", [])] + (
        [f("ys", ["trips", 2, 3])] if scan else []), [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def check_loop_against_onnxruntime(model, x):
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = run_onnx(model, {"x": x})
    for out, exp in zip([o.name for o in model.graph.output], expected):
        assert got[out].shape == exp.shape, out
        np.testing.assert_allclose(got[out], exp, rtol=1e-6, err_msg=out)
    return expected


@pytest.mark.parametrize("trip_count", [np.iinfo(np.int64).max, None], ids=["huge_trip_count", "no_trip_count"])
def test_loop_counted_by_its_condition_is_unrolled_with_its_scan_outputs(trip_count):
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    expected = check_loop_against_onnxruntime(loop_model(trip_count, counted=True, scan=True), x)
    assert expected[1] == 4 and expected[2].shape == (4, 2, 3)


@pytest.mark.parametrize("scale,iterations", [(1.0, 6), (4.0, 2), (100.0, 1)])
def test_loop_on_data_stops_where_onnxruntime_stops(scale, iterations):
    """Up to 6 iterations; how many run depends on x: the state is kept only while sum(s) < 40."""
    x = np.full((2, 3), scale, np.float32)
    expected = check_loop_against_onnxruntime(loop_model(6, counted=False), x)
    assert expected[1] == iterations


def test_loop_on_data_without_trip_count_is_refused():
    with pytest.raises(ConvertError, match=r"node 'steps' \(Loop\): its condition depends on the data and it has "
                                           r"no trip count.*--input-value"):
        run_onnx(loop_model(None, counted=False), {"x": np.ones((2, 3), np.float32)})


def test_loop_on_data_with_scan_outputs_is_refused():
    with pytest.raises(ConvertError, match=r"node 'steps' \(Loop\): its condition depends on the data, so its scan "
                                           r"output 'ys' would have a length that depends on the data"):
        run_onnx(loop_model(6, counted=False, scan=True), {"x": np.ones((2, 3), np.float32)})
