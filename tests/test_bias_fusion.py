"""MatMul by a constant weight + Add of a constant bias over the last dim becomes one Gemm with an
int32 bias (qnn_build/ir/bias_fusion.py); anything else is left as it is."""

import json

import numpy as np
import pytest
from float_check import convert_and_compare
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert

RNG = np.random.default_rng(0)
W = RNG.standard_normal((8, 6)).astype(np.float32)


def model(x_shape, bias_shape, bias_first=False, second_reader=False):
    bias = RNG.standard_normal(bias_shape).astype(np.float32)
    add_inputs = ["b", "mm"] if bias_first else ["mm", "b"]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", add_inputs, ["y"])]
    mm_shape = [*x_shape[:-1], W.shape[1]]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, np.broadcast_shapes(mm_shape, bias_shape))]
    if second_reader:
        nodes.append(helper.make_node("Relu", ["mm"], ["r"]))
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, mm_shape))
    graph = helper.make_graph(nodes, "mm_bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              outputs, [numpy_helper.from_array(W, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = [
    # (id, x shape, bias shape, bias first, MatMul read twice, fused)
    ("2d", [5, 8], [6], False, False, True),
    ("3d_rows_folded", [2, 5, 8], [6], False, False, True),
    ("bias_first_broadcast_1x1xN", [2, 5, 8], [1, 1, 6], True, False, True),
    ("bias_over_rows_not_fused", [5, 8], [5, 1], False, False, False),
    ("matmul_read_twice_not_fused", [5, 8], [6], False, True, False),
]


@pytest.mark.parametrize("x_shape,bias_shape,bias_first,second_reader,fused", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_matmul_bias_fusion(tmp_path, x_shape, bias_shape, bias_first, second_reader, fused):
    onnx_model = model(x_shape, bias_shape, bias_first, second_reader)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    desc = convert_and_compare(onnx_model, tmp_path, {"x": x}, tol=1e-5)
    assert ("Gemm" in desc["ops"] and "Add" not in desc["ops"]) == fused, desc["ops"]

    path = tmp_path / "model.onnx"
    np.savez(tmp_path / "calibration.npz", x=RNG.standard_normal((16, *x_shape)).astype(np.float32))

    convert(path, tmp_path / "w8a8", precision="w8a8", calibration=tmp_path / "calibration.npz")
    params = json.loads((tmp_path / "w8a8/model.encodings.json").read_text())["param_encodings"]
    bias_bits = {e["bitwidth"] for name, entries in params.items() if name.endswith("_bias") for e in entries}
    assert bias_bits == ({32} if fused else set())
