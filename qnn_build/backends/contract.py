"""The backend contract: the few questions every backend answers, so that the steps (context-binary,
net-run, test), the SCons tool and the spec checks ask a backend instead of naming one.

A backend is one object (an instance of a Backend subclass) registered in backends/__init__.py.
Everything it knows is answered here; nothing outside qnn_build/backends/ branches on a backend's
name. What it supports is declared once: the precisions it runs (and why not the others) in its
configs/backends/<name>.yaml, which the spec checks read too; the ops it runs in supports_op().

    supports     unsupported_reason(precision), supports_op(op_type, precision),
                 node_refusal(node, graph, precision): the same for one node, and why not
    tests        test_settings(): its own test keys (test.<name>_samples, ...) and their defaults;
                 agrees_with(): the backend its tests compare with
    where        placement(where): what `backend@where` names (a machine target, an SoC, ...)
    finalize     context_input(precision): the artifact its context step reads;
                 context_files(output): every file that step writes (the SCons emitter asks);
                 build_context(source, output, ...): finalize and serialize
    load, run    load(model=... | context=...) -> Session; Session.run(feeds) -> outputs;
                 Session.target: where it runs (test.json's target); Session.encoding(output)
    (optional)   record_api_calls(source, folder, placement=): context-binary --qnn-saver
    describe     describe_context(path): what a context file holds, read without loading it
                 (context-info); context_rows: which of its own fields the text prints
    profile      Session.set_profiling(level), node_times_us() after each run, then
                 profile_nodes(times): profile.json's nodes

Adding a backend: docs/backends.md.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..data.model_io import IOInfo
from ..errors import QnnBuildError
from ..spec.configs import package_configs

if TYPE_CHECKING:  # the converter's package: a step that only runs a model does not load it
    from ..quant.encoding import Encoding

# The artifacts a context step can read, as the build names them.
CONTEXT_INPUTS = {
    "model-lib": "the model library (libmodel.so) of the host: convert + model-lib",
    "qdq-onnx": "the quantized model as QDQ ONNX (model.qdq.onnx): convert's graph and encodings exported",
    "source-onnx": "the float source model (.onnx) as the spec names it",
}


@dataclass(frozen=True)
class Placement:
    """What `backend@where` names: where a slot's context runs."""
    backend: str
    name: str             # the `where`: a configs/targets/ machine (cpu, npu), or what the backend places on
    runs_here: bool       # this machine loads and runs it: the build tests the slot here
    machine: str | None   # the configs/targets/ machine whose model library the slot needs (None: none)


class Session(Protocol):
    """A model loaded on a backend, ready to run: the same surface on every backend."""
    backend: str
    target: str                 # where it runs: the machine target (cpu, npu), the context's SoC (htp)
    inputs: list[IOInfo]
    outputs: list[IOInfo]
    timings: dict[str, float]   # microseconds of the load's stages ("load_us", "finalize_us", ...)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def encoding(self, name: str) -> "Encoding | None":
        """The integer encoding of output `name` as the backend computes it (run() gives it
        dequantized), for comparing in codes (LSB); None when it gives no codes (a float output, or a
        runtime that dequantizes inside)."""

    def set_profiling(self, level: str) -> None:
        """'off', 'basic' or 'detailed': at 'detailed' every run() times each node."""

    def node_times_us(self) -> np.ndarray:
        """Each node's time in the last run(), microseconds, in the order profile_nodes reads them
        (our runtime's: its schedule, Model.nodes() of NodeInfo); empty for a backend that reports its
        nodes only in profile_nodes (the htp)."""

    def profile_nodes(self, node_us: list[list[float]]) -> list[dict]:
        """profile.json's `nodes` (docs/formats.md) after the runs of a detailed profile; node_us:
        node_times_us() of each run. Our runtime: its schedule with each node's times; the htp: QNN's
        own per-node events (emulated cycles)."""

    def close(self) -> None: ...

    def __enter__(self): ...

    def __exit__(self, *exc): ...


