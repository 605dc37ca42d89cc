"""The golden model catches wrong npu parameters. Each case lowers a one-op graph, checks that the npu
equals the golden model, then changes one convert-time parameter the way a bug in the lowering would
and checks that the npu's integers now differ from the golden model's, which derives every parameter
from the encodings itself (tests/npu/golden.py).

The same kind of mutation made in the lowering's source (qnn_build/npu_lowering/*.py, one at a time, on a
scratch copy of the tree), and how many of the golden tests run on it failed (`python -m pytest -q
-n 2 FILE -k K`; every failure is the npu differing from the golden model):
  Add/Sub operand scales swapped              test_npu_golden.py -k "Add or Sub"   12 of 12 failed
  Mul multiplier 1.5x                         test_npu_golden.py -k Mul            6 of 6
  LUT built with the zero point's sign wrong  test_npu_golden.py -k lut            20 of 20
  block multipliers floored, not rounded      test_npu_conv.py -k blockwise        2 of 13
  Gemm bias scaled by beta, not beta/|alpha|  test_npu_conv.py -k gemm             10 of 29 (the |alpha| != 1 cases)
  Conv/Gemm bias re-expressed by floor        test_npu_conv.py -k "gemm or blockwise or transpose"  4 of 62
  Softmax exp table of 1.01 s_x               test_npu_norm.py -k softmax          16 of 16
  LogSoftmax log2 multiplier 1 % off          test_npu_norm.py -k softmax          8 of 16 (the LogSoftmax cases)
  Pad value coded in the input's encoding     test_npu_movement.py -k pad          3 of 27 (where they differ)
  AveragePool divides by count + 1            test_npu_pool.py -k pools            24 of 40 (the MaxPools pass)
  LayerNorm epsilon not in Q8 units           test_npu_norm.py -k norm             8 of 19
  LayerNorm bias units without sqrt(n)        test_npu_norm.py -k norm             13 of 19 (the others have no bias)
  PRelu's two multipliers swapped             test_npu_arith.py -k prelu           3 of 3
  Div shift D 4 bits short                    test_npu_arith.py -k div             4 of 16
  ReduceSum divided by 2                      test_npu_pool.py -k reductions       6 of 32 (the ReduceSum cases)
  re-encoding multipliers 1 % off             test_npu_movement.py -k "movers or concat or gather"  27 of 28
  Resize linear's Q20 weights truncated       test_npu_movement.py -k resize_linear  1 of 14 (the 16-bit align_corners
                                                                                    case added for it; 0 before)
  (N1) multipliers truncated, not rounded     test_npu_golden.py                   0 of 38: a multiplier 2^-31 too
      small moves an output only where it lies within 2^-31 of a rounding boundary; none of these does.
Before the golden model derived its own parameters, the first three left all 32 tests of
test_npu_golden.py passing.
"""

import dataclasses

import numpy as np
import pytest
from onnx import helper

from qnn_build.runtime.binding import Model

from . import golden
from . import golden_conv as gc
from . import golden_movement as gmv
from . import golden_norm as gn
from . import golden_pool as gp
from .harness import F, build_lib, codes, enc_of, make_model, node_of, q_in, quantized, uniform


