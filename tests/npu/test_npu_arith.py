"""The npu's Div, Min, Max, Where, PRelu and Pow kernels (and an 8-bit activation with a one-element
constant) (docs/npu.md (N30)-(N33)) against the NumPy golden model (tests/npu/golden_arith.py),
exactly (0 LSB), on randomized one-op graphs; and the same graphs on the cpu float simulation within
one output step."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from context.util import prepared_entries
from qnn_build.runtime.binding import Model

from . import golden
from . import golden_arith as gm
from .harness import F, check, enc_of, make_model, q_in, quantized, uniform


# ---- (N30)-(N33) elementwise -------------------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
@pytest.mark.parametrize("const_b", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_div(tmp_path, precision, const_b, seed):
    rng = np.random.default_rng(seed + 10 * const_b)
    b_val = rng.uniform(0.5, 3.0, [1, 4]).astype(np.float32) * np.array([1, -1, 1, -1], np.float32)
    node = helper.make_node("Div", ["a", "b"], ["y"])
    inputs = [("a", F, [3, 4])] + ([] if const_b else [("b", F, [3, 1])])
    path = make_model(tmp_path, [node], inputs, ["y"], [("b", b_val)] if const_b else [])
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "b": (0.0, 2.0), "y": (-4.0, 6.0)}, rng=rng)
    feeds = {"a": uniform(rng, [3, 4], -2, 3)}
    if not const_b:
        feeds["b"] = np.array([[0.0], [0.5], [1.7]], np.float32)  # a zero divisor saturates
    qa = q_in(graph, feeds, "a")
    tb = graph.tensor("b")
    qb = tb.const.astype(np.int64) if const_b else q_in(graph, feeds, "b")
    expected = gm.div(qa, qb, enc_of(graph, "a"), tb.encoding, enc_of(graph, "y"))
    # the cpu simulation divides by zero into +-inf/nan; compare where the divisor is nonzero
    check(tmp_path, graph, feeds, {"y": expected}, f"div{precision}{const_b}{seed}",
          cpu_tolerance=1 if const_b else None)


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
@pytest.mark.parametrize("op", ["Min", "Max"])
@pytest.mark.parametrize("const_b", [False, True])
def test_min_max(tmp_path, op, precision, const_b):
    rng = np.random.default_rng(len(op) + const_b)
    b_val = rng.uniform(-1, 1, [4]).astype(np.float32)
    node = helper.make_node(op, ["a", "b"], ["y"])
    inputs = [("a", F, [2, 3, 4])] + ([] if const_b else [("b", F, [3, 1])])
    path = make_model(tmp_path, [node], inputs, ["y"], [("b", b_val)] if const_b else [])
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "b": (-1.0, 4.0), "y": (-1.5, 2.5)})
    feeds = {"a": uniform(rng, [2, 3, 4], -2, 3)}
    if not const_b:
        feeds["b"] = uniform(rng, [3, 1], -1, 4)
    tb = graph.tensor("b")
    qb = tb.const.astype(np.int64) if const_b else q_in(graph, feeds, "b")
    expected = gm.min_max(q_in(graph, feeds, "a"), qb, enc_of(graph, "a"), tb.encoding, enc_of(graph, "y"), op == "Max")
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}{const_b}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max"])
@pytest.mark.parametrize("const_first", [False, True])
def test_one_element_constant_operand(tmp_path, op, precision, const_first):
    """An activation with a one-element constant (x + 1, x / 1.41): at 8 bits a table of the
    activation's code, the same integers as the element loops."""
    rng = np.random.default_rng(len(op) + 2 * const_first)
    c_val = np.array([1.3 if op != "Max" else 0.4], np.float32).reshape([1, 1] if const_first else [])
    names = ["c", "a"] if const_first else ["a", "c"]
    path = make_model(tmp_path, [helper.make_node(op, names, ["y"])], [("a", F, [3, 2, 50])], ["y"], [("c", c_val)])
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "y": (-4.0, 6.0)}, rng=rng)
    feeds = {"a": uniform(rng, [3, 2, 50], -2.5, 3.5)}
    qa, tc = q_in(graph, feeds, "a"), graph.tensor("c")
    qc = tc.const.astype(np.int64).reshape(-1)  # 1-D: the golden model's requantize wants arrays
    operands = (qc, qa, tc.encoding, enc_of(graph, "a")) if const_first else (qa, qc, enc_of(graph, "a"), tc.encoding)
    if op in ("Add", "Sub"):
        expected = golden.add_sub(*operands, enc_of(graph, "y"), subtract=op == "Sub")
    elif op == "Mul":
        expected = golden.mul(*operands, enc_of(graph, "y"))
    elif op == "Div":
        expected = gm.div(*operands, enc_of(graph, "y"))
    else:
        expected = gm.min_max(*operands, enc_of(graph, "y"), True)
    check(tmp_path, graph, feeds, {"y": np.broadcast_to(expected, [3, 2, 50])}, f"{op}{precision}{const_first}")


