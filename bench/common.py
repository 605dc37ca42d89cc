"""Shared by the benchmark scripts: which models, how to prepare each engine, how to time fairly.

Fair timing: the same input for every engine, warm-up first, then rounds in which every engine runs
once in a rotating order (so machine drift hits all alike), median over the rounds.
"""

import glob
import os
import statistics
import time
from pathlib import Path

import numpy as np
import onnx
import yaml

ROOT = Path(__file__).resolve().parent.parent


def zoo_models() -> list[tuple[str, Path, dict[str, list[int]]]]:
    """(name, onnx path, pinned input dims) for every shipped model with a spec."""
    out = []
    for spec_path in sorted((ROOT / "models").glob("*.yaml")):
        spec = yaml.safe_load(spec_path.read_text())
        dims = {k: (v["shape"] if isinstance(v, dict) else v) for k, v in (spec.get("inputs") or {}).items()}
        out.append((spec.get("name", spec_path.stem), (spec_path.parent / spec["source"]).resolve(), dims))
    return out


def light_models() -> list[tuple[str, Path, dict[str, list[int]]]]:
    """The onnx wheel's light models (static shapes)."""
    data = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return [(Path(p).stem.replace("light_", ""), Path(p), {}) for p in sorted(glob.glob(str(data / "light_*.onnx")))]


def random_feeds(model_path: Path, dims: dict, seed: int = 0) -> dict[str, np.ndarray]:
    from onnx import helper
    model = onnx.load(str(model_path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = dims.get(vi.name) or [d.dim_value if d.dim_value > 0 else 1 for d in vi.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def interleaved_medians(runners: dict, rounds: int, warmup: int = 3) -> dict[str, float]:
    """Median seconds per call of each runner, timed in rotating order."""
    for fn in runners.values():
        for _ in range(warmup):
            fn()
    names = list(runners)
    samples = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            t0 = time.perf_counter()
            runners[n]()
            samples[n].append(time.perf_counter() - t0)
    return {n: statistics.median(s) for n, s in samples.items()}


def geomean(values) -> float:
    values = [v for v in values if v and v > 0]
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def openblas_note() -> str:
    forced = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    return f"note: OpenBLAS settings forced by the environment: {forced}" if forced else ""
