"""How many of the float model's detections a detector with a raw head keeps at w8a8: its output
decoded, thresholded and reduced by NMS (numpy) as its app does, on the float model (onnxruntime)
and on the quantized one (the cpu simulation and the npu), then counted as bench/output_kinds.py
counts a detection list (IoU >= 0.5, the same class).

- YOLOv8 (yolov8n_320): output0 [1, 4 + classes, anchors]: centre and size in input pixels, then
  each class's score.
- YOLOX (yolox_ddddocr): [1, anchors, 5 + classes]: centre offset in cells, log size in cells,
  objectness, class scores (bench/end2end_head.py's decode).

    python bench/raw_detections.py yolov8n_320 [--calib 16] [--test 32] [--conf 0.05] [--act-range minmax] [--smoke]

The bench's scenes hold nothing nudenet's YOLOv8n is trained for: its best scores on them are 0.001
to 0.15, so its default threshold is 0.05 (the app's 0.2 would leave no detection to count).
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

from common import REAL_MODELS, fetch_real
from end2end_head import yolox_cells
from output_kinds import found, iou
from real_data import samples

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from qnn_build.convert import convert  # noqa: E402
from qnn_build.quant import QuantOptions  # noqa: E402
from qnn_build.runtime.binding import Model  # noqa: E402
from qnn_build.toolchain import build_model_lib  # noqa: E402

NMS_IOU = 0.45
CONF = {"yolov8n_320": 0.05, "yolox_ddddocr": 0.1}


def candidates(name: str, output: np.ndarray, dims) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(boxes [n, 4] as corners in input pixels, best class score [n], class [n]) of every anchor."""
    if name == "yolov8n_320":
        o = output[0].astype(np.float64)
        centre, size, scores = o[:2].T, o[2:4].T, o[4:].T
    else:
        o = output[0].astype(np.float64)
        cell, stride = (x[0].astype(np.float64) for x in yolox_cells(*dims[-2:]))
        centre, size = (o[:, :2] + cell) * stride, np.exp(o[:, 2:4]) * stride
        scores = o[:, 4:5] * o[:, 5:]
    boxes = np.concatenate([centre - size / 2, centre + size / 2], axis=1)
    return boxes, scores.max(axis=1), scores.argmax(axis=1)


def nms(boxes, scores, classes, conf: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The anchors above `conf`, highest first, without those overlapping a higher one of their class
    by more than NMS_IOU."""
    keep = []
    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] > conf]
    while order:
        i, order = order[0], order[1:]
        keep.append(i)
        if order:
            rest = np.array(order)
            overlap = iou(boxes[[i]], boxes[rest])[0]
            order = [j for j, o, c in zip(rest, overlap, classes[rest]) if o <= NMS_IOU or c != classes[i]]
    keep = np.array(keep, int)
    return boxes[keep], scores[keep], classes[keep]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", choices=sorted(CONF), default="yolov8n_320")
    ap.add_argument("--calib", type=int, default=16)
    ap.add_argument("--test", type=int, default=32)
    ap.add_argument("--conf", type=float, help="score threshold (default: the model's in CONF)")
    ap.add_argument("--act-range", default="auto", help="convert's act_range (weight rounding: auto's, else nearest)")
    ap.add_argument("--smoke", action="store_true", help="2 calibration and 2 test scenes, minmax: that the script runs")
    args = ap.parse_args(argv)
    if args.smoke:
        args.calib, args.test, args.act_range = 2, 2, "minmax"
    model = next(m for m in REAL_MODELS if m.name == args.model)
    conf = args.conf if args.conf is not None else CONF[args.model]
    path, (key, dims) = fetch_real(model), next(iter(model.dims.items()))
    rounding = "auto" if args.act_range == "auto" else "nearest"
    with tempfile.TemporaryDirectory(prefix="raw-detections-") as tmp:
        np.savez(f"{tmp}/calibration.npz", **samples(model.name, model.dims, args.calib, seed=0))
        convert(path, f"{tmp}/w8a8", model.dims, precision="w8a8", calibration=f"{tmp}/calibration.npz",
                       options=QuantOptions(act_range=args.act_range, weight_rounding=rounding))
        said = json.loads(Path(f"{tmp}/w8a8/model.encodings.json").read_text())["quantization"]["act_range"]
        lib = build_model_lib(f"{tmp}/w8a8/model.cpp", f"{tmp}/w8a8/model.bin", f"{tmp}/lib.so")
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        counts = {"cpu": np.zeros(4, int), "npu": np.zeros(4, int)}  # found, of the float's; confirmed, of its own
        with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
            for x in samples(model.name, model.dims, args.test, seed=1)[key]:
                ref = nms(*candidates(args.model, session.run(None, {key: x})[0], dims), conf)
                for backend, m in (("cpu", cpu), ("npu", npu)):
                    out = nms(*candidates(args.model, next(iter(m.run({key: x}).values())), dims), conf)
                    counts[backend] += (*found(ref, out, conf), *found(out, ref, conf))
    print(f"{args.model} w8a8 act_range {args.act_range} ({said}), {args.calib} calibration / {args.test} test "
          f"scenes, score > {conf}:")
    for backend, (kept, theirs, confirmed, own) in counts.items():
        print(f"  {backend}: {kept} of the float model's {theirs} detections kept; {confirmed} of its own {own} "
              f"confirmed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
