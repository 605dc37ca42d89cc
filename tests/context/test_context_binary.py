"""Context binaries: a model library finalized on a backend, serialized, and loaded without the
library. Outputs from the context equal those from the library byte for byte, on both backends,
for every shipped model (fp32 and fp16 on the cpu, fp16 and w8a8 on both), and the same inputs
give the same bytes."""

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from qnn_build.errors import QnnBuildError
from qnn_build.runtime.binding import Model, RuntimeFailure, load_context

from .util import PREPARED, build_zoo_lib, prepared_entries, rechecksummed, sections, zoo_feeds, zoo_specs

CASES = [(name, precision, backend)
         for name in zoo_specs()
         for precision, backends in (("fp32", ["cpu"]), ("fp16", ["cpu", "npu"]), ("w8a8", ["cpu", "npu"]))
         for backend in backends]


def same_bytes(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        assert a[name].tobytes() == b[name].tobytes(), f"{name}: outputs differ"


@pytest.mark.parametrize("name,precision,backend", CASES, ids=["-".join(c) for c in CASES])
def test_context_outputs_equal_library_outputs(zoo_folder, tmp_path, name, precision, backend):
    lib = build_zoo_lib(zoo_folder, name, precision)
    from_lib = Model(lib, backend=backend)
    data = from_lib.context_binary()
    assert data == Model(lib, backend=backend).context_binary(), "same inputs, different bytes"
    ctx_path = tmp_path / "model.ctx"
    ctx_path.write_bytes(data)
    from_file = load_context(ctx_path, backend=backend)
    from_memory = load_context(data, backend=backend)
    for feeds in zoo_feeds(name, from_lib):
        expected = from_lib.run(feeds)
        same_bytes(expected, from_file.run(feeds))
        same_bytes(expected, from_memory.run(feeds))
    assert from_file.timings.keys() == {"retrieve_us"}


def test_memory_plan_shares_activation_bytes(zoo_folder):
    model = Model(build_zoo_lib(zoo_folder, "mobile_tiny", "fp32"))
    plan = model.memory_plan()
    assert 0 < plan["arena_bytes"] < plan["tensor_bytes"]
    assert load_context(model.context_binary()).memory_plan() == plan


def test_keep_tensors_keeps_every_activation_apart(zoo_folder):
    lib = build_zoo_lib(zoo_folder, "digits_cnn", "fp32")
    plan = Model(lib, keep_tensors=True).memory_plan()
    assert plan["arena_bytes"] == plan["tensor_bytes"]


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "qnn_build", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)


def test_cli_context_binary_and_net_run_retrieve_context(zoo_folder, tmp_path):
    lib = build_zoo_lib(zoo_folder, "digits_cnn", "w8a8")
    ctx = tmp_path / "model.ctx"
    r = run_cli("context-binary", "--backend", "npu", "--model", lib, "-o", ctx)
    assert r.returncode == 0, r.stderr
    assert "arena" in r.stdout
    sidecar = json.loads((tmp_path / "model.ctx.json").read_text())
    assert sidecar["backend"] == "npu" and sidecar["arena_bytes"] <= sidecar["tensor_bytes"]
    x = np.load(zoo_specs_data("digits_cnn"))["image"][0].astype(np.float32).reshape(1, 1, 8, 8)
    (tmp_path / "x.raw").write_bytes(x.tobytes())
    (tmp_path / "list.txt").write_text("image:=x.raw\n")
    outs = {}
    for how, flag, path in (("lib", "--model", lib), ("ctx", "--retrieve-context", ctx)):
        r = run_cli("net-run", "--backend", "npu", flag, path, "--input-list", "list.txt", "--output-dir", how,
                    "--profiling-level", "basic", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        outs[how] = sorted((tmp_path / how / "Result_0").glob("*.raw"))
        profile = json.loads((tmp_path / how / "profile.json").read_text())
        if how == "ctx":
            assert "retrieve_us" in profile and "compose_us" not in profile and "finalize_us" not in profile
    assert [p.read_bytes() for p in outs["lib"]] == [p.read_bytes() for p in outs["ctx"]]


def zoo_specs_data(name):
    from .util import MODELS
    return MODELS / zoo_specs()[name]["test"]["data"]


def test_cli_refuses_a_context_of_another_backend_in_one_line(zoo_folder, tmp_path):
    lib = build_zoo_lib(zoo_folder, "digits_cnn", "fp32")
    ctx = tmp_path / "model.ctx"
    assert run_cli("context-binary", "--model", lib, "-o", ctx).returncode == 0
    (tmp_path / "list.txt").write_text("x.raw\n")
    (tmp_path / "x.raw").write_bytes(np.zeros(64, np.float32).tobytes())
    r = run_cli("net-run", "--backend", "npu", "--retrieve-context", ctx, "--input-list", "list.txt",
                "--output-dir", "o", cwd=tmp_path)
    assert r.returncode == 1
    assert "backend 'cpu' context used on backend 'npu'" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_net_run_needs_exactly_one_model_source(tmp_path):
    r = run_cli("net-run", "--input-list", "l", "--output-dir", "o")
    assert r.returncode == 1 and "--model or --retrieve-context" in r.stderr


def test_missing_context_file_is_a_clear_error(tmp_path):
    with pytest.raises(QnnBuildError, match="context binary not found"):
        load_context(tmp_path / "nope.ctx")


# ---- prepared arrays: the npu's tables travel in the context (docs/context-binary.md) ----

def test_npu_tables_travel_in_the_context_once_each(zoo_folder):
    data = Model(build_zoo_lib(zoo_folder, "digits_lstm", "w8a8"), backend="npu").context_binary()
    entries = prepared_entries(data)
    assert entries, "the 16-bit recurrence's re-encodings are tables"
    assert len({offset for _, _, offset, _ in entries}) < len(entries), "equal tables are stored once"
    assert load_context(data, backend="npu").context_binary() == data, "the file's tables, handed back"


def test_a_prepared_array_of_another_size_is_refused(zoo_folder):
    data = bytearray(Model(build_zoo_lib(zoo_folder, "digits_gru", "w8a8"), backend="npu").context_binary())
    size = prepared_entries(bytes(data))[0][3]
    struct.pack_into("<Q", data, sections(bytes(data))[PREPARED][0] + 8 + 16, size - 4)  # entry 0's size
    with pytest.raises(RuntimeFailure, match=rf"context binary refused: node '.+' \(.+\): prepared array \d+ has "
                                             rf"{size - 4} bytes in the context binary, the kernel takes {size}"):
        load_context(rechecksummed(data), backend="npu")


def test_another_targets_context_carries_no_prepared_arrays(zoo_folder):
    """Its kernels may want other arrays: that target's runtime computes them at load."""
    model = Model(build_zoo_lib(zoo_folder, "digits_gru", "w8a8"), backend="npu")
    assert PREPARED in sections(model.context_binary())
    assert PREPARED not in sections(model.context_binary(target="aarch64-linux+neon+dotprod"))
