"""Backends: each one module implementing the contract of contract.py, registered here. The steps
(context-binary, net-run, test), the SCons tool and the spec checks ask a backend through it and
never branch on a backend's name. Adding one: docs/backends.md.

    contract   Backend, Session, Placement: the questions every backend answers
    native     what cpu and npu share: our C/C++ runtime (qnn_build/runtime)
    cpu, npu   the two backends of our runtime
    htp        Qualcomm's QNN HTP through onnxruntime-qnn (qnn_build/htp, docs/htp.md)
"""

from ..errors import QnnBuildError
from .contract import CONTEXT_INPUTS, Backend, Placement, Session
from .cpu import Cpu
from .htp import Htp
from .npu import Npu

BACKENDS: dict[str, Backend] = {b.name: b for b in (Cpu(), Npu(), Htp())}


def get_backend(name: str) -> Backend:
    """The backend called `name`; an unknown name lists the known ones."""
    if name not in BACKENDS:
        raise QnnBuildError(f"unknown backend '{name}' (known: {', '.join(BACKENDS)})")
    return BACKENDS[name]


__all__ = ["BACKENDS", "CONTEXT_INPUTS", "Backend", "Placement", "Session", "get_backend"]
