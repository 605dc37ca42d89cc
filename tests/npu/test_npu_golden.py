"""npu kernels against the NumPy golden model, exactly (0 LSB), on randomized one-op graphs."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from qnn_build.convert import build_graph, write_artifacts
from qnn_build.npu_lowering.lower import add_npu_params
from qnn_build.quant import QuantOptions, Stats, quantize_graph
from qnn_build.quant.calibrate import TensorStats
from qnn_build.options import PRECISIONS
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

from . import golden


def one_op_graph(tmp_path, op, shapes, attrs=None):
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s) for i, s in enumerate(shapes)]
    node = helper.make_node(op, [i.name for i in inputs], ["y"], name="the_op", **(attrs or {}))
    model = helper.make_model(helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model = onnx.shape_inference.infer_shapes(model)
    if model.graph.value_info:  # give the output the type inference found, for the checker
        model.graph.output[0].CopyFrom(model.graph.value_info[0])
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def quantized(path, precision, ranges):
    """The lowered graph quantized with the given float ranges per tensor (random encodings)."""
    graph = build_graph(path)
    stats = Stats({name: TensorStats(lo, hi, np.zeros(16, np.int64), None) for name, (lo, hi) in ranges.items()})
    quantize_graph(graph, PRECISIONS[precision], stats, QuantOptions())
    add_npu_params(graph)
    return graph


def run_npu(graph, tmp_path, feeds, tag):
    out = tmp_path / tag
    write_artifacts(graph, out, "model.onnx", "w8a8")
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / f"lib{tag}.so")
    model = Model(lib, backend="npu", keep_tensors=True)
    model.run(feeds)
    return model


def random_range(rng):
    lo = -rng.uniform(0.1, 4.0) if rng.random() < 0.8 else 0.0
    return lo, rng.uniform(0.1, 4.0)


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize("seed", range(3))
def test_binary_ops_equal_golden(tmp_path, op, precision, seed):
    rng = np.random.default_rng(seed)
    shapes = [[2, 3, 5], [3, 1]] if seed % 2 else [[4, 7], [4, 7]]
    graph = quantized(one_op_graph(tmp_path, op, shapes), precision,
                      {"x0": random_range(rng), "x1": random_range(rng), "y": random_range(rng)})
    feeds = {f"x{i}": rng.uniform(-4, 4, s).astype(np.float32) for i, s in enumerate(shapes)}
    model = run_npu(graph, tmp_path, feeds, f"{op}{precision}{seed}")
    enc = {n: graph.tensor(n).encoding for n in ("x0", "x1", "y")}
    qa, qb = (golden.quantize_input(feeds[n], enc[n]) for n in ("x0", "x1"))
    if op == "Mul":
        expected = golden.mul(qa, qb, enc["x0"], enc["x1"], enc["y"])
    else:
        expected = golden.add_sub(qa, qb, enc["x0"], enc["x1"], enc["y"], subtract=op == "Sub")
    got = model_integers(model, "y", enc["y"])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op,attrs", [("Sigmoid", {}), ("Tanh", {}), ("HardSwish", {}), ("Relu", {}),
                                      ("LeakyRelu", {"alpha": 0.1}), ("Exp", {}), ("Erf", {}), ("Elu", {"alpha": 0.7}),
                                      ("Softplus", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("Sqrt", {})])
def test_lut_ops_equal_golden(tmp_path, op, attrs, precision):
    rng = np.random.default_rng(len(op))
    graph = quantized(one_op_graph(tmp_path, op, [[3, 50]], attrs), precision,
                      {"x0": (-3.0, 2.5), "y": (-1.0, 3.0) if op != "Exp" else (0.0, 12.0)})
    feeds = {"x0": rng.uniform(-3.5, 3, (3, 50)).astype(np.float32)}
    model = run_npu(graph, tmp_path, feeds, f"{op}{precision}")
    ex, ey = graph.tensor("x0").encoding, graph.tensor("y").encoding
    expected = golden.lut(golden.quantize_input(feeds["x0"], ex), ex, ey, op, golden.onnx_attrs(graph.nodes[0]))
    np.testing.assert_array_equal(model_integers(model, "y", ey), expected)


# (N7a): Sqrt of a 16-bit input is exact at every code. The ranges put the input's zero at code 0 and
# inside the range, where sqrt's slope is unbounded: (N7)'s knots would be off by up to this many codes.
@pytest.mark.parametrize("x_range,y_range,interpolation_error", [
    ((0.0, 4.0), (0.0, 2.0), 458), ((0.0, 0.01), (0.0, 0.25), 183), ((-1.0, 3.0), (0.0, 1.8), 509),
    ((0.0, 100.0), (-1.0, 12.0), 353)])
def test_sqrt_of_every_16bit_code_is_exact(tmp_path, x_range, y_range, interpolation_error):
    graph = quantized(one_op_graph(tmp_path, "Sqrt", [[65536]]), "w8a16", {"x0": x_range, "y": y_range})
    ex, ey = graph.tensor("x0").encoding, graph.tensor("y").encoding
    codes = np.arange(65536, dtype=np.int64)
    feeds = {"x0": ((codes + ex.offsets[0]) * np.float64(ex.scales[0])).astype(np.float32)}
    assert np.array_equal(golden.quantize_input(feeds["x0"], ex), codes)  # every code once
    model = run_npu(graph, tmp_path, feeds, "sqrt16")
    exact = golden.lut(codes, ex, ey, "Sqrt", {})
    np.testing.assert_array_equal(model_integers(model, "y", ey), exact)
    interpolated = golden.lut(codes, ex, ey, "Sqrt", {}, exact=False, patched=False)
    assert np.abs(interpolated - exact).max() == interpolation_error


def model_integers(model, name, enc):
    """The integers the npu stored for tensor `name`."""
    return model.tensors(float_only=False)[name].astype(np.int64)
