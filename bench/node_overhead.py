"""The runtime's cost per node: a chain of N Neg nodes on a [1, 4] tensor against a chain of one,
interleaved, timed by the process's CPU time; the difference over N - 1 nodes is what one node
costs in execute (dispatch, the kernel's call and its loop over 4 elements), without Python's.

    python bench/node_overhead.py [--nodes 1001] [--rounds 200] [--smoke]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # onnx_backend: the pipeline as an ONNX backend
from common import interleaved_medians  # noqa: E402

from onnx_backend import QnnbBackend  # noqa: E402


def chain(n: int):
    nodes = [helper.make_node("Neg", [f"t{i}"], [f"t{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, 4])])
    return QnnbBackend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])).model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1001)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--smoke", action="store_true", help="101 nodes, 10 rounds: checks that it runs")
    args = ap.parse_args()
    if args.smoke:
        args.nodes, args.rounds = 101, 10
    x = {"t0": np.ones((1, 4), np.float32)}
    one, many, timed = chain(1), chain(args.nodes), chain(args.nodes)
    timed.set_profiling("detailed")
    t = interleaved_medians({"one": lambda: one.run(x), "many": lambda: many.run(x), "timed": lambda: timed.run(x)},
                            args.rounds, clock=time.process_time)
    per_node = (t["many"] - t["one"]) / (args.nodes - 1)
    print(f"execute: 1 node {t['one'] * 1e6:.2f} us, {args.nodes} nodes {t['many'] * 1e6:.2f} us; "
          f"per node {per_node * 1e9:.1f} ns")
    print(f"at --profiling-level detailed: {args.nodes} nodes {t['timed'] * 1e6:.2f} us, "
          f"{(t['timed'] - t['many']) / args.nodes * 1e9:.1f} ns more per node (two clock reads); a node's median "
          f"recorded time {np.median(timed.node_times_us()) * 1e3:.1f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
