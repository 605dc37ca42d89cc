"""Inputs of their kind for the real models of bench/common.py, for bench/bench_quant.py --real (no
image or speech files ship here): what each model's own preprocessing would hand it.

- the OCR models (PP-OCRv4 det/rec, the ppocr classifier, ddddocr's CNN + BiLSTM recogniser): the
  text-like pages of bench/ocr_synthetic.py, normalised as each one's preprocessing does;
- the detectors and the ViT: synthetic scenes (a lit gradient, coloured boxes and discs, a line of
  text-like strokes, sensor noise), [0, 1] for YOLOv8, 0-255 for YOLOX (its preprocessing does not
  scale), ImageNet mean/std for the ViT;
- silero VAD, one frame and the 8-frame sequence: tones with noise (bench/vad_tones.py), zero state.

Calibration and test sets come from different seeds.
"""

import numpy as np

from ocr_synthetic import MEAN, STD, glyph_line, page

# Sizes for the accuracy benchmark, where bench/common.py's are the apps' (PP-OCRv4's detector at
# 640x640 costs minutes per calibration pass here; its weights do not change with the size).
BENCH_DIMS = {"ppocr_v4_det": {"x": [1, 3, 256, 256]}}


def scene(rng, h: int, w: int) -> np.ndarray:
    """[3, h, w] in 0-255: a lit gradient, boxes and discs in colour, a text line, noise."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = rng.uniform(40, 200, 3)[:, None, None] + rng.uniform(-60, 60, 3)[:, None, None] * (yy / h) \
        + rng.uniform(-60, 60, 3)[:, None, None] * (xx / w)
    img = np.broadcast_to(base, (3, h, w)).copy()
    for _ in range(int(rng.integers(3, 9))):
        colour = rng.uniform(0, 255, 3)[:, None]
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        ry, rx = rng.uniform(h / 20, h / 4), rng.uniform(w / 20, w / 4)
        if rng.random() < 0.5:
            mask = (np.abs(yy - cy) < ry) & (np.abs(xx - cx) < rx)
        else:
            mask = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < 1
        img[:, mask] = colour * rng.uniform(0.8, 1.0) + img[:, mask] * 0.1
    gray = np.full((h, w), 255.0, np.float32)
    height = max(8, h // 12)
    glyph_line(rng, gray, int(rng.integers(0, h - height)), int(rng.integers(0, w // 3)), height, int(rng.integers(w // 2, w)))
    img = np.where(gray[None] < 200, gray[None], img)
    img += rng.normal(0, 4, img.shape)
    return np.clip(img, 0, 255).astype(np.float32)


def _pages(rng, n, h, w, lines):
    return [page(rng, h, w, lines) for _ in range(n)]


def samples(name: str, dims: dict, count: int, seed: int) -> dict[str, np.ndarray]:
    """`count` inputs of the model's kind, stacked: [count, *dims[input]] per data input."""
    rng = np.random.default_rng(seed)
    key, shape = next(iter(dims.items()))  # the image models have one input
    h, w = shape[-2:] if len(shape) == 4 else (0, 0)
    if name == "ppocr_v4_det":
        x = [(p / 255 - MEAN) / STD for p in _pages(rng, count, h, w, 6)]
    elif name in ("ppocr_v4_rec", "ppocr_cls"):
        x = [(p / 255 - 0.5) / 0.5 for p in _pages(rng, count, h, w, 1)]
    elif name == "ddddocr_rec":
        x = [p[:1] / 255 for p in _pages(rng, count, h, w, 1)]
    elif name == "yolov8n_320":
        x = [scene(rng, h, w) / 255 for _ in range(count)]
    elif name == "yolox_ddddocr":
        x = [scene(rng, h, w) for _ in range(count)]
    elif name == "vit_s_focus":
        x = [(scene(rng, h, w) / 255 - MEAN) / STD for _ in range(count)]
    elif name == "silero_vad":
        return {"input": _tones(rng, count, 512)[:, None], "state": np.zeros((count, 2, 1, 128), np.float32)}
    elif name == "silero_vad_seq":
        return {"input": np.stack([_tones(rng, dims["input"][0], 576) for _ in range(count)]),
                "h": np.zeros((count, 1, 1, 128), np.float32), "c": np.zeros((count, 1, 1, 128), np.float32)}
    else:
        raise KeyError(f"no data for the real model '{name}'")
    return {key: np.stack(x)[:, None].reshape(count, *shape).astype(np.float32)}


def _tones(rng, count, length) -> np.ndarray:
    """Tones with noise: bench/vad_tones.py's stand-in for speech, one row per frame."""
    t = np.arange(length)
    x = [0.1 * np.sin(t / rng.uniform(3, 12)) + 0.05 * rng.standard_normal(length) for _ in range(count)]
    return np.stack(x).astype(np.float32)
