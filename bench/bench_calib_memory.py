"""Peak memory of calibration against the number of samples: it must not grow with them.

    python bench/bench_calib_memory.py [--samples 100,1000] [--size 224] [--smoke]

Makes a small float CNN on [1, 3, size, size] inputs (conv-relu blocks, a pooled classifier), writes
the largest sample count as raw files with a qnn-net-run input list (one file per sample, as a user
would have them) and as one .npz per count (one [count, 1, 3, size, size] array), then runs
`qnn-build calibrate` in a fresh process for each count and format and reports the peak resident
set size of that process (VmHWM) and its wall time. --smoke: 2 samples of 16x16, seconds (CI
runs it to check that the script works).
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def cnn(size: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes, inits, x, channels = [], [], "image", 3
    for i, out in enumerate([16, 32, 64]):
        w = numpy_helper.from_array((rng.standard_normal((out, channels, 3, 3)) * 0.2).astype(np.float32), f"w{i}")
        b = numpy_helper.from_array(np.zeros(out, np.float32), f"b{i}")
        inits += [w, b]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1], strides=[2, 2]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x, channels = f"r{i}", out
    inits.append(numpy_helper.from_array((rng.standard_normal((channels, 10)) * 0.1).astype(np.float32), "fc"))
    nodes += [helper.make_node("GlobalAveragePool", [x], ["gap"]),
              helper.make_node("Flatten", ["gap"], ["flat"]),
              helper.make_node("MatMul", ["flat", "fc"], ["logits"])]
    graph = helper.make_graph(nodes, "calib_cnn", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                                    [1, 3, size, size])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def calibrate(model: Path, input_list: Path, out: Path) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of one `qnn-build calibrate` process."""
    # VmHWM, the peak RSS of this process's own address space: ru_maxrss would also count the
    # parent's pages that the child had before its exec (Linux keeps that high-water mark).
    code = ("import sys; from qnn_build.cli import main; rc = main(sys.argv[1:]); "
            "print('maxrss', next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM'))); "
            "sys.exit(rc)")
    t0 = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code, "calibrate", str(model), "--calibration", str(input_list),
                             "-o", str(out)], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - t0
    kib = int(next(line.split()[1] for line in result.stdout.splitlines() if line.startswith("maxrss")))
    return kib / 1024, seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default="100,1000", help="comma-separated sample counts")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--smoke", action="store_true", help="2 samples of 16x16: checks that it runs")
    args = ap.parse_args()
    if args.smoke:
        args.samples, args.size = "2", 16
    counts = sorted(int(c) for c in args.samples.split(","))
    with tempfile.TemporaryDirectory(prefix="calib-memory-") as tmp:
        tmp = Path(tmp)
        onnx.save(cnn(args.size), tmp / "model.onnx")
        rng = np.random.default_rng(1)
        for i in range(counts[-1]):
            rng.standard_normal((1, 3, args.size, args.size)).astype(np.float32).tofile(tmp / f"x{i}.raw")
        print(f"{'format':>6} {'samples':>8} {'data MiB':>9} {'peak RSS MiB':>13} {'seconds':>8}")
        for count in counts:
            listing = tmp / f"list{count}.txt"
            listing.write_text("".join(f"image:={tmp / f'x{i}.raw'}\n" for i in range(count)))
            samples = np.stack([np.fromfile(tmp / f"x{i}.raw", np.float32).reshape(1, 3, args.size, args.size)
                                for i in range(count)])
            np.savez(tmp / f"calib{count}.npz", image=samples)
            del samples
            data = count * 3 * args.size * args.size * 4 / 2**20
            for fmt, source in (("list", listing), ("npz", tmp / f"calib{count}.npz")):
                rss, seconds = calibrate(tmp / "model.onnx", source, tmp / f"stats-{fmt}{count}.npz")
                print(f"{fmt:>6} {count:>8} {data:9.0f} {rss:13.1f} {seconds:8.1f}")
            (tmp / f"calib{count}.npz").unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
