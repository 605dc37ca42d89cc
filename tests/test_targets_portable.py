"""The x86-64 runtime runs wherever a release is installed: it is built for x86-64-v3, and its
AVX-512 paths (the npu's VNNI block kernel, the GEMM's wide tiles) are compiled function by function
and taken at run time only on a CPU that has AVX-512 (core/isa.h; docs/targets.md, "Portable x86-64").

- No AVX-512 (EVEX-encoded) instruction in the runtime, the native runner or a model library outside
  the dispatched functions, whose names say avx512 (objdump).
- Under qemu with a Haswell CPU model (x86-64-v3, no AVX-512) the native runner runs a zoo model on the
  npu (w8a8) and the cpu (fp32), takes the baseline paths, and gives this machine's bytes.
- Forcing the baseline paths with QNNB_ISA=x86-64-v3 gives the AVX-512 paths' bytes (tests/npu/
  test_npu_zoo.py and test_npu_conv.py check the same on every zoo model and the one-op graphs)."""

import ctypes
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from targets_util import model_lib, results, run_native

from qnn_build.report.release import release
from qnn_build.toolchain import INCLUDE_DIR, build_runtime, get_target, host_target, runtime_objects

pytestmark = pytest.mark.skipif(host_target().machine != "x86_64", reason="an x86-64 host")

HASWELL = ["qemu-x86_64", "-cpu", "Haswell"]
# Legacy prefixes that may precede an instruction; after them, 0x62 opens an EVEX (AVX-512) encoding
# in 64-bit code (0x62 is BOUND elsewhere, which 64-bit mode does not have).
PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x67}


def evex_functions(path: Path) -> dict[str, int]:
    """{function: number of EVEX-encoded instructions in it}, from objdump's disassembly."""
    out = subprocess.run(["objdump", "-d", "-C", "-w", str(path)], capture_output=True, text=True, check=True).stdout
    found, function = defaultdict(int), None
    for line in out.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            function = header.group(1)
            continue
        insn = re.match(r"^\s+[0-9a-f]+:\t((?:[0-9a-f]{2} )+)", line)
        if not insn or function is None:
            continue
        raw = [int(b, 16) for b in insn.group(1).split()]
        i = next((k for k, b in enumerate(raw) if b not in PREFIXES), len(raw))
        if i < len(raw) and raw[i] == 0x62:
            found[function] += 1
    return dict(found)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_no_avx512_instruction_outside_the_dispatched_functions(zoo_folder):
    runtime = build_runtime()
    model = model_lib(zoo_folder("mobile_tiny", "w8a8"), host_target().name)
    for path in (runtime, runtime.parent / host_target().runner, model):
        functions = evex_functions(path)
        outside = sorted(f for f in functions if "avx512" not in f)
        assert not outside, f"{path.name}: AVX-512 instructions outside the dispatched paths: {outside[:5]}"
        if path == runtime:  # the check sees them where they are
            assert any("block_avx512" in f for f in functions) and any("avx512::sgemm" in f for f in functions)


def test_the_manifest_names_the_baseline_and_every_dispatched_path(tmp_path):
    """The sources whose objects hold AVX-512 instructions are exactly the target's dispatch_paths,
    which a release's manifest carries with the baseline; x86_64-windows declares the same paths."""
    target = host_target()
    with_avx512 = {src for src, obj in runtime_objects(target).items() if evex_functions(obj)}
    assert with_avx512 == set(target.dispatch_paths)
    windows = get_target("x86_64-windows")
    assert (windows.isa, windows.dispatch, windows.dispatch_paths) == (target.isa, target.dispatch, target.dispatch_paths)
    (tmp_path / "tools.json").write_text("{}")
    manifest = release({"zoo": "z", "zoo_version": "1", "tool_versions": str(tmp_path / "tools.json"), "models": [],
                        "runtime": {"target": target.name, "header": str(INCLUDE_DIR / "qnnb.h"),
                                    "libraries": [str(build_runtime())]}}, tmp_path / "z.tar.gz")
    assert manifest["runtimes"][target.name] == {
        "isa": "x86-64-v3", "features": ["avx2", "fma", "f16c"], "dispatch": list(target.dispatch),
        "dispatch_paths": ["npu/block_x86.cpp", "gemm/portable.cpp", "core/packed_gemm.cpp", "core/fuse.cpp",
                           "npu/code_table_x86.cpp", "npu/elementwise.cpp",
                           "npu/norm.cpp", "npu/product16.cpp"]}


def test_the_paths_follow_the_cpu_and_qnnb_isa(monkeypatch):
    lib = ctypes.CDLL(str(build_runtime()))
    lib.qnnb_runtime_paths.restype = ctypes.c_char_p
    monkeypatch.setenv("QNNB_ISA", "x86-64-v3")
    assert lib.qnnb_runtime_paths().decode() == "x86-64-v3"
    monkeypatch.delenv("QNNB_ISA")
    with open("/proc/cpuinfo") as f:
        flags = set(re.search(r"^flags\s*:(.*)$", f.read(), re.M).group(1).split())
    avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"} <= flags
    assert lib.qnnb_runtime_paths().decode() == ("x86-64-v3+avx512vnni" if avx512 else "x86-64-v3")


@pytest.mark.skipif(shutil.which(HASWELL[0]) is None, reason="needs qemu-x86_64 (Debian's qemu-user)")
@pytest.mark.parametrize("precision,backend", [("w8a8", "npu"), ("fp32", "cpu")])
def test_runs_on_a_cpu_without_avx512_with_the_same_bytes(zoo_folder, monkeypatch, precision, backend):
    folder = zoo_folder("mobile_tiny", precision)
    lib = model_lib(folder, host_target().name)
    here = run_native(host_target().name, lib, folder, "here", backend)
    assert here.returncode == 0, here.stderr
    import targets_util
    monkeypatch.setattr(targets_util, "emulator", lambda name: HASWELL)
    haswell = run_native(host_target().name, lib, folder, "haswell", backend)
    assert haswell.returncode == 0, haswell.stderr[-2000:]
    version = run_native(host_target().name, lib, folder, "version", backend, "--version")
    assert "paths: x86-64-v3\n" in version.stdout, version.stdout
    assert results(folder / "haswell") == results(folder / "here") != {}