class Backend(ABC):
    name: str = ""
    context_name: str = "model.ctx"   # the file name the build gives its context (the first of context_files)
    context_rows: tuple[str, ...] = ()  # its own fields of describe_context() that context-info's text prints

    # ---- what it supports ----------------------------------------------------------------------

    def unsupported_reason(self, precision: str) -> str | None:
        """None when this backend runs `precision` (canonical name); else why not, for the user.
        From configs/backends/<name>.yaml, as the spec checks read it."""
        return package_configs().unsupported_reason(precision, self.name)

    def test_settings(self) -> dict:
        """Its own test settings and their defaults, e.g. {"samples": 50, "thresholds": {}}: a spec
        sets them as test.<name>_<setting> (htp_samples). From its yaml's `test`, which the spec schema
        (its test keys) and the spec checks read; a setting is a kind of the schema's $defs/backendTest."""
        return dict(package_configs().backends[self.name].get("test", {}))

    def agrees_with(self) -> str | None:
        """The backend its tests also run on the same samples, recording how the two agree (test.json
        `agreement`; the htp's: the npu): its yaml's `agree_with`, which the build reads too."""
        return package_configs().backends[self.name].get("agree_with")

    @abstractmethod
    def supports_op(self, op_type: str, precision: str) -> bool:
        """Whether a converted graph's node of `op_type` runs on this backend at `precision`."""

    def node_refusal(self, node, graph, precision: str) -> str | None:
        """Why this quantized graph's `node` (with its attributes, constants and encodings) does not
        run on this backend at `precision`, in words that follow its op type; None when it runs.
        By op type unless a backend looks closer (the npu: docs/npu.md (N42))."""
        return None if self.supports_op(node.op_type, precision) else f"{node.op_type}: no {self.name} kernel"

    # ---- where it runs -------------------------------------------------------------------------

    @abstractmethod
    def placement(self, where: str | None) -> Placement:
        """`where` of `backend@where` (None: the default) resolved, or a QnnBuildError naming the
        known places."""

    # ---- finalize ------------------------------------------------------------------------------

    def context_input(self, precision: str) -> str:
        """Which artifact (a CONTEXT_INPUTS key) the context step reads for `precision`: its yaml's
        `context_input` (default the model library), which the spec layer reads too (convert --qdq)."""
        return package_configs().backends[self.name].get("context_input", "model-lib")

    @abstractmethod
    def context_files(self, output) -> list[Path]:
        """Every file `build_context(..., output)` writes; the first is `output` itself, the one
        net-run and test load (--retrieve-context)."""

    @abstractmethod
    def build_context(self, source, output, *, placement: Placement, precision: str | None = None,
                      runtime: str | None = None) -> dict:
        """Finalize `source` (the context_input artifact) for `placement` and write context_files(output).
        precision: refuse a source converted at another one. runtime: our runtime library (cpu, npu).
        Returns a small dict describing what was written, with at least "file_bytes" and "summary"
        (one line for the user)."""

    def record_api_calls(self, source, folder, *, placement: Placement) -> None:
        """`context-binary --qnn-saver DIR`: the graph of `source` as the calls a backend's own API
        would make to build it, written into `folder` (QNN's saver: the htp's). Most backends have none."""
        raise QnnBuildError(f"the {self.name} backend records no API calls (--qnn-saver is a QNN backend's)")

    @abstractmethod
    def describe_context(self, path) -> dict | None:
        """What the context file `path` holds, read without loading it (`qnn-build context-info`,
        which asks each backend in turn); None when `path` is not a context of this backend's kind.
        Fields: file, format, format_version, file_bytes, backend, target, checksum {stored, state},
        inputs and outputs [{name, dtype, shape, encoding}], and as it knows them runtime_version,
        precision, sidecar, nodes, tensors, constants, constant_bytes, ops, memory_plan; anything
        else is its own (--json shows it, the text only those named in context_rows). A damaged
        context is described with its checksum state saying so, not refused."""

    # ---- load, run, profile --------------------------------------------------------------------

    @abstractmethod
    def load(self, model=None, *, context=None, threads: int = 1, runtime: str | None = None,
             precision: str | None = None, placement: Placement | None = None) -> Session:
        """A Session from the model (the context_input artifact) or from a context (the first of
        context_files). precision: refuse a model converted at another one. placement: where it runs
        (None: the backend's own; a context made for another place is refused)."""
