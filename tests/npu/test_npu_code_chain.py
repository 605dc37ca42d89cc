"""Code chains (docs/npu.md (N16)): elementwise nodes computing a function of one 8-bit activation's
code run as one table lookup at finalize. The folded graph must give the bytes of the same graph run
node by node (keep_tensors, which keeps every tensor and so folds nothing), at 1 and 2 threads;
the profile shows the folded nodes as not run (0 ns)."""

import numpy as np
import pytest
from onnx import helper

from qnn_build.runtime.binding import Model

from .harness import F, build_lib, make_model, quantized, uniform


def chain_graph(tmp_path):
    """x: HardSwish written out (x · Clip(x + 3, 0, 6) / 6), then SiLU of that (y · Sigmoid(y)),
    with the Div's output also a graph output (a chain end that others read); and, behind a Conv,
    a chain that does not read its root at its end (Tanh(r + 0.5) · 2)."""
    nodes = [
        helper.make_node("Add", ["x", "three"], ["a"]),
        helper.make_node("Clip", ["a", "zero", "six"], ["b"]),
        helper.make_node("Div", ["b", "six"], ["c"]),
        helper.make_node("Mul", ["x", "c"], ["y"]),
        helper.make_node("Sigmoid", ["y"], ["s"]),
        helper.make_node("Mul", ["y", "s"], ["z"]),
        helper.make_node("Conv", ["z", "w"], ["r"], kernel_shape=[1, 1]),
        helper.make_node("Add", ["r", "half"], ["u"]),
        helper.make_node("Tanh", ["u"], ["v"]),
        helper.make_node("Mul", ["v", "two"], ["out"]),
    ]
    rng = np.random.default_rng(0)
    inits = [("three", np.array(3.0, np.float32)), ("zero", np.array(0.0, np.float32)),
             ("six", np.array(6.0, np.float32)), ("half", np.array(0.5, np.float32)),
             ("two", np.array(2.0, np.float32)), ("w", rng.uniform(-1, 1, [8, 8, 1, 1]).astype(np.float32))]
    path = make_model(tmp_path, nodes, [("x", F, [1, 8, 16, 16])], ["c", "out"], inits)
    ranges = {"x": (-5.0, 5.0), "a": (-2.0, 8.0), "b": (0.0, 6.0), "c": (0.0, 1.0), "y": (-0.5, 5.0),
              "s": (0.0, 1.0), "z": (-0.3, 5.0), "r": (-6.0, 6.0), "u": (-5.5, 6.5), "v": (-1.0, 1.0),
              "out": (-2.0, 2.0)}
    return quantized(path, "w8a8", ranges)


@pytest.mark.parametrize("threads", [1, 2])
def test_folded_chains_give_the_unfolded_bytes(tmp_path, threads):
    lib = build_lib(chain_graph(tmp_path), tmp_path, "chain")
    feeds = {"x": uniform(np.random.default_rng(1), [1, 8, 16, 16], -6, 6)}
    node_by_node = Model(lib, backend="npu", threads=threads, keep_tensors=True)
    folded = Model(lib, backend="npu", threads=threads)
    for m in (node_by_node, folded):
        m.set_native_io(False, True)  # the output codes themselves
    want, got = node_by_node.run(feeds), folded.run(feeds)
    for name in ("c", "out"):
        assert got[name].dtype == np.uint8
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert len(np.unique(want["out"])) > 20  # the inputs cover the tables, not one corner

    folded.set_profiling("detailed")
    folded.run(feeds)
    skipped = {n.name for n, t in zip(folded.nodes(), folded.node_times_us()) if t == 0}
    ops = {n.name: n.op for n in folded.nodes()}
    # The HardSwish chain's Add, Clip and the SiLU's Mul(x, c), Sigmoid are folded into the last Mul.
    assert sum(ops[n] in ("Add", "Clip", "Sigmoid") for n in skipped) >= 3, skipped


def test_step_and_trig_tables_fold(tmp_path):
    """Every lookup-table op joins chains (docs/npu.md (N16)), the steps (N7b) too: Round(Sin(2.5 x))
    · 2 and Mod(Floor(x), 3) are one table each, with the unfolded bytes."""
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"]), helper.make_node("Sin", ["a"], ["b"]),
             helper.make_node("Round", ["b"], ["c"]), helper.make_node("Mul", ["c", "two"], ["y"]),
             helper.make_node("Floor", ["x"], ["f"]), helper.make_node("Mod", ["f", "three"], ["z"])]
    inits = [("k", np.array(2.5, np.float32)), ("two", np.array(2.0, np.float32)), ("three", np.array(3.0, np.float32))]
    path = make_model(tmp_path, nodes, [("x", F, [4, 300])], ["y", "z"], inits)
    graph = quantized(path, "w8a8", {"x": (-3.0, 3.0), "a": (-7.5, 7.5), "b": (-1.0, 1.0), "c": (-1.0, 1.0),
                                     "y": (-2.0, 2.0), "f": (-3.0, 3.0), "z": (0.0, 3.0)})
    lib = build_lib(graph, tmp_path, "stepchain")
    feeds = {"x": uniform(np.random.default_rng(2), [4, 300], -3, 3)}
    node_by_node, folded = Model(lib, backend="npu", keep_tensors=True), Model(lib, backend="npu")
    for m in (node_by_node, folded):
        m.set_native_io(False, True)
    want, got = node_by_node.run(feeds), folded.run(feeds)
    for name in ("y", "z"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    folded.set_profiling("detailed")
    folded.run(feeds)
    skipped = {n.op for n, t in zip(folded.nodes(), folded.node_times_us()) if t == 0}
    assert {"Sin", "Round", "Floor"} <= skipped, skipped
