"""One helper for the graph-pass tests: convert an ONNX model at fp32, compile it, and check that its
outputs equal onnxruntime's on the source model."""

import numpy as np
import onnxruntime as ort

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib


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
