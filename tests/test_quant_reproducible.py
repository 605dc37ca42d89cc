"""A quantized model's accuracy is reproducible: two conversions give the same bytes, and a shipped
model built by hand with the CLI (the commands of the README, no config files) gives the same
artifacts and the same test.json figures as the SCons build of its spec."""

import json
import shutil

import pytest
from cli_util import qnn_build
from test_scons_support import REPO, build, edit

MODEL = "digits_cnn"
PRECISIONS = ("w8a8", "w4a16")  # w4a16: 4-bit packed, block-wise weights as well


def step(*args, cwd):
    r = qnn_build(*args, "-q", cwd=cwd)
    assert r.returncode == 0, f"qnn-build {' '.join(map(str, args))}:\n{r.stderr}"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The repo's SConstruct and configs with one shipped model at two quantized precisions, built by
    scons, then by hand in hand/<precision>/."""
    root = tmp_path_factory.mktemp("repro") / "zoo"
    root.mkdir()
    shutil.copy(REPO / "SConstruct", root)
    shutil.copytree(REPO / "configs", root / "configs")
    shutil.copytree(REPO / "models" / MODEL, root / "models" / MODEL)
    shutil.copy(REPO / "models" / f"{MODEL}.yaml", root / "models")
    edit(root / "models" / f"{MODEL}.yaml", "precisions: [fp32, fp16, w8a8, w8a16, w16a16, w4a8, w4a16]",
         f"precisions: [{', '.join(PRECISIONS)}]")
    build(root, "-j2")
    data = f"models/{MODEL}"
    step("reference", f"{data}/model.onnx", "--input-dim", "image", "1,1,8,8", "--data", f"{data}/test.npz",
              "-o", "hand/reference.npz", cwd=root)
    for precision in PRECISIONS:
        hand = f"hand/{precision}"
        for out in (hand, f"{hand}-again"):
            step("convert", f"{data}/model.onnx", "--input-dim", "image", "1,1,8,8", "--precision", precision,
                      "--calibration", f"{data}/calibration.npz", "--weight-rounding", "gptq", "-o", out, cwd=root)
        step("model-lib", "--cpp", f"{hand}/model.cpp", "--bin", f"{hand}/model.bin", "-o",
                  f"{hand}/libmodel.so", cwd=root)
        for backend in ("cpu", "npu"):
            step("test", "--model", f"{hand}/libmodel.so", "--backend", backend, "--reference",
                      "hand/reference.npz", "--data", f"{data}/test.npz", "--labels", "labels", "-o",
                      f"{hand}/test-{backend}.json", cwd=root)
    return root


ARTIFACTS = ("model.cpp", "model.bin", "model.encodings.json")


@pytest.mark.parametrize("precision", PRECISIONS)
def test_two_conversions_write_the_same_bytes(project, precision):
    for name in ARTIFACTS:
        assert (project / f"hand/{precision}/{name}").read_bytes() == \
            (project / f"hand/{precision}-again/{name}").read_bytes(), name


@pytest.mark.parametrize("precision", PRECISIONS)
def test_by_hand_artifacts_equal_the_scons_builds(project, precision):
    for name in ARTIFACTS:
        assert (project / f"hand/{precision}/{name}").read_bytes() == \
            (project / f"out/{MODEL}/{precision}/{name}").read_bytes(), name


@pytest.mark.parametrize("backend", ["cpu", "npu"])
@pytest.mark.parametrize("precision", PRECISIONS)
def test_by_hand_accuracy_equals_the_scons_builds(project, precision, backend):
    hand = json.loads((project / f"hand/{precision}/test-{backend}.json").read_text())
    scons = json.loads((project / f"out/{MODEL}/{precision}/{backend}/test.json").read_text())
    assert hand["samples"] == scons["samples"] > 0
    assert hand["outputs"] == scons["outputs"]  # every figure, to the last digit written
    assert scons["outputs"]["logits"]["sqnr_db"] > 10  # a real quantized model, not an empty comparison