def _mult_times(mult: int, shift: int, factor: float) -> tuple[int, int]:
    m = int(round(mult * factor))
    return (m // 2, shift - 1) if m >= 1 << 31 else (m, shift)


def add_swapped_scales(tmp_path, rng):
    path = make_model(tmp_path, [helper.make_node("Add", ["a", "b"], ["y"])], [("a", F, [4, 30]), ("b", F, [4, 30])],
                      ["y"])
    graph = quantized(path, "w8a8", {"a": (-1.0, 1.0), "b": (-4.0, 3.0), "y": (-4.0, 4.0)})
    feeds = {"a": uniform(rng, [4, 30], -1, 1), "b": uniform(rng, [4, 30], -4, 3)}
    expected = golden.add_sub(q_in(graph, feeds, "a"), q_in(graph, feeds, "b"), enc_of(graph, "a"),
                              enc_of(graph, "b"), enc_of(graph, "y"))

    def mutate(p):
        p["npu_mult"][:2], p["npu_shift"][:2] = p["npu_mult"][1::-1], p["npu_shift"][1::-1]
    return graph, "Add", feeds, expected, mutate


def mul_multiplier_too_large(tmp_path, rng):
    path = make_model(tmp_path, [helper.make_node("Mul", ["a", "b"], ["y"])], [("a", F, [4, 30]), ("b", F, [4, 30])],
                      ["y"])
    graph = quantized(path, "w8a16", {"a": (-1.0, 2.0), "b": (-3.0, 3.0), "y": (-6.0, 6.0)})
    feeds = {"a": uniform(rng, [4, 30], -1, 2), "b": uniform(rng, [4, 30], -3, 3)}
    expected = golden.mul(q_in(graph, feeds, "a"), q_in(graph, feeds, "b"), enc_of(graph, "a"), enc_of(graph, "b"),
                          enc_of(graph, "y"))

    def mutate(p):
        p["npu_mult"][0], p["npu_shift"][0] = _mult_times(p["npu_mult"][0], p["npu_shift"][0], 1.5)
    return graph, "Mul", feeds, expected, mutate


def lut_zero_point_sign(tmp_path, rng):
    path = make_model(tmp_path, [helper.make_node("Sigmoid", ["x"], ["y"])], [("x", F, [3, 50])], ["y"])
    graph = quantized(path, "w8a8", {"x": (-3.0, 2.0), "y": (0.0, 1.0)})
    feeds = {"x": uniform(rng, [3, 50], -3, 2)}
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    expected = golden.lut(q_in(graph, feeds, "x"), ex, ey, "Sigmoid", {})

    def mutate(p):
        wrong = dataclasses.replace(ex, offsets=-ex.offsets)  # f(s (q + zp)) instead of f(s (q - zp))
        p["npu_lut"] = [int(v) for v in golden.lut_table("Sigmoid", {}, wrong, ey)]
    return graph, "Sigmoid", feeds, expected, mutate


def conv_multipliers_of_the_next_channel(tmp_path, rng):
    w = (rng.normal(0, 1, [6, 4, 3, 3]) * rng.uniform(0.2, 2, [6, 1, 1, 1])).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    path = make_model(tmp_path, [node], [("x", F, [1, 4, 6, 6])], ["y"], [("w", w)])
    graph = quantized(path, "w8a8", {"x": (-2.0, 2.0), "y": (-12.0, 12.0)})
    feeds = {"x": uniform(rng, [1, 4, 6, 6], -2, 2)}
    conv = node_of(graph, "Conv")
    expected = gc.conv(q_in(graph, feeds, "x"), enc_of(graph, "x"), graph.tensor("w").const, enc_of(graph, "w"),
                       enc_of(graph, "y"), golden.onnx_attrs(conv))

    def mutate(p):
        p["npu_mult"], p["npu_shift"] = p["npu_mult"][1:] + p["npu_mult"][:1], p["npu_shift"][1:] + p["npu_shift"][:1]
    return graph, "Conv", feeds, expected, mutate


def softmax_exp_table_scale(tmp_path, rng):
    path = make_model(tmp_path, [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [("x", F, [3, 20])], ["y"])
    graph = quantized(path, "w8a8", {"x": (-4.0, 4.0), "y": (0.0, 1.0)})
    feeds = {"x": uniform(rng, [3, 20], -4, 4)}
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    expected = gn.softmax(q_in(graph, feeds, "x"), ex, ey, -1)

    def mutate(p):  # the table of exp(-s_x d) built with 1.1 s_x
        p["npu_exp_lut"] = [int(v) for v in gn.exp_table(dataclasses.replace(ex, scales=ex.scales * 1.1))]
    return graph, "Softmax", feeds, expected, mutate


def pad_value_in_the_input_encoding(tmp_path, rng):
    node = helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode="constant")
    path = make_model(tmp_path, [node], [("x", F, [2, 3, 4])], ["y"],
                      [("pads", np.array([0, 1, 1, 0, 1, 1], np.int64)), ("value", np.array(0.75, np.float32))])
    graph = quantized(path, "w8a8", {"x": (-2.0, 3.0)}, pins={"y": (-2.5, 1.5)})
    feeds = {"x": uniform(rng, [2, 3, 4], -2, 3)}
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    expected = gmv.pad_constant(q_in(graph, feeds, "x"), ex, ey, [0, 1, 1, 0, 1, 1], graph.tensor("value"))

    def mutate(p):
        p["npu_pad_value"] = gmv.value_code(0.75, ex)
    return graph, "Pad", feeds, expected, mutate


def average_pool_count_off_by_one(tmp_path, rng):
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    path = make_model(tmp_path, [helper.make_node("AveragePool", ["x"], ["y"], **attrs)], [("x", F, [1, 2, 7, 8])],
                      ["y"])
    graph = quantized(path, "w8a8", {"x": (-2.0, 2.5), "y": (-1.5, 2.0)})
    feeds = {"x": uniform(rng, [1, 2, 7, 8], -2, 2.5)}
    pool = node_of(graph, "AveragePool")
    expected = gp.average_pool(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"),
                               graph.tensor("y").shape, golden.onnx_attrs(pool))

    def mutate(p):  # M_c = s_x / (s_y (c + 1))
        p["npu_mult"], p["npu_shift"] = p["npu_mult"][1:] + p["npu_mult"][-1:], p["npu_shift"][1:] + p["npu_shift"][-1:]
    return graph, "AveragePool", feeds, expected, mutate


CASES = [add_swapped_scales, mul_multiplier_too_large, lut_zero_point_sign, conv_multipliers_of_the_next_channel,
         softmax_exp_table_scale, pad_value_in_the_input_encoding, average_pool_count_off_by_one]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_golden_catches_a_wrong_parameter(tmp_path, case):
    graph, op, feeds, expected, mutate = case(tmp_path, np.random.default_rng(7))
    lib = build_lib(graph, tmp_path, "right")
    model = Model(lib, backend="npu", keep_tensors=True)
    model.run(feeds)
    np.testing.assert_array_equal(codes(model, "y"), np.asarray(expected).reshape(codes(model, "y").shape))
    mutate(node_of(graph, op).attrs)
    lib = build_lib(graph, tmp_path, "mutated")
    model = Model(lib, backend="npu", keep_tensors=True)
    model.run(feeds)
    got = codes(model, "y")
    assert not np.array_equal(got, np.asarray(expected).reshape(got.shape)), "the golden model missed the mutation"


def test_golden_modules_import_nothing_from_the_package():
    """Independence: the golden model reads no code of the package (encodings come in as data)."""
    import ast
    from pathlib import Path
    for path in Path(__file__).parent.glob("golden*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(n.startswith("qnn_build") for n in names), f"{path.name} imports {names}"
