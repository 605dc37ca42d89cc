import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pos(*shape):
    return (rng.random(shape) + 0.5).astype(np.float32)


CASES = [
    OpCase("Add", {"a": r(2, 3, 4), "b": r(2, 3, 4)}, id="add_same"),
    OpCase("Add", {"a": r(1, 8, 5, 5)}, consts={"b": r(8, 1, 1)}, id="add_channel_bias"),
    OpCase("Sub", {"a": r(3, 1, 5), "b": r(1, 4, 1)}, id="sub_both_broadcast"),
    OpCase("Mul", {"a": r(2, 3)}, consts={"b": np.float32(2.5)}, id="mul_scalar"),
    OpCase("Div", {"a": r(4, 6), "b": pos(6)}, id="div_row"),
    OpCase("Pow", {"a": pos(3, 4)}, consts={"b": np.float32(2.0)}, id="pow_square"),
    OpCase("Pow", {"a": pos(3, 4), "b": r(3, 4)}, id="pow_tensor"),
    OpCase("Min", {"a": r(3, 4), "b": r(4), "c": r(3, 1)}, id="min_variadic"),
    OpCase("Max", {"a": r(3, 4), "b": r(3, 4)}, id="max_pair"),
    OpCase("Sum", {"a": r(2, 3), "b": r(3), "c": r(2, 3)}, id="sum_three"),
    OpCase("Sum", {"a": r(2, 3)}, id="sum_one"),
    OpCase("PRelu", {"x": r(1, 4, 3, 3)}, consts={"slope": r(4, 1, 1)}, id="prelu_channel"),
    OpCase("Where", {"c": rng.random((3, 4)) > 0.5, "a": r(3, 4), "b": r(1, 4)}, id="where"),
    OpCase("Where", {"c": rng.random((2, 1, 5)) > 0.5, "a": rng.integers(0, 9, (3, 5)), "b": rng.integers(0, 9, (1,))},
           id="where_int64"),
    OpCase("Where", {"c": rng.random((4, 4)) > 0.5, "a": rng.integers(0, 255, (4, 4), np.uint8),
                     "b": rng.integers(0, 255, (4,), np.uint8)}, id="where_uint8"),
    OpCase("Add", {"a": r(7), "b": r(7)}, opset=9, id="add_opset9"),
    # Integer arithmetic (index maths): wraps on overflow, truncates toward zero, as onnxruntime.
    OpCase("Add", {"a": np.array([[1, -5, np.iinfo(np.int64).max]]), "b": np.array([[2], [3]])}, id="add_int64_wraps"),
    OpCase("Sub", {"a": rng.integers(-50, 50, (2, 3), np.int32), "b": rng.integers(-50, 50, (3,), np.int32)},
           id="sub_int32"),
    OpCase("Mul", {"a": rng.integers(-9, 9, (4, 2))}, consts={"b": np.int64(-3)}, id="mul_int64_scalar"),
    OpCase("Div", {"a": np.array([7, -7, 7, -7, 9, 0]), "b": np.array([2, 2, -2, -2, -1, 5])}, id="div_int64_truncates"),
    OpCase("Max", {"a": rng.integers(-9, 9, (3, 4), np.int32), "b": rng.integers(-9, 9, (4,), np.int32),
                   "c": rng.integers(-9, 9, (3, 1), np.int32)}, id="max_int32_variadic"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_elementwise(case):
    check_op(case)
