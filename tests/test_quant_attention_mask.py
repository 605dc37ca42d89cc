"""A transformer's key-padding mask of -inf or finfo.min, quantized (docs/quantization.md "Attention
masks of -inf").

PyTorch exports masked_fill(~mask, -inf) added to the attention scores before Softmax; Hugging Face
writes torch.finfo(float32).min in place of -inf, also as (1 - mask) * finfo.min. Calibration takes a
Where's fills (never a NaN, never another op's infinity) as saturating to the end of the encoding, and
the converter makes Add(scores, Where(c, fill, 0)) a Where(c, fill, scores): the float path keeps
onnxruntime's results, and quantized the masked keys get the lowest code of the scores' encoding, a
Softmax weight of ~0, on the cpu simulation and on the npu alike, with padded inputs or not.
"""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import build_graph, convert
from qnn_build.errors import QnnBuildError
from qnn_build.report.accuracy_debug import accuracy_debug
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

from onnx_backend import QnnbBackend

S, D, PADDED = 12, 16, 5  # tokens, width, padding tokens of a padded sample


FINFO_MIN = float(np.finfo(np.float32).min)  # -3.4028235e38: Hugging Face's and PyTorch's "never" since 2023


def _attention(fill_value: float = -np.inf, zero_value: float = 0.0, temperature: float = 1.0,
               form: str = "added") -> onnx.ModelProto:
    """One head of self-attention over x [1, S, D] whose keys the bool mask [1, S] selects, the
    scores q·k / (sqrt(D) · temperature) masked by `form` (FORMS) with `fill_value`."""
    rng = np.random.default_rng(7)
    weights = {n: (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for n in ("wq", "wk", "wv")}
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"]),
             helper.make_node("MatMul", ["x", "wk"], ["k"]),
             helper.make_node("MatMul", ["x", "wv"], ["v"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["product"]),
             helper.make_node("Mul", ["product", "inv_sqrt_d"], ["scores"]),
             *FORMS[form],
             helper.make_node("Softmax", ["masked_scores"], ["weights"], axis=-1),
             helper.make_node("MatMul", ["weights", "v"], ["y"])]
    inits = [numpy_helper.from_array(v, n) for n, v in weights.items()] + [
        numpy_helper.from_array(np.array(1 / (np.sqrt(D) * temperature), np.float32), "inv_sqrt_d"),
        numpy_helper.from_array(np.array(fill_value, np.float32), "fill"),
        numpy_helper.from_array(np.full((1, S), zero_value, np.float32), "zeros"),
        numpy_helper.from_array(np.array(1, np.float32), "one"),
        numpy_helper.from_array(np.array(0, np.float32), "zero"),
        numpy_helper.from_array(np.array([1, 1, S], np.int64), "key_shape")]
    graph = helper.make_graph(nodes, "masked_attention",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D]),
                               helper.make_tensor_value_info("mask", TensorProto.BOOL, [1, S])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, D])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return onnx.shape_inference.infer_shapes(model)


def _added(mask_nodes):
    """The mask [1, S] the last of `mask_nodes` writes, as "key_mask" [1, 1, S], added to the scores."""
    return [*mask_nodes, helper.make_node("Reshape", ["mask_fill", "key_shape"], ["key_mask"]),
            helper.make_node("Add", ["scores", "key_mask"], ["masked_scores"])]


def _inverted(to_float) -> list:
    """1 - the mask as 0/1 floats, made by `to_float` (nodes from "mask" to "mask_float")."""
    return [*to_float, helper.make_node("Sub", ["one", "mask_float"], ["inverted"])]


_INVERTED = _inverted([helper.make_node("Cast", ["mask"], ["mask_float"], to=TensorProto.FLOAT)])
_INVERTED_INT = _inverted([helper.make_node("Cast", ["mask"], ["mask_int"], to=TensorProto.INT64),
                           helper.make_node("Cast", ["mask_int"], ["mask_float"], to=TensorProto.FLOAT)])
