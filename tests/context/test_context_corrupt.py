"""A context binary that is truncated, has a byte flipped, or was made for another backend, format
version, runtime or ISA is refused with an error naming the check that failed: never a crash, a
hang or a traceback. The walk over every truncation point and every single-byte flip runs in this
process through the Python binding; the same walk and a bounded fuzz run go through the reader
built with AddressSanitizer and UndefinedBehaviorSanitizer (fuzz/)."""

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from qnn_build.errors import RuntimeFailure
from qnn_build.runtime.binding import Model, load_context
from qnn_build.toolchain import host_target
from qnn_build.toolchain import RUNTIME_DIR, build_model_lib

from .util import BACKEND, TARGET, VERSION, patch_header, xxh3_64

HERE = Path(__file__).parent
# Every refusal names one of these checks.
CHECKS = re.compile(r"context binary refused: (truncated|not a qnn-build context binary|format version|"
                    r"bad header size|file size mismatch|checksum mismatch|backend '|built for|built by runtime|"
                    r"bad section|bad or repeated section|section '|graph section|plan section)")


@pytest.fixture(scope="module")
def small_ctx(tmp_path_factory) -> bytes:
    """A small cpu context: Conv -> Relu -> Gemm, a few kB."""
    from qnn_build.convert import convert

    d = tmp_path_factory.mktemp("small")
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 1, 3, 3], rng.standard_normal(36).astype(np.float32))
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], rng.standard_normal(4).astype(np.float32))
    g = helper.make_tensor("g", TensorProto.FLOAT, [64, 3], rng.standard_normal(192).astype(np.float32))
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[0, 0, 0, 0]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Flatten", ["r"], ["f"]),
         helper.make_node("Gemm", ["f", "g"], ["y"])],
        "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [w, b, g])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(d / "m.onnx"))
    convert(d / "m.onnx", d)
    lib = build_model_lib(d / "model.cpp", d / "model.bin", d / "libmodel.so")
    data = Model(lib).context_binary()
    assert len(data) < 4096
    return data


def refusal(data: bytes, backend: str = "cpu") -> str:
    with pytest.raises(RuntimeFailure) as e:
        load_context(data, backend=backend)
    return str(e.value)


def test_the_intact_file_loads_and_runs(small_ctx):
    model = load_context(small_ctx)
    assert model.run({"x": np.ones((1, 1, 6, 6), np.float32)})["y"].shape == (1, 3)


def test_every_truncation_is_refused(small_ctx):
    for n in range(len(small_ctx)):
        message = refusal(small_ctx[:n])
        assert CHECKS.search(message) and "truncated" in message, (n, message)


def test_every_single_byte_flip_is_refused(small_ctx):
    for i in range(len(small_ctx)):
        for mask in (0xFF, 0x01):
            data = bytearray(small_ctx)
            data[i] ^= mask
            message = refusal(bytes(data))
            assert CHECKS.search(message), (i, mask, message)
            if i >= 32:  # past the fixed identity fields, only the checksum can see a change
                assert "checksum mismatch" in message, (i, message)


def test_another_backend_is_refused(small_ctx):
    assert "backend 'cpu' context used on backend 'npu'" in refusal(small_ctx, backend="npu")
    forged = patch_header(small_ctx, BACKEND, b"npu")
    assert "backend 'npu' context used on backend 'cpu'" in refusal(forged)


def test_another_format_version_is_refused(small_ctx):
    forged = patch_header(small_ctx, VERSION, struct.pack("<I", 3))
    assert "format version 3 is newer than this runtime's 2" in refusal(forged)
    older = patch_header(small_ctx, VERSION, struct.pack("<I", 1))  # XXH64-checksummed: not read
    assert "format version 1 is not supported by this runtime's 2" in refusal(older)


