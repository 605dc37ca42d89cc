"""An interrupted build leaves no partial artifact that the next build takes as up to date.

A `slow` model (a chain of many Add nodes: its model.cpp takes a while to compile) is rebuilt with
new weights; the scons process group is killed while the compiler of its model library runs. SCons
removes a target before building it, the steps write every file atomically (temp file + rename), and
a build that dies records nothing, so the next build must redo the step and end with the new model."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_scons_support import build, scons_command, steps, write_project

NODES = 3000  # model.cpp is tables: this compiles long enough to be caught mid-step


def slow_model(offset: float) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    inits, nodes, prev = [], [], "x"
    for i in range(NODES):
        inits.append(numpy_helper.from_array(np.full((8,), offset + 1e-3 * i, np.float32), f"b{i}"))
        out = "y" if i == NODES - 1 else f"h{i}"
        nodes.append(helper.make_node("Add", [prev, f"b{i}"], [out], name=f"add{i}"))
        prev = out
    return helper.make_model(helper.make_graph(nodes, "slow", [x], [y], inits), opset_imports=[helper.make_opsetid("", 17)])


def write_slow(models, offset):
    (models / "slow").mkdir(parents=True, exist_ok=True)
    onnx.save(slow_model(offset), models / "slow/model.onnx")
    if not (models / "slow/test.npz").exists():
        np.savez(models / "slow/test.npz", x=np.linspace(0, 1, 32, dtype=np.float32).reshape(4, 1, 8))
        (models / "slow.yaml").write_text("source: slow/model.onnx\ninputs: {x: [1, 8]}\ntest: {data: slow/test.npz}\n")


def compiler_running(group: int, timeout: float = 60.0) -> None:
    """Wait until a compiler proper (cc1plus) runs in the process group: the step is mid-compile."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:  # the process ended
                continue
            name, _, rest = text.partition("(")[2].rpartition(")")
            if name == "cc1plus" and int(rest.split()[2]) == group:  # after the name: state, ppid, pgrp
                return
        time.sleep(0.005)
    raise AssertionError("no compiler ran in the build's process group")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_build_killed_mid_step_is_redone(tmp_path, sig):
    root = write_project(tmp_path / "zoo", models=("adder",))
    write_slow(root / "models", offset=0.0)
    build(root, "-j2")
    write_slow(root / "models", offset=1.0)

    scons = subprocess.Popen([*scons_command(), "-Q"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    seen = []
    for line in scons.stdout:
        seen.append(line)
        if "model-lib slow fp32" in line:
            compiler_running(scons.pid)
            break
    assert scons.poll() is None, "".join(seen)  # still compiling: the kill lands mid-step
    os.killpg(scons.pid, sig)
    scons.communicate(timeout=60)

    lib = root / "out/slow/fp32/libmodel.so"
    assert not lib.exists()  # removed before the step ran; never half-written
    after = build(root)
    assert "model-lib slow fp32" in steps(after)
    if sig == signal.SIGINT:  # scons stopped cleanly and recorded what had finished: not redone
        assert "convert slow fp32" not in steps(after)
    result = json.loads((root / "out/slow/fp32/cpu/test.json").read_text())
    assert result["passed"]
    reference = np.load(root / "out/slow/reference.npz")["y"]
    assert reference[0, 0, 0] == pytest.approx(0.0 + NODES * 1.0 + 1e-3 * NODES * (NODES - 1) / 2, rel=1e-4)
    assert steps(build(root)) == []
