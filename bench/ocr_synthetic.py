"""Synthetic text images for the OCR models' quantization benchmark (no image files ship here).

    python bench/ocr_synthetic.py OUT_DIR [--smoke]     (--smoke: 2 images per file)

Random normal inputs put PP-OCR's detector in the far tail of its output sigmoid (probabilities
near 1e-5, where any error is relative), which says nothing about text. These images are closer:
a light, noisy page with dark lines of glyph-like strokes (bars, boxes and dots of text height),
normalised as each model's preprocessing does. Writes, for calibration (seed 0) and test (seed 1):
det_{calibration,test}.npz  x [N, 1, 3, 256, 256]  ImageNet mean/std (PP-OCR det)
rec_{calibration,test}.npz  x [N, 1, 3, 48, 320]   (v / 255 - 0.5) / 0.5 (PP-OCR rec and cls)
"""

import sys
from pathlib import Path

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)


def glyph_line(rng, page, top, left, height, right):
    """Dark strokes of one text line, in place, from `left` until `right`."""
    x, ink = left, rng.uniform(0, 80)
    while x < right - height:
        width = int(rng.integers(height // 3, height))
        kind = rng.integers(0, 3)
        if kind == 0:  # a vertical bar with a foot: like l, i, t
            page[top:top + height, x:x + max(2, height // 6)] = ink
            page[top + height - 3:top + height, x:x + width // 2] = ink
        elif kind == 1:  # a box outline: like o, a, e
            b = max(2, height // 8)
            page[top + height // 3:top + height, x:x + width] = ink
            page[top + height // 3 + b:top + height - b, x + b:x + width - b] = page[top, max(x - 2, 0)]
        else:  # a cross: like x, k, f
            for k in range(height):
                c = x + k * width // height
                page[top + k, c:c + 2] = ink
                page[top + k, x + width - 1 - k * width // height:x + width + 1 - k * width // height] = ink
        x += width + int(rng.integers(1, height // 2 + 2))
        if rng.random() < 0.15:
            x += height  # a space between words


def page(rng, h, w, lines):
    img = np.full((h, w), rng.uniform(200, 255), np.float32)
    for _ in range(lines):
        height = int(rng.integers(max(10, h // 16), max(12, h // 8) + 1)) if lines > 1 else int(h * 0.6)
        top = int(rng.integers(0, h - height))
        left = int(rng.integers(0, w // 4))
        glyph_line(rng, img, top, left, height, int(rng.integers(w // 2, w)))
    img += rng.normal(0, 6, img.shape).astype(np.float32)
    rgb = np.clip(np.stack([img * rng.uniform(0.9, 1.0) for _ in range(3)]), 0, 255)
    return rgb


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--smoke"]
    out = Path(args[0] if args else "out/ocr-synthetic")
    out.mkdir(parents=True, exist_ok=True)
    for split, seed, count in (("calibration", 0, 100), ("test", 1, 200)):
        count = 2 if "--smoke" in sys.argv else count
        rng = np.random.default_rng(seed)
        det = np.stack([((page(rng, 256, 256, 6) / 255 - MEAN) / STD)[None] for _ in range(count)])
        rec = np.stack([((page(rng, 48, 320, 1) / 255 - 0.5) / 0.5)[None] for _ in range(count)])
        np.savez(out / f"det_{split}.npz", x=det.astype(np.float32))
        np.savez(out / f"rec_{split}.npz", x=rec.astype(np.float32))
    print(f"wrote {out}/{{det,rec}}_{{calibration,test}}.npz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
