"""Table-driven op tests: one row builds a one-node ONNX model, runs it through the real pipeline
(convert -> model-lib -> cpu runtime) and compares with onnxruntime on the same inputs, or, where
onnxruntime's float32 is the less accurate side, with onnx's reference evaluated in float64."""

from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from qnn_build.ir.fold import infer_shapes
from qnn_build.ir.reference import run_float64
from onnx_backend import run_onnx


@dataclass
class OpCase:
    op: str
    inputs: dict            # name -> array: graph inputs
    attrs: dict = field(default_factory=dict)
    consts: dict = field(default_factory=dict)   # name -> array: initializers
    input_order: list | None = None  # the node's inputs in order ("" for absent); default inputs then consts
    n_outputs: int = 1
    opset: int = 17
    rtol: float = 1e-5
    atol: float = 1e-5
    reference: str = "onnxruntime"  # or "float64": a key of REFERENCES
    id: str = ""

    def __str__(self):
        return self.id or self.op


def make_model(case: OpCase) -> onnx.ModelProto:
    order = case.input_order or list(case.inputs) + list(case.consts)
    outs = [f"y{i}" for i in range(case.n_outputs)]
    node = helper.make_node(case.op, order, outs, name=f"{case.op.lower()}_node", **case.attrs)
    g_inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                for k, v in case.inputs.items()]
    g_outputs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outs]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in case.consts.items()]
    graph = helper.make_graph([node], "opcase", g_inputs, g_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model = infer_shapes(model)  # onnx's, plus the ops it leaves untyped (GroupNormalization)
    # Outputs must carry a type for the checker: take what inference found.
    inferred = {vi.name: vi for vi in model.graph.value_info}
    for out in model.graph.output:
        if out.name in inferred:
            out.CopyFrom(inferred[out.name])
    return model


def _onnxruntime(model: onnx.ModelProto, inputs: dict) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)


def _float64(model: onnx.ModelProto, inputs: dict) -> list[np.ndarray]:
    outputs = run_float64(model, inputs)
    return [outputs[o.name] for o in model.graph.output]


REFERENCES = {"onnxruntime": _onnxruntime, "float64": _float64}


def check_op(case: OpCase) -> None:
    model = make_model(case)
    expected = REFERENCES[case.reference](model, case.inputs)
    got = run_onnx(model, case.inputs)
    for i, exp in enumerate(expected):
        out = got[f"y{i}"]
        assert out.shape == exp.shape, f"{case}: output {i} shape {out.shape} != {exp.shape}"
        np.testing.assert_allclose(out, exp, rtol=case.rtol, atol=case.atol, err_msg=str(case))
