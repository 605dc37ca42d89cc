"""Bad specs stop the build before anything runs: one line naming the file and line, a non-zero exit,
and no artifact of any model touched."""

import pytest
from test_scons_support import (
    artifacts,
    built_template,
    copy_project,
    edit,
    run_scons,
    steps,
)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return built_template(tmp_path_factory)


@pytest.fixture
def zoo(template, tmp_path):
    return copy_project(template[0], tmp_path / "zoo")


def break_yaml(root):
    edit(root / "models/adder.yaml", "inputs:\n", "inputs: [\n")


def unknown_key(root):
    edit(root / "models/adder.yaml", "precisions:", "precisons:")


def wrong_type(root):
    edit(root / "models/adder.yaml", "samples: 8", "samples: many")


def missing_source(root):
    (root / "models/adder/model.onnx").unlink()


def missing_calibration(root):
    edit(root / "models/adder.yaml", "calibration: adder/calibration.npz\n", "")


def invalid_precision_target_pair(root):
    edit(root / "models/adder.yaml", "targets: [cpu, npu]", "targets: [npu]")


def duplicate_name(root):
    (root / "models/copy.yaml").write_text("name: adder\n" + (root / "models/classifier.yaml").read_text())


CASES = {
    break_yaml: "models/adder.yaml:4: YAML syntax error",
    unknown_key: "models/adder.yaml:4: precisons: unknown key; did you mean 'precisions'?",
    wrong_type: "models/adder.yaml:9: test.samples: expected an integer or null",
    missing_source: "models/adder.yaml:1: source: file not found: models/adder/model.onnx",
    missing_calibration: "models/adder.yaml:4: precisions[1]: w8a8 is quantized and needs calibration data",
    invalid_precision_target_pair: "models/adder.yaml:4: precisions[0]: fp32 cannot run on npu: the npu has no "
                                   "fp32 unit",
    duplicate_name: "models/copy.yaml:1: name: model name 'adder' is already used by models/adder.yaml:1",
}


@pytest.mark.parametrize("breakage", CASES, ids=[f.__name__ for f in CASES])
def test_a_bad_spec_stops_the_build_with_one_line_and_touches_nothing(zoo, breakage):
    before = artifacts(zoo)
    breakage(zoo)
    result = run_scons(zoo)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("scons: *** " + CASES[breakage]), lines[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert steps(result) == []
    assert "model " not in result.stdout  # no summary table either
    assert artifacts(zoo) == before


def test_the_same_spec_twice_in_one_sconstruct_is_an_error(zoo):
    (zoo / "SConstruct").write_text("import qnn_build.sconstool\n"
                                    "env = Environment(tools=['default', 'qnn_build'])\n"
                                    "env.QnnModel('models/adder.yaml')\n"
                                    "env.QnnModel('models/adder.yaml')\n")
    result = run_scons(zoo)
    assert result.returncode == 2
    assert result.stderr.strip() == ("scons: *** models/adder.yaml:1: name: model name 'adder' (from the file "
                                     "name) is already used by models/adder.yaml:1; names must be unique")