# (a shape, b shape, which is a constant): rows of 1024 elements or more where one operand holds one
# value per row (a per-channel bias or scale, an SE block's gate) take a table per row at 8 bits
# (the lookup 64 codes a step with AVX-512 VBMI); the tails (1200, 1089 elements) and a batch of
# two rows per channel included.
BROADCAST_ROWS = [
    ("Add", [1, 3, 20, 60], [1, 3, 1, 1], "b"),
    ("Sub", [1, 3, 1, 1], [1, 3, 20, 60], "a"),
    ("Mul", [1, 3, 1, 1], [1, 3, 20, 60], "a"),
    ("Mul", [2, 3, 33, 33], [2, 3, 1, 1], None),
    ("Add", [2, 4, 32, 32], [1, 4, 1, 1], None),
    # two activations of one shape: the 8-bit loop's AVX-512 form, 8 elements a step and a tail
    ("Add", [1, 3, 20, 61], [1, 3, 20, 61], None),
    ("Sub", [5, 203], [5, 203], None),
    ("Mul", [3, 7, 45], [3, 7, 45], None),
]


# Add/Sub of an 8-bit activation and a 16-bit constant outside the row tables (a bias over heads
# [1, 32, 8, 16] + [8, 16], a position embedding, a constant along a short row or across rows):
# each term split at 2^t by code and by constant element (prepared arrays 3 and 4), the same bytes
# (contiguous rows 8 elements a step on AVX-512).
CONST_TERMS = [
    ("Add", [1, 32, 8, 16], [8, 16], "b"),
    ("Sub", [32, 128], [1, 32, 128], "a"),
    ("Sub", [2, 5, 7], [5, 1], "b"),
    ("Add", [3, 1], [3, 40], "a"),
    ("Add", [2, 3, 21], [3, 21], "b"),  # AVX-512: 7 steps of 8 and a tail of 7
]


def check_binary(tmp_path, op, a_shape, b_shape, const, precision, tag):
    """Add/Sub/Mul of a and b (`const`: which is a constant) against the golden model; the lib's tag."""
    rng = np.random.default_rng(len(a_shape) + len(op) + sum(b_shape))
    shapes = {"a": a_shape, "b": b_shape}
    inits = [(const, uniform(rng, shapes[const], -1.5, 1.5))] if const else []
    inputs = [(n, F, shapes[n]) for n in ("a", "b") if n != const]
    path = make_model(tmp_path, [helper.make_node(op, ["a", "b"], ["y"])], inputs, ["y"], inits)
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "b": (-1.5, 1.5), "y": (-4.0, 6.0)}, rng=rng)
    feeds = {n: uniform(rng, shapes[n], -2.5, 3.5) for n in ("a", "b") if n != const}
    q = {n: graph.tensor(n).const.astype(np.int64) if n == const else q_in(graph, feeds, n) for n in ("a", "b")}
    encs = (enc_of(graph, "a"), enc_of(graph, "b"), enc_of(graph, "y"))
    if op == "Mul":
        expected = golden.mul(q["a"], q["b"], *encs)
    else:
        expected = golden.add_sub(q["a"], q["b"], *encs, subtract=op == "Sub")
    check(tmp_path, graph, feeds, {"y": expected}, tag)
    return tmp_path / tag / f"lib{tag}.so"


@pytest.mark.parametrize("op,a_shape,b_shape,const", BROADCAST_ROWS + CONST_TERMS)
def test_broadcast_rows(tmp_path, op, a_shape, b_shape, const):
    lib = check_binary(tmp_path, op, a_shape, b_shape, const, "w8a8", f"rows{op}{const}{len(a_shape)}")
    if [op, a_shape, b_shape, const] in map(list, CONST_TERMS):  # the path taken: its constant's terms
        ctx = Model(lib, backend="npu").context_binary()
        numel = int(np.prod(a_shape if const == "a" else b_shape))
        assert any(slot == 4 and size == 16 * numel for _, slot, _, size in prepared_entries(ctx))


