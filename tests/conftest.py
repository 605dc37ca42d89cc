import os
from collections import Counter

import pytest


@pytest.fixture(scope="session", autouse=True)
def runtime_built():
    """Build the runtime once per session (content-keyed cache), before any test needs it."""
    from qnn_build.toolchain import build_runtime
    path = build_runtime()
    os.environ.setdefault("QNNB_RUNTIME", str(path))
    return path


@pytest.fixture(scope="session")
def zoo_cache(tmp_path_factory):
    """Zoo models converted once per session (tests/targets_util.py): under the controller's base
    temp, in which every xdist worker's own base temp sits."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "zoo-cache"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture
def zoo_folder(zoo_cache, tmp_path):
    """zoo_folder(name, precision): the session's conversion of a zoo model, copied for this test."""
    from targets_util import zoo_model
    return lambda name, precision: zoo_model(name, precision, tmp_path, zoo_cache)


def pytest_configure(config):
    """`-n N` distributes with loadgroup (below) rather than xdist's default, load. Set here rather
    than in pyproject's addopts, where `--dist` would stop `-p no:xdist` runs from parsing. Workers
    parse the command line again: the controller tells them through workerinput."""
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"
    if getattr(config.option, "dist", "no") == "loadgroup":
        config.option.loadscopereorder = False  # the order is ours: pytest_collection_modifyitems
    if getattr(config, "workerinput", {}).get("loadgroup"):
        config.option.loadgroup = True
    config.addinivalue_line("markers", "builds_first: a long build that later tests wait for; run first")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["loadgroup"] = node.config.option.dist == "loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """With `--dist loadgroup` (pytest_configure above), the tests of a module that share one of its
    module- or session-scoped fixtures run on one xdist worker: what the fixture builds (a zoo
    conversion, a SCons project, a cluster) is made once, not on every worker its tests reach.
    Other tests are spread one by one, keeping both workers busy to the end.

    The order xdist hands them out in: tests marked builds_first (the cross targets' runtimes), then
    the groups, largest first (as xdist's own reorder would), then single tests in file order. xdist
    gives each worker two units at once, so the long builds run side by side from the start while
    other tests fill the gaps, instead of one after another where the first test needs them."""
    for item in items:
        module = item.nodeid.split("::")[0]
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d[-1].baseid == module and d[-1].scope in ("module", "session") for d in defs.values()):
            item.add_marker(pytest.mark.xdist_group(module))
    if getattr(config.option, "loadgroup", False):
        group = {item: (m.args or [m.kwargs.get("name")])[0] if (m := item.get_closest_marker("xdist_group")) else None
                 for item in items}
        size = Counter(group.values())
        items.sort(key=lambda item: (item.get_closest_marker("builds_first") is None,
                                     -size[group[item]] if group[item] else 0))  # stable: file order otherwise
