"""An end-to-end (NMS-free) post-processing head appended to a YOLOX detector, in the graph: what the
NMS-free exports (YOLOv10, YOLO26 `end2end`, the DETR family) put after their scores, built with
onnx.helper so that no torch is needed to make it.

Besides the one real export found on the registries (isbnx's YOLO26n, tests/test_third_party_yolo26.py),
a real detector gets such a head here: ddddocr's YOLOX, whose app decodes its raw output and ranks
its boxes in Python. Here the same steps run in the graph, on
the raw output [batch, anchors, 5 + classes] (x, y offsets in cells, log width and height,
objectness, the classes' scores), anchors in YOLOX's order (per stride, row-major cells):

    centre = (xy + cell) * stride, size = exp(wh) * stride     Add, Exp, Mul
    corners = centre -+ size / 2                                 Sub, Add, Concat
    score[a, c] = objectness[a] * class score[a, c]              Mul
    best[a], class[a] = max and argmax over the classes         ReduceMax, ArgMax
    the `max_det` anchors of highest best                        TopK
    their boxes and classes                                      GatherElements (float and int64)
    valid = score > conf                                         Greater
    boxes and scores where valid, else 0                         Where

Outputs: boxes [batch, max_det, 4] (x1, y1, x2, y2 in input pixels), scores [batch, max_det]
(highest first), classes [batch, max_det] (int64), valid [batch, max_det] (bool).
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

STRIDES = (8, 16, 32)


def yolox_cells(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(cell [1, anchors, 2] as (x, y), stride [1, anchors, 1]) in YOLOX's anchor order."""
    cells, strides = [], []
    for s in STRIDES:
        yy, xx = np.mgrid[0:height // s, 0:width // s]
        cells.append(np.stack([xx.ravel(), yy.ravel()], 1))
        strides.append(np.full((xx.size, 1), s))
    return (np.concatenate(cells)[None].astype(np.float32), np.concatenate(strides)[None].astype(np.float32))


def with_end2end_head(model: onnx.ModelProto, batch: int, height: int, width: int, classes: int,
                      max_det: int = 100, conf: float = 0.1) -> onnx.ModelProto:
    """`model` (one raw YOLOX output [batch, anchors, 5 + classes] for [batch, 3, height, width]
    images) with the head above after its output."""
    cell, stride = yolox_cells(height, width)
    anchors = cell.shape[1]
    k = min(max_det, anchors)
    consts = {
        "e2e_cell": cell, "e2e_stride": stride, "e2e_k": np.array([k], np.int64),
        "e2e_box_shape": np.array([batch, k, 4], np.int64), "e2e_half": np.array(0.5, np.float32),
        "e2e_conf": np.array(conf, np.float32), "e2e_zero": np.array(0.0, np.float32),
    }
    n = helper.make_node  # in opset 11's forms (ddddocr's model): Split and Unsqueeze take attributes
    nodes = [
        n("Split", [model.graph.output[0].name], ["e2e_xy", "e2e_wh", "e2e_obj", "e2e_cls"], axis=2,
          split=[2, 2, 1, classes]),
        n("Add", ["e2e_xy", "e2e_cell"], ["e2e_xy_cells"]),
        n("Mul", ["e2e_xy_cells", "e2e_stride"], ["e2e_centre"]),
        n("Exp", ["e2e_wh"], ["e2e_wh_cells"]),
        n("Mul", ["e2e_wh_cells", "e2e_stride"], ["e2e_size"]),
        n("Mul", ["e2e_size", "e2e_half"], ["e2e_half_size"]),
        n("Sub", ["e2e_centre", "e2e_half_size"], ["e2e_top_left"]),
        n("Add", ["e2e_centre", "e2e_half_size"], ["e2e_bottom_right"]),
        n("Concat", ["e2e_top_left", "e2e_bottom_right"], ["e2e_corners"], axis=2),   # [b, anchors, 4]
        n("Mul", ["e2e_obj", "e2e_cls"], ["e2e_scores"]),                              # [b, anchors, classes]
        n("ReduceMax", ["e2e_scores"], ["e2e_best"], axes=[2], keepdims=0),            # [b, anchors]
        n("ArgMax", ["e2e_scores"], ["e2e_class"], axis=2, keepdims=0),
        n("TopK", ["e2e_best", "e2e_k"], ["e2e_score", "e2e_anchor"], axis=1),         # [b, k]
        n("GatherElements", ["e2e_class", "e2e_anchor"], ["classes"], axis=1),
        n("Unsqueeze", ["e2e_anchor"], ["e2e_anchor_col"], axes=[2]),                # [b, k, 1]
        n("Expand", ["e2e_anchor_col", "e2e_box_shape"], ["e2e_box_index"]),
        n("GatherElements", ["e2e_corners", "e2e_box_index"], ["e2e_boxes"], axis=1),  # [b, k, 4]
        n("Greater", ["e2e_score", "e2e_conf"], ["valid"]),
        n("Unsqueeze", ["valid"], ["e2e_valid_col"], axes=[2]),
        n("Where", ["e2e_valid_col", "e2e_boxes", "e2e_zero"], ["boxes"]),
        n("Where", ["valid", "e2e_score", "e2e_zero"], ["scores"]),
    ]
    out = onnx.ModelProto()
    out.CopyFrom(model)
    out.graph.node.extend(nodes)
    out.graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in consts.items())
    del out.graph.output[:]
    out.graph.output.extend([
        helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [batch, k, 4]),
        helper.make_tensor_value_info("scores", TensorProto.FLOAT, [batch, k]),
        helper.make_tensor_value_info("classes", TensorProto.INT64, [batch, k]),
        helper.make_tensor_value_info("valid", TensorProto.BOOL, [batch, k]),
    ])
    onnx.checker.check_model(out)
    return out
