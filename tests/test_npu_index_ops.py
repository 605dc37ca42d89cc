"""Issue 16's ops on the npu. The index ops that only move elements of one tensor (GatherElements,
GatherND) and TopK, which selects them, keep its encoding (ops/kinds.py VALUE_KEEPERS) and run on its
integer codes, so the npu equals the cpu simulation bit for bit. Comparisons of codes run in integers
too (docs/npu.md (N35); tests/npu/test_npu_compare.py), so a detector's score > threshold needs no
--float-fallback."""

import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert
from qnn_build.quant import QuantOptions
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

RNG = np.random.default_rng(0)


def save(tmp_path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", x=RNG.standard_normal((16, 1, 6, 8)).astype(np.float32))
    return tmp_path / "m.onnx", tmp_path / "calib.npz"


def build(tmp_path, src, calib, **kw):
    desc = convert(src, tmp_path / "o", precision="w8a8", calibration=calib, **kw)
    return desc, build_model_lib(tmp_path / "o/model.cpp", tmp_path / "o/model.bin", tmp_path / "libm.so")


def test_gathers_run_on_codes_and_equal_the_cpu_simulation(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 3])
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]),
             helper.make_node("GatherElements", ["a", "cols"], ["b"], axis=2),
             helper.make_node("GatherND", ["b", "rows"], ["c"], batch_dims=1),
             helper.make_node("Add", ["c", "k2"], ["y"])]
    inits = {"k": RNG.standard_normal((6, 8)).astype(np.float32),
             "cols": RNG.integers(0, 8, (1, 6, 3)).astype(np.int64),
             "rows": RNG.integers(0, 6, (1, 6, 1)).astype(np.int64), "k2": np.float32(0.25)}
    src, calib = save(tmp_path, nodes, [x], [y], inits)
    np.savez(calib, x=RNG.standard_normal((16, 1, 6, 8)).astype(np.float32))
    desc, lib = build(tmp_path, src, calib)
    assert not desc.get("float_fallback")
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        for _ in range(3):
            feed = {"x": RNG.standard_normal((1, 6, 8)).astype(np.float32)}
            assert npu.run(feed)["y"].tobytes() == cpu.run(feed)["y"].tobytes()


