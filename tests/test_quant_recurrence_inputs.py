"""act_range auto's recurrence inputs at 16 bits (docs/quantization.md (21d)) on silero VAD's
one-frame model: its encoder's last Relu (0 to a few thousand, most values a small fraction of that)
feeds the unrolled LSTM, which runs at 16 bits; at 8 bits that input's step rounds most values away
and the recurrence cannot get them back. auto finds that 16 bits there (with the STFT's squares,
(21c)) pay, keeps them and says so; the model's output then beats plain minmax by far."""

import json

import numpy as np
import onnxruntime as ort
import pytest
from test_third_party import fetch, tones

from qnn_build.convert import build_graph, convert
from qnn_build.quant import QuantOptions
from qnn_build.quant.range_search import SQUARE_BITS, recurrence_inputs
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

DIMS, VALUES = {"input": [1, 512], "state": [2, 1, 128]}, {"sr": 16000}
ENCODER_OUT = "If_0/then/If_0_then_branch__Inline_0__/encoder/3/activation/Relu_output_0"


def frames(count, seed):
    return {"input": tones(count, seed), "state": np.zeros((count, 2, 1, 128), np.float32)}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("recurrence_inputs")
    path = fetch("silero_vad/data/silero_vad.onnx", "silero-vad==6.2.3")
    np.savez(d / "calib.npz", **frames(16, seed=0))
    for name, options in (("auto", QuantOptions(act_range="auto", weight_rounding="nearest")),
                          ("minmax", QuantOptions(act_range="minmax", weight_rounding="nearest"))):
        convert(path, d / name, DIMS, VALUES, precision="w8a8", calibration=d / "calib.npz", options=options)
    return d, path


def output_sqnr(folder, path) -> float:
    test = frames(16, seed=1)
    feeds = [{k: v[i] for k, v in test.items()} for i in range(16)]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = np.stack([session.run(["output"], {**f, "sr": np.array(16000, np.int64)})[0] for f in feeds])
    with Model(build_model_lib(folder / "model.cpp", folder / "model.bin", folder / "libmodel.so")) as model:
        out = np.stack([model.run(f)["output"] for f in feeds])
    ref = ref.astype(np.float64)
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum((out - ref) ** 2)))


def test_the_recurrence_inputs_are_found(work):
    _, path = work
    found = recurrence_inputs(build_graph(path, DIMS, VALUES, lower_rnn=True))
    assert ENCODER_OUT in found and "state" in found  # the input sequence and the initial state


def test_auto_gives_the_recurrence_input_16_bits_and_gains(work):
    d, path = work
    doc = json.loads((d / "auto" / "model.encodings.json").read_text())
    assert doc["quantization"]["act_range"].endswith(f"recurrence inputs at {SQUARE_BITS} bits")
    assert doc["activation_encodings"][ENCODER_OUT][0]["bitwidth"] == SQUARE_BITS
    auto, minmax = output_sqnr(d / "auto", path), output_sqnr(d / "minmax", path)
    print(f"silero_vad output: auto {auto:.2f} dB, minmax {minmax:.2f} dB")
    assert auto > minmax + 4.0
