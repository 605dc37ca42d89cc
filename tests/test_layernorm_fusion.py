"""Layer normalisation exported node by node (torch's, tf2onnx's Keras form) becomes one
LayerNormalization (qnn_build/ir/layernorm_fusion.py): its float outputs still match onnxruntime on the source model,
and quantized only the LayerNormalization's output is encoded. Anything that is not exactly that
pattern is left as it is."""

import json

import numpy as np
import pytest
from float_check import convert_and_compare
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert

RNG = np.random.default_rng(0)
SHAPE = [2, 5, 12]


def layernorm_model(axes=(-1,), square="pow", exponent=2.0, affine="both", d_read_twice=False, opset=14):
    """in -> Relu -> x - mean, / sqrt(mean of the square + eps) [* gamma] [+ beta] -> y."""
    consts = {"two": exponent, "eps": 1e-5, "gamma": RNG.uniform(0.5, 2, SHAPE[-1:]), "beta": RNG.normal(0, 1, [1])}
    mean_attrs = {"axes": list(axes)} if opset < 18 else {}
    mean_inputs = [] if opset < 18 else ["axes"]
    nodes = [helper.make_node("Relu", ["in"], ["x"]),
             helper.make_node("ReduceMean", ["x"] + mean_inputs, ["mean"], **mean_attrs),
             helper.make_node("Sub", ["x", "mean"], ["d"]),
             (helper.make_node("Pow", ["d", "two"], ["sq"]) if square == "pow"
              else helper.make_node("Mul", ["d", "d"], ["sq"])),
             helper.make_node("ReduceMean", ["sq"] + mean_inputs, ["var"], **mean_attrs),
             helper.make_node("Add", ["eps", "var"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n" if affine != "none" else "y"])]
    if affine in ("both", "scale"):
        nodes.append(helper.make_node("Mul", ["gamma", "n"], ["m" if affine == "both" else "y"]))
    if affine == "both":
        nodes.append(helper.make_node("Add", ["m", "beta"], ["y"]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)]
    if d_read_twice:
        nodes.append(helper.make_node("Neg", ["d"], ["neg"]))
        outputs.append(helper.make_tensor_value_info("neg", TensorProto.FLOAT, SHAPE))
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()]
    if opset >= 18:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    graph = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info("in", TensorProto.FLOAT, SHAPE)],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


CASES = [
    # (id, model arguments, fused)
    ("torch_last_axis", {}, True),
    ("mul_square_opset18_axes_input", {"square": "mul", "opset": 18}, True),
    ("two_trailing_axes", {"axes": (1, 2)}, True),
    ("scale_only", {"affine": "scale"}, True),
    ("no_affine", {"affine": "none"}, True),
    ("not_trailing_axis_not_fused", {"axes": (1,)}, False),
    ("fourth_power_not_fused", {"exponent": 4.0}, False),
    ("deviation_read_twice_not_fused", {"d_read_twice": True}, False),
]


@pytest.mark.parametrize("kwargs,fused", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_layernorm_fusion(tmp_path, kwargs, fused):
    x = (RNG.standard_normal(SHAPE) * 3 + 1).astype(np.float32)
    desc = convert_and_compare(layernorm_model(**kwargs), tmp_path, {"in": x}, tol=1e-4)
    assert ("LayerNormalization" in desc["ops"] and "Sqrt" not in desc["ops"]) == fused, desc["ops"]

    path = tmp_path / "model.onnx"
    np.savez(tmp_path / "calibration.npz", **{"in": (RNG.standard_normal((16, *SHAPE)) * 3).astype(np.float32)})
    convert(path, tmp_path / "w8a8", precision="w8a8", calibration=tmp_path / "calibration.npz")
    encoded = json.loads((tmp_path / "w8a8/model.encodings.json").read_text())["activation_encodings"]
    assert ({"mean", "var", "s"} & set(encoded) == set()) == fused, sorted(encoded)


def keras_model(mean_op="GlobalAveragePool", gamma_shape=(12,)):
    """tf2onnx's form: m = mean(x), r = gamma / sqrt(var + eps), y = x * r + (beta - m * r)."""
    consts = {"eps": 1e-3, "gamma": RNG.uniform(0.5, 2, gamma_shape), "beta": RNG.normal(0, 1, [12])}
    attrs = {"axes": [-1]} if mean_op == "ReduceMean" else {}
    nodes = [helper.make_node("Relu", ["in"], ["x"]),
             helper.make_node(mean_op, ["x"], ["mean"], **attrs),
             helper.make_node("Sub", ["x", "mean"], ["d"]),
             helper.make_node("Mul", ["d", "d"], ["sq"]),
             helper.make_node(mean_op, ["sq"], ["var"], **attrs),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Reciprocal", ["s"], ["rs"]),
             helper.make_node("Mul", ["rs", "gamma"], ["r"]),
             helper.make_node("Mul", ["mean", "r"], ["mr"]),
             helper.make_node("Sub", ["beta", "mr"], ["shift"]),
             helper.make_node("Mul", ["x", "r"], ["scaled"]),
             helper.make_node("Add", ["scaled", "shift"], ["y"])]
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()]
    graph = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info("in", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("mean_op,gamma_shape,fused", [("GlobalAveragePool", (12,), True),
                                                       ("ReduceMean", (12,), True),
                                                       ("GlobalAveragePool", (5, 1), False)])  # gamma along rows
def test_keras_layernorm_fusion(tmp_path, mean_op, gamma_shape, fused):
    x = (RNG.standard_normal(SHAPE) * 3 + 1).astype(np.float32)
    desc = convert_and_compare(keras_model(mean_op, gamma_shape), tmp_path, {"in": x}, tol=1e-4)
    assert ("LayerNormalization" in desc["ops"] and "Sqrt" not in desc["ops"]) == fused, desc["ops"]
