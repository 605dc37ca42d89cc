"""The reference, test, runtime and release steps as command lines, and the metrics behind test.json."""

import gzip
import io
import json
import subprocess
import sys
import tarfile

import numpy as np
import onnx
import pytest
from cli_util import one_error_line, qnn_build
from onnx import TensorProto, helper

from qnn_build.report.release import pack
from qnn_build.report import metrics
from qnn_build.data.npz import save_npz

# -- metrics ---------------------------------------------------------------------------------------


def test_metrics_of_equal_outputs_hit_the_caps():
    b = np.random.default_rng(0).standard_normal((5, 1, 10)).astype(np.float32)
    m = metrics.compare(b, b)
    assert m == {"max_abs": 0.0, "rel_err": 0.0, "sqnr_db": metrics.SQNR_CAP_DB, "cosine": pytest.approx(1.0),
                 "top1": 1.0}


def test_metrics_follow_their_definitions():
    b = np.array([[[3.0, -4.0]], [[1.0, 0.0]]])
    a = b + np.array([[[0.1, 0.0]], [[0.0, -0.2]]])
    m = metrics.compare(a, b)
    assert m["max_abs"] == pytest.approx(0.2)
    assert m["rel_err"] == pytest.approx(0.2 / 4.0)
    assert m["sqnr_db"] == pytest.approx(10 * np.log10(26.0 / 0.05))
    assert m["cosine"] == pytest.approx(np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b))
    assert m["top1"] == 1.0  # both samples keep their argmax
    assert metrics.compare(np.zeros((2, 3)), np.zeros((2, 3)))["cosine"] == 1.0


def test_top1_only_for_classifier_outputs_and_accuracy_with_labels():
    scores = np.array([[[0.1, 0.9, 0.0]], [[0.8, 0.1, 0.1]], [[0.2, 0.3, 0.5]]])
    moved = scores.copy()
    moved[2, 0] = [0.9, 0.0, 0.1]
    m = metrics.compare(moved, scores, labels=np.array([1, 0, 0]))
    assert m["top1"] == pytest.approx(2 / 3)
    assert m["top1_accuracy"] == 1.0 and m["reference_top1_accuracy"] == pytest.approx(2 / 3)
    assert "top1" not in metrics.compare(np.ones((3, 1, 1, 4, 4)), np.ones((3, 1, 1, 4, 4)))  # an image


def test_thresholds_name_output_metric_value_and_limit():
    outputs = {"logits": {"sqnr_db": 41.5, "cosine": 0.99, "max_abs": 0.5, "rel_err": 0.01, "top1": 0.97}}
    failures = metrics.check(outputs, {"sqnr_db": 60, "rel_err": 0.001, "top1": 0.95, "cosine": 0.9})
    assert [metrics.describe(f) for f in failures] == [
        "output logits: sqnr_db 41.5 is below the minimum 60",
        "output logits: rel_err 0.01 is above the maximum 0.001"]
    no_classifier = metrics.check({"image": {"sqnr_db": 80.0}}, {"top1": 0.9})
    assert "no classifier output" in metrics.describe(no_classifier[0])
    assert metrics.check({"y": {"sqnr_db": float("nan")}}, {"sqnr_db": 10})  # NaN never passes


# -- reference + test commands ---------------------------------------------------------------------


def scaled_model():
    """y = x * scale, with `scale` an input the spec pins to a constant; dynamic batch."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    s = helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    nodes = [helper.make_node("Mul", ["x", "scale"], ["y"], name="mul")]
    return helper.make_model(helper.make_graph(nodes, "scaled", [x, s], [y]), opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A converted, compiled model, its test data and its reference (the build's layout, by hand)."""
    root = tmp_path_factory.mktemp("step")
    onnx.save(scaled_model(), root / "model.onnx")
    rng = np.random.default_rng(3)
    np.savez(root / "test.npz", x=rng.standard_normal((12, 1, 4)).astype(np.float32), labels=rng.integers(0, 4, 12))
    convert = {"source": "model.onnx", "input_dims": {"x": [1, 4], "scale": [1]}, "input_values": {"scale": 0.5},
               "out_nodes": [], "precision": "fp32"}
    (root / "convert.config.json").write_text(json.dumps(convert))
    assert qnn_build("convert", "--config", "convert.config.json", "-o", "m", cwd=root).returncode == 0
    assert qnn_build("model-lib", "--cpp", "m/model.cpp", "--bin", "m/model.bin", "-o", "m/libmodel.so",
                     cwd=root).returncode == 0
    reference = {k: convert[k] for k in ("source", "input_dims", "input_values", "out_nodes")}
    (root / "reference.config.json").write_text(json.dumps({**reference, "data": "test.npz", "samples": 10}))
    r = qnn_build("reference", "--config", "reference.config.json", "-o", "reference.npz", cwd=root)
    assert r.returncode == 0, r.stderr
    r = qnn_build("runtime", "-o", "runtime", cwd=root)
    assert r.returncode == 0, r.stderr
    return root


