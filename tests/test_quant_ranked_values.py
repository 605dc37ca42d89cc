"""act_range auto's rules for a detector's head (docs/quantization.md (21e)): boxes in pixels (0-500)
and class scores (a Sigmoid, 0-1) share one Concat, as in every YOLO raw output; the scores are
then maxed over the classes and ranked (ReduceMax, TopK), as an end-to-end head does. One 8-bit
encoding over both has a step of 2: every score would be 0. auto gives the Concat and what carries
its values on 16 bits, and the ranked values their minmax ranges; a head that ranks in the graph,
and what it ranks and gathers, 16 bits too; the npu runs it."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from qnn_build.convert import build_graph, convert
from qnn_build.quant import QuantOptions
from qnn_build.quant.calibrate import TensorStats
from qnn_build.quant.ranked_values import MIXED_BITS, carried_on, head_tensors, mixed_scale_concats, ranked_tensors
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

ANCHORS, CLASSES, K = 256, 4, 8
AUTO = QuantOptions(act_range="auto", weight_rounding="auto")


def scenes(count, seed):
    """Boxes uniform in 0-500 px; class logits low everywhere but a few anchors per scene."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(-8.0, 1.5, (count, 1, CLASSES, ANCHORS))
    for n in range(count):
        hits = rng.choice(ANCHORS, 5, replace=False)
        logits[n, 0, rng.integers(0, CLASSES, 5), hits] = rng.uniform(-1.0, 4.0, 5)
    boxes = rng.uniform(0.0, 500.0, (count, 1, 4, ANCHORS))
    return {"boxes": boxes.astype(np.float32), "logits": logits.astype(np.float32)}


def head_model(ranked=True):
    """A raw head (boxes and scores in one output, as YOLOv8's), and with `ranked` an end-to-end
    head's ReduceMax over the classes and TopK of the anchors after it."""
    starts, ends, axes = (helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in
                          (("starts", 4), ("ends", 4 + CLASSES), ("axes", 1)))
    k = helper.make_tensor("k", TensorProto.INT64, [1], [K])
    nodes = [helper.make_node("Sigmoid", ["logits"], ["scores"]),
             helper.make_node("Concat", ["boxes", "scores"], ["head"], axis=1),
             helper.make_node("Slice", ["head", "starts", "ends", "axes"], ["class_scores"]),
             helper.make_node("ReduceMax", ["class_scores"], ["best"], axes=[1], keepdims=0),
             helper.make_node("TopK", ["best", "k"], ["top", "top_index"])][:None if ranked else 2]
    outputs = [helper.make_tensor_value_info("head", TensorProto.FLOAT, [1, 4 + CLASSES, ANCHORS]),
               helper.make_tensor_value_info("top", TensorProto.FLOAT, [1, K]),
               helper.make_tensor_value_info("top_index", TensorProto.INT64, [1, K])][:None if ranked else 1]
    graph = helper.make_graph(
        nodes, "head",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 4, ANCHORS]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, CLASSES, ANCHORS])],
        outputs, [starts, ends, axes, k])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("ranked")
    onnx.save(head_model(), d / "model.onnx")
    onnx.save(head_model(ranked=False), d / "raw.onnx")
    np.savez(d / "calib.npz", **scenes(16, seed=0))
    convert(d / "model.onnx", d / "auto", precision="w8a8", calibration=d / "calib.npz", options=AUTO)
    convert(d / "raw.onnx", d / "raw", precision="w8a8", calibration=d / "calib.npz", options=AUTO)
    return d


def best_scores(feeds):
    """The float model's best class score per anchor."""
    return (1 / (1 + np.exp(-feeds["logits"].astype(np.float64))))[0].max(axis=0)


def test_the_head_is_found(work):
    graph = build_graph(work / "model.onnx")
    def calibrated(boxes_max):
        return {n: TensorStats(0.0, hi, None, None) for n, hi in (("boxes", boxes_max), ("scores", 0.99),
                                                                  ("head", boxes_max))}
    assert mixed_scale_concats(graph, calibrated(500.0)) == {"head": ["scores"]}
    assert mixed_scale_concats(graph, calibrated(50.0)) == {}  # 50 x: the scores keep 5 codes at 8 bits
    assert set(carried_on(graph, ["head"])) == {"head", "class_scores", "best", "top"}
    # back from ReduceMax and TopK through the Slice and the Concat (the boxes with the scores)
    assert set(ranked_tensors(graph)) == {"boxes", "logits", "scores", "head", "class_scores", "best"}
    raw = build_graph(work / "raw.onnx")  # the same head without ReduceMax and TopK, ranked after the graph
    assert ranked_tensors(raw) == []
    assert set(ranked_tensors(raw, ["scores"])) == {"scores", "logits"}


