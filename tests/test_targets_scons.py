"""The SCons build with spec targets on other machines (`cpu@aarch64-windows`): each model is
built for each named target, with that target's runtime and runner; a second build does nothing;
the release carries them all."""

import tarfile

import pytest
from test_scons_support import build, edit, steps, write_project

pytest.importorskip("ziglang")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = write_project(tmp_path_factory.mktemp("cross") / "zoo", models=("classifier",))
    edit(root / "models/classifier.yaml", "test:", "targets: [cpu, cpu@aarch64-windows]\ntest:")
    return root, build(root)


def test_each_named_target_gets_its_model_library_runtime_and_runner(project):
    root, first = project
    assert sorted(steps(first)) == sorted([
        "runtime x86_64-linux", "runtime aarch64-windows", "convert classifier fp32", "model-lib classifier fp32",
        "model-lib classifier fp32@aarch64-windows", "context-binary classifier fp32 cpu", "context-binary classifier fp32 cpu@aarch64-windows",
        "reference classifier",
        "test classifier fp32 cpu"])
    assert (root / "out/classifier/fp32/aarch64-windows/model.dll").read_bytes()[:2] == b"MZ"
    for name in ("qnnb.dll", "qnn-net-run.exe", "include/qnnb.h"):
        assert (root / "out/runtime/aarch64-windows" / name).is_file(), name
    assert (root / "out/runtime/x86_64-linux/qnn-net-run").is_file()
    # Its context binary: finalized here, loadable only on that target.
    ctx = root / "out/classifier/fp32/cpu@aarch64-windows/model.ctx"
    assert ctx.read_bytes()[64:160].rstrip(b"\0") == b"aarch64-windows+neon+dotprod"
    assert "fp32 on cpu@aarch64-windows (built for aarch64-windows; its tests run on that machine)" in first.stdout


def test_second_cross_build_runs_nothing(project):
    root, _ = project
    assert steps(build(root)) == []


def test_release_carries_every_targets_runtime_and_runner(project):
    root, _ = project
    build(root, "release")
    with tarfile.open(root / "out/release/qnn-zoo-0.1.0.tar.gz") as tar:
        names = set(tar.getnames())
    top = "qnn-zoo-0.1.0"
    assert {f"{top}/lib/aarch64-windows/qnnb.dll", f"{top}/lib/aarch64-windows/qnn-net-run.exe",
            f"{top}/lib/x86_64-linux/qnn-net-run", f"{top}/models/classifier/fp32/aarch64-windows/classifier.dll",
            f"{top}/models/classifier/fp32/x86_64-linux/libclassifier.so"} <= names
    assert any(n.startswith(f"{top}/models/classifier/fp32/aarch64-windows/") and n.endswith(".ctx") for n in names)
