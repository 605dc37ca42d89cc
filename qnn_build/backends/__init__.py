"""Backends: each one module implementing the contract of contract.py. Every module of this package
is imported here and each named Backend subclass in it registered once, so adding a backend is adding
its module (and its configs/backends/<name>.yaml). The steps (context-binary, net-run, test), the SCons
tool and the spec checks ask a backend through it and never branch on a backend's name. Adding one:
docs/backends.md.

    contract   Backend, Session, Placement: the questions every backend answers
    native     what cpu and npu share: our C/C++ runtime (qnn_build/runtime)
    cpu, npu   the two backends of our runtime
    htp        Qualcomm's QNN HTP through onnxruntime-qnn (qnn_build/htp, docs/htp.md)
"""

import importlib
import pkgutil

from ..errors import QnnBuildError
from .contract import CONTEXT_INPUTS, Backend, Placement, Session


def _registered() -> dict[str, Backend]:
    """One instance of every Backend subclass with a name in this package's modules, by name."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    found, classes = {}, list(Backend.__subclasses__())
    while classes:
        cls = classes.pop()
        classes += cls.__subclasses__()
        if cls.name:  # NativeBackend, the shared base of cpu and npu, has none
            found[cls.name] = cls()
    return dict(sorted(found.items()))


BACKENDS: dict[str, Backend] = _registered()


def get_backend(name: str) -> Backend:
    """The backend called `name`; an unknown name lists the known ones."""
    if name not in BACKENDS:
        raise QnnBuildError(f"unknown backend '{name}' (known: {', '.join(BACKENDS)})")
    return BACKENDS[name]


def describe_context(path) -> tuple[Backend, dict]:
    """The backend whose context `path` is, and its description of it (`qnn-build context-info`):
    the first backend that recognizes the file describes it."""
    for backend in BACKENDS.values():
        info = backend.describe_context(path)
        if info is not None:
            return backend, info
    raise QnnBuildError(f"{path}: not a context binary (none of the backends {', '.join(BACKENDS)} recognizes it)")


__all__ = ["BACKENDS", "CONTEXT_INPUTS", "Backend", "Placement", "Session", "describe_context", "get_backend"]