def test_reference_feeds_pinned_values_and_caps_samples(built):
    ref = np.load(built / "reference.npz")
    data = np.load(built / "test.npz")["x"]
    assert list(ref.keys()) == ["y"] and ref["y"].shape == (10, 1, 4)
    np.testing.assert_allclose(ref["y"], data[:10] * 0.5, rtol=1e-6)
    before = (built / "reference.npz").read_bytes()
    qnn_build("reference", "--config", "reference.config.json", "-o", "reference.npz", cwd=built)
    assert (built / "reference.npz").read_bytes() == before  # reproducible: no zip timestamps


def test_runtime_step_lays_out_the_runtime_folder(built):
    names = sorted(p.relative_to(built / "runtime").as_posix() for p in (built / "runtime").rglob("*") if p.is_file())
    assert names == ["include/qnnb.h", "libqnnb.so", "qnn-net-run", "runtime.key"]


def run_test(built, out, *extra):
    config = {"data": "test.npz", "labels": "labels", "samples": 10, "thresholds": {"sqnr_db": 60, "rel_err": 1e-4}}
    (built / "test.config.json").write_text(json.dumps(config))
    return qnn_build("test", "--model", "m/libmodel.so", "--runtime", "runtime/libqnnb.so", "--reference",
                     "reference.npz", "--config", "test.config.json", "--name", "scaled", "--precision", "fp32",
                     "--target", "x86_64-linux", "-o", out, *extra, cwd=built)


def test_a_passing_test_writes_a_small_stable_test_json(built):
    r = run_test(built, "pass.json")
    assert r.returncode == 0, r.stderr
    result = json.loads((built / "pass.json").read_text())
    assert set(result) == {"format_version", "model", "precision", "backend", "target", "samples", "outputs",
                           "thresholds", "passed", "failures"}
    assert result["passed"] and result["failures"] == [] and result["samples"] == 10
    assert result["outputs"]["y"]["sqnr_db"] == 200.0 and result["outputs"]["y"]["rel_err"] == 0.0
    assert "top1_accuracy" in result["outputs"]["y"]  # [1, 4] is a classifier-shaped output
    first = (built / "pass.json").read_bytes()
    assert run_test(built, "pass.json").returncode == 0 and (built / "pass.json").read_bytes() == first


def test_a_missed_threshold_writes_test_json_and_fails_with_one_line(built):
    r = run_test(built, "fail.json", "--threshold", "sqnr_db=300", "--threshold", "max_abs=0")
    line = one_error_line(r, "scaled fp32 cpu@x86_64-linux: output y: sqnr_db 200 is below the minimum 300")
    assert "and 0 more" not in line
    result = json.loads((built / "fail.json").read_text())
    assert result["passed"] is False and result["thresholds"] == {"max_abs": 0.0, "sqnr_db": 300.0}


def test_bad_test_inputs_fail_with_one_line(built, tmp_path):
    one_error_line(run_test(built, "x.json", "--threshold", "snr=3"), "unknown threshold 'snr'")
    one_error_line(qnn_build("test", "--model", built / "missing.so", "--reference", built / "reference.npz",
                             "--data", built / "test.npz", "-o", tmp_path / "t.json"), "model library not found")
    np.savez(tmp_path / "short.npz", y=np.zeros((3, 1, 4), np.float32))
    one_error_line(run_test(built, "x.json", "--reference", tmp_path / "short.npz"),
                   "holds 3 samples of 'y', the test uses 10; rebuild the reference")
    one_error_line(qnn_build("reference", "--data", built / "test.npz", "-o", tmp_path / "r.npz", tmp_path / "no.onnx"),
                   "source model not found")


