"""Native io, as qnn-net-run's: an input list written for a QNN-converted model (NHWC raw files of
uint8 codes) runs unchanged with `--input-layout NHWC --use-native-input-files`, and
`--use-native-output-files` writes each encoded output as its uint8/uint16 codes. The codes are exact:
fed the values those codes stand for, the float path gives the values of the output codes, on the cpu
and the npu, from `qnn-build net-run` and from the native qnn-net-run alike."""

import json
import subprocess

import numpy as np
import onnx
import pytest
from cli_util import qnn_build_in_process as qnn_build
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert
from qnn_build.toolchain import build_model_lib, build_runner

SHAPE = (1, 3, 6, 5)  # N, C, H, W: C, H, W all different, so a wrong transpose cannot pass


@pytest.fixture(scope="module", params=["w8a8", "w8a16"])
def built(tmp_path_factory, request):
    d = tmp_path_factory.mktemp(f"native_{request.param}")
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 5])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "m.onnx")
    np.savez(d / "calib.npz", x=rng.standard_normal((8, *SHAPE)).astype(np.float32))
    desc = convert(d / "m.onnx", d / "conv", precision=request.param, calibration=d / "calib.npz")
    lib = build_model_lib(d / "conv/model.cpp", d / "conv/model.bin", d / "libm.so")
    (x_info,), (y_info,) = desc["inputs"], desc["outputs"]
    code_dtype = np.uint8 if request.param == "w8a8" else np.uint16
    codes = rng.integers(0, np.iinfo(code_dtype).max + 1, SHAPE).astype(code_dtype)
    enc = x_info["encoding"]
    values = (enc["scale"] * (codes.astype(np.float32) + enc["offset"])).astype(np.float32)
    values.tofile(d / "x_float.raw")
    np.ascontiguousarray(codes.transpose(0, 2, 3, 1)).tofile(d / "x_nhwc.raw")  # what a QNN model takes
    (d / "float.txt").write_text(f"x:={d / 'x_float.raw'}\n")
    (d / "native.txt").write_text(f"x:={d / 'x_nhwc.raw'}\n")
    return d, lib, y_info["encoding"], code_dtype


@pytest.mark.parametrize("backend", ["cpu", "npu"])
def test_native_codes_in_and_out_match_the_float_path(built, backend):
    d, lib, enc, code_dtype = built
    base = ["net-run", "--backend", backend, "--model", lib]
    r = qnn_build(*base, "--input-list", d / "float.txt", "--output-dir", d / f"{backend}_float")
    assert r.returncode == 0, r.stderr
    r = qnn_build(*base, "--input-list", d / "native.txt", "--output-dir", d / f"{backend}_native",
                  "--input-layout", "NHWC", "--use-native-input-files", "--use-native-output-files")
    assert r.returncode == 0, r.stderr
    y = np.fromfile(d / f"{backend}_float/Result_0/y.raw", np.float32)
    codes = np.fromfile(d / f"{backend}_native/Result_0/y.raw", code_dtype)
    assert codes.size == y.size and len(np.unique(codes)) > 10
    np.testing.assert_array_equal(enc["scale"] * (codes.astype(np.float32) + enc["offset"]), y)

    runner = subprocess.run([str(build_runner()), "--backend", backend, "--model", str(lib), "--input_list",
                             str(d / "native.txt"), "--output_dir", str(d / f"{backend}_runner"), "--input_layout",
                             "NHWC", "--use_native_input_files", "--use_native_output_files"],
                            capture_output=True, text=True)
    assert runner.returncode == 0, runner.stderr
    assert (d / f"{backend}_runner/Result_0/y.raw").read_bytes() == (d / f"{backend}_native/Result_0/y.raw").read_bytes()


def test_native_input_file_of_float_size_is_refused(built):
    d, lib, _, _ = built
    (d / "wrong.txt").write_text(f"x:={d / 'x_float.raw'}\n")  # float32 bytes where codes are expected
    r = qnn_build("net-run", "--model", lib, "--input-list", d / "wrong.txt", "--output-dir", d / "wrong",
                  "--use-native-input-files")
    assert r.returncode != 0 and "bytes" in r.stderr and "Traceback" not in r.stderr
    assert not (d / "wrong").exists()


def test_model_json_still_describes_the_float_io(built):
    d, _, _, _ = built
    doc = json.loads((d / "conv/model.json").read_text())
    assert doc["inputs"][0]["dtype"] == "float32" and doc["inputs"][0]["layout"] == "NCHW"
