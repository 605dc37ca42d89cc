"""Calibration and test data for silero VAD in bench/bench_quant.py: tones with noise, the stand-in
tests/test_third_party_npu.py uses (no speech data ships with the project), zero initial state.

    python bench/vad_tones.py OUT_DIR     # writes OUT_DIR/vad_calibration.npz and vad_test.npz
"""

import sys
from pathlib import Path

import numpy as np


def tones(count: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = [0.1 * np.sin(np.arange(512) / rng.uniform(3, 12)) + 0.05 * rng.standard_normal(512) for _ in range(count)]
    return {"input": np.stack(x).astype(np.float32)[:, None], "state": np.zeros((count, 2, 1, 128), np.float32)}


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "vad_calibration.npz", **tones(100, seed=10))
    np.savez(out / "vad_test.npz", **tones(200, seed=100))
