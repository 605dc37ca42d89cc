"""Bad quantization input through the command line: each case exits non-zero with one line naming
the file and the input or tensor, and leaves a previous conversion in the output folder untouched."""

import json

import numpy as np
import onnx
import pytest
from cli_util import one_error_line, qnn_build
from onnx import TensorProto, helper, numpy_helper


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("badquant")
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.5).astype(np.float32)
    wf = (rng.standard_normal((512, 5)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Flatten", ["r1"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "wf"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(wf, "wf")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "m.onnx")
    calib = rng.standard_normal((8, 1, 3, 8, 8)).astype(np.float32)
    np.savez(d / "good.npz", x=calib)
    np.savez(d / "empty.npz", x=calib[:0])
    np.savez(d / "shape.npz", x=calib[:, :, :, :7])  # 8 x 168 values: as many as 7 samples, yet none
    np.savez(d / "other.npz", y=calib)
    for name, value in (("nan", np.nan), ("inf", np.inf)):
        bad = calib.copy()
        bad[3, 0, 1, 2, 2] = value
        np.savez(d / f"{name}.npz", x=bad)
    calib[0].tofile(d / "s0.raw")
    calib[1][:, :, :4].tofile(d / "short.raw")
    (d / "short.txt").write_text("x:=s0.raw\nx:=short.raw\n")
    (d / "none.txt").write_text("# no inferences\n")
    bad = calib[2].copy()
    bad[0, 0, 0, 0] = np.nan
    bad.tofile(d / "nan.raw")
    (d / "nan.txt").write_text("x:=s0.raw\nx:=nan.raw\n")
    (d / "unknown.json").write_text(json.dumps({"activation_encodings": {"nope": [{"bitwidth": 16}]}}))
    (d / "bits.json").write_text(json.dumps({"param_encodings": {"w1": [{"bitwidth": 12, "dtype": "int"}]}}))
    (d / "broken.json").write_text('{"activation_encodings": ')
    (d / "serch.json").write_text(json.dumps({"act_range": "serch"}))
    (d / "wrange.json").write_text(json.dumps({"weight_range": "percentile"}))
    (d / "block.json").write_text(json.dumps({"block_size": 48}))
    (d / "nulls.json").write_text(json.dumps({"block_size": None, "act_range": None}))  # as the build writes
    assert qnn_build("calibrate", "m.onnx", "--calibration", "good.npz", "-o", "stats.npz", "-q", cwd=d).returncode == 0
    assert convert(d, "--precision", "w8a8", "--calibration", "good.npz").returncode == 0
    return d


def convert(d, *args):
    return qnn_build("convert", "m.onnx", "-o", "out", "-q", *args, cwd=d)


def snapshot(folder):
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


CASES = [
    (["--calibration", "empty.npz"], "empty.npz: the calibration set is empty (input 'x' has no samples)"),
    (["--calibration", "missing.npz"], "missing.npz: calibration data not found"),
    (["--calibration", "shape.npz"], ("shape.npz: input 'x': array of shape [8, 1, 3, 7, 8] does not hold samples "
                                      "of shape [1, 3, 8, 8]")),
    (["--calibration", "other.npz"], "other.npz: no array for input 'x' (arrays: y)"),
    (["--calibration", "nan.npz"], "nan.npz: calibration data for input 'x' contains NaN or Inf (sample 3)"),
    (["--calibration", "inf.npz"], "inf.npz: calibration data for input 'x' contains NaN or Inf (sample 3)"),
    (["--input-list", "short.txt"], "short.txt: short.raw has 384 bytes; input 'x' needs 768"),
    (["--input-list", "none.txt"], "none.txt: the input list has no inferences"),
    (["--input-list", "nan.txt"], "nan.txt: calibration data for input 'x' contains NaN or Inf (sample 1)"),
    (["--calibration", "good.npz", "--quantization-overrides", "unknown.json"],
     "unknown.json: activation_encodings: tensor 'nope' is not an activation of the model"),
    (["--calibration", "good.npz", "--quantization-overrides", "bits.json"],
     "bits.json: param_encodings: 'w1': unsupported bitwidth 12"),
    (["--calibration", "good.npz", "--quantization-overrides", "broken.json"], "broken.json"),
    (["--calibration", "good.npz", "--quantization-overrides", "absent.json"],
     "absent.json: quantization overrides file not found"),
    (["--calibration", "good.npz", "--config", "serch.json"],
     "serch.json: act_range: unknown value 'serch' (one of minmax, percentile, mse, search, auto)"),
    (["--calibration", "good.npz", "--config", "wrange.json"],
     "wrange.json: weight_range: unknown value 'percentile' (one of minmax, mse)"),
    (["--calibration", "good.npz", "--config", "block.json"],
     "block.json: block_size: unknown value 48 (one of 32, 64, 128)"),
    (["--calibration-stats", "stats.npz", "--act-range", "search"],
     "act_range search runs the model over the calibration samples: give the calibration data (--calibration)"),
]


@pytest.mark.parametrize("args,message", CASES, ids=[c[0][-1] for c in CASES])
def test_bad_input_is_one_clear_line_and_keeps_the_previous_conversion(work, args, message):
    before = snapshot(work / "out")
    r = convert(work, "--precision", "w8a8", *args)
    assert r.returncode == 1
    assert one_error_line(r, message).startswith("qnn-build convert: error: ")
    assert snapshot(work / "out") == before


def test_a_config_value_of_null_means_not_set(work):
    assert convert(work, "--precision", "w8a8", "--calibration", "good.npz", "--config", "nulls.json").returncode == 0


def test_block_size_that_does_not_divide_names_the_weight(work):
    rng = np.random.default_rng(1)
    wf = (rng.standard_normal((480, 5)) * 0.1).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "wf"], ["y"], name="fc")], "odd",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 480])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
                              [numpy_helper.from_array(wf, "wf")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), work / "odd.onnx")
    np.savez(work / "odd.npz", x=rng.standard_normal((8, 1, 480)).astype(np.float32))
    before = snapshot(work / "out")

    def odd(block):
        return qnn_build("convert", "odd.onnx", "-o", "out", "-q", "--precision", "w4a16", "--calibration", "odd.npz",
                         "--block-size", block, cwd=work)
    r = odd("64")
    assert r.returncode == 1, r.stderr
    assert "odd.onnx: node 'fc' (MatMul): block size 64 does not divide the input dimension 480 of weight 'wf'" \
        in r.stderr, r.stderr
    assert snapshot(work / "out") == before
    assert odd("32").returncode == 0  # 480 = 15 blocks of 32