_INVERTED_SELECTED = _inverted([helper.make_node("Where", ["mask", "one", "zero"], ["mask_float"])])
# How exporters write a key-padding mask. added: PyTorch's key_padding_mask, masked_fill(~mask, fill)
# added; filled: scores.masked_fill(~mask, fill), the form the converter gives the others; inverted:
# Hugging Face's _expand_mask, (1 - mask).masked_fill((1 - mask).bool(), finfo.min) added; product:
# BERT's extended attention mask, (1 - mask) * finfo.min added; *_int: of an int64 mask (an
# attention_mask input); inverted_recast: its condition cast to bool twice, as transformers 4.x's sdpa
# attention exports it; *_selected: of a 0/1 float mask no Cast made (the converter compares it with 0).
FORMS = {
    "added": [helper.make_node("Not", ["mask"], ["padding"]),
              *_added([helper.make_node("Where", ["padding", "fill", "zeros"], ["mask_fill"])])],
    "filled": [helper.make_node("Not", ["mask"], ["padding"]),
               helper.make_node("Reshape", ["padding", "key_shape"], ["key_padding"]),
               helper.make_node("Where", ["key_padding", "fill", "scores"], ["masked_scores"])],
    "inverted": [*_INVERTED, helper.make_node("Cast", ["inverted"], ["padding"], to=TensorProto.BOOL),
                 *_added([helper.make_node("Where", ["padding", "fill", "inverted"], ["mask_fill"])])],
    "inverted_recast": [*_INVERTED, helper.make_node("Cast", ["inverted"], ["inverted_bool"], to=TensorProto.BOOL),
                        helper.make_node("Cast", ["inverted_bool"], ["padding"], to=TensorProto.BOOL),
                        *_added([helper.make_node("Where", ["padding", "fill", "inverted"], ["mask_fill"])])],
    "product": [*_INVERTED, *_added([helper.make_node("Mul", ["inverted", "fill"], ["mask_fill"])])],
    "product_int": [*_INVERTED_INT, *_added([helper.make_node("Mul", ["inverted", "fill"], ["mask_fill"])])],
    "product_selected": [*_INVERTED_SELECTED, *_added([helper.make_node("Mul", ["fill", "inverted"], ["mask_fill"])])],
    "inverted_selected": [*_INVERTED_SELECTED, helper.make_node("Cast", ["inverted"], ["padding"], to=TensorProto.BOOL),
                          *_added([helper.make_node("Where", ["padding", "fill", "inverted"], ["mask_fill"])])],
}


def _feeds(rng, padding: int) -> dict:
    """Tokens, the last `padding` of them padding: the mask False there, and x there far from the
    others (a pad token's embedding), so that a key the mask lets through moves the output."""
    x = rng.standard_normal((1, S, D)).astype(np.float32)
    x[:, S - padding:] = 3 * rng.standard_normal((1, padding, D))
    mask = np.ones((1, S), bool)
    mask[0, S - padding:] = False
    return {"x": x, "mask": mask}


def _onnxruntime(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _sqnr_db(ref, out) -> float:
    err = np.sum((ref.astype(np.float64) - out) ** 2)
    return float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / max(err, 1e-30)))


# (form, fill): every form with finfo.min, the added and filled forms with -inf too, and float16's lowest.
FLOAT_CASES = [("added", -np.inf), ("added", FINFO_MIN), ("added", -65504.0), ("filled", FINFO_MIN),
               ("inverted", FINFO_MIN), ("product", FINFO_MIN), ("product", -1e30), ("product_int", FINFO_MIN),
               ("product_selected", FINFO_MIN), ("inverted_selected", FINFO_MIN), ("inverted_recast", FINFO_MIN)]


