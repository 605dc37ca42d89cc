"""Per-node profiling: `net-run --profiling-level detailed` and the native runner's
`--profiling_level detailed` time every node of the finalized schedule per inference and write
the same profile.json (docs/formats.md); basic writes execute times only; an unknown level is
refused before anything runs."""

import json
import subprocess
import sys

import numpy as np
import pytest
from targets_util import model_lib, run_native, zoo_model

from qnn_build.runtime.binding import Model
from qnn_build.runtime.stats import percentile, stats
from qnn_build.toolchain import build_runner

STATS = {"mean", "p50", "p90", "min", "max"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return tmp_path_factory.mktemp("profiling")


def net_run(lib, folder, out_dir, backend, *extra):
    r = subprocess.run([sys.executable, "-m", "qnn_build", "net-run", "--model", str(lib), "--backend", backend,
                        "--input-list", "list.txt", "--output-dir", out_dir, "-q", *extra], cwd=folder,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads((folder / out_dir / "profile.json").read_text())


def check_stats(s, values, tol=2e-3):
    """tol: the listed values' rounding (execute_us has 0.1 us, node times 1 ns)."""
    assert set(s) == STATS
    assert s["min"] <= s["p50"] <= s["p90"] <= s["max"]
    assert s["min"] == pytest.approx(min(values), abs=tol) and s["max"] == pytest.approx(max(values), abs=tol)
    assert s["mean"] == pytest.approx(sum(values) / len(values), abs=tol)


def check_detailed(profile, model_nodes, inferences):
    assert profile["profiling_level"] == "detailed" and profile["format_version"] == 1
    assert profile["num_inferences"] == inferences == len(profile["execute_us"])
    check_stats(profile["execute_stats"], profile["execute_us"], tol=0.06)
    nodes = profile["nodes"]
    assert [(n["name"], n["op"], n.get("fused", ""), [tuple(s) for s in n["outputs"]]) for n in nodes] == \
        [(m.name, m.op, m.fused, list(m.outputs)) for m in model_nodes]
    for n in nodes:
        assert len(n["time_us"]) == inferences and all(t >= 0 for t in n["time_us"]), n["name"]
        check_stats(n["stats"], n["time_us"])
    for k in range(inferences):  # the nodes run inside the execute that times them all
        assert sum(n["time_us"][k] for n in nodes) <= profile["execute_us"][k] + 0.1
    assert sum(n["stats"]["mean"] for n in nodes) > 0


@pytest.mark.parametrize("name,precision,backend", [("digits_cnn", "fp32", "cpu"), ("mobile_tiny", "w8a8", "npu")])
def test_detailed_profile_times_every_node_of_the_schedule(built, zoo_cache, name, precision, backend):
    folder = zoo_model(name, precision, built, zoo_cache)
    lib = model_lib(folder, "x86_64-linux")
    profile = net_run(lib, folder, f"py-{backend}", backend, "--profiling-level", "detailed", "--num-inferences", "3")
    model = Model(lib, backend=backend)
    check_detailed(profile, model.nodes(), 3)
    ops = {n["op"] for n in profile["nodes"]}
    assert "Conv" in ops
    if backend == "cpu":  # digits_cnn's Conv + Relu: fused at finalize, one node of the schedule
        fused = [n for n in profile["nodes"] if n.get("fused")]
        assert fused and fused[0]["op"] == "Conv" and fused[0]["fused"] == "Relu"
        assert "Relu" not in ops
    # The native runner writes the same keys, nodes and shapes.
    r = run_native("x86_64-linux", lib, folder, f"native-{backend}", backend, "--profiling_level", "detailed",
                   "--num_inferences", "3")
    assert r.returncode == 0, r.stderr
    native = json.loads((folder / f"native-{backend}" / "profile.json").read_text())
    check_detailed(native, model.nodes(), 3)
    assert set(native) == set(profile)
    assert all(set(a) == set(b) for a, b in zip(native["nodes"], profile["nodes"]))


def test_basic_profile_has_no_nodes_and_the_runtime_times_none(built, zoo_cache):
    folder = zoo_model("digits_cnn", "fp32", built, zoo_cache)
    lib = model_lib(folder, "x86_64-linux")
    profile = net_run(lib, folder, "basic", "cpu", "--profiling-level", "basic")
    assert profile["profiling_level"] == "basic" and "nodes" not in profile
    check_stats(profile["execute_stats"], profile["execute_us"], tol=0.06)
    model = Model(lib)
    x = {"image": np.zeros((1, 1, 8, 8), np.float32)}
    model.set_profiling("basic")
    model.run(x)
    with pytest.raises(Exception, match="call out of order"):
        model.node_times_us()
    model.set_profiling("detailed")
    model.run(x)
    assert model.node_times_us().shape == (len(model.nodes()),)
    with pytest.raises(Exception, match="unknown profiling level"):
        model.set_profiling("bogus")


def test_a_context_binary_profiles_its_stored_schedule(built, zoo_cache):
    folder = zoo_model("digits_cnn", "fp32", built, zoo_cache)
    model = Model(model_lib(folder, "x86_64-linux"))
    loaded = Model(context=model.context_binary())
    loaded.set_profiling("detailed")
    loaded.run({"image": np.ones((1, 1, 8, 8), np.float32)})
    assert loaded.nodes() == model.nodes() and len(loaded.node_times_us()) == len(model.nodes())


def test_native_runner_refuses_an_unknown_level(built, zoo_cache):
    folder = zoo_model("digits_cnn", "fp32", built, zoo_cache)
    lib = model_lib(folder, "x86_64-linux")
    r = subprocess.run([str(build_runner()), "--model", str(lib), "--input_list", "list.txt", "--output_dir", "bogus",
                        "--profiling_level", "bogus"], cwd=folder, capture_output=True, text=True)
    assert r.returncode == 1 and not (folder / "bogus").exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--profiling_level must be basic or detailed, not 'bogus'" in lines[0]


def test_statistics_match_numpy():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 50):
        values = rng.uniform(0, 100, n).tolist()
        for q in (50, 90):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), abs=1e-9)
        s = stats(values)
        assert s["mean"] == round(float(np.mean(values)), 3) and s["p90"] == round(float(np.percentile(values, 90)), 3)
