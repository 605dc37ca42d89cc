"""The context-binary step: a model library finalized on a backend and serialized (model.ctx), with
a small JSON sidecar (model.ctx.json) stating the memory plan. Format: docs/context-binary.md."""

import json
from pathlib import Path

from ..atomic import write_bytes, write_text
from ..toolchain import get_target
from .binding import Model


def build_context(model_lib, output, backend: str = "cpu", runtime: str | None = None,
                  target: str | None = None, precision: str | None = None) -> dict:
    """Write `output` (the context binary) and `output`.json; returns the sidecar's content.
    `precision`: refuse a library converted at another one.

    `model_lib` is always a library of this machine: like qnn-context-binary-generator, the build
    machine finalizes the graph. For another `target` only the header differs, because what a
    context holds (schedule, plan, constants, requantization parameters) is computed the same way
    on every machine, and each kernel's packed state is prepared by the loading runtime."""
    where = get_target(target)
    with Model(model_lib, backend=backend, runtime=runtime, precision=precision) as model:
        data = model.context_binary(where.context_target)
        plan = model.memory_plan()
    info = {"format_version": 1, "backend": backend, "target": where.name, "precision": model.precision,
            "file_bytes": len(data), **plan}
    write_bytes(Path(output), data)
    write_text(sidecar_path(output), json.dumps(info, indent=1, sort_keys=True) + "\n")
    return info


def sidecar_path(output) -> Path:
    return Path(str(output) + ".json")

