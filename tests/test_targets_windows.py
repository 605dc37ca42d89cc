"""Windows targets. x86_64-windows: model.dll and qnn-net-run.exe run under wine with npu outputs
byte-identical to the host's for every zoo model at w8a8 (and fp16 on one; cpu within 1e-5).
aarch64-windows (Snapdragon laptops) cannot run here: its model.dll, qnnb.dll and qnn-net-run.exe are
checked as PE32+ ARM64 images with the expected exports (pefile)."""

import pytest
from targets_util import ZOO, assert_close, has_emulator, host_results, model_lib, results, run_native

from qnn_build.toolchain import build_runtime, get_target

pefile = pytest.importorskip("pefile")


@pytest.mark.skipif(not has_emulator("x86_64-windows"), reason="needs wine (.ci/run)")
@pytest.mark.parametrize("name,precision,backend", [(m, "w8a8", "npu") for m in ZOO] +
                         [("mobile_tiny", "fp16", "npu"), ("mobile_tiny", "fp32", "cpu")])
def test_wine_runs_model_dll_like_the_host(zoo_folder, name, precision, backend):
    folder = zoo_folder(name, precision)
    r = run_native("x86_64-windows", model_lib(folder, "x86_64-windows"), folder, f"win-{backend}", backend)
    assert r.returncode == 0, r.stderr
    ours, host = results(folder / f"win-{backend}"), host_results(folder, backend)
    if backend == "npu":
        assert ours and ours == host
    else:
        assert_close(ours, host, 1e-5)


def pe_image(path):
    pe = pefile.PE(str(path))
    table = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
    return pe, ({e.name.decode() for e in table.symbols if e.name} if table else set())


@pytest.mark.parametrize("target,machine", [("aarch64-windows", 0xAA64), ("x86_64-windows", 0x8664)])
def test_windows_images_are_pe32plus_with_the_entry_points(zoo_folder, target, machine):
    folder = zoo_folder("digits_cnn", "w8a8")
    runtime = build_runtime(target=target)
    runner = runtime.parent / get_target(target).runner
    dll = model_lib(folder, target)
    for path, is_dll in ((dll, True), (runtime, True), (runner, False)):
        pe, _ = pe_image(path)
        assert pe.FILE_HEADER.Machine == machine, path
        assert pe.OPTIONAL_HEADER.Magic == 0x20B, f"{path}: not PE32+"
        assert pe.is_dll() == is_dll and pe.is_exe() == (not is_dll), path
    assert "qnnb_model_compose" in pe_image(dll)[1]
    assert {"qnnb_graph_create", "qnnb_graph_compose", "qnnb_graph_finalize", "qnnb_graph_execute",
            "qnnb_graph_io", "qnnb_runtime_version", "qnnb_runtime_target",
            "qnnb_runtime_isa"} <= pe_image(runtime)[1]
    # Only Windows' own DLLs are imported: nothing else needs shipping beside them.
    pe, _ = pe_image(runner)
    imported = {e.dll.decode().lower() for e in pe.DIRECTORY_ENTRY_IMPORT}
    assert not any(name.startswith(("libc++", "libstdc++", "libgcc", "libwinpthread")) for name in imported), imported
