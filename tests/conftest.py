import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def runtime_built():
    """Build the runtime once per session (content-keyed cache), before any test needs it."""
    from qnn_build.toolchain import build_runtime
    path = build_runtime()
    os.environ.setdefault("QNNB_RUNTIME", str(path))
    return path


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """With `--dist loadgroup` (pyproject's addopts), the tests of a module that share one of its
    module- or session-scoped fixtures run on one xdist worker: what the fixture builds (a zoo
    conversion, a SCons project, a cluster) is made once, not on every worker its tests reach.
    Other tests are spread one by one, keeping both workers busy to the end."""
    for item in items:
        module = item.nodeid.split("::")[0]
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d[-1].baseid == module and d[-1].scope in ("module", "session") for d in defs.values()):
            item.add_marker(pytest.mark.xdist_group(module))
