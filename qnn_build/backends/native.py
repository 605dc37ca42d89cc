"""The backends of our own C/C++ runtime (libqnnb, qnn_build/runtime/): cpu and npu share everything
but their name and the ops they run. A context step reads the host's model library, composes and
finalizes it on the backend and serializes it (model.ctx + model.ctx.json, docs/context-binary.md);
a placement is a machine target (configs/targets/), the host or one we cross-build for."""

from pathlib import Path

from ..errors import QnnBuildError
from ..runtime.binding import Model
from ..runtime.context import build_context, sidecar_path
from ..runtime.ctx_info import read_info
from ..toolchain import get_target
from .contract import Backend, Placement


class NativeBackend(Backend):
    def placement(self, where: str | None) -> Placement:
        target = get_target(where)
        return Placement(self.name, target.name, runs_here=target.is_host, machine=target.name)

    def context_files(self, output) -> list[Path]:
        return [Path(output), sidecar_path(output)]

    def build_context(self, source, output, *, placement: Placement, precision: str | None = None,
                      runtime: str | None = None) -> dict:
        info = build_context(source, output, backend=self.name, runtime=runtime, target=placement.name,
                             precision=precision)
        summary = (f"{info['file_bytes']} bytes; activation arena {info['arena_bytes']} bytes (all tensors apart: "
                   f"{info['tensor_bytes']}); kernels' scratch {info['scratch_bytes']} bytes")
        return {**info, "summary": summary}

    def describe_context(self, path) -> dict | None:
        return read_info(path)  # a model.ctx of either of our backends: its header names which

    def load(self, model=None, *, context=None, threads: int = 1, runtime: str | None = None,
             precision: str | None = None, placement: Placement | None = None) -> Model:
        if (model is None) == (context is None):
            raise QnnBuildError("load a model library or a context binary (one of them)")
        return Model(model, backend=self.name, threads=threads, runtime=runtime, context=context,
                     precision=precision if model is not None else None)
