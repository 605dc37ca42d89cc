"""`qnn-build profile-viewer`: a detailed profile.json as per-op and per-node tables sorted by time,
two profiles compared node by node, and the Chrome trace / Perfetto JSON whose node slices sit
inside their inference's slice."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.cli import main
from qnn_build.report.profile_view import chrome_trace, compare, load_profile, op_table


def conv_model() -> onnx.ModelProto:
    """Conv -> Sigmoid (fused into the Conv on the cpu) -> MatMul: two nodes of the schedule."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    m = numpy_helper.from_array(rng.standard_normal((14, 256)).astype(np.float32), "m")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 14, 256])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
             helper.make_node("MatMul", ["s", "m"], ["y"], name="proj")]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w, m]), opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("profile_viewer")
    onnx.save(conv_model(), d / "m.onnx")
    np.random.default_rng(1).standard_normal(3 * 16 * 16).astype(np.float32).tofile(d / "x.raw")
    (d / "list.txt").write_text(f"x:={d / 'x.raw'}\n")
    assert main(["convert", str(d / "m.onnx"), "-o", str(d), "-q"]) == 0
    assert main(["model-lib", "--cpp", str(d / "model.cpp"), "--bin", str(d / "model.bin"), "-o", str(d / "lib.so"),
                 "-q"]) == 0
    for name, threads in (("one", "1"), ("two", "2")):
        assert main(["net-run", "--model", str(d / "lib.so"), "--input-list", str(d / "list.txt"), "--output-dir",
                     str(d / name), "--profiling-level", "detailed", "--num-inferences", "4", "--threads", threads,
                     "-q"]) == 0
    return d


def test_tables_sorted_by_time(runs, capsys):
    assert main(["profile-viewer", str(runs / "one"), "--top", "1"]) == 0  # the folder finds its profile.json
    out = capsys.readouterr().out
    profile = load_profile(runs / "one")
    ops = op_table(profile)
    assert [r["mean_us"] for r in ops] == sorted((r["mean_us"] for r in ops), reverse=True)
    assert sum(r["share"] for r in ops) == pytest.approx(1, abs=1e-3)
    assert sum(r["nodes"] for r in ops) == len(profile["nodes"])
    means = sorted(((n["stats"]["mean"], n["name"]) for n in profile["nodes"]), reverse=True)
    listed = [line.split()[0] for line in out.splitlines() if line.strip().split()[:1] in ([m[1]] for m in means)]
    assert listed == [name for _, name in means[:1]]  # --top 1: the slowest node
    assert "1 more node(s)" in out and "execute  mean" in out


def test_compare_two_profiles(runs, capsys):
    assert main(["profile-viewer", str(runs / "one/profile.json"), "--compare", str(runs / "two/profile.json"),
                 "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    a, b = load_profile(runs / "one"), load_profile(runs / "two")
    assert {r["node"] for r in c["nodes"]} == {n["name"] for n in a["nodes"]}
    row = c["nodes"][0]
    by_name = {n["name"]: n["stats"]["mean"] for n in b["nodes"]}
    assert row["b_us"] == by_name[row["node"]] and row["ratio"] == pytest.approx(row["b_us"] / row["a_us"], abs=1e-3)
    assert c == {**compare(a, b), "a": c["a"], "b": c["b"]}


def test_chrome_trace_nests_nodes_in_their_inference(runs, capsys):
    trace_path = runs / "trace.json"
    assert main(["profile-viewer", str(runs / "one"), "--chrome-trace", str(trace_path), "-q"]) == 0
    trace = json.loads(trace_path.read_text())
    assert trace == json.loads(json.dumps(chrome_trace(load_profile(runs / "one"))))
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    executes = [e for e in slices if e["cat"] == "execute"]
    nodes = [e for e in slices if e["tid"] == 2]
    profile = load_profile(runs / "one")
    assert len(executes) == 4 and len(nodes) == 4 * len(profile["nodes"])
    for k, ex in enumerate(executes):
        inside = [n for n in nodes if ex["ts"] <= n["ts"] and n["ts"] + n["dur"] <= ex["ts"] + ex["dur"] + 1e-3]
        assert [n["name"] for n in inside] == [n["name"] for n in profile["nodes"]]
        assert [n["dur"] for n in inside] == [n["time_us"][k] for n in profile["nodes"]]
