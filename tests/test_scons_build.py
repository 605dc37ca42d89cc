"""The zoo build end to end with real `scons`: what runs, what does not, what a failed test does.

Every test starts from a copy of a built fixture zoo (tests/test_scons_support.py) and counts the
steps a build runs by its progress lines (`[k/N] convert adder fp32`)."""

import json

import numpy as np
import pytest
from test_scons_support import (
    artifacts,
    build,
    built_template,
    copy_project,
    edit,
    run_scons,
    steps,
    write_classifier,
)

ALL_STEPS = {"runtime x86_64-linux", "convert adder fp32", "model-lib adder fp32", "context-binary adder fp32 cpu",
             "reference adder", "test adder fp32 cpu", "convert adder w8a8", "model-lib adder w8a8",
             "context-binary adder w8a8 cpu", "context-binary adder w8a8 npu", "test adder w8a8 cpu",
             "test adder w8a8 npu", "convert classifier fp32", "model-lib classifier fp32",
             "context-binary classifier fp32 cpu", "reference classifier", "test classifier fp32 cpu"}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return built_template(tmp_path_factory)


@pytest.fixture
def zoo(template, tmp_path):
    return copy_project(template[0], tmp_path / "zoo")


def test_first_build_runs_every_step_once_and_summarizes(template):
    root, result = template
    assert sorted(steps(result)) == sorted(ALL_STEPS)
    totals = {line.split("]")[0].split("/")[1] for line in result.stdout.splitlines() if line.startswith("[")}
    assert totals == {str(len(ALL_STEPS))}
    assert "note: adder: skipped fp32 on npu (the npu has no fp32 unit; use fp16 or a quantized precision)" \
        in result.stdout
    table = result.stdout[result.stdout.index("model "):]
    assert "adder       fp32       cpu" in table and "passed" in table
    assert "adder       w8a8       npu" in table
    for model in ("adder", "classifier"):
        for name in ("model.cpp", "model.bin", "model.json", "libmodel.so", "cpu/model.ctx", "cpu/model.ctx.json",
                     "cpu/test.json"):
            assert (root / "out" / model / "fp32" / name).is_file(), name
        assert (root / "out" / model / "reference.npz").is_file()
    assert json.loads((root / "out/adder/w8a8/npu/test.json").read_text())["passed"]
    test = json.loads((root / "out/classifier/fp32/cpu/test.json").read_text())
    assert test["passed"] and test["model"] == "classifier" and test["precision"] == "fp32"
    assert test["backend"] == "cpu" and test["target"] == "x86_64-linux" and test["samples"] == 16
    assert set(test["outputs"]["logits"]) >= {"sqnr_db", "cosine", "max_abs", "rel_err", "top1", "top1_accuracy"}
    assert json.loads((root / "out/adder/fp32/cpu/test.json").read_text())["samples"] == 8  # the spec's cap


def test_second_build_runs_nothing(zoo):
    before = artifacts(zoo)
    result = build(zoo)
    assert steps(result) == []
    assert artifacts(zoo) == before


def test_touching_inputs_without_changing_them_rebuilds_nothing(zoo):
    for path in [*(zoo / "models").rglob("*"), *(zoo / "configs").rglob("*"), zoo / "SConstruct"]:
        if path.is_file():
            path.touch()
    assert steps(build(zoo)) == []


def test_editing_thresholds_reruns_only_that_models_tests(zoo):
    before = artifacts(zoo)
    edit(zoo / "models/adder.yaml", "thresholds: {cosine: 0.999}", "thresholds: {cosine: 0.99}")
    # w8a8 sets its own cosine (precision_thresholds), so only the fp32 test's limits change.
    assert steps(build(zoo)) == ["test adder fp32 cpu"]
    after = artifacts(zoo)
    changed = {path for path in after if after[path] != before.get(path)}
    assert changed <= {"out/adder/fp32/cpu/test.config.json", "out/adder/fp32/cpu/test.json"}


def test_editing_calibration_data_reruns_no_float_step(zoo):
    """Calibration feeds only quantized conversions (and what follows them); no float step reruns."""
    calibration = np.load(zoo / "models/adder/calibration.npz")["x"]
    np.savez(zoo / "models/adder/calibration.npz", x=calibration * 1.01)
    rerun = steps(build(zoo))
    assert [step for step in rerun if "fp32" in step or "fp16" in step or step.startswith("reference")] == []
    assert rerun[0] == "convert adder w8a8"
    assert set(rerun) <= {"convert adder w8a8", "model-lib adder w8a8", "context-binary adder w8a8 cpu",
                          "context-binary adder w8a8 npu", "test adder w8a8 cpu", "test adder w8a8 npu"}


def test_editing_test_data_reruns_reference_and_test_of_that_model(zoo):
    data = dict(np.load(zoo / "models/classifier/test.npz"))
    data["features"][0] += 1
    np.savez(zoo / "models/classifier/test.npz", **data)
    assert sorted(steps(build(zoo))) == ["reference classifier", "test classifier fp32 cpu"]


def test_editing_the_source_model_reruns_that_models_chain(zoo):
    write_classifier(zoo / "models", seed=7)  # new weights, same spec
    assert sorted(steps(build(zoo))) == ["context-binary classifier fp32 cpu", "convert classifier fp32",
                                         "model-lib classifier fp32", "reference classifier",
                                         "test classifier fp32 cpu"]


