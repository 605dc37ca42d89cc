"""The context-binary step: a model library finalized on a backend and serialized (model.ctx), with
a small JSON sidecar (model.ctx.json) stating the memory plan. Format: docs/context-binary.md."""

import json
from pathlib import Path

from ..atomic import write_bytes, write_text
from .binding import Model


def build_context(model_lib, output, backend: str = "cpu", runtime: str | None = None) -> dict:
    """Write `output` (the context binary) and `output`.json; returns the sidecar's content."""
    with Model(model_lib, backend=backend, runtime=runtime) as model:
        data = model.context_binary()
        plan = model.memory_plan()
    info = {"format_version": 1, "backend": backend, "file_bytes": len(data), **plan}
    write_bytes(Path(output), data)
    write_text(sidecar_path(output), json.dumps(info, indent=1, sort_keys=True) + "\n")
    return info


def sidecar_path(output) -> Path:
    return Path(str(output) + ".json")

