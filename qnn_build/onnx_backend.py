"""An `onnx.backend.base.Backend` over the real pipeline: convert -> model-lib -> cpu runtime.

Used by the conformance tests (onnx's BackendTest) and by any test that wants "run this ONNX model
through qnn-build". Each prepared model is converted and compiled in its own temporary directory.
"""

import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnx.backend.base as base

from .convert import convert
from .runtime import load
from .toolchain import build_model_lib


class QnnbRep(base.BackendRep):
    def __init__(self, model_lib: Path, tmp: tempfile.TemporaryDirectory, backend: str, threads: int):
        self._tmp = tmp  # the library lives there; removed with this object
        self.model = load(model_lib, backend=backend, threads=threads)

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feeds = inputs
        else:
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            feeds = {info.name: x for info, x in zip(self.model.inputs, inputs)}
        outs = self.model.run(feeds)
        return base.namedtupledict("Outputs", list(outs))(*outs.values())


class QnnbBackend(base.Backend):
    @classmethod
    def prepare(cls, model, device="CPU", backend="cpu", threads=1, input_dims=None, input_values=None, **kwargs):
        tmp = tempfile.TemporaryDirectory(prefix="qnnb-backend-")
        d = Path(tmp.name)
        if isinstance(model, onnx.ModelProto):
            src = d / "model.onnx"
            onnx.save(model, str(src))
        else:
            src = Path(model)
        convert(src, d, input_dims=input_dims, input_values=input_values)
        lib = build_model_lib(d / "model.cpp", d / "model.bin", d / "libmodel.so")
        return QnnbRep(lib, tmp, backend, threads)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


def run_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray], **kwargs) -> dict[str, np.ndarray]:
    """Convenience for tests: the outputs of `model` on our cpu backend."""
    rep = QnnbBackend.prepare(model, **kwargs)
    return rep.model.run(feeds)


prepare = QnnbBackend.prepare
run_model = QnnbBackend.run_model
supports_device = QnnbBackend.supports_device
