"""A constant per-column scale after MatMul by a constant weight (and its bias Add) is folded into the
weight and bias (qnn_build/ir/scale_fold.py): the float outputs still match onnxruntime on the source
model and the Mul is gone; a scale along another axis, or a product read elsewhere, is left."""

import numpy as np
import pytest
from float_check import convert_and_compare, float_model
from onnx import helper

RNG = np.random.default_rng(0)
X_SHAPE = [2, 5, 8]


def scaled_product_model(scale_shape, bias=True, read_twice=False, scale_first=False):
    inits = {"w": RNG.normal(0, 0.5, [8, 6]), "b": RNG.normal(0, 1, [6]), "g": RNG.uniform(0.1, 2, scale_shape)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"])]
    if bias:
        nodes.append(helper.make_node("Add", ["b", "p"], ["t"]))
    last = "t" if bias else "p"
    nodes.append(helper.make_node("Mul", ["g", last] if scale_first else [last, "g"], ["y"]))
    outputs = ["y"]
    if read_twice:
        nodes.append(helper.make_node("Relu", [last], ["r"]))
        outputs.append("r")
    return float_model(nodes, X_SHAPE, outputs, inits)


CASES = [
    # (id, scale shape, bias, product read twice, scale as Mul's first operand, folded)
    ("layer_scale", [6], True, False, False, True),
    ("leading_ones_scale_first", [1, 1, 6], True, False, True, True),
    ("one_value_no_bias", [1], False, False, False, True),
    ("along_rows_not_folded", [5, 1], True, False, False, False),
    ("read_twice_not_folded", [6], True, True, False, False),
]


@pytest.mark.parametrize("scale_shape,bias,read_twice,scale_first,folded", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_scale_fold(tmp_path, scale_shape, bias, read_twice, scale_first, folded):
    x = RNG.standard_normal(X_SHAPE).astype(np.float32)
    desc = convert_and_compare(scaled_product_model(scale_shape, bias, read_twice, scale_first), tmp_path, {"x": x},
                               tol=1e-5)
    assert ("Mul" not in desc["ops"]) == folded, desc["ops"]
