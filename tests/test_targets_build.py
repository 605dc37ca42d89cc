"""Each cross target's runtime library and native runner, built by zig for that machine: the first
tests of a session (tests/conftest.py orders them first), so that the three slowest builds of the
suite run side by side on both xdist workers at the start, while the other tests fill in, and the
target tests later find them built (the content-keyed cache, toolchain/build.py)."""

import pytest

from qnn_build.toolchain import build_runtime, get_target
from qnn_build.toolchain.targets import binary_target

pytest.importorskip("ziglang")


@pytest.mark.builds_first
@pytest.mark.parametrize("name", ["aarch64-linux", "x86_64-windows", "aarch64-windows"])
def test_the_runtime_and_runner_are_built_for_the_target(name):
    runtime = build_runtime(target=name)
    assert runtime.name == get_target(name).runtime_lib
    assert binary_target(runtime) == name
    assert binary_target(runtime.parent / get_target(name).runner) == name
