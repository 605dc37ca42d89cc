"""The SCons tool on its own: loaded by name from a SConstruct outside the project, its builders used
one by one, and backends that are not available yet skipped with a note."""

import json

import pytest
from test_scons_support import build, edit, run_scons, steps, write_project

FOREIGN = {
    "env.Tool": "import qnn_build.sconstool\nenv = Environment()\nenv.Tool('qnn_build')\n",
    "tools=": "import qnn_build.sconstool\nenv = Environment(tools=['default', 'qnn_build'])\n",
}


@pytest.mark.parametrize("load", FOREIGN, ids=list(FOREIGN))
def test_a_foreign_sconstruct_loads_the_tool_by_name_and_builds_one_spec(tmp_path, load):
    project = write_project(tmp_path / "project", models=("classifier",))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "SConstruct").write_text(FOREIGN[load] + f"env.QnnModel({str(project / 'models/classifier.yaml')!r})\n")
    result = build(elsewhere)
    assert sorted(steps(result)) == ["context-binary classifier fp32 cpu", "convert classifier fp32",
                                     "model-lib classifier fp32", "reference classifier",
                                     "runtime x86_64-linux", "test classifier fp32 cpu"]
    assert json.loads((elsewhere / "out/classifier/fp32/cpu/test.json").read_text())["passed"]
    config = json.loads((elsewhere / "out/classifier/fp32/convert.config.json").read_text())
    assert config["source"] == "../project/models/classifier/model.onnx"  # relative to this SConstruct's folder
    assert steps(build(elsewhere)) == []


def test_without_importing_the_module_scons_names_the_missing_tool(tmp_path):
    (tmp_path / "SConstruct").write_text("Environment(tools=['default', 'qnn_build'])\n")
    result = run_scons(tmp_path)
    assert result.returncode != 0 and "No tool module 'qnn_build' found" in result.stderr


def test_the_builders_work_one_by_one(tmp_path):
    """QnnRuntime / QnnConvert / QnnModelLib without a spec: explicit sources, emitted targets."""
    import onnx
    from test_scons_support import adder_model

    onnx.save(adder_model(), tmp_path / "model.onnx")
    (tmp_path / "convert.json").write_text('{"source": "model.onnx", "input_dims": {"x": [2, 3]}}\n')
    (tmp_path / "SConstruct").write_text(
        "import qnn_build.sconstool\n"
        "env = Environment(tools=['default', 'qnn_build'])\n"
        "runtime = env.QnnRuntime(target=Dir('build/runtime'), source=[])\n"
        "cpp, bin, desc = env.QnnConvert(Dir('build/m'), ['convert.json', 'model.onnx'], QNNB_MODEL='m')\n"
        "env.QnnModelLib('build/m/libmodel.so', [cpp, bin], QNNB_MODEL='m')\n")
    result = build(tmp_path)
    assert sorted(steps(result)) == ["convert m", "model-lib m", "runtime"]
    for name in ("runtime/libqnnb.so", "runtime/include/qnnb.h", "m/model.cpp", "m/model.json", "m/libmodel.so"):
        assert (tmp_path / "build" / name).is_file(), name
    assert json.loads((tmp_path / "build/m/model.json").read_text())["inputs"][0]["shape"] == [2, 3]
    assert steps(build(tmp_path)) == []


def test_unavailable_backends_and_precisions_are_skipped_with_a_note(tmp_path):
    """A backend or precision that configs/ marks `available: false` stays valid in a spec and is
    skipped with a note. (This copy of configs/ lets the npu take fp32, to reach the backend check.)"""
    project = write_project(tmp_path / "zoo", models=("adder",))
    edit(project / "configs/backends/npu.yaml", "precisions: [fp16,", "precisions: [fp32, fp16,")
    edit(project / "configs/backends/npu.yaml", "available: true", "available: false")
    edit(project / "configs/precisions.yaml", "  w8a8:\n    available: true", "  w8a8:\n    available: false")
    result = build(project)
    assert ("note: adder: skipped fp32 on npu (backend npu not available yet), w8a8 (precision not available "
            "yet)") in result.stdout
    assert "test adder fp32 cpu" in steps(result)
    assert not (project / "out/adder/fp32/npu/test.json").exists()
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("adder ")]
    assert ["adder", "fp32", "npu", "-", "skipped", "backend", "npu", "not", "available", "yet"] in rows
    assert steps(build(project)) == []
