"""com.microsoft fusions (ir/contrib_ops.py): each row one contrib node, converted through the real
pipeline and compared with onnxruntime, which implements them."""

from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_backend import run_onnx
from qnn_build.errors import ConvertError

rng = np.random.default_rng(0)


def r(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@dataclass
class ContribCase:
    op: str
    inputs: dict                 # graph inputs
    consts: dict = field(default_factory=dict)
    order: list | None = None    # the node's inputs ("" for absent); default: inputs then consts
    outputs: list = field(default_factory=lambda: ["y0"])  # the node's outputs ("" for absent)
    attrs: dict = field(default_factory=dict)
    opset: int = 14
    id: str = ""


def make(case: ContribCase) -> onnx.ModelProto:
    order = case.order or list(case.inputs) + list(case.consts)
    node = helper.make_node(case.op, order, case.outputs, domain="com.microsoft", name="contrib", **case.attrs)
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in case.inputs.items()]
    first = next(iter(case.inputs.values()))
    shape = list(first.shape[:-1]) + [None] if case.op.endswith("Attention") else list(first.shape)
    g_outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o in case.outputs if o]
    inits = [numpy_helper.from_array(v, k) for k, v in case.consts.items()]
    graph = helper.make_graph([node], "contrib", ins, g_outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset),
                                                   helper.make_opsetid("com.microsoft", 1)])


B, S, L, H, N = 2, 5, 7, 16, 4
mask = np.ones((B, S), np.int32)
mask[1, 3:] = 0
kv_mask = np.ones((B, L), np.int32)
kv_mask[0, 5:] = 0

CASES = [
    ContribCase("Gelu", {"x": r(3, 17, scale=3)}, id="gelu"),
    ContribCase("BiasGelu", {"x": r(3, 17)}, consts={"b": r(17)}, id="bias_gelu"),
    ContribCase("FastGelu", {"x": r(2, 3, 8, scale=3)}, consts={"b": r(8)}, id="fast_gelu_bias"),
    ContribCase("FastGelu", {"x": r(4, 9, scale=3)}, opset=20, id="fast_gelu_opset20"),
    ContribCase("SkipLayerNormalization", {"x": r(B, S, H), "skip": r(B, S, H)},
                consts={"gamma": r(H), "beta": r(H)}, attrs={"epsilon": 1e-5}, id="skip_layernorm"),
    ContribCase("SkipLayerNormalization", {"x": r(B, S, H), "skip": r(B, S, H)},
                consts={"gamma": r(H), "beta": r(H), "bias": r(H)}, outputs=["y0", "", "", "y3"],
                order=["x", "skip", "gamma", "beta", "bias"], id="skip_layernorm_bias_and_sum"),
    ContribCase("Attention", {"x": r(B, S, H)}, consts={"w": r(H, 3 * H, scale=0.3), "b": r(3 * H)},
                attrs={"num_heads": N}, id="attention"),
    ContribCase("Attention", {"x": r(B, S, H), "mask": mask}, consts={"w": r(H, 3 * H, scale=0.3),
                                                                        "b": r(3 * H)},
                order=["x", "w", "b", "mask"], attrs={"num_heads": N}, opset=12, id="attention_mask_opset12"),
    ContribCase("MultiHeadAttention", {"q": r(B, S, H), "k": r(B, L, H), "v": r(B, L, 8)},
                attrs={"num_heads": 2}, id="mha"),
    ContribCase("MultiHeadAttention", {"q": r(B, S, H), "k": r(B, L, H), "v": r(B, L, H), "m": kv_mask},
                consts={"bias": r(3 * H)}, order=["q", "k", "v", "bias", "m"], attrs={"num_heads": N},
                id="mha_bias_key_padding_mask"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_contrib(case):
    model = make(case)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, case.inputs)
    got = run_onnx(model, case.inputs)
    for name, exp in zip([o for o in case.outputs if o], expected):
        np.testing.assert_allclose(got[name], exp, rtol=1e-4, atol=1e-5, err_msg=f"{case.id} output {name}")


def test_unsupported_contrib_node_is_refused_by_name():
    case = ContribCase("Attention", {"x": r(B, S, H)}, consts={"w": r(H, 3 * H), "b": r(3 * H)},
                       attrs={"num_heads": N, "unidirectional": 1})
    with pytest.raises(ConvertError, match=r"node 'contrib' \(com.microsoft.Attention\): unsupported: unidirectional"):
        run_onnx(make(case), case.inputs)
