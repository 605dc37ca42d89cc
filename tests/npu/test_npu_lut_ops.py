"""The unary ops added as npu lookup tables (docs/npu.md (N6), (N7), (N7b)): Sin, Cos, Softsign,
Mish, Selu, Celu (smooth: 8-bit tables, 16-bit knots) and Floor, Ceil, Round, Sign, Mod by a constant
(steps: a table of every code at 8 and 16 bits). On every input code: the npu equals the golden model
exactly and the cpu float simulation within the bound of docs/npu.md (the step tables: 0); converted
with --float-fallback, none of them is kept in fp16 any more."""

import numpy as np
import pytest
from onnx import helper

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model, RuntimeFailure
from qnn_build.toolchain import build_model_lib

from . import golden
from .harness import F, build_lib, check, enc_of, make_model, quantized

# op, attributes, input range, output range
SMOOTH = [
    ("Sin", {}, (-7.0, 7.0), (-1.0, 1.0)),
    ("Cos", {}, (-2.0, 9.0), (-1.0, 1.0)),
    ("Softsign", {}, (-6.0, 4.0), (-0.9, 0.8)),
    ("Mish", {}, (-5.0, 3.0), (-0.31, 3.0)),
    ("Selu", {}, (-3.0, 2.0), (-1.8, 2.2)),
    ("Selu", {"alpha": 2.0, "gamma": 0.5}, (-3.0, 2.0), (-1.0, 1.0)),
    ("Celu", {}, (-3.0, 2.0), (-1.0, 2.0)),
    ("Celu", {"alpha": 0.4}, (-3.0, 2.0), (-0.4, 2.0)),
]
# Ranges with round scales (0.01, 0.02 at 8 bits; 0.01 at 16): codes whose float32 value is an
# integer while their float64 value lies just below it, where a float64 table would miss a step.
STEPS = [
    ("Floor", {}, (-3.3, 4.1), (-4.0, 4.0)),
    ("Floor", {}, (0.0, 2.55), (0.0, 2.0)),
    ("Ceil", {}, (-1.28, 1.27), (-1.0, 2.0)),
    ("Round", {}, (-2.56, 2.54), (-3.0, 3.0)),  # x.5 at codes: half to even
    ("Round", {}, (0.0, 655.35), (0.0, 655.0)),
    ("Sign", {}, (-2.0, 3.0), (-1.0, 1.0)),
    ("Sign", {}, (0.0, 3.0), (0.0, 1.0)),  # the input's zero at code 0
]
# Piecewise-linear ops (and HardSwish, Elu with alpha != 1) whose slope jumps at a kink: the input's
# zero and Clip's / HardSigmoid's / HardSwish's corners fall between two 16-bit knots at these ranges,
# where (N7)'s knots miss by many codes; (N7c) patches those knot intervals with their exact entries.
# op, attributes, constant inputs, input range, output range
KINKED = [
    ("Relu", {}, (), (-1.3, 2.9), (0.0, 2.9)),
    ("LeakyRelu", {"alpha": 0.1}, (), (-1.3, 2.9), (-0.13, 2.9)),
    ("Abs", {}, (), (-1.3, 2.9), (0.0, 2.9)),
    ("Elu", {"alpha": 0.5}, (), (-1.3, 2.9), (-0.4, 2.9)),
    ("Clip", {}, (("lo", np.array(-0.5, np.float32)), ("hi", np.array(1.5, np.float32))), (-1.3, 2.9), (-0.5, 1.5)),
    ("HardSigmoid", {}, (), (-3.1, 2.7), (0.0, 1.0)),
    ("HardSwish", {}, (), (-4.1, 3.7), (-0.4, 3.7)),
]


# At 16 bits Softsign, Mish and Celu interpolate knots 64 codes apart (N7): within 1 output LSB of
# their exact table (elsewhere (N7c) patches the interval), so within 2 of the cpu; Sin, Cos and Selu
# have the exact table (N7a).
INTERPOLATED_16BIT_BOUND = 2


def every_code(graph, name, shape_elems):
    """Float inputs that quantize to every code of tensor `name` (repeated to fill the shape)."""
    e = enc_of(graph, name)
    codes = np.arange(shape_elems, dtype=np.int64) % (1 << e.bitwidth)
    return golden.dequantize(codes, e)