@pytest.mark.parametrize("form,fill", FLOAT_CASES, ids=[f"{f}_{v:g}" for f, v in FLOAT_CASES])
def test_the_mask_becomes_a_where_and_float_keeps_onnxruntimes_results(tmp_path, form, fill):
    """Float, the Where gives what onnxruntime's Add does where a fill is at least 1e30 (fill + s rounds
    to fill): the Softmax weights match to 1e-6, and a row with every key masked is uniform in both
    (NaN with -inf in both: left out). float16's -65504 + s is not -65504: a row with a key unmasked
    still weighs the masked ones e^-65000 = 0, but a row with every key masked is Softmax(s) in
    onnxruntime and uniform in ours (a row with nothing to attend to: left out)."""
    model = _attention(fill, form=form)
    model.graph.output.append(helper.make_tensor_value_info("weights", TensorProto.FLOAT, [1, S, S]))
    graph = build_graph(_save(model, tmp_path))
    assert "Add" not in {n.op_type for n in graph.nodes}  # Where(moves(c), fill, scores) instead
    assert "mask_fill" not in graph.tensors
    ours = QnnbBackend.prepare(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for padding in (0, PADDED) + ((S,) if -np.inf < fill <= -1e30 else ()):
        feeds = _feeds(rng, padding)
        out, (y, weights) = ours.model.run(feeds), session.run(None, feeds)
        np.testing.assert_allclose(out["weights"], weights, rtol=0, atol=1e-6)
        np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-6)


NOT_MASKS = [pytest.param(-np.inf, 1.0, "added", id="not_zero"), pytest.param(np.nan, 0.0, "added", id="nan_fill"),
             pytest.param(-1e4, 0.0, "added", id="finite_not_lowest"),
             pytest.param(-np.inf, 0.0, "product", id="product_of_inf")]  # 0 · -inf is NaN: not a mask


@pytest.mark.parametrize("fill,zero,form", NOT_MASKS)
def test_a_where_that_is_not_a_mask_stays_an_add(tmp_path, fill, zero, form):
    graph = build_graph(_save(_attention(fill, zero, form=form), tmp_path))
    assert "Add" in {n.op_type for n in graph.nodes}


