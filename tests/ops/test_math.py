import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def ints(*shape, dtype=np.int64, lo=-20, hi=20):
    return rng.integers(lo, hi, shape).astype(dtype)


CASES = [
    OpCase("Sin", {"x": r(3, 17, scale=10)}, rtol=1e-6, atol=1e-6, id="sin"),
    OpCase("Cos", {"x": r(3, 17, scale=10)}, rtol=1e-6, atol=1e-6, id="cos"),
    OpCase("Floor", {"x": r(4, 9, scale=5)}, id="floor"),
    OpCase("Ceil", {"x": r(4, 9, scale=5)}, id="ceil"),
    OpCase("Round", {"x": np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -3.51], np.float32)}, id="round_half_even"),
    OpCase("Sign", {"x": np.array([-2.0, 0.0, 3.0, -0.0], np.float32)}, id="sign_float"),
    OpCase("Sign", {"x": ints(5, 4)}, id="sign_int64"),
    OpCase("Sign", {"x": ints(5, 4, dtype=np.int32)}, id="sign_int32"),
    OpCase("Softsign", {"x": r(2, 33)}, id="softsign"),
    OpCase("Mish", {"x": r(2, 33, scale=5)}, opset=18, id="mish"),
    OpCase("Selu", {"x": r(2, 33)}, id="selu_default"),
    OpCase("Selu", {"x": r(2, 33)}, attrs={"alpha": 2.0, "gamma": 3.0}, id="selu_params"),
    OpCase("Celu", {"x": r(2, 33)}, id="celu_default"),
    OpCase("Celu", {"x": r(2, 33)}, attrs={"alpha": 2.0}, id="celu_alpha"),
    OpCase("Mod", {"a": r(3, 5, scale=10), "b": r(5, scale=3)}, attrs={"fmod": 1}, id="mod_float_fmod"),
    OpCase("Mod", {"a": ints(3, 5), "b": ints(1, 5, lo=1, hi=7) * np.array([1, -1, 1, -1, 1])}, id="mod_int64_python"),
    OpCase("Mod", {"a": ints(3, 5, dtype=np.int32), "b": ints(3, 1, dtype=np.int32, lo=1, hi=7)}, attrs={"fmod": 1},
           id="mod_int32_c"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_math(case):
    check_op(case)