def test_adding_a_spec_builds_only_the_new_model(zoo):
    write_classifier(zoo / "models", name="second")
    assert sorted(steps(build(zoo))) == ["context-binary second fp32 cpu", "convert second fp32",
                                         "model-lib second fp32", "reference second", "test second fp32 cpu"]


def test_a_failed_test_fails_the_build_keeps_its_result_and_only_it_reruns(zoo):
    edit(zoo / "models/adder.yaml", "    w8a8:", "    fp32: {sqnr_db: 300}\n    w8a8:")
    failed = run_scons(zoo, "-k")
    assert failed.returncode != 0
    assert steps(failed) == ["test adder fp32 cpu"]
    assert ("qnn-build test: error: adder fp32 cpu@x86_64-linux: output y: sqnr_db 200 is below the "
            "minimum 300") in failed.stderr
    result = json.loads((zoo / "out/adder/fp32/cpu/test.json").read_text())  # written although it failed
    assert result["passed"] is False and result["thresholds"]["sqnr_db"] == 300
    assert result["failures"] == ["output y: sqnr_db 200 is below the minimum 300"]
    assert "FAILED" in failed.stdout
    # SCons records no signature for a failed target: the next build reruns that test, and only it,
    # so the failure cannot turn into a green build by running scons twice.
    again = run_scons(zoo, "-k")
    assert again.returncode != 0 and steps(again) == ["test adder fp32 cpu"]
    edit(zoo / "models/adder.yaml", "    fp32: {sqnr_db: 300}\n", "")
    assert steps(build(zoo)) == ["test adder fp32 cpu"]
    assert steps(build(zoo)) == []


def test_aliases_build_one_model_or_all_tests(tmp_path):
    from test_scons_support import write_project

    root = write_project(tmp_path / "zoo")
    assert sorted(steps(build(root, "classifier"))) == ["context-binary classifier fp32 cpu",
                                                       "convert classifier fp32", "model-lib classifier fp32",
                                                       "reference classifier", "runtime x86_64-linux",
                                                       "test classifier fp32 cpu"]
    assert not (root / "out/adder/fp32/libmodel.so").exists()
    assert sorted(steps(build(root, "test"))) == [
        "context-binary adder fp32 cpu", "context-binary adder w8a8 cpu", "context-binary adder w8a8 npu",
        "convert adder fp32", "convert adder w8a8", "model-lib adder fp32", "model-lib adder w8a8", "reference adder",
        "test adder fp32 cpu", "test adder w8a8 cpu", "test adder w8a8 npu"]


def test_verbose_prints_the_command_lines(zoo):
    edit(zoo / "models/adder.yaml", "thresholds: {cosine: 0.999}", "thresholds: {cosine: 0.99}")
    result = build(zoo, "--verbose")
    line = next(line for line in result.stdout.splitlines() if line.startswith("[1/"))
    assert "-m qnn_build test -q --config out/adder/fp32/cpu/test.config.json" in line
    assert "--name adder --precision fp32 --target x86_64-linux -o out/adder/fp32/cpu/test.json" in line


def test_clean_removes_the_artifacts(zoo):
    build(zoo, "release")
    build(zoo, "-c")
    assert [p for p in (zoo / "out").rglob("*") if p.is_file()] == []
    assert sorted(steps(build(zoo))) == sorted(ALL_STEPS)


def test_release_packs_what_the_tests_passed(zoo):
    import tarfile

    result = build(zoo, "release")
    assert steps(result) == ["release qnn-zoo-0.1.0.tar.gz"]
    archive = zoo / "out/release/qnn-zoo-0.1.0.tar.gz"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("qnn-zoo-0.1.0/MANIFEST.json"))
    assert "qnn-zoo-0.1.0/models/adder/fp32/x86_64-linux/libadder.so" in names
    assert "qnn-zoo-0.1.0/models/classifier/fp32/x86_64-linux/test-cpu.json" in names
    assert "qnn-zoo-0.1.0/models/classifier/fp32/x86_64-linux/model-cpu.ctx" in names
    build_info = manifest["models"]["classifier"]["builds"]["fp32/x86_64-linux"]
    assert build_info["contexts"] == {"cpu": "models/classifier/fp32/x86_64-linux/model-cpu.ctx"}
    assert "qnn-zoo-0.1.0/lib/x86_64-linux/libqnnb.so" in names and "qnn-zoo-0.1.0/include/qnnb.h" in names
    assert manifest["models"]["adder"]["spec"]["path"] == "models/adder.yaml"
    assert manifest["tools"]["compiler_version"] and manifest["tools"]["onnxruntime"]
    # The released runtime's baseline and its run-time paths (tests/test_targets_portable.py runs it there).
    assert manifest["runtimes"]["x86_64-linux"] == {
        "isa": "x86-64-v3", "features": ["avx2", "fma", "f16c"],
        "dispatch": ["avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vnni", "avx512vbmi"],
        "dispatch_paths": ["npu/block_x86.cpp", "gemm/portable.cpp", "core/packed_gemm.cpp", "core/fuse.cpp",
                           "npu/code_table_x86.cpp", "npu/elementwise.cpp",
                           "npu/norm.cpp", "npu/product16.cpp"]}
    assert "qnn-zoo-0.1.0/models/adder/w8a8/x86_64-linux/test-npu.json" in names
    assert manifest["skipped"] == ["adder fp32 on npu: the npu has no fp32 unit; use fp16 or a quantized precision"]
    assert steps(build(zoo, "release")) == []
