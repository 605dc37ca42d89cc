"""The npu's comparisons of integer codes (docs/npu.md (N35)): Equal, Greater, GreaterOrEqual, Less,
LessOrEqual of an activation with a constant (either order; 0 on both grids, 0.3 on neither) and of
two activations (broadcast, and of the same shape at another scale), on grid values with ties, at 8
and 16 bits. The bools equal the cpu simulation's (which compares the dequantized float32 values)
exactly, and NumPy's comparison of the dequantized inputs."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from qnn_build.runtime.binding import Model

from .harness import F, build_lib, enc_of, make_model, quantized, run

OPS = ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"]
NUMPY = {"Equal": np.equal, "Greater": np.greater, "GreaterOrEqual": np.greater_equal, "Less": np.less,
         "LessOrEqual": np.less_equal}
# (first, second) operands of each op's nodes: constants in both orders, two activations.
PAIRS = [("a", "zero"), ("third", "a"), ("a", "b"), ("a2", "a")]
# Activation ranges whose scales are 2^-6 and 2^-5 at 8 bits, 2^-12 and 2^-11 at 16: the codes of
# a on b's grid tie with b's.
RANGES = {8: {"a": (-2.0, 127 / 64), "b": (-4.0, 254 / 64)},
          16: {"a": (-8.0, 32767 / 4096), "b": (-16.0, 32767 / 2048)}}


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
def test_comparisons_equal_the_cpu_simulation(tmp_path, precision):
    bits = 16 if precision.endswith("16") else 8
    nodes, outs = [], []
    for op in OPS:
        for first, second in PAIRS:
            name = f"{op}_{first}_{second}"
            nodes.append(helper.make_node(op, [first, second], [name], name=name))
            outs.append((name, TensorProto.BOOL))
    inputs = [("a", F, [2, 3, 4]), ("b", F, [3, 1]), ("a2", F, [2, 3, 4])]
    consts = [("zero", np.float32(0.0)), ("third", np.array([0.3], np.float32))]
    path = make_model(tmp_path, nodes, inputs, outs, consts)
    r = RANGES[bits]
    graph = quantized(path, precision, {}, pins={"a": r["a"], "b": r["b"], "a2": r["b"]})
    step = float(enc_of(graph, "a").scales[0])
    rng = np.random.default_rng(bits)
    a = rng.integers(-40, 40, (2, 3, 4)) * step
    a[0, 0, :3] = [0.0, 0.0, 4 * step]  # equal to the constant 0; to b[0, 0] below
    feeds = {"a": a.astype(np.float32), "b": (rng.integers(-20, 20, (3, 1)) * 2 * step).astype(np.float32)}
    even = np.round(a / (2 * step)) * 2 * step  # on a2's grid: equal to a where a is too
    feeds["a2"] = (even + 2 * step * rng.integers(-1, 2, a.shape) * (rng.random(a.shape) < 0.3)).astype(np.float32)
    feeds["b"][0, 0] = 4 * step  # not every tie left to chance
    lib = build_lib(graph, tmp_path, precision)
    _, cpu = run(lib, feeds, backend="cpu")
    values = {**feeds, "zero": np.float32(0.0), "third": np.float32(0.3)}
    for threads in (1, 3):
        _, npu = run(lib, feeds, threads=threads)
        for node in nodes:
            name = node.output[0]
            assert npu[name].dtype == np.bool_
            np.testing.assert_array_equal(npu[name], cpu[name], err_msg=f"{name}, threads={threads}")
    for first, second in PAIRS:  # the inputs are on their grids: the float comparison is exact here
        for op in OPS:
            want = NUMPY[op](values[first], values[second])
            np.testing.assert_array_equal(cpu[f"{op}_{first}_{second}"], want, err_msg=f"{op} {first} {second}")
    assert cpu["Equal_a_zero"].any() and cpu["Equal_a_b"].any() and cpu["Equal_a2_a"].any()  # ties were tested
    assert not cpu["Equal_third_a"].any()  # 0.3 is on no grid of a


def test_two_scales_compare_as_float32_products(tmp_path):
    """b's scale is float32(3 · s_a), not 3 · s_a: s_a · 3k and s_b · k differ in exact arithmetic
    but are the same float32, so the cpu simulation finds them equal; the npu rounds its integer
    products as float32 does and agrees, near-ties included."""
    nodes = [helper.make_node(op, ["a", "b"], [op], name=op) for op in OPS]
    path = make_model(tmp_path, nodes, [("a", F, [64]), ("b", F, [64])], [(op, TensorProto.BOOL) for op in OPS])
    sa = np.float32(0.1)
    sb = np.float32(3 * sa)
    graph = quantized(path, "w8a8", {}, pins={"a": (-128 * float(sa), 127 * float(sa)),
                                               "b": (-128 * float(sb), 127 * float(sb))})
    assert enc_of(graph, "a").scales[0] == sa and enc_of(graph, "b").scales[0] == sb
    assert float(sa) * 3 != float(sb)  # the exact products differ: only float32 rounding makes them tie
    rng = np.random.default_rng(3)
    kb = rng.integers(-40, 40, 64)
    ka = 3 * kb + rng.integers(-1, 2, 64) * (rng.random(64) < 0.4)
    feeds = {"a": (ka * sa).astype(np.float32), "b": (kb * sb).astype(np.float32)}
    lib = build_lib(graph, tmp_path, "scales")
    _, cpu = run(lib, feeds, backend="cpu")
    _, npu = run(lib, feeds)
    for op in OPS:
        np.testing.assert_array_equal(npu[op], cpu[op], err_msg=op)
    assert cpu["Equal"][(ka == 3 * kb) & (kb != 0)].any()


def test_parameters_out_of_range_are_refused(tmp_path):
    """A shift past 20 would overflow the 64-bit products: finalize refuses it with one line."""
    path = make_model(tmp_path, [helper.make_node("Greater", ["a", "b"], ["y"], name="gt")],
                      [("a", F, [4]), ("b", F, [4])], [("y", TensorProto.BOOL)])
    graph = quantized(path, "w8a8", {"a": (-1.0, 1.0), "b": (-1.0, 1.0)})
    graph.nodes[0].attrs["npu_scale_shift"] = [21, 0]
    lib = build_lib(graph, tmp_path, "bad")
    with pytest.raises(Exception, match="gt.*npu_scale_mantissa or npu_scale_shift out of range"):
        Model(lib, backend="npu")
