"""An `onnx.backend.base.Backend` over the real pipeline: convert -> model-lib -> cpu runtime.

Used by the conformance tests (onnx's BackendTest), by any test that wants "run this ONNX model
through qnn-build", and by bench/bench_cpu.py. Each prepared model is converted and compiled in its
own temporary directory.
"""

import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnx.backend.base as base

from qnn_build.convert import convert
from qnn_build.runtime import load
from qnn_build.toolchain import build_model_lib


class QnnbRep(base.BackendRep):
    """A converted, compiled, loaded model. Inputs that qnn-build needs at convert time (shapes, axes,
    pads, sizes: `_PARAMETER_POSITIONS`) are pinned to the values given at run, as `--input-value`
    does, and the first run converts; every other input, integer and bool ones included, is fed to
    the runtime. `ops` counts the converted graph's nodes by op: empty when convert folded the whole
    graph to constants and the runtime computes nothing."""

    def __init__(self, model: onnx.ModelProto, backend: str, threads: int, input_dims=None, input_values=None):
        self._onnx = model
        self._backend, self._threads = backend, threads
        self._dims, self._values = input_dims, dict(input_values or {})
        self._tmp = None  # the library lives there; removed with this object
        self._pinned_from_data: dict | None = None
        self.model = None
        self.ops: dict[str, int] = {}
        names = {i.name for i in model.graph.initializer}
        self._graph_inputs = [i for i in model.graph.input if i.name not in names and i.name not in self._values]
        params = _parameter_inputs(model)
        self._data_inputs = [i.name for i in self._graph_inputs if i.name not in params]
        if len(self._data_inputs) == len(self._graph_inputs):
            self._build({})

    def _build(self, pinned: dict) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="qnnb-backend-")
        d = Path(self._tmp.name)
        src = d / "model.onnx"
        onnx.save(self._onnx, str(src))
        self.ops = convert(src, d, input_dims=self._dims, input_values={**self._values, **pinned})["ops"]
        lib = build_model_lib(d / "model.cpp", d / "model.bin", d / "libmodel.so")
        self.model = load(lib, backend=self._backend, threads=self._threads)
        self._pinned_from_data = pinned

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            feeds = {info.name: x for info, x in zip(self._graph_inputs, inputs)}
        pinned = {n: np.asarray(feeds.pop(n)) for n in list(feeds) if n not in self._data_inputs}
        if self.model is None or not _same_values(pinned, self._pinned_from_data):
            self._build(pinned)
        outs = self.model.run(feeds)
        return base.namedtupledict("Outputs", list(outs))(*outs.values())


class QnnbBackend(base.Backend):
    @classmethod
    def prepare(cls, model, device="CPU", backend="cpu", threads=1, input_dims=None, input_values=None, **kwargs):
        if not isinstance(model, onnx.ModelProto):
            model = onnx.load(str(model))
        return QnnbRep(model, backend, threads, input_dims, input_values)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


# Inputs that qnn-build needs at convert time (shapes, axes, pads, scales, sizes), by op and input index.
_REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")
_PARAMETER_POSITIONS = {"Resize": (1, 2, 3), "Upsample": (1,), "Pad": (1, 2, 3), "Reshape": (1,), "Expand": (1,),
                        "Tile": (1,), "Slice": (1, 2, 3, 4), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,),
                        "LSTM": (4,), "GRU": (4,), "RNN": (4,), "TopK": (1,), "CumSum": (1,), "Trilu": (1,),
                        "OneHot": (1,), **{op: (1,) for op in _REDUCTIONS}}


def _parameter_inputs(model: onnx.ModelProto) -> set[str]:
    names = set()
    for node in model.graph.node:
        for k in _PARAMETER_POSITIONS.get(node.op_type, ()):
            if k < len(node.input) and node.input[k]:
                names.add(node.input[k])
    return names


def _same_values(a: dict, b: dict | None) -> bool:
    return b is not None and a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def run_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray], **kwargs) -> dict[str, np.ndarray]:
    """Convenience for tests: the outputs of `model` on our cpu backend."""
    rep = QnnbBackend.prepare(model, **kwargs)
    return dict(rep.run(feeds)._asdict())


prepare = QnnbBackend.prepare
run_model = QnnbBackend.run_model
supports_device = QnnbBackend.supports_device
