"""The backend contract (qnn_build/backends/contract.py, docs/backends.md): every registered backend
answers it, what it declares agrees with configs/backends/, a context it writes is exactly the files
it names and loads to the same outputs as its model, and nothing outside the backends branches on a
backend's name."""

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import qnn_build
from qnn_build.backends import BACKENDS, CONTEXT_INPUTS, get_backend
from qnn_build.convert import convert
from qnn_build.errors import QnnBuildError
from qnn_build.spec.configs import package_configs
from qnn_build.spec.validate import load_schema
from qnn_build.toolchain import build_model_lib, host_target

PACKAGE = Path(qnn_build.__file__).parent


def test_every_backend_has_its_configs_entry_and_one_name():
    configs = package_configs()
    assert set(BACKENDS) <= set(configs.backends)
    for name, backend in BACKENDS.items():
        assert backend.name == name
        for precision in configs.precisions:
            assert backend.unsupported_reason(precision) == configs.unsupported_reason(precision, name)
    schema = load_schema("schema.json", configs.backend_tests())
    for name, backend in BACKENDS.items():  # its own test keys: kinds the spec schema knows, offered as <name>_<kind>
        assert set(backend.test_settings()) <= set(schema["$defs"]["backendTest"]["properties"])
        assert all(f"{name}_{kind}" in schema["properties"]["test"]["properties"] for kind in backend.test_settings())
    assert get_backend("htp").test_settings()["samples"] == 50


def test_an_unknown_backend_lists_the_known_ones():
    with pytest.raises(QnnBuildError, match=r"unknown backend 'gpu' \(known: cpu, htp, npu\)"):
        get_backend("gpu")


@pytest.mark.parametrize("name", BACKENDS)
def test_placement_resolves_the_default_and_refuses_an_unknown_place(name):
    backend = get_backend(name)
    default = backend.placement(None)
    assert default.backend == name and default.name == package_configs().default_placement(name)
    assert backend.context_input("fp16") in CONTEXT_INPUTS
    with pytest.raises(QnnBuildError, match="nowhere"):
        backend.placement("nowhere")


@pytest.mark.parametrize("name", ["cpu", "npu"])
def test_a_backend_without_api_recording_refuses_qnn_saver(name, tmp_path):
    backend = get_backend(name)
    with pytest.raises(QnnBuildError, match=f"the {name} backend records no API calls"):
        backend.record_api_calls("libmodel.so", tmp_path, placement=backend.placement(None))
    assert not any(tmp_path.iterdir())


def test_our_backends_place_on_machine_targets():
    for name in ("cpu", "npu"):
        here, there = get_backend(name).placement(None), get_backend(name).placement("aarch64-windows")
        assert (here.name, here.runs_here, here.machine) == (host_target().name, True, host_target().name)
        assert (there.runs_here, there.machine) == (False, "aarch64-windows")


def test_npu_runs_in_integers_only_the_ops_it_has_kernels_for():
    npu, cpu = get_backend("npu"), get_backend("cpu")
    assert npu.supports_op("Conv", "w8a8") and npu.supports_op("Reshape", "w4a16")
    assert not npu.supports_op("LRN", "w8a8") and npu.supports_op("LRN", "fp16")
    assert cpu.supports_op("LRN", "w8a8")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A two-node float model, converted at fp16 (a precision both backends run) and compiled."""
    folder = tmp_path_factory.mktemp("backends")
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["y"], name="act")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "m.onnx")
    convert(folder / "m.onnx", folder, precision="fp16")
    return build_model_lib(folder / "model.cpp", folder / "model.bin", folder / "libmodel.so")


@pytest.mark.parametrize("name", ["cpu", "npu"])
def test_a_context_is_the_files_named_and_runs_as_its_model(library, tmp_path, name):
    backend = get_backend(name)
    output = tmp_path / "model.ctx"
    info = backend.build_context(library, output, placement=backend.placement(None), precision="fp16")
    assert sorted(tmp_path.iterdir()) == sorted(backend.context_files(output)) and backend.context_files(output)[0] == output
    assert info["file_bytes"] == output.stat().st_size and info["summary"]
    described = backend.describe_context(output)  # context-info: read, not loaded
    assert described["backend"] == name and described["file_bytes"] == info["file_bytes"]
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    with backend.load(library, precision="fp16") as from_model, backend.load(context=output) as from_context:
        for session in (from_model, from_context):
            assert session.backend == name and session.timings
            assert [(i.name, i.dtype, i.shape) for i in session.inputs] == [("x", np.float32, (2, 4))]
            assert [o.name for o in session.outputs] == ["y"]
            session.set_profiling("detailed")
        np.testing.assert_array_equal(from_model.run({"x": x})["y"], from_context.run({"x": x})["y"])
        assert len(from_context.node_times_us()) == len(from_context.nodes()) >= 1
        for session in (from_model, from_context):
            assert session.target == host_target().name and session.encoding("y") is None  # floats out
        runs = [from_context.node_times_us().tolist(), [7.0] * len(from_context.nodes())]
        nodes = from_context.profile_nodes(runs)
        assert [n["name"] for n in nodes] == [n.name for n in from_context.nodes()]
        assert [n["time_us"][1] for n in nodes] == [7.0] * len(nodes) and nodes[0]["stats"]["max"] >= 7.0


@pytest.mark.parametrize("name", BACKENDS)
def test_a_backend_describes_no_file_but_its_contexts(name, library):
    """context-info asks each backend in turn: one that is not a file's backend says so (None)."""
    assert get_backend(name).describe_context(library) is None
    assert get_backend(name).describe_context(library.with_name("model.cpp")) is None


def test_a_step_refuses_a_library_of_another_precision(library):
    with pytest.raises(QnnBuildError, match="converted at fp16, not w8a8"):
        get_backend("cpu").load(library, precision="w8a8")


def test_no_step_branches_on_a_backends_name():
    """`backend == "npu"` and the like live in qnn_build/backends/ only."""
    pattern = re.compile(r"""backend\w*\s*(==|!=|\bin\b)\s*[("'\[]""")
    found = [f"{p.relative_to(PACKAGE)}:{n}" for p in sorted(PACKAGE.rglob("*.py")) if "backends" not in p.parts
             for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_the_sidecar_of_a_native_context_is_its_second_file(library, tmp_path):
    backend = get_backend("cpu")
    files = backend.context_files(tmp_path / "model.ctx")
    backend.build_context(library, files[0], placement=backend.placement(None))
    assert json.loads(files[1].read_text())["backend"] == "cpu"


def test_a_backend_declares_which_backend_its_tests_compare_with(tmp_path):
    assert get_backend("htp").agrees_with() == "npu" and get_backend("cpu").agrees_with() is None
    from qnn_build.report.testrun import run_test
    with pytest.raises(QnnBuildError, match=r"--agree-with: the cpu backend's tests compare with no other backend"):
        run_test(tmp_path / "libmodel.so", tmp_path / "ref.npz", tmp_path / "data.npz", tmp_path / "test.json",
                 backend="cpu", agree_with=tmp_path / "npu.ctx")
    assert not any(tmp_path.iterdir())  # refused before anything ran or was written


def test_every_module_of_the_package_registers_its_backend():
    """Adding a backend is adding its module: the registry imports every one and finds its class."""
    modules = sorted(p.stem for p in (PACKAGE / "backends").glob("*.py") if p.stem not in ("__init__", "contract", "native"))
    assert sorted(BACKENDS) == modules and all(type(b).__module__ == f"qnn_build.backends.{n}" for n, b in BACKENDS.items())