def test_topk_runs_on_codes_and_equals_the_cpu_simulation(tmp_path):
    """The k largest along the last axis and the k smallest along another, from 8-bit codes with
    ties (equal codes: the lower index first, as the float kernel on the cpu orders equal values)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8])
    outs = [helper.make_tensor_value_info("top", TensorProto.FLOAT, [1, 6, 3]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [1, 6, 3]),
            helper.make_tensor_value_info("low", TensorProto.FLOAT, [1, 4, 8]),
            helper.make_tensor_value_info("low_idx", TensorProto.INT64, [1, 4, 8])]
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]),
             helper.make_node("TopK", ["a", "three"], ["top", "idx"], name="topk"),
             helper.make_node("TopK", ["a", "four"], ["low", "low_idx"], axis=1, largest=0, name="bottomk")]
    inits = {"k": RNG.standard_normal((6, 8)).astype(np.float32), "three": np.array([3], np.int64),
             "four": np.array([4], np.int64)}
    inits["k"][:, 1] = inits["k"][:, 0]
    src, calib = save(tmp_path, nodes, [x], outs, inits)
    # minmax ranges: the default's (21e) gives what TopK ranks 16 bits, where codes rarely tie
    desc, lib = build(tmp_path, src, calib, options=QuantOptions(act_range="minmax"))
    assert not desc.get("float_fallback")
    enc = {o["name"]: o["encoding"] for o in desc["outputs"] if "scale" in o.get("encoding", {})}
    assert enc["top"] == enc["low"] and enc["top"]["bitwidth"] == 8  # both the encoding of their input, a
    ties = 0
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        for _ in range(4):
            feed = {"x": np.round(RNG.standard_normal((1, 6, 8)), 1).astype(np.float32)}
            # columns 0 and 1 (equal factors) at x's top: the same largest product in every row, a
            # tie for certain (the draws alone tie in only some of the orders pytest-xdist runs them in)
            feed["x"][0, :, :2] = 1000 * np.sign(inits["k"][:, :1])
            got, want = npu.run(feed), cpu.run(feed)
            for name in ("top", "idx", "low", "low_idx"):
                assert got[name].tobytes() == want[name].tobytes(), name
            ties += int(np.sum(np.diff(want["top"], axis=-1) == 0))
    assert ties > 0  # equal codes among the selected: the tie order was tested


def test_a_comparison_feeding_where_runs_in_integers(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8])
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8])]
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]),
             helper.make_node("Greater", ["a", "zero"], ["positive"], name="greater"),
             helper.make_node("Where", ["positive", "a", "x"], ["w"], name="where"),
             helper.make_node("Sigmoid", ["w"], ["y"])]
    inits = {"k": RNG.standard_normal((6, 8)).astype(np.float32), "zero": np.float32(0.0)}
    src, calib = save(tmp_path, nodes, [x], outs, inits)
    desc, lib = build(tmp_path, src, calib, float_fallback=True)
    assert not desc["float_fallback"]  # Greater (N35) and Where (N31) have npu kernels
    scale = {o["name"]: o["encoding"]["scale"] for o in desc["outputs"] if "scale" in o.get("encoding", {})}
    with Model(lib, backend="cpu", keep_tensors=True) as cpu, Model(lib, backend="npu", keep_tensors=True) as npu:
        for _ in range(3):
            feed = {"x": RNG.standard_normal((1, 6, 8)).astype(np.float32)}
            on_npu, on_cpu = npu.run(feed), cpu.run(feed)
            np.testing.assert_array_equal(npu.tensors(False)["positive"], cpu.tensors(False)["positive"])
            # Where re-encodes its operands by (N20), the cpu by rounding the float: 1 LSB apart at most
            np.testing.assert_allclose(on_npu["y"], on_cpu["y"], atol=3 * scale["y"])


def test_integer_index_arithmetic_runs_the_cpu_kernels_on_the_npu(tmp_path):
    """TopK's int64 indices divided and offset as a detector's post-processing does (box = index //
    classes): unencoded integers, so the npu runs the cpu kernels and gives the same integers."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8])
    outs = [helper.make_tensor_value_info("box", TensorProto.INT64, [1, 6, 3]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [1, 6, 3])]
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]),
             helper.make_node("TopK", ["a", "three"], ["top", "idx"]),
             helper.make_node("Div", ["idx", "classes"], ["cell"]),
             helper.make_node("Mul", ["cell", "stride"], ["scaled"]),
             helper.make_node("Sub", ["scaled", "one"], ["box"])]
    inits = {"k": RNG.standard_normal((6, 8)).astype(np.float32), "three": np.array([3], np.int64),
             "classes": np.int64(3), "stride": np.int64(8), "one": np.int64(1)}
    src, calib = save(tmp_path, nodes, [x], outs, inits)
    desc, lib = build(tmp_path, src, calib, float_fallback=True)
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        feed = {"x": RNG.standard_normal((1, 6, 8)).astype(np.float32)}
        on_cpu, on_npu = cpu.run(feed), npu.run(feed)
        np.testing.assert_array_equal(on_npu["idx"], on_cpu["idx"])  # TopK of a's codes (above)
        np.testing.assert_array_equal(on_cpu["box"], (on_cpu["idx"] // 3) * 8 - 1)
        np.testing.assert_array_equal(on_npu["box"], on_cpu["box"])


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_trilu_and_isnan_run_on_codes_and_equal_the_cpu_simulation(tmp_path, precision):
    """Trilu keeps its input's encoding and fills the zero point's code (0 on the cpu simulation,
    exactly: 0 is on the grid), upper with k = 1 and lower with k = -2; IsNaN of codes is false."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8])
    outs = [helper.make_tensor_value_info("upper", TensorProto.FLOAT, [1, 6, 8]),
            helper.make_tensor_value_info("lower", TensorProto.FLOAT, [1, 6, 8]),
            helper.make_tensor_value_info("nan", TensorProto.BOOL, [1, 6, 8])]
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]),
             helper.make_node("Trilu", ["a", "one"], ["upper"], upper=1),
             helper.make_node("Trilu", ["a", "minus_two"], ["lower"], upper=0),
             helper.make_node("IsNaN", ["a"], ["nan"])]
    inits = {"k": RNG.standard_normal((6, 8)).astype(np.float32) + 0.5, "one": np.array(1, np.int64),
             "minus_two": np.array(-2, np.int64)}
    src, calib = save(tmp_path, nodes, [x], outs, inits)
    desc = convert(src, tmp_path / "o", precision=precision, calibration=calib)
    lib = build_model_lib(tmp_path / "o/model.cpp", tmp_path / "o/model.bin", tmp_path / "libm.so")
    enc = {o["name"]: o["encoding"] for o in desc["outputs"] if "scale" in o.get("encoding", {})}
    assert enc["upper"] == enc["lower"]  # both a's encoding
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu", threads=2) as npu:
        for _ in range(3):
            feed = {"x": RNG.standard_normal((1, 6, 8)).astype(np.float32)}
            got, want = npu.run(feed), cpu.run(feed)
            for name in ("upper", "lower", "nan"):
                assert got[name].tobytes() == want[name].tobytes(), name
            # Kept entries may quantize to 0 at 8 bits, so "kept" is asserted over the whole triangle.
            assert np.all(want["upper"][0][np.tril_indices(6, 0, 8)] == 0)
            assert np.any(want["upper"][0][np.triu_indices(6, 1, 8)] != 0)
            assert np.all(want["lower"][0][np.triu_indices(6, -1, 8)] == 0)
            assert np.any(want["lower"][0][np.tril_indices(6, -2, 8)] != 0) and not got["nan"].any()


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_scatters_move_codes_and_equal_the_cpu_simulation(tmp_path, precision):
    """ScatterElements of an activation's updates into another, ScatterND of rows into a constant of
    zeros: data and updates are re-encoded to the output's encoding first (the constant at convert
    time, the activations by an Identity), then the scatter moves codes (docs/npu.md (N37))."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8])
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [6, 9])]
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]),
             helper.make_node("Slice", ["x", "s0", "s1", "s2"], ["part"]),
             helper.make_node("Mul", ["part", "k2"], ["u"]),
             helper.make_node("ScatterElements", ["a", "cols", "u"], ["y"], axis=2),
             helper.make_node("Reshape", ["u", "rows_shape"], ["r"]),
             helper.make_node("ScatterND", ["zeros", "rows", "r"], ["z"])]
    inits = {"k": RNG.standard_normal((6, 8)).astype(np.float32), "k2": np.float32(0.3),
             "s0": np.array([0], np.int64), "s1": np.array([3], np.int64), "s2": np.array([2], np.int64),
             "cols": np.stack([RNG.permutation(8)[:3] for _ in range(6)])[None].astype(np.int64),
             "rows_shape": np.array([2, 9], np.int64), "rows": np.array([[1], [4]], np.int64),
             "zeros": np.zeros((6, 9), np.float32)}
    src, calib = save(tmp_path, nodes, [x], outs, inits)
    convert(src, tmp_path / "o", precision=precision, calibration=calib)
    lib = build_model_lib(tmp_path / "o/model.cpp", tmp_path / "o/model.bin", tmp_path / "libm.so")
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        for _ in range(3):
            feed = {"x": RNG.standard_normal((1, 6, 8)).astype(np.float32)}
            got, want = npu.run(feed), cpu.run(feed)
            for name in ("y", "z"):
                assert got[name].tobytes() == want[name].tobytes(), name
            assert np.all(want["z"][[0, 2, 3, 5]] == 0) and np.any(want["z"][[1, 4]] != 0)


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_onehot_moves_the_codes_of_its_values(tmp_path, precision):
    """OneHot of an ArgMax's indices with values [-0.5, 2]: the values re-quantized into the output's
    encoding at convert time, then the npu moves their codes (docs/npu.md (N37))."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8])
    outs = [helper.make_tensor_value_info("hot", TensorProto.FLOAT, [1, 6, 8])]
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]),
             helper.make_node("ArgMax", ["a"], ["idx"], axis=2, keepdims=0),
             helper.make_node("OneHot", ["idx", "depth", "values"], ["hot"], axis=-1)]
    inits = {"k": RNG.standard_normal((6, 8)).astype(np.float32), "depth": np.array(8, np.int64),
             "values": np.array([-0.5, 2.0], np.float32)}
    src, calib = save(tmp_path, nodes, [x], outs, inits)
    desc = convert(src, tmp_path / "o", precision=precision, calibration=calib)
    assert "float_fallback" not in desc
    lib = build_model_lib(tmp_path / "o/model.cpp", tmp_path / "o/model.bin", tmp_path / "libm.so")
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        for _ in range(3):
            feed = {"x": RNG.standard_normal((1, 6, 8)).astype(np.float32)}
            got, want = npu.run(feed)["hot"], cpu.run(feed)["hot"]
            assert got.tobytes() == want.tobytes()
            np.testing.assert_array_equal(np.sum(want > 0, axis=-1), 1)
            np.testing.assert_allclose(np.unique(want), [-0.5, 2.0], atol=0.02)