# -- release ---------------------------------------------------------------------------------------


def test_pack_is_deterministic_and_carries_no_time_owner_or_name():
    files = {"b/lib.so": b"\x7fELF", "a.txt": b"hello", "MANIFEST.json": b"{}"}
    first, second = pack("zoo-1", files), pack("zoo-1", dict(reversed(list(files.items()))))
    assert first == second
    assert first[4:8] == b"\0\0\0\0" and not first[3] & 0x08  # gzip: mtime 0, no file name
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["zoo-1", "zoo-1/MANIFEST.json", "zoo-1/a.txt", "zoo-1/b", "zoo-1/b/lib.so"]
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    assert {m.name: oct(m.mode) for m in members}["zoo-1/b/lib.so"] == "0o755"
    assert gzip.decompress(first)  # a plain gzip stream


def test_release_refuses_a_failed_test(built, tmp_path):
    save_npz(tmp_path / "dummy.npz", {"a": np.zeros(1)})
    (tmp_path / "failed.json").write_text(json.dumps({"passed": False}))
    (tmp_path / "tools.json").write_text("{}")
    config = {"zoo": "z", "zoo_version": "1", "tool_versions": str(tmp_path / "tools.json"),
              "runtime": {"target": "x86_64-linux", "libraries": [str(built / "runtime/libqnnb.so")],
                          "header": str(built / "runtime/include/qnnb.h")},
              "models": [{"name": "m", "spec": str(tmp_path / "tools.json"), "source": str(built / "model.onnx"),
                          "builds": [{"precision": "fp32", "target": "x86_64-linux", "shared_lib": "libm.so",
                                      "library": str(built / "m/libmodel.so"), "model_json": str(built / "m/model.json"),
                                      "tests": {"cpu": str(tmp_path / "failed.json")}}]}]}
    (tmp_path / "release.json").write_text(json.dumps(config))
    one_error_line(qnn_build("release", "--config", tmp_path / "release.json", "-o", tmp_path / "z.tar.gz"),
                   "the test did not pass; a release holds passing builds only")
    assert not (tmp_path / "z.tar.gz").exists()


# -- tool-version stamps ---------------------------------------------------------------------------


ENTRY_MODULES = {
    "convert": ["qnn_build.cli", "qnn_build.convert"],
    "model-lib": ["qnn_build.cli", "qnn_build.toolchain"],
    "context-binary": ["qnn_build.cli", "qnn_build.backends"],
    "runtime": ["qnn_build.cli", "qnn_build.toolchain"],
    "reference": ["qnn_build.cli", "qnn_build.report.reference"],
    "test": ["qnn_build.cli", "qnn_build.report.testrun", "qnn_build.runtime.binding"],
    "release": ["qnn_build.cli", "qnn_build.report.release"],
}


@pytest.mark.parametrize("step", ENTRY_MODULES)
def test_each_steps_stamp_covers_every_module_the_step_runs(step):
    """A change to any module a step imports must change that step's tool-version stamp."""
    from pathlib import Path

    from qnn_build.sconstool.stamps import source_files

    code = (f"import sys, importlib; [importlib.import_module(m) for m in {ENTRY_MODULES[step]!r}]; "
            "print('\\n'.join(sorted(m.__file__ for n, m in sys.modules.items() "
            "if n.split('.')[0] == 'qnn_build' and getattr(m, '__file__', None))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    covered = {Path(p).resolve() for p in source_files(step)}
    assert [f for f in loaded if Path(f).resolve() not in covered] == []


def test_what_a_backend_declares_it_runs_is_in_its_steps_stamps():
    """configs/backends/htp.yaml `runs`: its package and distributions, so an upgrade of QNN reruns its steps."""
    from qnn_build.sconstool.stamps import PACKAGE, PACKAGES, source_files

    for step in ("context-binary", "test", "report"):
        assert {"onnxruntime", "onnxruntime-qnn"} <= set(PACKAGES[step])
        assert (PACKAGE / "htp" / "session.py").resolve() in {p.resolve() for p in source_files(step)}
    assert (PACKAGE / "htp" / "session.py").resolve() not in {p.resolve() for p in source_files("convert")}
