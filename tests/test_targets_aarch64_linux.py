"""aarch64-linux under qemu-user: the native runner and model libraries built by zig run every
shipped model; npu outputs are byte-identical to the x86-64 host's at every npu precision (the
dotprod fast path and the reference loop alike), cpu outputs agree within 1e-5 relative."""

import os

import pytest
from targets_util import ZOO, assert_close, has_emulator, host_results, model_lib, results, run_native

TARGET = "aarch64-linux"
pytestmark = pytest.mark.skipif(not has_emulator(TARGET), reason="needs qemu-user and libc6-arm64-cross (.ci/run)")


def host_and_target(zoo_folder, name, precision, backend):
    folder = zoo_folder(name, precision)
    r = run_native(TARGET, model_lib(folder, TARGET), folder, f"{TARGET}-{backend}", backend)
    assert r.returncode == 0, r.stderr
    return results(folder / f"{TARGET}-{backend}"), host_results(folder, backend)


@pytest.mark.parametrize("precision", ["fp16", "w8a8", "w8a16", "w16a16", "w4a8", "w4a16"])
@pytest.mark.parametrize("name", ZOO)
def test_npu_bytes_equal_the_host(zoo_folder, name, precision):
    ours, host = host_and_target(zoo_folder, name, precision, "npu")
    assert ours and ours == host


@pytest.mark.parametrize("name", ZOO)
def test_cpu_agrees_with_the_host(zoo_folder, name):
    ours, host = host_and_target(zoo_folder, name, "fp32", "cpu")
    assert_close(ours, host, 1e-5)


def test_dotprod_fast_path_equals_the_reference_loop(zoo_folder, monkeypatch):
    folder = zoo_folder("mobile_tiny", "w8a8")
    lib = model_lib(folder, TARGET)
    fast = run_native(TARGET, lib, folder, "fast", "npu")
    monkeypatch.setenv("QNNB_NPU_REFERENCE", "1")
    ref = run_native(TARGET, lib, folder, "ref", "npu")
    assert fast.returncode == 0 and ref.returncode == 0, fast.stderr + ref.stderr
    assert results(folder / "fast") == results(folder / "ref")
    assert os.environ["QNNB_NPU_REFERENCE"] == "1"


def test_runner_names_its_target_under_qemu():
    import subprocess

    from targets_util import emulator

    from qnn_build.toolchain import build_runner
    r = subprocess.run([*emulator(TARGET), str(build_runner(target=TARGET)), "--version"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "aarch64-linux (armv8.2-a+dotprod)" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("precision,backend", [("fp32", "cpu"), ("w8a8", "npu")])
def test_std_thread_split_gives_the_one_thread_bytes(zoo_folder, precision, backend):
    """No OpenMP with zig: parallel_for's std::thread split must not change a byte."""
    folder = zoo_folder("mobile_tiny", precision)
    lib = model_lib(folder, TARGET)
    one = run_native(TARGET, lib, folder, f"t1-{backend}", backend, "--threads", "1")
    two = run_native(TARGET, lib, folder, f"t3-{backend}", backend, "--threads", "3")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert results(folder / f"t1-{backend}") == results(folder / f"t3-{backend}")
