import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(1)
x = (rng.standard_normal((2, 3, 5)) * 3).astype(np.float32)
xp = (rng.random((2, 3, 5)) + 0.1).astype(np.float32)
# Sigmoid's far negative tail: results from 2e-35 to 1e-4, where onnxruntime's float32 Sigmoid is
# accurate to about 1e-7 absolute, not relative (the PP-OCRv4 detector's output lives there).
x_tail = np.linspace(-80, -9, 2 * 3 * 64, dtype=np.float32).reshape(2, 3, 64)

CASES = [
    OpCase("Relu", {"x": x}),
    OpCase("LeakyRelu", {"x": x}, {"alpha": 0.2}),
    OpCase("Elu", {"x": x}, {"alpha": 0.7}),
    OpCase("Clip", {"x": x}, consts={"lo": np.float32(-1), "hi": np.float32(2)}, id="clip_11"),
    OpCase("Clip", {"x": x}, {"min": -0.5, "max": 0.5}, opset=10, id="clip_6"),
    OpCase("Clip", {"x": x}, consts={"hi": np.float32(2)}, input_order=["x", "", "hi"], id="clip_max_only"),
    OpCase("Sigmoid", {"x": x}),
    OpCase("Sigmoid", {"x": x_tail}, rtol=1e-6, atol=0, reference="float64", id="sigmoid_negative_tail_relative"),
    OpCase("HardSigmoid", {"x": x}, {"alpha": 0.3, "beta": 0.4}),
    OpCase("HardSwish", {"x": x}),
    OpCase("Tanh", {"x": x}),
    OpCase("Erf", {"x": x}),
    OpCase("Gelu", {"x": x}, opset=20, id="gelu"),
    OpCase("Gelu", {"x": x}, {"approximate": "tanh"}, opset=20, id="gelu_tanh"),
    OpCase("Softplus", {"x": x}),
    OpCase("Sqrt", {"x": xp}),
    OpCase("Exp", {"x": x}),
    OpCase("Log", {"x": xp}),
    OpCase("Neg", {"x": x}),
    OpCase("Abs", {"x": x}),
    OpCase("Reciprocal", {"x": xp}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_activation(case):
    check_op(case)
