"""The three commands end to end, as a user runs them, and their bad-input behaviour: one clear
line, a non-zero exit, no traceback, nothing partial left behind."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from cli_util import one_error_line, qnn_build
from onnx import TensorProto, helper, numpy_helper


def small_model(dynamic=True) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), "b")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3] if dynamic else [2, 3])
    y = helper.make_tensor_value_info("y/out", TensorProto.FLOAT, ["batch", 4] if dynamic else [2, 4])
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1, name="fc"),
             helper.make_node("Relu", ["h"], ["y/out"], name="act")]
    graph = helper.make_graph(nodes, "small", [x], [y], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def add_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    node = helper.make_node("Add", ["x", "x"], ["y"], name="double")
    return helper.make_model(helper.make_graph([node], "add", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])


def test_worked_example(tmp_path):
    """convert -> model-lib -> net-run, outputs equal onnxruntime's."""
    onnx.save(add_model(), tmp_path / "model.onnx")
    r = qnn_build("convert", tmp_path / "model.onnx", "-o", tmp_path / "conv", "--input-dim", "x", "2,3")
    assert r.returncode == 0, r.stderr
    desc = json.loads((tmp_path / "conv" / "model.json").read_text())
    assert desc["inputs"] == [{"name": "x", "shape": [2, 3], "dtype": "float32", "layout": "as-model"}]
    r = qnn_build("model-lib", "--cpp", tmp_path / "conv/model.cpp", "--bin", tmp_path / "conv/model.bin",
                  "-o", tmp_path / "lib/libmodel.so")
    assert r.returncode == 0, r.stderr
    xs = [np.random.default_rng(k).standard_normal((2, 3)).astype(np.float32) for k in range(3)]
    lines = []
    for k, x in enumerate(xs):
        x.tofile(tmp_path / f"in{k}.raw")
        lines.append(f"x:=in{k}.raw" if k % 2 == 0 else f"in{k}.raw")  # bare path: single-input model
    (tmp_path / "list.txt").write_text("# comment\n" + "\n".join(lines) + "\n")
    r = qnn_build("net-run", "--backend", "cpu", "--model", tmp_path / "lib/libmodel.so", "--input-list", "list.txt",
                  "--output-dir", tmp_path / "res", "--profiling-level", "basic", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for k, x in enumerate(xs):
        out = np.fromfile(tmp_path / f"res/Result_{k}/y.raw", dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(out, x + x)
    profile = json.loads((tmp_path / "res/profile.json").read_text())
    assert set(profile) >= {"load_us", "compose_us", "finalize_us", "execute_us"}
    assert len(profile["execute_us"]) == 3 and all(v > 0 for v in profile["execute_us"])


def test_output_names_are_made_file_safe_and_match_onnxruntime(tmp_path):
    model = small_model()
    onnx.save(model, tmp_path / "m.onnx")
    assert qnn_build("convert", tmp_path / "m.onnx", "-o", tmp_path, "--input-dim", "x", "2,3").returncode == 0
    assert qnn_build("model-lib", "--cpp", tmp_path / "model.cpp", "--bin", tmp_path / "model.bin",
                     "-o", tmp_path).returncode == 0
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    x.tofile(tmp_path / "x.raw")
    (tmp_path / "list.txt").write_text(f"x:={tmp_path / 'x.raw'}\n")
    r = qnn_build("net-run", "--model", tmp_path / "libmodel.so", "--input-list", tmp_path / "list.txt",
                  "--output-dir", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    out = np.fromfile(tmp_path / "out/Result_0/y_out.raw", dtype=np.float32).reshape(2, 4)
    ref = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_config_file_supplies_options(tmp_path):
    onnx.save(small_model(), tmp_path / "m.onnx")
    (tmp_path / "convert.json").write_text(json.dumps({"source": str(tmp_path / "m.onnx"),
                                                       "output_dir": str(tmp_path / "o"),
                                                       "input_dims": {"x": [5, 3]}}))
    r = qnn_build("convert", "--config", tmp_path / "convert.json")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "o/model.json").read_text())["inputs"][0]["shape"] == [5, 3]


@pytest.fixture
def built(tmp_path):
    onnx.save(small_model(dynamic=False), tmp_path / "m.onnx")
    assert qnn_build("convert", tmp_path / "m.onnx", "-o", tmp_path).returncode == 0
    assert qnn_build("model-lib", "--cpp", tmp_path / "model.cpp", "--bin", tmp_path / "model.bin",
                     "-o", tmp_path / "libmodel.so").returncode == 0
    return tmp_path


def test_truncated_model(tmp_path):
    data = small_model().SerializeToString()
    (tmp_path / "m.onnx").write_bytes(data[: len(data) // 2])
    r = qnn_build("convert", tmp_path / "m.onnx", "-o", tmp_path / "o")
    one_error_line(r, "m.onnx", "not an ONNX model")
    assert not (tmp_path / "o").exists()


def test_not_onnx(tmp_path):
    (tmp_path / "m.onnx").write_text("hello, I am a text file\n")
    one_error_line(qnn_build("convert", tmp_path / "m.onnx", "-o", tmp_path / "o"), "not an ONNX model")
    assert not (tmp_path / "o").exists()


def test_unknown_op_names_node_and_op(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [])
    model = helper.make_model(helper.make_graph([helper.make_node("Det", ["x"], ["y"], name="the_det")], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    one_error_line(qnn_build("convert", tmp_path / "m.onnx", "-o", tmp_path / "o"), "the_det", "Det", "not supported")
    assert not (tmp_path / "o").exists()


def test_unpinned_dynamic_dim(tmp_path):
    onnx.save(small_model(), tmp_path / "m.onnx")
    one_error_line(qnn_build("convert", tmp_path / "m.onnx", "-o", tmp_path / "o"), "'x'", "--input-dim")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("op", ["NonZero", "NonMaxSuppression"])
def test_data_dependent_shape_names_the_op_and_out_node(tmp_path, op):
    """Static inputs, but an op whose output shape depends on the data: its own message, not --input-dim."""
    boxes = helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 6, 4])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 6])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, ["r", "n"])
    if op == "NonZero":
        nodes = [helper.make_node("Greater", ["scores", "zero"], ["keep"]), helper.make_node("NonZero", ["keep"], ["y"],
                                                                                               name="the_op")]
    else:
        nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou"], ["y"], name="the_op")]
    inits = [numpy_helper.from_array(np.array(0, np.float32), "zero"), numpy_helper.from_array(np.array([3]), "max"),
             numpy_helper.from_array(np.array([0.5], np.float32), "iou")]
    model = helper.make_model(helper.make_graph(nodes, "g", [boxes, scores], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    r = qnn_build("convert", tmp_path / "m.onnx", "-o", tmp_path / "o")
    one_error_line(r, "the_op", op, "depends on the input data", "--out-node")
    assert "--input-dim" not in r.stderr


def test_wrong_input_dim_rank(tmp_path):
    onnx.save(small_model(), tmp_path / "m.onnx")
    r = qnn_build("convert", tmp_path / "m.onnx", "-o", tmp_path / "o", "--input-dim", "x", "1,2,3")
    one_error_line(r, "--input-dim x", "rank 3", "rank 2")


def test_raw_file_of_wrong_size(built):
    np.zeros(5, np.float32).tofile(built / "x.raw")
    (built / "list.txt").write_text(f"x:={built / 'x.raw'}\n")
    r = qnn_build("net-run", "--model", built / "libmodel.so", "--input-list", built / "list.txt",
                  "--output-dir", built / "out")
    one_error_line(r, "x.raw", "20 bytes", "24")
    assert not (built / "out").exists()


def test_missing_input_in_list(built):
    np.zeros(6, np.float32).tofile(built / "x.raw")
    (built / "list.txt").write_text(f"x:={built / 'x.raw'}\n\nz:={built / 'x.raw'}\n")
    r = qnn_build("net-run", "--model", built / "libmodel.so", "--input-list", built / "list.txt",
                  "--output-dir", built / "out")
    one_error_line(r, "list.txt:3", "'z' is not an input")
    assert not (built / "out").exists()


def test_missing_model_library(tmp_path):
    (tmp_path / "list.txt").write_text("x.raw\n")
    r = qnn_build("net-run", "--model", tmp_path / "nope.so", "--input-list", tmp_path / "list.txt",
                  "--output-dir", tmp_path / "out")
    one_error_line(r, "nope.so", "not found")