def one_op(tmp_path, op, attrs, x_range, y_range, precision, consts=(), pin=False):
    """`pin`: the ranges are kept even where the quantizer would share an encoding (Relu's input and output)."""
    inputs = ["x"] + [c[0] for c in consts]
    n = 65536 if precision != "w8a8" else 256
    path = make_model(tmp_path, [helper.make_node(op, inputs, ["y"], **attrs)], [("x", F, [n])], ["y"], consts,
                      opset=18)  # Mish
    ranges = {"x": x_range, "y": y_range}
    graph = quantized(path, precision, ranges, pins=ranges if pin else None)
    feeds = {"x": every_code(graph, "x", n)}
    assert np.array_equal(golden.quantize_input(feeds["x"], enc_of(graph, "x")), np.arange(n) % n)
    return graph, feeds


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op,attrs,x_range,y_range", SMOOTH)
def test_smooth_tables(tmp_path, op, attrs, x_range, y_range, precision):
    graph, feeds = one_op(tmp_path, op, attrs, x_range, y_range, precision)
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    q = golden.quantize_input(feeds["x"], ex)
    expected = golden.lut(q, ex, ey, op, golden.onnx_attrs(graph.nodes[0]))
    interpolated = precision != "w8a8" and len(graph.nodes[0].attrs["npu_lut"]) != 65536
    bound = INTERPOLATED_16BIT_BOUND if interpolated else 1
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}{len(attrs)}", cpu_tolerance=bound, threads=(1, 2))


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op,attrs,consts,x_range,y_range", KINKED)
def test_kinks_are_exact(tmp_path, op, attrs, consts, x_range, y_range, precision):
    """Every input code: the npu equals the golden model and the cpu simulation within 1 code; at 16
    bits the knots would have missed by more (the case exercises (N7a)'s choice)."""
    graph, feeds = one_op(tmp_path, op, attrs, x_range, y_range, precision, consts, pin=True)
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    q, a = golden.quantize_input(feeds["x"], ex), golden.onnx_attrs(graph.nodes[0])
    expected = golden.lut(q, ex, ey, op, a)
    if precision == "w8a16":  # a patch (N7c) or two, where the knots alone missed by more than a code
        assert 1 <= len(graph.nodes[0].attrs["npu_lut_patches"]) == golden.patched_intervals(op, a, ex, ey) <= 2
        assert np.abs(golden.lut(q, ex, ey, op, a, patched=False) - expected).max() > 1
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}", cpu_tolerance=1, threads=(1, 2))


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op,attrs,x_range,y_range", STEPS)
def test_step_tables_equal_the_cpu(tmp_path, op, attrs, x_range, y_range, precision):
    graph, feeds = one_op(tmp_path, op, attrs, x_range, y_range, precision)
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    expected = golden.step_table(op, {}, ex, ey)[golden.quantize_input(feeds["x"], ex)]
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}{x_range[1]}", cpu_tolerance=0, threads=(1, 2))


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("fmod,divisor,x_range,y_range", [
    (0, 1.5, (-4.0, 5.0), (0.0, 1.5)), (0, -0.7, (-4.0, 5.0), (-0.7, 0.0)),
    (1, 1.5, (-4.0, 5.0), (-1.5, 1.5)), (1, -2.0, (-3.0, 6.5), (-2.0, 2.0))])
def test_mod_by_a_constant(tmp_path, fmod, divisor, x_range, y_range, precision):
    consts = [("d", np.array([divisor], np.float32))]
    graph, feeds = one_op(tmp_path, "Mod", {"fmod": fmod}, x_range, y_range, precision, consts)
    ex, ey, d = enc_of(graph, "x"), enc_of(graph, "y"), graph.tensor("d")
    dq = golden.dequantize(d.const.astype(np.int64), d.encoding)[0]  # the divisor the cpu divides by
    expected = golden.step_table("Mod", {"fmod": fmod}, ex, ey, dq)[golden.quantize_input(feeds["x"], ex)]
    check(tmp_path, graph, feeds, {"y": expected}, f"mod{precision}{fmod}{divisor}", cpu_tolerance=0, threads=(1, 2))


def test_mod_by_an_activation_is_refused(tmp_path):
    path = make_model(tmp_path, [helper.make_node("Mod", ["x", "d"], ["y"], fmod=1)], [("x", F, [4]), ("d", F, [4])],
                      ["y"])
    lib = build_lib(quantized(path, "w8a8", {"x": (-2.0, 2.0), "d": (0.5, 1.0)}), tmp_path, "modrefused")
    with pytest.raises(RuntimeFailure, match="no npu kernel for Mod with a divisor computed at run time"):
        Model(lib, backend="npu")