# Add/Sub/Mul of 16-bit operands outside the 8-bit forms (an LSTM's gate sum and products, a
# 16-bit constant on either side, broadcast columns and rows): the terms in int64, one 128-bit
# product per element; the same bytes.
WIDE_TERMS = [
    ("Add", [1, 512], [1, 512], None, "w8a16"),
    ("Sub", [2, 3, 40], [3, 1], None, "w16a16"),
    ("Add", [4, 33], [33], "b", "w16a16"),
    ("Sub", [5, 1], [5, 7], "a", "w8a16"),
    ("Mul", [1, 128], [1, 128], None, "w8a16"),
    ("Mul", [3, 20], [20], "b", "w8a8"),
]


@pytest.mark.parametrize("op,a_shape,b_shape,const,precision", WIDE_TERMS)
def test_wide_add_sub_mul(tmp_path, op, a_shape, b_shape, const, precision):
    check_binary(tmp_path, op, a_shape, b_shape, const, precision, f"wide{op}{const}{precision}")


# A constant branch becomes its code in the output's encoding, clamped: -inf (an attention mask's; its
# constant's encoding holds it as the extreme code) and 100 (past y's range) give y's lowest and
# highest code, on the cpu simulation too.
@pytest.mark.parametrize("precision,value,const_first", [("w8a8", -0.75, False), ("w8a16", -0.75, False),
                                                          ("w8a8", -np.inf, True), ("w8a16", -np.inf, False),
                                                          ("w8a8", 100.0, True)])
def test_where(tmp_path, precision, value, const_first):
    rng = np.random.default_rng(2)
    node = helper.make_node("Where", ["c", "b", "a"] if const_first else ["c", "a", "b"], ["y"])
    path = make_model(tmp_path, [node], [("c", TensorProto.BOOL, [2, 1, 4]), ("a", F, [2, 3, 4])], ["y"],
                      [("b", np.array(value, np.float32))])
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "y": (-1.0, 2.0)})
    feeds = {"c": rng.random([2, 1, 4]) < 0.5, "a": uniform(rng, [2, 3, 4], -2, 3)}
    tb = graph.tensor("b")
    operands = [(q_in(graph, feeds, "a"), enc_of(graph, "a")), (tb.const.astype(np.int64), tb.encoding)]
    (qa, ea), (qb, eb) = operands[::-1] if const_first else operands
    expected = gm.where(feeds["c"], qa, qb, ea, eb, enc_of(graph, "y"))
    if np.isinf(value) or value > 2.0:
        constant_code = 0 if value < 0 else 2 ** enc_of(graph, "y").bitwidth - 1
        assert np.all(np.broadcast_to(expected, (2, 3, 4))[np.broadcast_to(feeds["c"] == const_first, (2, 3, 4))]
                      == constant_code)
    check(tmp_path, graph, feeds, {"y": expected}, f"where{precision}{value}{const_first}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
def test_prelu(tmp_path, precision):
    rng = np.random.default_rng(4)
    slope = np.array([0.1, 0.25, -0.5], np.float32).reshape(3, 1, 1)
    node = helper.make_node("PRelu", ["x", "slope"], ["y"])
    path = make_model(tmp_path, [node], [("x", F, [2, 3, 4, 5])], ["y"], [("slope", slope)])
    graph = quantized(path, precision, {"x": (-3.0, 3.0), "y": (-1.0, 3.0)})
    feeds = {"x": uniform(rng, [2, 3, 4, 5], -3, 3)}
    ts = graph.tensor("slope")
    expected = gm.prelu(q_in(graph, feeds, "x"), ts.const.astype(np.int64), enc_of(graph, "x"), ts.encoding,
                        enc_of(graph, "y"))
    check(tmp_path, graph, feeds, {"y": expected}, f"prelu{precision}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
@pytest.mark.parametrize("exponent", [2.0, 0.5, 1.0])
def test_pow(tmp_path, precision, exponent):
    rng = np.random.default_rng(int(exponent * 2))
    node = helper.make_node("Pow", ["x", "e"], ["y"])
    path = make_model(tmp_path, [node], [("x", F, [3, 7])], ["y"], [("e", np.array(exponent, np.float32))])
    y_range = {2.0: (0.0, 9.0), 0.5: (0.0, 2.0), 1.0: (-1.0, 3.0)}[exponent]
    graph = quantized(path, precision, {"x": (-2.0, 3.0), "y": y_range})
    feeds = {"x": uniform(rng, [3, 7], -2, 3)}
    expected = gm.pow_(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), exponent)
    check(tmp_path, graph, feeds, {"y": expected}, f"pow{precision}{exponent}",
          cpu_tolerance=None if exponent == 0.5 else 1)  # cpu: sqrt of a negative is nan