def _save(model, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def _moved_mask(moves) -> onnx.ModelProto:
    """Softmax(scores + moves(Where(pad, -inf, 0))): scores [1, 2, 6, 6], pad [1, 6]; moves: (op, int64
    constant inputs, attributes) in order."""
    n = 6
    nodes = [helper.make_node("Where", ["pad", "fill", "zeros"], ["moved_0"])]
    inits = [numpy_helper.from_array(np.array(-np.inf, np.float32), "fill"),
             numpy_helper.from_array(np.zeros((1, n), np.float32), "zeros")]
    for i, (op, constants, attrs) in enumerate(moves):
        names = [f"c{i}_{j}" for j in range(len(constants))]
        inits += [numpy_helper.from_array(np.array(v, np.int64), name) for name, v in zip(names, constants)]
        nodes.append(helper.make_node(op, [f"moved_{i}", *names], [f"moved_{i + 1}"], **attrs))
    nodes += [helper.make_node("Add", [f"moved_{len(moves)}", "scores"], ["masked"]),
              helper.make_node("Softmax", ["masked"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, n, n]),
                                           helper.make_tensor_value_info("pad", TensorProto.BOOL, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, n, n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# The moves an exporter puts between the mask and the scores; the mask on the left of the Add.
MOVES = [
    pytest.param([("Unsqueeze", [[1, 2]], {})], id="unsqueeze"),
    pytest.param([("Reshape", [[1, 6, 1]], {}), ("Transpose", [], {"perm": [0, 2, 1]}), ("Unsqueeze", [[1]], {})],
                 id="reshape_transpose_unsqueeze"),
    pytest.param([("Unsqueeze", [[0]], {}), ("Flatten", [], {"axis": 1}), ("Reshape", [[1, 1, 1, 6]], {}),
                  ("Expand", [[1, 2, 1, 6]], {})], id="flatten_reshape_expand"),
]


@pytest.mark.parametrize("moves", MOVES)
def test_the_condition_takes_the_masks_moves(tmp_path, moves):
    model = _moved_mask(moves)
    assert "Add" not in {n.op_type for n in build_graph(_save(model, tmp_path)).nodes}
    rng = np.random.default_rng(0)
    feeds = {"scores": rng.standard_normal((1, 2, 6, 6)).astype(np.float32),
             "pad": np.array([[False, False, False, True, False, True]])}
    np.testing.assert_allclose(QnnbBackend.prepare(model).model.run(feeds)["y"], _onnxruntime(model, feeds),
                               rtol=1e-6, atol=1e-7)


# Variants: the mask added (PyTorch's key_padding_mask); the same with the scores at temperature 10
# (span about 1.6 instead of 16, where the lowest code of their own range would leave a masked key
# exp(-1.6) of the largest weight: (3d) takes the range 16 below its top); masked_fill on the scores
# (the Where the first becomes: the same numbers); each with finfo.min (float16's lowest, -65504, once)
# in place of -inf, in each of Hugging Face's forms (FORMS): the same numbers again, bit for bit.
# (precision, variant, padding of the test inputs, SQNR floor in dB against onnxruntime's float
# output at the unpadded positions, 1.5 below the measured; the npu within the LSB of y's encoding
# docs/npu.md states for a whole model: 3 at 8 bits, 12 at 16.)
# Measured 2026-12-02 (cpu = npu within 0.01 dB; npu - cpu 0 LSB at w8a8, at most 3 at w8a16):
# w8a8 23.41, 23.04, 27.27, 23.04 dB; w8a16 43.22, 42.63, 46.01 dB. Without (3d) the narrow scores
# gave 0.87 and 2.05 dB. The finfo.min cases: the same as their -inf twins to 0.01 dB; without
# taking finfo.min as a fill, calibration took -3.4e38 into the scores' range: w8a8 3.15 dB unpadded,
# 3.78 padded; the float16 lowest gave NaN on the npu; the Cast forms did not run on the npu (a Cast
# to float of the mask, which the npu has no kernel for; the converter now takes the mask itself).
CASES = [
    pytest.param("w8a8", "added", 0, 21.9, 3, id="w8a8_unpadded"),
    pytest.param("w8a8", "added", PADDED, 21.5, 3, id="w8a8_padded"),
    pytest.param("w8a8", "narrow", PADDED, 25.7, 3, id="w8a8_padded_narrow_scores"),
    pytest.param("w8a8", "filled", PADDED, 21.5, 3, id="w8a8_padded_masked_fill_on_the_scores"),
    pytest.param("w8a16", "added", 0, 41.7, 12, id="w8a16_unpadded"),
    pytest.param("w8a16", "added", PADDED, 41.1, 12, id="w8a16_padded"),
    pytest.param("w8a16", "narrow", PADDED, 44.5, 12, id="w8a16_padded_narrow_scores"),
    pytest.param("w8a8", "finfo_added", 0, 21.9, 3, id="w8a8_unpadded_finfo_min_added"),
    pytest.param("w8a8", "finfo_added", PADDED, 21.5, 3, id="w8a8_padded_finfo_min_added"),
    pytest.param("w8a8", "finfo_filled", PADDED, 21.5, 3, id="w8a8_padded_finfo_min_masked_fill_on_the_scores"),
    pytest.param("w8a8", "inverted", PADDED, 21.5, 3, id="w8a8_padded_finfo_min_inverted_mask_filled"),
    pytest.param("w8a8", "inverted_recast", PADDED, 21.5, 3, id="w8a8_padded_finfo_min_inverted_mask_recast"),
    pytest.param("w8a8", "product", 0, 21.9, 3, id="w8a8_unpadded_finfo_min_times_inverted_mask"),
    pytest.param("w8a8", "product", PADDED, 21.5, 3, id="w8a8_padded_finfo_min_times_inverted_mask"),
    pytest.param("w8a8", "product_int", PADDED, 21.5, 3, id="w8a8_padded_finfo_min_times_inverted_int_mask"),
    pytest.param("w8a8", "product_selected", PADDED, 21.5, 3, id="w8a8_padded_finfo_min_times_inverted_float_mask"),
    pytest.param("w8a8", "float16_added", PADDED, 21.5, 3, id="w8a8_padded_float16_lowest_added"),
    pytest.param("w8a16", "inverted", PADDED, 41.1, 12, id="w8a16_padded_finfo_min_inverted_mask_filled"),
    pytest.param("w8a16", "product", PADDED, 41.1, 12, id="w8a16_padded_finfo_min_times_inverted_mask"),
]
VARIANTS = {"added": {}, "narrow": {"temperature": 10.0}, "filled": {"form": "filled"},
            "finfo_added": {"fill_value": FINFO_MIN}, "finfo_filled": {"fill_value": FINFO_MIN, "form": "filled"},
            "inverted": {"fill_value": FINFO_MIN, "form": "inverted"},
            "product": {"fill_value": FINFO_MIN, "form": "product"}, "float16_added": {"fill_value": -65504.0},
            "product_int": {"fill_value": FINFO_MIN, "form": "product_int"},
            "inverted_recast": {"fill_value": FINFO_MIN, "form": "inverted_recast"},
            "product_selected": {"fill_value": FINFO_MIN, "form": "product_selected"}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(precision, variant) -> (the float model, its library, its encodings), calibrated on
    samples padded by 0 to PADDED tokens; built on first use."""
    tmp = tmp_path_factory.mktemp("mask")
    rng = np.random.default_rng(1)
    samples = [_feeds(rng, int(p)) for p in rng.integers(0, PADDED + 1, 16)]
    np.savez(tmp / "calibration.npz", **{k: np.concatenate([s[k] for s in samples]) for k in samples[0]})
    cache = {}

    def build(precision, variant):
        if (precision, variant) not in cache:
            model, out = _attention(**VARIANTS[variant]), tmp / f"{precision}_{variant}"
            convert(_save(model, _mkdir(out)), out, precision=precision,
                    calibration=tmp / "calibration.npz")
            lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "lib.so")
            cache[precision, variant] = model, lib, json.loads((out / "model.encodings.json").read_text())
        return cache[precision, variant]
    return build


@pytest.mark.parametrize("precision,variant,padding,floor_db,npu_lsb", CASES)
def test_masked_attention_quantized_on_cpu_and_npu(built, precision, variant, padding, floor_db, npu_lsb):
    model, lib, encodings = built(precision, variant)
    # the -inf is the lowest code of the scores' encoding, which reaches 16 below its top (3d)
    scores = encodings["activation_encodings"]["masked_scores"][0]
    assert scores["max"] - scores["min"] >= 16 - 1e-6
    rng = np.random.default_rng(2)
    feeds = [_feeds(rng, padding) for _ in range(8)]
    ref = np.stack([_onnxruntime(model, f) for f in feeds])
    unmasked = np.stack([_onnxruntime(model, {**f, "mask": np.ones((1, S), bool)}) for f in feeds])
    keep = np.stack([f["mask"] for f in feeds])  # [8, 1, S]: the unpadded positions
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        on_cpu = np.stack([cpu.run(f)["y"] for f in feeds])
        on_npu = np.stack([npu.run(f)["y"] for f in feeds])
    lsb = np.max(np.abs(on_npu[keep] - on_cpu[keep])) / encodings["activation_encodings"]["y"][0]["scale"]
    cpu_db, npu_db = _sqnr_db(ref[keep], on_cpu[keep]), _sqnr_db(ref[keep], on_npu[keep])
    print(f"{precision} {variant} padding {padding}: cpu {cpu_db:.2f} dB, npu {npu_db:.2f} dB, "
          f"npu - cpu {lsb:.0f} LSB; the mask ignored {_sqnr_db(ref[keep], unmasked[keep]):.2f} dB")
    assert lsb <= npu_lsb + 1e-3
    assert min(cpu_db, npu_db) >= floor_db
    if padding:  # the padded keys would move the output far: the mask is what the SQNR measures
        assert _sqnr_db(ref[keep], unmasked[keep]) < floor_db - 10


@pytest.mark.parametrize("form", ["added", "product"])
def test_finfo_min_at_fp16_stays_finite(tmp_path, form):
    """At fp16 finfo.min becomes float16's lowest, not -inf: a row whose every key is masked stays
    uniform as in onnxruntime's float32, on the cpu and the npu alike; the others within fp16's error."""
    model = _attention(FINFO_MIN, form=form)
    convert(_save(model, tmp_path), tmp_path / "fp16", precision="fp16")
    lib = build_model_lib(tmp_path / "fp16/model.cpp", tmp_path / "fp16/model.bin", tmp_path / "lib.so")
    rng = np.random.default_rng(4)
    with Model(lib, backend="cpu") as cpu, Model(lib, backend="npu") as npu:
        for padding in (0, PADDED, S):
            feeds = _feeds(rng, padding)
            ref = _onnxruntime(model, feeds)
            for out in (cpu.run(feeds)["y"], npu.run(feeds)["y"]):
                np.testing.assert_allclose(out, ref, rtol=0, atol=1e-2, err_msg=f"padding {padding}")


def test_accuracy_debug_leaves_the_fills_out(built, tmp_path):
    """The masked scores hold finfo.min in float and the lowest code quantized: accuracy-debug
    compares the values around them (before, their SQNR read 0 dB and the fills as clipped)."""
    model, lib, _ = built("w8a8", "product")
    rng = np.random.default_rng(5)
    feeds = [_feeds(rng, PADDED) for _ in range(4)]
    np.savez(tmp_path / "test.npz", **{k: np.concatenate([f[k] for f in feeds]) for k in feeds[0]})
    report = accuracy_debug(_save(model, tmp_path), tmp_path / "test.npz", model=lib, backend="npu")
    scores = next(r for r in report["layers"] if r["tensor"] == "masked_scores")
    assert scores["sqnr_db"] > 20 and scores["clipped"] == 0.0


def _mkdir(path):
    path.mkdir(parents=True, exist_ok=True)
    return path


# A NaN, or an infinity no Where put there, still stops calibration naming the tensor.
NOT_A_MASK = [
    pytest.param("Sqrt", lambda x: -np.abs(x) - 1, "root", id="nan_of_a_sqrt"),
    pytest.param("Exp", lambda x: np.abs(x) + 200, "root", id="inf_of_an_exp"),
]


@pytest.mark.parametrize("op,make_x,tensor", NOT_A_MASK)
def test_a_real_nan_or_inf_still_stops_calibration(tmp_path, op, make_x, tensor):
    graph = helper.make_graph([helper.make_node(op, ["x"], ["root"]), helper.make_node("Relu", ["root"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path)
    x = make_x(np.random.default_rng(0).standard_normal((4, 1, 4))).astype(np.float32)
    np.savez(tmp_path / "calibration.npz", x=x)
    with pytest.raises(QnnBuildError, match=f"calibration: tensor '{tensor}' became NaN or Inf"):
        convert(path, tmp_path / "w8a8", precision="w8a8", calibration=tmp_path / "calibration.npz")


def test_every_key_masked_is_a_nan_and_stops_calibration(tmp_path):
    """A row with every key masked is NaN after Softmax (in onnxruntime too): not a mask's -inf."""
    path = _save(_attention(), tmp_path)
    rng = np.random.default_rng(3)
    samples = [_feeds(rng, 0), _feeds(rng, S)]
    np.savez(tmp_path / "calibration.npz", **{k: np.concatenate([s[k] for s in samples]) for k in samples[0]})
    with pytest.raises(QnnBuildError, match="calibration: tensor 'weights' became NaN or Inf"):
        convert(path, tmp_path / "w8a8", precision="w8a8", calibration=tmp_path / "calibration.npz")
