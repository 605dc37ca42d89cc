"""The htp in the zoo build: `htp@<soc>` targets make one QNN context binary per (model, precision,
SoC) from model.qdq.onnx, tested in HTP emulation beside the npu, incremental like every step,
reproducible at any path, packed into the release with their sidecars, and shown by `scons report`.

One test, so that the build it checks runs once (under xdist, tests sharing a module fixture on two
workers would build it twice: minutes of HTP preparation and emulation)."""

import json
import tarfile
from pathlib import Path

import pytest
from test_report import check_the_htp_rows
from test_scons_support import artifacts, build, steps, write_project

pytestmark = pytest.mark.needs_qnn

SPEC = """\
source: adder/model.onnx
inputs:
  x: [1, 3]
precisions: [fp16, w8a8]
targets: [npu, htp@x-elite, htp@8-elite]
calibration: adder/calibration.npz
test:
  data: adder/test.npz
  htp_samples: 4
  precision_thresholds:
    w8a8: {top1: null}
"""


def project(root: Path) -> Path:
    write_project(root, models=("adder",))
    (root / "models" / "adder.yaml").write_text(SPEC)
    return root


def test_two_socs_are_built_tested_released_and_reproducible(tmp_path):
    root = project(tmp_path / "zoo")
    result = build(root, "-j2", "release", "report")
    every_soc_gets_a_tested_context_and_a_second_build_does_nothing(root, result)
    check_the_htp_rows(root, "w8a8", "x-elite", samples=4)  # the report shows them (tests/test_report.py)
    the_release_carries_contexts_sidecars_and_the_qnn_version(root)
    two_clean_builds_at_other_paths_give_the_same_bytes(root, tmp_path)


def every_soc_gets_a_tested_context_and_a_second_build_does_nothing(root, result):
    ran = steps(result)
    for precision in ("fp16", "w8a8"):
        for soc, chip in (("x-elite", "SC8380XP"), ("8-elite", "SM8750")):
            folder = root / "out" / "adder" / precision / f"htp@{soc}"
            assert f"context-binary adder {precision} htp@{soc}" in ran and f"test adder {precision} htp@{soc}" in ran
            sidecar = json.loads((folder / "model.htp.json").read_text())
            assert sidecar["chip"] == chip and sidecar["precision"] == precision
            test = json.loads((folder / "test.json").read_text())
            assert test["passed"] and test["samples"] == 4 and test["target"] == soc
            assert "agreement" in test  # beside the npu of the same precision
    assert (root / "out" / "adder" / "w8a8" / "model.qdq.onnx").is_file()
    table = result.stdout[result.stdout.index("model "):]
    assert "htp@x-elite" in table and " LSB" in table
    before = artifacts(root)
    assert steps(build(root, "-j2", "release")) == []
    assert artifacts(root) == before


def the_release_carries_contexts_sidecars_and_the_qnn_version(root):
    archive = next((root / "out" / "release").glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile(next(n for n in names if n.endswith("MANIFEST.json"))))
    for kind in ("model.htp.onnx", "model.htp.bin", "model.htp.json"):
        assert any(n.endswith(f"adder/w8a8/x86_64-linux/htp@8-elite/{kind}") for n in names), kind
    assert any(n.endswith("adder/w8a8/x86_64-linux/model.qdq.onnx") for n in names)
    context = manifest["models"]["adder"]["builds"]["w8a8/x86_64-linux"]["contexts"]["htp@x-elite"]
    assert [c.rsplit("/", 1)[1] for c in context] == ["model.htp.onnx", "model.htp.bin", "model.htp.json"]
    with tarfile.open(archive) as tar:
        sidecar = json.load(tar.extractfile(next(n for n in names if n.endswith(context[2]))))
    assert sidecar["qnn_version"] == "2.51.0" and sidecar["chip"] == "SC8380XP" and sidecar["htp_arch"] == 73


def two_clean_builds_at_other_paths_give_the_same_bytes(root, tmp_path):
    other = project(tmp_path / "somewhere" / "else")
    build(other, "-j2", "release")

    def outputs(base):
        keep = ("model.htp.onnx", "model.htp.bin", "model.htp.json", "model.qdq.onnx", "test.json")
        return {p.relative_to(base).as_posix(): p.read_bytes() for p in (base / "out").rglob("*")
                if p.name in keep or p.name.endswith(".tar.gz")}

    mine, theirs = outputs(root), outputs(other)
    assert mine.keys() == theirs.keys() and len(mine) > 10
    different = [name for name in mine if mine[name] != theirs[name]]
    assert different == [], different