def test_another_isa_is_refused(small_ctx):
    target = small_ctx[TARGET[0]:TARGET[0] + TARGET[1]].rstrip(b"\0")
    forged = patch_header(small_ctx, TARGET, target + b"+amx")
    assert "this host lacks amx" in refusal(forged)
    forged = patch_header(small_ctx, TARGET, b"aarch64-linux")
    assert "built for aarch64-linux, this runtime targets x86_64-linux" in refusal(forged)


def test_checksum_is_xxh3_of_everything_after_it(small_ctx):
    assert xxh3_64(b"") == 0x2D06800538D394C2
    assert struct.unpack_from("<Q", small_ctx, 16)[0] == xxh3_64(small_ctx[24:])


def test_same_graph_same_bytes(small_ctx):
    assert load_context(small_ctx).context_binary() == small_ctx


# ---- the reader under AddressSanitizer + UndefinedBehaviorSanitizer ----

LOADER_SOURCES = ["ctx_read.cpp", "ctx_target.cpp", "checksum.cpp", "params.cpp", "encoding.cpp", "planner.cpp",
                  "prepared.cpp"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g", "-O1"]
# The same ISA flags as the runtime: the driver's target string must match the seed's.
ISA = [f for f in host_target().cxxflags if f.startswith("-m")]


def build_driver(out: Path, compiler: str, extra: list[str]) -> Path:
    core = RUNTIME_DIR / "core"
    cmd = [compiler, "-std=c++17", *SANITIZE, *ISA, *extra, f"-I{RUNTIME_DIR / 'include'}", f"-I{core}",
           str(HERE / "fuzz" / "fuzz_context.cpp"), *[str(core / s) for s in LOADER_SOURCES], "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


SAN_ENV = {**os.environ, "ASAN_OPTIONS": "allocator_may_return_null=1:detect_leaks=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


@pytest.fixture(scope="module")
def sanitized_driver(tmp_path_factory):
    d = tmp_path_factory.mktemp("asan")
    return build_driver(d / "ctx_fuzz", "g++", [str(HERE / "fuzz" / "fuzz_main.cpp")])


def test_sanitized_reader_walks_every_truncation_and_flip(sanitized_driver, small_ctx, tmp_path):
    seed = tmp_path / "seed.ctx"
    seed.write_bytes(small_ctx)
    r = subprocess.run([str(sanitized_driver), "walk", str(seed)], capture_output=True, text=True, env=SAN_ENV,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "no crash" in r.stdout


def test_sanitized_reader_survives_a_bounded_fuzz_run(sanitized_driver, small_ctx, tmp_path):
    """libFuzzer (clang) when available, else the driver's own mutation loop, 20 seconds."""
    seed_dir = tmp_path / "corpus"
    seed_dir.mkdir()
    (seed_dir / "seed.ctx").write_bytes(small_ctx)
    clang = shutil.which("clang++")
    if clang:
        fuzzer = build_driver(tmp_path / "ctx_libfuzzer", clang, ["-fsanitize=fuzzer"])
        # -malloc_limit_mb: one allocation above 256 MB (a count the reader trusted) fails with its
        # input; -rss_limit_mb bounds the whole run. libFuzzer's RSS is the process's peak
        # (getrusage), which Linux carries across exec: started by this pytest worker, the fuzzer
        # would begin at the worker's own peak (2 GB after the real models) and stop within a
        # second. A small intermediate process forks it instead, so the peak is the fuzzer's own.
        cmd = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))",
               str(fuzzer), "-max_total_time=20", "-rss_limit_mb=2048", "-malloc_limit_mb=256",
               "-print_final_stats=1", f"-artifact_prefix={tmp_path}/", str(seed_dir)]
    else:
        cmd = [str(sanitized_driver), "fuzz", str(seed_dir / "seed.ctx"), "20"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=SAN_ENV, timeout=300)
    out = r.stdout + r.stderr
    # libFuzzer's seed is printed first, beyond the tail: kept so that a failure can be replayed (-seed=N)
    seed = next((line for line in out.splitlines() if line.startswith("INFO: Seed:")), "")
    assert r.returncode == 0, f"{seed}\n{out[-3000:]}"
