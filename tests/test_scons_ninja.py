"""`scons --ninja` writes build.ninja; `ninja` then rebuilds with the same dependencies as SCons."""

import os
import subprocess

import numpy as np
from test_scons_support import build, edit, ninja_steps, write_classifier, write_project


def ninja(root):
    import ninja as ninja_package

    binary = os.path.join(ninja_package.BIN_DIR, "ninja")
    result = subprocess.run([binary], cwd=root, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return ninja_steps(result.stdout)


def test_ninja_rebuilds_what_scons_would(tmp_path):
    root = write_project(tmp_path / "zoo")
    first = build(root, "--ninja")
    assert (root / "build.ninja").is_file()
    assert sorted(ninja_steps(first.stdout)) == sorted([
        "runtime x86_64-linux", "convert adder fp32", "model-lib adder fp32", "context-binary adder fp32 cpu",
        "reference adder", "test adder fp32 cpu", "convert adder w8a8", "model-lib adder w8a8",
        "context-binary adder w8a8 cpu", "context-binary adder w8a8 npu", "test adder w8a8 cpu",
        "test adder w8a8 npu", "convert classifier fp32", "model-lib classifier fp32",
        "context-binary classifier fp32 cpu", "reference classifier", "test classifier fp32 cpu"])
    assert ninja(root) == []

    # A spec key: ninja reruns scons (the spec is a dependency of build.ninja), which rewrites the one
    # test config that changed; only that test reruns.
    edit(root / "models/adder.yaml", "thresholds: {cosine: 0.999}", "thresholds: {cosine: 0.99}")
    assert ninja(root) == ["test adder fp32 cpu"]
    assert ninja(root) == []

    # Test data: the reference and the test of that model.
    data = dict(np.load(root / "models/classifier/test.npz"))
    data["features"][0] += 1
    np.savez(root / "models/classifier/test.npz", **data)
    assert sorted(ninja(root)) == ["reference classifier", "test classifier fp32 cpu"]
    assert ninja(root) == []

    # The source model: its whole chain; a model library whose inputs did not change stays put.
    write_classifier(root / "models", seed=5)
    assert sorted(ninja(root)) == ["context-binary classifier fp32 cpu", "convert classifier fp32",
                                   "model-lib classifier fp32", "reference classifier", "test classifier fp32 cpu"]
    assert ninja(root) == []
