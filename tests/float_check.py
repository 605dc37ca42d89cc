"""Helpers for the graph-pass tests: build a one-input float model, convert an ONNX model at fp32,
compile it, and check that its outputs equal onnxruntime's on the source model."""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib


def float_model(nodes, x_shape, outputs, inits: dict, opset=17):
    """A model of `nodes` reading float input "x" of `x_shape`, with initializers `inits` (float32, or
    int64 from integer arrays) and the graph outputs named by `outputs`, typed by onnx's shape inference."""
    arrays = {k: np.asarray(v) for k, v in inits.items()}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)], [],
                              [numpy_helper.from_array(v.astype(np.int64 if v.dtype.kind in "iu" else np.float32), k)
                               for k, v in arrays.items()])
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))
    inferred = {v.name: v for v in model.graph.value_info}
    model.graph.output.extend(inferred[name] for name in outputs)
    return model


def convert_and_compare(onnx_model, folder, feeds: dict, tol: float) -> dict:
    """Writes folder/model.onnx and folder/fp32/; returns convert's io description (with "ops")."""
    path = folder / "model.onnx"
    path.write_bytes(onnx_model.SerializeToString())
    desc = convert(path, folder / "fp32")
    lib = build_model_lib(folder / "fp32/model.cpp", folder / "fp32/model.bin", folder / "libfp32.so")
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    with Model(lib) as m:
        got = m.run(feeds)
    for name, value in zip([o.name for o in onnx_model.graph.output], expected):
        np.testing.assert_allclose(got[name], value, rtol=tol, atol=tol)
    return desc
