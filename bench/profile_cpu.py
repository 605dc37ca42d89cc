"""Where the time goes: per op type, ours (the runtime's per-node profile, `--profiling-level
detailed`) against onnxruntime's own profile (SessionOptions.enable_profiling), 1 thread each.

    python bench/profile_cpu.py [--runs 10] [--top 6] [--smoke] [ppocr_cls yolov8n_320 ...]

For each real model (bench/common.py REAL_MODELS; default all): the median time of every node over
`--runs` inferences after a warm-up, summed per op type (a fused activation counts with its
producer, as `Conv+SiLU`), the op types' shares, the slowest nodes; then onnxruntime's kernels per
op type the same way. Shares, not absolute times, are what compare across a loaded machine.
--smoke: silero_vad, 2 runs: checks that it runs (CI).
"""

import argparse
import collections
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # onnx_backend: the pipeline as an ONNX backend
from common import REAL_MODELS, fetch_real, real_feeds  # noqa: E402

from onnx_backend import QnnbBackend  # noqa: E402


def ours(model, path, runs: int, top: int) -> None:
    feeds, _ = real_feeds(model)
    rep = QnnbBackend.prepare(onnx.load(str(path)), input_dims=model.dims, input_values=model.values)
    m = rep.model
    m.set_profiling("detailed")
    for _ in range(3):
        m.run(feeds)
    times = []
    for _ in range(runs):
        m.run(feeds)
        times.append(m.node_times_us())
    median = np.median(np.array(times), axis=0)
    nodes = m.nodes()
    by_op, count = collections.defaultdict(float), collections.Counter()
    for node, t in zip(nodes, median):
        key = node.op + (f"+{node.fused}" if node.fused else "")
        by_op[key] += t
        count[key] += 1
    total = float(median.sum())
    print(f"  ours: {total / 1e3:.2f} ms in {len(nodes)} nodes")
    for op, t in sorted(by_op.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {op:<22} {count[op]:4d} nodes {t / 1e3:8.3f} ms {100 * t / total:5.1f} %")
    for node, t in sorted(zip(nodes, median), key=lambda nt: -nt[1])[:3]:
        print(f"    slowest: {t:9.1f} us {node.op} {node.name[:50]} -> {list(node.outputs[0]) if node.outputs else ''}")


def theirs(model, path, runs: int, top: int) -> None:
    import onnxruntime as ort
    _, feeds = real_feeds(model)
    with tempfile.TemporaryDirectory() as tmp:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        for _ in range(3 + runs):
            sess.run(None, feeds)
        events = json.loads(Path(sess.end_profiling()).read_text())
    per_op = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_op[e["args"]["op_name"]].append(e["dur"])
    n = 3 + runs
    total = sum(sum(v) for v in per_op.values()) / n
    print(f"  onnxruntime: {total / 1e3:.2f} ms in its kernels (mean)")
    for op, v in sorted(per_op.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"    {op:<22} {sum(v) / n / 1e3:8.3f} ms {100 * sum(v) / n / total:5.1f} %")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="REAL_MODELS names (default: all)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--top", type=int, default=6, help="op types listed per engine")
    ap.add_argument("--smoke", action="store_true", help="silero_vad, 2 runs: checks that it runs")
    args = ap.parse_args()
    if args.smoke:
        args.models, args.runs = ["silero_vad"], 2
    for model in REAL_MODELS:
        if args.models and model.name not in args.models:
            continue
        path = fetch_real(model)
        print(f"{model.name} ({model.what})")
        ours(model, path, args.runs, args.top)
        theirs(model, path, args.runs, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
