import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def runtime_built():
    """Build the runtime once per session (content-keyed cache), before any test needs it."""
    from qnn_build.toolchain import build_runtime
    path = build_runtime()
    os.environ.setdefault("QNNB_RUNTIME", str(path))
    return path