def test_a_library_of_another_precision_is_refused_before_compose(work):
    """The library records its precision (qnnb_model_precision); steps told to expect another refuse
    it by name, aliases included, and write nothing."""
    def run(*args):
        return qnn_build(*args, cwd=work)
    assert run("convert", "m.onnx", "-o", "p16", "-q", "--precision", "w8a16", "--calibration", "good.npz").returncode == 0
    assert run("model-lib", "--cpp", "p16/model.cpp", "--bin", "p16/model.bin", "-o", "p16/libmodel.so",
               "-q").returncode == 0
    np.zeros((1, 3, 8, 8), np.float32).tofile(work / "zero.raw")
    (work / "one.txt").write_text("x:=zero.raw\n")
    message = "p16/libmodel.so: this model library was converted at w8a16, not w8a8"
    for args in (["context-binary", "--backend", "npu", "-o", "p16/m.ctx"],
                 ["net-run", "--backend", "npu", "--input-list", "one.txt", "--output-dir", "p16/results"],
                 ["test", "--backend", "npu", "--reference", "none.npz", "--data", "good.npz", "-o", "p16/t.json"]):
        r = run(*args, "--model", "p16/libmodel.so", "--precision", "int8")
        assert r.returncode == 1 and message in r.stderr, (args, r.stderr)
    assert sorted(p.name for p in (work / "p16").iterdir()) == ["libmodel.so", "model.bin", "model.cpp",
                                                               "model.encodings.json", "model.json"]
    r = run("context-binary", "--backend", "npu", "-o", "p16/m.ctx", "--model", "p16/libmodel.so", "--precision",
            "w8a16", "-q")
    assert r.returncode == 0, r.stderr
    assert json.loads((work / "p16/m.ctx.json").read_text())["precision"] == "w8a16"
