import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape):
    return np.round(rng.standard_normal(shape), 1).astype(np.float32)  # rounded: equal values happen


def b(*shape):
    return rng.random(shape) > 0.5


CASES = [
    OpCase("Equal", {"a": r(3, 4), "b": r(4)}, id="equal_float_broadcast"),
    OpCase("Equal", {"a": rng.integers(0, 3, (2, 5)), "b": rng.integers(0, 3, (2, 5))}, id="equal_int64"),
    OpCase("Equal", {"a": b(4, 3), "b": b(1, 3)}, opset=19, id="equal_bool"),
    OpCase("Greater", {"a": r(2, 3, 4), "b": r(2, 1, 4)}, id="greater"),
    OpCase("Greater", {"a": rng.integers(-3, 3, (7,)).astype(np.int32)}, consts={"b": np.array(0, np.int32)},
           id="greater_int32_scalar"),
    OpCase("GreaterOrEqual", {"a": r(5, 6), "b": r(5, 6)}, id="greater_or_equal"),
    OpCase("Less", {"a": r(3, 1), "b": r(1, 7)}, id="less_outer"),
    OpCase("LessOrEqual", {"a": rng.integers(0, 4, (17,)), "b": rng.integers(0, 4, (17,))}, id="less_or_equal_int64"),
    OpCase("And", {"a": b(3, 4), "b": b(3, 4)}, id="and"),
    OpCase("Or", {"a": b(3, 4), "b": b(4)}, id="or_broadcast"),
    OpCase("Xor", {"a": b(2, 3, 4), "b": b(2, 1, 4)}, id="xor"),
    OpCase("Not", {"a": b(5, 7)}, id="not"),
    OpCase("IsNaN", {"x": np.array([[0.0, np.nan, -np.inf, np.inf], [-0.0, 1e-45, -np.nan, 3.5]], np.float32)},
           id="is_nan_specials"),
    OpCase("IsNaN", {"x": np.where(rng.random((3, 17)) > 0.7, np.nan, r(3, 17)).astype(np.float32)}, opset=20,
           id="is_nan_masked"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_logic(case):
    check_op(case)
