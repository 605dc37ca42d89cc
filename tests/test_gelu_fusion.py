"""The exact GELU exported node by node becomes one Gelu (qnn_build/ir/gelu_fusion.py): its float
outputs still match onnxruntime on the source model, and quantized only the Gelu's output is
encoded. Anything that is not exactly that pattern is left as it is."""

import json
import math

import numpy as np
import pytest
from float_check import convert_and_compare
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert

RNG = np.random.default_rng(0)
SHAPE = [2, 8]
SQRT2 = math.sqrt(2.0)


def gelu_model(shape: str, divisor=SQRT2, half=0.5, erf_read_twice=False):
    """x -> Relu -> GELU (in one of the exported shapes) -> y; the Relu keeps x an activation."""
    consts = {"sqrt2": divisor, "inv_sqrt2": 1.0 / divisor, "one": 1.0, "half": half}
    scale = (helper.make_node("Div", ["x", "sqrt2"], ["d"]) if shape != "mul_scale"
             else helper.make_node("Mul", ["inv_sqrt2", "x"], ["d"]))
    nodes = [helper.make_node("Relu", ["in"], ["x"]), scale, helper.make_node("Erf", ["d"], ["e"])]
    if shape == "hugging_face":
        nodes += [helper.make_node("Mul", ["x", "half"], ["h"]), helper.make_node("Add", ["e", "one"], ["a"]),
                  helper.make_node("Mul", ["h", "a"], ["y"])]
    else:
        nodes += [helper.make_node("Add", ["one", "e"], ["a"]), helper.make_node("Mul", ["a", "x"], ["m"]),
                  helper.make_node("Mul", ["m", "half"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)]
    if erf_read_twice:
        nodes.append(helper.make_node("Neg", ["e"], ["n"]))
        outputs.append(helper.make_tensor_value_info("n", TensorProto.FLOAT, SHAPE))
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items()]
    graph = helper.make_graph(nodes, "gelu", [helper.make_tensor_value_info("in", TensorProto.FLOAT, SHAPE)],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = [
    # (id, export shape, divisor, half, Erf output read twice, fused)
    ("torch_div", "torch", math.sqrt(2.0), 0.5, False, True),
    ("torch_mul_by_inverse", "mul_scale", math.sqrt(2.0), 0.5, False, True),
    ("hugging_face", "hugging_face", math.sqrt(2.0), 0.5, False, True),
    ("another_divisor_not_fused", "torch", 2.0, 0.5, False, False),
    ("another_half_not_fused", "torch", math.sqrt(2.0), 0.25, False, False),
    ("erf_read_twice_not_fused", "torch", math.sqrt(2.0), 0.5, True, False),
]


@pytest.mark.parametrize("shape,divisor,half,erf_read_twice,fused", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gelu_fusion(tmp_path, shape, divisor, half, erf_read_twice, fused):
    x = (RNG.standard_normal(SHAPE) * 3).astype(np.float32)
    desc = convert_and_compare(gelu_model(shape, divisor, half, erf_read_twice), tmp_path, {"in": x}, tol=1e-6)
    assert ("Gelu" in desc["ops"] and "Erf" not in desc["ops"]) == fused, desc["ops"]

    path = tmp_path / "model.onnx"
    np.savez(tmp_path / "calibration.npz", **{"in": (RNG.standard_normal((16, *SHAPE)) * 3).astype(np.float32)})
    convert(path, tmp_path / "w8a8", precision="w8a8", calibration=tmp_path / "calibration.npz")
    encoded = json.loads((tmp_path / "w8a8/model.encodings.json").read_text())["activation_encodings"]
    assert ({"d", "e", "a"} & set(encoded) == set()) == fused, sorted(encoded)
