"""Targets (configs/targets/) and their bad input: an unknown target, a library built for another
machine, a missing cross compiler — each one clear line naming the target. No cross builds here."""

import struct

import pytest
from cli_util import one_error_line, qnn_build

from qnn_build.toolchain.targets import (
    all_targets,
    binary_kind,
    binary_target,
    get_target,
    host_target,
)


@pytest.mark.parametrize("name,os_,machine,lib", [
    ("x86_64-linux", "linux", "x86_64", "libmodel.so"),
    ("aarch64-linux", "linux", "aarch64", "libmodel.so"),
    ("x86_64-windows", "windows", "x86_64", "model.dll"),
    ("aarch64-windows", "windows", "aarch64", "model.dll"),
])
def test_the_four_targets(name, os_, machine, lib):
    t = get_target(name)
    assert (t.os, t.machine, t.model_lib_name()) == (os_, machine, lib)
    assert t.is_host == (name == "x86_64-linux")
    assert t.isa and t.compiler == ("g++" if t.is_host else "zig")


def test_aarch64_targets_name_dotprod():
    for name in ("aarch64-linux", "aarch64-windows"):
        t = get_target(name)
        assert "dotprod" in t.features and any("dotprod" in f for f in t.cxxflags)


def test_no_target_means_the_host():
    assert get_target(None) is host_target() and host_target().name == "x86_64-linux"


def fake_elf(path, machine: int):
    path.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(11) + struct.pack("<H", machine) + bytes(44))
    return path


def fake_pe(path, machine: int):
    head = bytearray(b"MZ" + bytes(62))
    head[0x3C:0x40] = struct.pack("<I", 64)
    path.write_bytes(bytes(head) + b"PE\0\0" + struct.pack("<H", machine) + bytes(32))
    return path


def test_binary_target_reads_elf_and_pe_headers(tmp_path, runtime_built):
    assert binary_kind(runtime_built) == ("linux", "x86_64")
    assert binary_target(fake_elf(tmp_path / "a.so", 183)) == "aarch64-linux"
    assert binary_target(fake_pe(tmp_path / "a.dll", 0xAA64)) == "aarch64-windows"
    assert binary_target(fake_pe(tmp_path / "b.dll", 0x8664)) == "x86_64-windows"
    (tmp_path / "t.txt").write_text("hello")
    assert binary_kind(tmp_path / "t.txt") is None


def test_unknown_target_lists_the_known_ones(tmp_path):
    (tmp_path / "model.cpp").write_text("")
    (tmp_path / "model.bin").write_bytes(b"")
    r = qnn_build("model-lib", "--cpp", tmp_path / "model.cpp", "--bin", tmp_path / "model.bin", "-o", tmp_path,
                  "--target", "arm64-windows")
    one_error_line(r, "unknown target 'arm64-windows'", "aarch64-windows", "x86_64-linux", "configs/targets/")
    one_error_line(qnn_build("runtime", "-o", tmp_path / "rt", "--target", "riscv64-linux"),
                   "unknown target 'riscv64-linux'")


@pytest.mark.parametrize("maker,machine,built_for", [(fake_elf, 183, "aarch64-linux"),
                                                     (fake_pe, 0xAA64, "aarch64-windows"),
                                                     (fake_pe, 0x8664, "x86_64-windows")])
def test_net_run_refuses_a_library_for_another_target(tmp_path, maker, machine, built_for):
    lib = maker(tmp_path / "libmodel.so", machine)
    (tmp_path / "list.txt").write_text("x.raw\n")
    r = qnn_build("net-run", "--model", lib, "--input-list", tmp_path / "list.txt", "--output-dir", tmp_path / "o")
    one_error_line(r, f"built for {built_for}, not for x86_64-linux", "--target x86_64-linux")


def test_missing_cross_toolchain_says_how_to_install_it(tmp_path):
    shim = tmp_path / "shim" / "ziglang"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('ziglang is not installed')\n")
    (tmp_path / "model.cpp").write_text("")
    (tmp_path / "model.bin").write_bytes(b"")
    import os
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "shim"), os.environ.get("PYTHONPATH", "")])}
    r = qnn_build("model-lib", "--cpp", tmp_path / "model.cpp", "--bin", tmp_path / "model.bin", "-o", tmp_path,
                  "--target", "aarch64-windows", env=env)
    one_error_line(r, "target aarch64-windows needs the zig cross compiler", "pip install ziglang")
    assert not list(tmp_path.glob("*.dll"))


def test_every_target_file_is_complete():
    for t in all_targets().values():
        assert t.runtime_lib and t.runner and t.gemm in ("openblas", "portable")
        assert t.triple.split("-")[0] == t.machine


def test_the_runtime_records_its_target_and_isa(runtime_built):
    """The seam for context binaries: the runtime says which target and ISA it was built for."""
    import ctypes
    lib = ctypes.CDLL(str(runtime_built))
    for fn in (lib.qnnb_runtime_target, lib.qnnb_runtime_isa):
        fn.restype = ctypes.c_char_p
    assert lib.qnnb_runtime_target().decode() == host_target().name
    assert lib.qnnb_runtime_isa().decode() == host_target().isa
