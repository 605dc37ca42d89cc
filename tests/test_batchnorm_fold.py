"""BatchNormalization after a Conv, ConvTranspose or Gemm is folded into that layer's weights and bias
(qnn_build/ir/passes.py fold_batchnorm): the float outputs still match onnxruntime on the source
model and no BatchNormalization is left; one whose input something else also reads stays (as a
scale and shift)."""

import numpy as np
import pytest
from float_check import convert_and_compare, float_model
from onnx import helper

RNG = np.random.default_rng(0)


def layer_bn_model(op, x_shape, w_shape, attrs, channels, bias=True, read_twice=False):
    inits = {"w": RNG.normal(0, 0.5, w_shape), "gamma": RNG.uniform(0.5, 2, channels),
             "beta": RNG.normal(0, 1, channels), "mean": RNG.normal(0, 1, channels),
             "var": RNG.uniform(0.2, 3, channels)}
    if bias:
        inits["b"] = RNG.normal(0, 1, channels)
    nodes = [helper.make_node(op, ["x", "w"] + (["b"] if bias else []), ["t"], **attrs),
             helper.make_node("BatchNormalization", ["t", "gamma", "beta", "mean", "var"], ["y"], epsilon=1e-3)]
    outputs = ["y"]
    if read_twice:
        nodes.append(helper.make_node("Relu", ["t"], ["r"]))
        outputs.append("r")
    return float_model(nodes, x_shape, outputs, inits)


CASES = [
    # (id, op, x shape, weight shape, attrs, channels, bias, output read twice)
    ("conv", "Conv", [1, 3, 6, 6], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]}, 4, True, False),
    ("conv_transpose", "ConvTranspose", [1, 3, 5, 5], [3, 4, 2, 2], {"strides": [2, 2]}, 4, False, False),
    ("conv_transpose_grouped", "ConvTranspose", [1, 4, 5, 5], [4, 3, 3, 3], {"group": 2, "pads": [1, 1, 1, 1]},
     6, True, False),
    ("gemm", "Gemm", [2, 5], [5, 3], {}, 3, True, False),
    ("read_twice_not_folded", "ConvTranspose", [1, 3, 5, 5], [3, 4, 2, 2], {}, 4, True, True),
]


@pytest.mark.parametrize("op,x_shape,w_shape,attrs,channels,bias,read_twice", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_batchnorm_fold(tmp_path, op, x_shape, w_shape, attrs, channels, bias, read_twice):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    model = layer_bn_model(op, x_shape, w_shape, attrs, channels, bias, read_twice)
    desc = convert_and_compare(model, tmp_path, {"x": x}, tol=1e-4)
    left = "BatchNormalization" in desc["ops"] or "Mul" in desc["ops"]  # an unfolded one runs as Mul, Add
    assert left == read_twice, desc["ops"]
