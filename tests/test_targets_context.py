"""Context binaries for other targets: `context-binary --target T` finalizes on this machine (from
its own model library, as qnn-context-binary-generator does) and writes a context that T's native
qnn-net-run loads with --retrieve_context, with npu outputs byte-identical to the host's; every
other runtime refuses it and names the target it was built for."""

import json

import pytest
from cli_util import qnn_build
from context.util import PREPARED, TARGET, prepared_entries, sections
from targets_util import (
    ZOO,
    assert_close,
    has_emulator,
    host_results,
    model_lib,
    results,
    run_native,
    run_python,
)

from qnn_build.errors import QnnBuildError
from qnn_build.runtime.binding import Model
from qnn_build.runtime.context import build_context
from qnn_build.toolchain.targets import get_target, host_target


def context_for(folder, target, backend):
    ctx = folder / target / f"{backend}.ctx"
    if not ctx.is_file():
        build_context(model_lib(folder, host_target().name), ctx, backend=backend, target=target)
    return ctx


def header_target(ctx) -> str:
    """The header's target field: 96 NUL-padded bytes at offset 64 (docs/context-binary.md)."""
    return ctx.read_bytes()[64:160].rstrip(b"\0").decode()


def ctx_and_host(zoo_folder, target, name, precision, backend):
    folder = zoo_folder(name, precision)
    r = run_native(target, context_for(folder, target, backend), folder, f"{target}-ctx-{backend}", backend)
    assert r.returncode == 0, r.stderr
    return results(folder / f"{target}-ctx-{backend}"), host_results(folder, backend)


@pytest.mark.skipif(not has_emulator("aarch64-linux"), reason="needs qemu-user and libc6-arm64-cross (.ci/run)")
@pytest.mark.parametrize("name", ZOO)
def test_aarch64_linux_runner_loads_a_host_built_context(zoo_folder, name):
    ours, host = ctx_and_host(zoo_folder, "aarch64-linux", name, "w8a8", "npu")
    assert ours and ours == host


@pytest.mark.skipif(not has_emulator("aarch64-linux"), reason="needs qemu-user and libc6-arm64-cross (.ci/run)")
def test_aarch64_linux_cpu_context_agrees_with_the_host(zoo_folder):
    ours, host = ctx_and_host(zoo_folder, "aarch64-linux", "mobile_tiny", "fp32", "cpu")
    assert_close(ours, host, 1e-5)


@pytest.mark.skipif(not has_emulator("x86_64-windows"), reason="needs wine (.ci/run)")
@pytest.mark.parametrize("name", ["digits_lstm", "mobile_tiny"])
def test_wine_runner_loads_a_host_built_context(zoo_folder, name):
    ours, host = ctx_and_host(zoo_folder, "x86_64-windows", name, "w8a8", "npu")
    assert ours and ours == host


@pytest.mark.parametrize("target", ["aarch64-linux", "aarch64-windows", "x86_64-windows"])
def test_the_host_refuses_another_targets_context_and_names_it(zoo_folder, target):
    folder = zoo_folder("digits_cnn", "w8a8")
    ctx = context_for(folder, target, "npu")
    expected = get_target(target).context_target
    assert header_target(ctx) == expected
    assert json.loads(ctx.with_name("npu.ctx.json").read_text())["target"] == target
    with pytest.raises(QnnBuildError, match=f"built for {expected.replace('+', '[+]')}, this runtime targets"):
        Model(context=ctx, backend="npu")


def test_only_the_header_and_prepared_arrays_differ_from_the_hosts_context(zoo_folder):
    """What a context holds is machine-independent; the header's target and checksum are not, and
    only a context for this runtime's own target carries its kernels' prepared arrays."""
    folder = zoo_folder("digits_gru", "w8a8")
    host = folder / "host.ctx"
    build_context(model_lib(folder, host_target().name), host, backend="npu")
    ours, other = host.read_bytes(), context_for(folder, "aarch64-windows", "npu").read_bytes()
    assert ours[TARGET[0]:TARGET[0] + TARGET[1]] != other[TARGET[0]:TARGET[0] + TARGET[1]]
    assert prepared_entries(ours) and PREPARED not in sections(other)
    for sid in (1, 2, 3):  # graph, plan, data
        (a, n), (b, m) = sections(ours)[sid], sections(other)[sid]
        assert ours[a:a + n] == other[b:b + m], sid


def test_host_runner_retrieves_a_context_like_python(zoo_folder):
    folder = zoo_folder("unet_tiny", "w8a8")
    ctx = folder / "host-npu.ctx"
    build_context(model_lib(folder, host_target().name), ctx, backend="npu")
    run_python(model_lib(folder, host_target().name), folder, "lib-npu", "npu")
    r = run_native(host_target().name, ctx, folder, "native-ctx", "npu", "--profiling_level", "basic")
    assert r.returncode == 0, r.stderr
    assert results(folder / "native-ctx") == results(folder / "lib-npu")
    profile = json.loads((folder / "native-ctx" / "profile.json").read_text())
    assert profile["retrieve_us"] > 0 and "compose_us" not in profile and profile["num_inferences"] == 2


def test_runner_refuses_a_corrupt_context_with_the_check(zoo_folder):
    folder = zoo_folder("digits_cnn", "w8a8")
    ctx = folder / "flipped.ctx"
    build_context(model_lib(folder, host_target().name), ctx, backend="npu")
    data = bytearray(ctx.read_bytes())
    data[len(data) // 2] ^= 0x40
    ctx.write_bytes(bytes(data))
    r = run_native(host_target().name, ctx, folder, "flipped-out", "npu")
    assert r.returncode == 1 and "checksum" in r.stderr and not (folder / "flipped-out").exists()


def test_unknown_target_is_an_error_naming_it(zoo_folder, tmp_path):
    folder = zoo_folder("digits_cnn", "w8a8")
    out = tmp_path / "out"
    out.mkdir()
    r = qnn_build("context-binary", "--backend", "npu", "--model", model_lib(folder, host_target().name), "-o",
                  out / "m.ctx", "--target", "riscv64-linux")
    assert r.returncode != 0 and "unknown target 'riscv64-linux'" in r.stderr
    assert not list(out.iterdir())
