"""Editing qnn-build itself rebuilds exactly the steps it affects.

The sources live in the installed package, so these tests build with a copy of the package first
on PYTHONPATH (the build passes PYTHONPATH on to the steps) and edit the copy:

- a converter source (the tool-version stamp of convert changes): every conversion reruns; the
  model libraries, references and tests do not, as the converted files come out the same;
- a runtime C++ source (a source of the runtime step): the runtime and the tests rerun, not the
  conversions. The edit is always the same, so the runtime's object cache serves later sessions.
"""

import os
import shutil
from pathlib import Path

import pytest
from test_scons_support import build, steps, write_project

import qnn_build


@pytest.fixture
def zoo_with_package_copy(tmp_path):
    package = tmp_path / "site" / "qnn_build"
    shutil.copytree(Path(qnn_build.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(package.parent), os.environ.get("PYTHONPATH")]))}
    root = write_project(tmp_path / "zoo")
    first = build(root, "-j2", env=env)
    assert len(steps(first)) == 17
    return root, package, env


def test_a_converter_edit_reruns_the_conversions_only(zoo_with_package_copy):
    root, package, env = zoo_with_package_copy
    with open(package / "ops" / "__init__.py", "a") as f:
        f.write("\n# an edit of the converter\n")
    assert sorted(steps(build(root, env=env))) == ["convert adder fp32", "convert adder w8a8",
                                                   "convert classifier fp32"]
    assert steps(build(root, env=env)) == []


def test_a_runtime_source_edit_reruns_the_runtime_and_the_tests(zoo_with_package_copy):
    root, package, env = zoo_with_package_copy
    with open(package / "runtime" / "core" / "api.cpp", "a") as f:
        f.write('\nextern "C" int qnnb_scons_test_marker(void) { return 42; }\n')
    assert sorted(steps(build(root, env=env))) == ["context-binary adder fp32 cpu", "context-binary adder w8a8 cpu",
                                                   "context-binary adder w8a8 npu",
                                                   "context-binary classifier fp32 cpu", "runtime x86_64-linux",
                                                   "test adder fp32 cpu", "test adder w8a8 cpu", "test adder w8a8 npu",
                                                   "test classifier fp32 cpu"]
    assert steps(build(root, env=env)) == []