def test_auto_keeps_the_ranked_scores(work):
    doc = json.loads((work / "auto" / "model.encodings.json").read_text())
    assert doc["quantization"]["act_range"].endswith(
        f"ranked values at minmax, mixed-scale concats at {MIXED_BITS} bits, ranking head at {MIXED_BITS} bits")
    bits = {name: e[0]["bitwidth"] for name, e in doc["activation_encodings"].items()}
    assert {n: bits[n] for n in ("head", "class_scores", "best", "top")} == dict.fromkeys(
        ("head", "class_scores", "best", "top"), MIXED_BITS)
    # ranked in the graph: what it ranks, back to the inputs, at 16 bits too; ranked after the graph
    # (the raw head): the Concat's inputs keep 8 bits
    assert bits["boxes"] == bits["scores"] == MIXED_BITS
    raw = json.loads((work / "raw" / "model.encodings.json").read_text())["activation_encodings"]
    assert raw["head"][0]["bitwidth"] == MIXED_BITS and raw["boxes"][0]["bitwidth"] == raw["scores"][0]["bitwidth"] == 8
    test = scenes(8, seed=1)
    lib = build_model_lib(work / "auto" / "model.cpp", work / "auto" / "model.bin", work / "lib.so")
    for backend in ("cpu", "npu"):
        with Model(lib, backend=backend) as model:
            for i in range(8):
                feeds = {k: v[i] for k, v in test.items()}
                best, out = best_scores(feeds), model.run(feeds)
                order = np.argsort(-best)[:K]
                ref = best[order]
                # the 8-bit step over 0-500 px is 2: every score 0. At 16 bits it is 0.008; the
                # logits' 8-bit step (0.07) moves a score by up to 0.25 x 0.035 besides.
                assert np.max(np.abs(out["top"][0] - ref)) <= 0.02, backend
                # the scenes' hits (not the tail of near-nothing scores), in any order: the scores'
                # 8-bit step may swap two that lie within it
                clear = ref > 0.1
                assert set(out["top_index"][0][clear]) == set(order[clear]), backend


def end2end_model():
    """An end-to-end head: the scores' TopK picks anchors, GatherElements their boxes (0-500 px)."""
    k = helper.make_tensor("k", TensorProto.INT64, [1], [K])
    shape = helper.make_tensor("shape", TensorProto.INT64, [3], [1, K, 4])
    nodes = [helper.make_node("Sigmoid", ["logits"], ["scores"]),
             helper.make_node("TopK", ["scores", "k"], ["top", "top_index"]),
             helper.make_node("Unsqueeze", ["top_index"], ["index_col"], axes=[2]),
             helper.make_node("Expand", ["index_col", "shape"], ["box_index"]),
             helper.make_node("GatherElements", ["anchor_boxes", "box_index"], ["picked"], axis=1)]
    graph = helper.make_graph(
        nodes, "e2e",
        [helper.make_tensor_value_info("anchor_boxes", TensorProto.FLOAT, [1, ANCHORS, 4]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, ANCHORS])],
        [helper.make_tensor_value_info("top", TensorProto.FLOAT, [1, K]),
         helper.make_tensor_value_info("picked", TensorProto.FLOAT, [1, K, 4]),
         helper.make_tensor_value_info("top_index", TensorProto.INT64, [1, K])], [k, shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


def test_a_head_that_ranks_and_gathers_keeps_its_boxes_to_the_pixel(tmp_path):
    """At 8 bits a box over 0-500 px moves by up to a step of 2 px; at 16 bits by 0.004 px."""
    onnx.save(end2end_model(), tmp_path / "model.onnx")
    assert set(head_tensors(build_graph(tmp_path / "model.onnx"))) == {
        "logits", "scores", "top", "anchor_boxes", "picked"}

    def feeds(count, seed):
        s = scenes(count, seed)
        return {"anchor_boxes": s["boxes"].transpose(0, 1, 3, 2), "logits": s["logits"].max(axis=2)}
    np.savez(tmp_path / "calib.npz", **feeds(16, seed=0))
    convert(tmp_path / "model.onnx", tmp_path / "auto", precision="w8a8", calibration=tmp_path / "calib.npz",
            options=AUTO)
    lib = build_model_lib(tmp_path / "auto" / "model.cpp", tmp_path / "auto" / "model.bin", tmp_path / "lib.so")
    test = feeds(8, seed=1)
    for backend in ("cpu", "npu"):
        with Model(lib, backend=backend) as model:
            for i in range(8):
                out = model.run({k: v[i] for k, v in test.items()})
                picked = np.take_along_axis(test["anchor_boxes"][i], out["top_index"][..., None], axis=1)
                assert np.max(np.abs(out["picked"] - picked)) <= 0.02, backend
