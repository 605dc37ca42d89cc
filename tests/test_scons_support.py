"""Shared by the tests/test_scons_*.py files: a tiny fixture zoo and running real `scons` on it.

The fixture zoo has two models made with onnx.helper from ops every build of the converter has
(Add, Mul, Relu): `adder` (x [n, 3] -> y, dynamic batch pinned to 1; fp32 on the cpu, w8a8 on the
cpu and the npu, fp32 on the npu skipped with a note) and `classifier` (features [n, 4] -> logits [n, 4], labels in its test data, so top-1
applies). A project is the repo's SConstruct and configs/ plus these models in a temporary folder;
the qnn_build package is the installed one. The first build of a test session is kept as a
template (shared by the xdist workers) and copied (with times) for each test, which then starts from an
up-to-date build.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from qnn_build.toolchain.build import exclusive

REPO = Path(__file__).resolve().parents[1]
STEP_LINE = re.compile(r"^\[(\d+)/(\d+)\] (\S+)(?: (.*))?$")
TIMEOUT = 900  # a full runtime compile on a busy 2-core machine takes minutes


def scons_command() -> list[str]:
    """The `scons` script of this interpreter (ninja reruns it by its argv[0], so not `python -m`)."""
    script = Path(sys.executable).parent / "scons"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "SCons"]


def adder_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    nodes = [helper.make_node("Add", ["x", "x"], ["h"], name="double"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    return helper.make_model(helper.make_graph(nodes, "adder", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])


def classifier_model(seed=0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((1, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), "b")
    x = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 4])
    nodes = [helper.make_node("Mul", ["features", "w"], ["h"], name="scale"),
             helper.make_node("Add", ["h", "b"], ["logits"], name="bias")]
    return helper.make_model(helper.make_graph(nodes, "classifier", [x], [y], [w, b]),
                             opset_imports=[helper.make_opsetid("", 17)])


ADDER_SPEC = """\
source: adder/model.onnx
inputs:
  x: [1, 3]
precisions: [fp32, w8a8]
targets: [cpu, npu]
calibration: adder/calibration.npz
test:
  data: adder/test.npz
  samples: 8
  thresholds: {cosine: 0.999}
  precision_thresholds:
    w8a8: {cosine: 0.99, top1: null}  # y is not class scores
"""

CLASSIFIER_SPEC = """\
source: classifier/model.onnx
inputs:
  features: [1, 4]
test:
  data: classifier/test.npz
  labels: labels
"""


def write_adder(models: Path, name="adder") -> None:
    rng = np.random.default_rng(1)
    (models / name).mkdir(parents=True, exist_ok=True)
    onnx.save(adder_model(), models / name / "model.onnx")
    np.savez(models / name / "test.npz", x=rng.standard_normal((10, 1, 3)).astype(np.float32))
    np.savez(models / name / "calibration.npz", x=rng.standard_normal((64, 1, 3)).astype(np.float32))
    (models / f"{name}.yaml").write_text(ADDER_SPEC.replace("adder/", f"{name}/"))


def write_classifier(models: Path, name="classifier", seed=0) -> None:
    rng = np.random.default_rng(2)
    (models / name).mkdir(parents=True, exist_ok=True)
    onnx.save(classifier_model(seed), models / name / "model.onnx")
    np.savez(models / name / "test.npz", features=rng.standard_normal((16, 1, 4)).astype(np.float32),
             labels=rng.integers(0, 4, 16))
    (models / f"{name}.yaml").write_text(CLASSIFIER_SPEC.replace("classifier/", f"{name}/"))


def write_project(root: Path, models=("adder", "classifier")) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "SConstruct", root / "SConstruct")
    shutil.copytree(REPO / "configs", root / "configs")
    for name in models:
        {"adder": write_adder, "classifier": write_classifier}[name](root / "models")
    return root


def run_scons(root: Path, *args, env=None, timeout=TIMEOUT) -> subprocess.CompletedProcess:
    environ = {**os.environ, **(env or {})}
    return subprocess.run([*scons_command(), "-Q", *map(str, args)], cwd=root, capture_output=True, text=True,
                          env=environ, timeout=timeout, check=False)


def build(root: Path, *args, env=None) -> subprocess.CompletedProcess:
    """scons that must succeed."""
    result = run_scons(root, *args, env=env)
    assert result.returncode == 0, f"scons {' '.join(map(str, args))} failed:\n{result.stdout}\n{result.stderr}"
    return result


def steps(result_or_text) -> list[str]:
    """The steps a build ran, from its progress lines: ['convert adder fp32', 'test adder fp32 cpu', ...]."""
    text = result_or_text if isinstance(result_or_text, str) else result_or_text.stdout
    found = []
    for line in text.splitlines():
        match = STEP_LINE.match(line.strip().split("\x1b[2K")[-1])
        if match:
            found.append(" ".join(part for part in match.group(3, 4) if part))
    return found


def ninja_steps(text: str) -> list[str]:
    """ninja prints `[k/N] description`; the regeneration of build.ninja is not a step."""
    found = []
    for chunk in text.replace("\x1b[2K", "\n").splitlines():
        match = STEP_LINE.match(chunk.strip())
        if match and match.group(3) != "Regenerating":
            found.append(" ".join(part for part in match.group(3, 4) if part))
    return found


def artifacts(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under out/ (but the release): relative path -> (mtime_ns, sha256)."""
    out = {}
    for path in sorted((root / "out").rglob("*")):
        if path.is_file() and "release" not in path.parts:
            out[path.relative_to(root).as_posix()] = (path.stat().st_mtime_ns,
                                                      hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def copy_project(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    return dest


_TEMPLATE: dict = {}


def built_template(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The fixture project built once per test session, by whichever xdist worker wants it first (a
    file lock, as the zoo cache's in tests/conftest.py), in the folder every worker's temporary folder
    sits in: (its folder, the first build). Tests copy it and never write into it."""
    if "root" not in _TEMPLATE:
        base = tmp_path_factory.getbasetemp()
        shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "scons-template"
        shared.mkdir(exist_ok=True)
        first = shared / "first-build.json"  # written last: its presence means the build is complete
        with exclusive(shared / ".lock"):
            if not first.is_file():
                shutil.rmtree(shared / "zoo", ignore_errors=True)  # a build interrupted before first-build.json
                result = build(write_project(shared / "zoo"), "-j2")
                first.write_text(json.dumps({"args": [str(a) for a in result.args], "returncode": result.returncode,
                                             "stdout": result.stdout, "stderr": result.stderr}))
        _TEMPLATE["result"] = subprocess.CompletedProcess(**json.loads(first.read_text()))
        _TEMPLATE["root"] = shared / "zoo"
    return _TEMPLATE["root"], _TEMPLATE["result"]


def kill_group(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