def test_float32_tables_matter(tmp_path):
    """Why (N7b) computes in float32: with the scale 0.01, code 100 is 1.0 in float32 but 0.99999998 in
    float64, whose floor is a whole integer lower: 64 output codes, docs/quantization.md (3e)'s 1/64."""
    graph, _ = one_op(tmp_path, "Floor", {}, (0.0, 2.55), (0.0, 2.0), "w8a8")
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    in_float64 = np.round(np.floor(float(ex.scales[0]) * np.arange(256.0)) / float(ey.scales[0]))
    assert np.abs(golden.step_table("Floor", {}, ex, ey) - np.clip(in_float64, 0, 255)).max() == 64


def test_converted_without_fp16_nodes(tmp_path):
    """A chain of every op, converted with --float-fallback: no node is kept in fp16 (no Quantize or
    Dequantize boundary); the npu runs it and agrees with the cpu simulation."""
    chain = [("Sin", {}), ("Mish", {}), ("Softsign", {}), ("Selu", {"alpha": 1.5}), ("Celu", {"alpha": 0.5}),
             ("Cos", {}), ("Floor", {}), ("Ceil", {}), ("Round", {}), ("Sign", {})]
    nodes, prev = [helper.make_node("Mul", ["x", "k"], ["m"], name="scale")], "m"
    for i, (op, attrs) in enumerate(chain):
        nodes.append(helper.make_node(op, [prev], [f"t{i}"], name=op.lower(), **attrs))
        prev = f"t{i}"
    nodes.append(helper.make_node("Mod", ["m", "d"], ["r"], name="mod", fmod=1))
    nodes.append(helper.make_node("Add", [prev, "r"], ["y"], name="add"))
    path = make_model(tmp_path, nodes, [("x", F, [4, 16])], ["y"],
                      [("k", np.array(2.5, np.float32)), ("d", np.array(1.25, np.float32))], opset=18)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calib.npz", x=rng.uniform(-2, 2, (16, 4, 16)).astype(np.float32))
    desc = convert(path, tmp_path / "out", precision="w8a8", calibration=tmp_path / "calib.npz", float_fallback=True)
    assert desc["float_fallback"] == []
    assert "Quantize" not in desc["ops"] and "Dequantize" not in desc["ops"]
    out = tmp_path / "out"
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "liblutchain.so")
    npu, cpu = Model(lib, backend="npu"), Model(lib, backend="cpu")
    scale = desc["outputs"][0]["encoding"]["scale"]
    for _ in range(3):
        feeds = {"x": rng.uniform(-2, 2, (4, 16)).astype(np.float32)}
        np.testing.assert_allclose(npu.run(feeds)["y"], cpu.run(feeds)["y"], rtol=0, atol=1.01 * scale)


def test_round_is_half_to_even(tmp_path):
    """ONNX Round: halves go to the even integer (-2.5 -> -2, 0.5 -> 0, 1.5 -> 2), on the npu too."""
    path = make_model(tmp_path, [helper.make_node("Round", ["x"], ["y"])], [("x", F, [8])], ["y"])
    lib = build_lib(quantized(path, "w8a16", {"x": (-2.56, 2.54), "y": (-3.0, 3.0)}), tmp_path, "roundeven")
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.48, -1.52], np.float32)  # on codes (scale 0.02)
    y = Model(lib, backend="npu").run({"x": x})["y"]
    np.testing.assert_allclose(y, [-2, -2, 0, 0, 2, 2, 0, -2], atol=1e-3)


@pytest.mark.parametrize("patches,words", [([70000], "patches out of order"), ([], "wrong size for its patches")])
def test_bad_patches_are_refused(tmp_path, patches, words):
    """(N7c): patches out of range, or a table whose size does not fit its list, stop finalize."""
    graph, _ = one_op(tmp_path, "Relu", {}, (-1.3, 2.9), (0.0, 2.9), "w8a16", pin=True)
    graph.nodes[0].attrs["npu_lut_patches"] = patches
    with pytest.raises(RuntimeFailure, match=words):
        Model(build_lib(graph, tmp_path, "badpatch"), backend="npu")
