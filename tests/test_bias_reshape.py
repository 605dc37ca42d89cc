"""A bias added after a Reshape that splits a MatMul's columns moves before it and joins the product
as a Gemm (qnn_build/ir/bias_reshape.py): the float outputs still match onnxruntime on the source
model and no Add is left; a bias along the rows, or a Reshape that mixes rows and columns, is left."""

import numpy as np
import pytest
from float_check import convert_and_compare, float_model
from onnx import helper

RNG = np.random.default_rng(0)
X_SHAPE = [1, 6, 8]


def product_reshape_bias(y_shape, bias_shape):
    inits = {"w": RNG.normal(0, 0.5, [8, 12]), "shape": np.array(y_shape), "b": RNG.normal(0, 1, bias_shape)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"]),
             helper.make_node("Reshape", ["p", "shape"], ["r"]),
             helper.make_node("Add", ["r", "b"], ["y"])]
    return float_model(nodes, X_SHAPE, ["y"], inits)


CASES = [
    # (id, Y shape, bias shape, moved)
    ("heads", [1, 6, 3, 4], [3, 4], True),
    ("heads_bias_per_head_dim", [1, 6, 3, 4], [4], True),
    ("rows_kept", [6, 12], [12], True),
    ("along_rows_left", [1, 6, 3, 4], [6, 1, 1], False),
    ("rows_and_columns_mixed_left", [1, 3, 24], [24], False),
]


@pytest.mark.parametrize("y_shape,bias_shape,moved", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bias_moves_before_reshape(tmp_path, y_shape, bias_shape, moved):
    x = RNG.standard_normal(X_SHAPE).astype(np.float32)
    desc = convert_and_compare(product_reshape_bias(y_shape, bias_shape), tmp_path, {"x": x}, tol=1e-5)
    assert ("Add" not in desc["ops"]) == moved, desc["ops"]
