"""Real models that need the ops of issue 16 (comparisons, logic, Where on a runtime condition),
from the package registry as users bring them: the Arabic-name romanizer's GRU encoder (Equal, Not,
Where, masked ReduceSum) and its attention decoder (Where over the source mask), each converted with
its dynamic dims pinned and matched against the model in float64 (1e-4 relative, as
tests/test_third_party.py) and onnxruntime; non-float outputs (the mask) exactly.
"""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from test_third_party import fetch, relative_error

from onnx_backend import QnnbBackend
from qnn_build.ir.reference import run_float64

ROMANIZER = "arabic-name-romanizer==0.2.0"
B, S, T = 2, 12, 5  # names, source letters, target letters so far


def source(rng):
    src = rng.integers(1, 40, (B, S)).astype(np.int64)
    mask = np.ones((B, S), bool)
    mask[0, 9:] = False  # a shorter first name: padding the encoder must mask out
    return src, mask


def encoder_feeds(rng):
    src, mask = source(rng)
    return {"src": src, "src_mask": mask}


def decoder_feeds(rng):
    _, mask = source(rng)
    return {"prefix": rng.integers(1, 100, (B, T)).astype(np.int64),
            "memory": rng.uniform(-1, 1, (B, S, 256)).astype(np.float32), "src_mask": mask,
            "hidden": rng.uniform(-1, 1, (B, 2, 256)).astype(np.float32)}


CASES = [
    pytest.param("arabic_name_romanizer/resources/encoder.onnx", {"src": [B, S], "src_mask": [B, S]}, encoder_feeds,
                 id="romanizer_encoder"),
    pytest.param("arabic_name_romanizer/resources/decoder.onnx",
                 {"prefix": [B, T], "memory": [B, S, 256], "src_mask": [B, S], "hidden": [B, 2, 256]}, decoder_feeds,
                 id="romanizer_decoder"),
]


@pytest.mark.parametrize("member,dims,make_feeds", CASES)
def test_real_model_with_issue16_ops(member, dims, make_feeds):
    path = fetch(member, ROMANIZER)
    feeds = make_feeds(np.random.default_rng(0))
    model = onnx.load(str(path))
    ref = run_float64(model, feeds)
    theirs = dict(zip([o.name for o in model.graph.output],
                      ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)))
    ours = QnnbBackend.prepare(model, input_dims=dims).model.run(feeds)
    assert set(ours) == set(ref) == set(theirs)
    for out, value in ref.items():
        assert ours[out].shape == value.shape, out
        if value.dtype != np.float64:
            np.testing.assert_array_equal(ours[out], theirs[out], err_msg=out)
            continue
        assert relative_error(ours[out], value) <= 1e-4, out
        assert relative_error(theirs[out], value) <= 1e-4, out
