"""The npu's movement kernels: re-encoding of the byte movers, Concat, Split, Gather, Pad, Resize
(docs/npu.md (N20)-(N23)) against the NumPy golden model (tests/npu/golden_movement.py), exactly (0
LSB), on randomized one-op graphs; and the same graphs on the cpu float simulation within one output
step."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from qnn_build.npu_lowering.lower import RULES
from qnn_build.quant.encoding import quantize, symmetric_encoding

from . import golden
from . import golden_movement as gm
from .harness import ALL_PRECISIONS, F, check, enc_of, make_model, node_of, q_in, quantized, random_range, uniform


# ---- (N20) / (N21) movers and Concat -----------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("seed", range(3))
def test_concat_rescales_inputs(tmp_path, precision, seed):
    rng = np.random.default_rng(seed)
    shapes = [[2, 3, 4], [2, 5, 4], [2, 1, 4]]
    node = helper.make_node("Concat", ["x0", "x1", "x2"], ["y"], axis=1)
    path = make_model(tmp_path, [node], [(f"x{i}", F, s) for i, s in enumerate(shapes)], ["y"])
    ranges = {"x0": random_range(rng), "x1": random_range(rng), "x2": random_range(rng), "y": (-3.0, 3.5)}
    pins = {"x2": ranges["y"]} if seed == 1 else {}  # one input already in the output's encoding
    graph = quantized(path, precision, ranges, pins)
    feeds = {f"x{i}": uniform(rng, s) for i, s in enumerate(shapes)}
    qs = [q_in(graph, feeds, f"x{i}") for i in range(3)]
    expected = gm.concat(qs, [enc_of(graph, f"x{i}") for i in range(3)], enc_of(graph, "y"), axis=1)
    check(tmp_path, graph, feeds, {"y": expected}, f"concat{precision}{seed}")


def test_concat_of_equal_encodings_is_a_copy(tmp_path):
    rng = np.random.default_rng(7)
    node = helper.make_node("Concat", ["x0", "x1"], ["y"], axis=0)
    path = make_model(tmp_path, [node], [("x0", F, [3, 4]), ("x1", F, [2, 4])], ["y"])
    same = (-2.0, 2.0)
    graph = quantized(path, "w8a8", {}, pins={"x0": same, "x1": same, "y": same})
    feeds = {"x0": uniform(rng, [3, 4], -2, 2), "x1": uniform(rng, [2, 4], -2, 2)}
    expected = np.concatenate([q_in(graph, feeds, "x0"), q_in(graph, feeds, "x1")])
    check(tmp_path, graph, feeds, {"y": expected}, "concat_copy")


MOVERS = [
    ("Transpose", {"perm": [2, 0, 1]}, [], lambda x: np.transpose(x, (2, 0, 1))),
    ("Reshape", {}, [("shape", np.array([4, 6], np.int64))], lambda x: x.reshape(4, 6)),
    ("Slice", {}, [("starts", np.array([1], np.int64)), ("ends", np.array([3], np.int64)),
                   ("axes", np.array([2], np.int64))], lambda x: x[:, :, 1:3]),
    ("Expand", {}, [("shape", np.array([2, 2, 3, 4], np.int64))], lambda x: np.broadcast_to(x, (2, 2, 3, 4))),
    ("Tile", {}, [("repeats", np.array([1, 2, 1], np.int64))], lambda x: np.tile(x, (1, 2, 1))),
]


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op,attrs,consts,move", MOVERS, ids=[m[0] for m in MOVERS])
def test_movers_reencode_a_pinned_output(tmp_path, op, attrs, consts, move, precision):
    """A mover whose output encoding was pinned away from its input's re-encodes (N20)."""
    rng = np.random.default_rng(len(op))
    node = helper.make_node(op, ["x"] + [c[0] for c in consts], ["y"], **attrs)
    path = make_model(tmp_path, [node], [("x", F, [2, 3, 4])], ["y"], consts)
    graph = quantized(path, precision, {"x": (-3.0, 1.0)}, pins={"y": (-1.5, 2.5)})
    feeds = {"x": uniform(rng, [2, 3, 4], -3.5, 1.5)}
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    expected = move(gm.reencode(q_in(graph, feeds, "x"), ex, ey))
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}")


# An output encoding a hair from its input's: every code maps to itself (the move reads the input's
# codes as they are), or the end codes move by one step (the re-encoding stays).
@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("stretch", [1 + 1e-6, 1 + 1e-2])
@pytest.mark.parametrize("op", ["Slice", "Split"])
def test_movers_with_a_near_equal_output_encoding(tmp_path, op, stretch, precision):
    rng = np.random.default_rng(int(stretch * 100))
    if op == "Slice":
        node = helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"])
        consts = [("starts", np.array([1], np.int64)), ("ends", np.array([3], np.int64)), ("axes", np.array([2], np.int64))]
    else:
        node = helper.make_node("Split", ["x", "split"], ["y", "y1"], axis=2)
        consts = [("split", np.array([3, 1], np.int64))]
    path = make_model(tmp_path, [node], [("x", F, [2, 3, 4])], ["y"] + (["y1"] if op == "Split" else []), consts)
    graph = quantized(path, precision, {"x": (-3.0, 1.0)}, pins={"x": (-3.0, 1.0), "y": (-3.0 * stretch, 1.0 * stretch)})
    feeds = {"x": uniform(rng, [2, 3, 4], -3.5, 1.5)}
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    codes = np.arange(2 ** ex.bitwidth)
    assert not np.array_equal(ex.scales, ey.scales)
    assert np.array_equal(gm.reencode(codes, ex, ey), codes) == (stretch < 1.001)  # identity, or not
    moved = q_in(graph, feeds, "x")[:, :, 1:3] if op == "Slice" else q_in(graph, feeds, "x")[:, :, :3]
    check(tmp_path, graph, feeds, {"y": gm.recode(moved, ex, ey)}, f"near{op}{precision}{stretch}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_split_reencodes_each_output(tmp_path, precision):
    rng = np.random.default_rng(3)
    node = helper.make_node("Split", ["x", "split"], ["y0", "y1", "y2"], axis=1)
    path = make_model(tmp_path, [node], [("x", F, [2, 6, 3])], ["y0", "y1", "y2"],
                      [("split", np.array([1, 2, 3], np.int64))])
    graph = quantized(path, precision, {"x": (-2.0, 2.0)}, pins={"y0": (-1.0, 1.0), "y2": (-4.0, 0.5)})
    feeds = {"x": uniform(rng, [2, 6, 3], -2.5, 2.5)}
    q = q_in(graph, feeds, "x")
    parts = np.split(q, [1, 3], axis=1)
    expected = {f"y{k}": gm.recode(part, enc_of(graph, "x"), enc_of(graph, f"y{k}")) for k, part in enumerate(parts)}
    check(tmp_path, graph, feeds, expected, f"split{precision}")


@pytest.mark.parametrize("precision", ALL_PRECISIONS)
def test_gather_of_a_constant_table_requantizes(tmp_path, precision):
    """An embedding table is a signed parameter; the gathered rows an unsigned activation."""
    rng = np.random.default_rng(11)
    table = rng.normal(0, 1.0, (10, 6)).astype(np.float32)
    node = helper.make_node("Gather", ["table", "idx"], ["y"], axis=0)
    path = make_model(tmp_path, [node], [("idx", TensorProto.INT64, [2, 3])], ["y"], [("table", table)])
    graph = quantized(path, precision, {"y": (-2.0, 2.5)})
    idx = np.array([[0, 9, 3], [3, -1, 5]], np.int64)
    t = graph.tensor("table")
    rows = gm.reencode(t.const.astype(np.int64), t.encoding, enc_of(graph, "y"))
    check(tmp_path, graph, {"idx": idx}, {"y": rows[idx]}, f"gather{precision}")


@pytest.mark.parametrize("bits,block", [(8, 0), (4, 0), (4, 2), (16, 0)])
def test_gather_of_a_per_channel_table(tmp_path, bits, block):
    """A table shared with a MatMul/Gemm weight is encoded per channel (or block-wise, int4): the
    gather re-encodes each element with its own scale's multiplier."""
    rng = np.random.default_rng(bits + block)
    table = rng.normal(0, 1.0, (8, 4)).astype(np.float32) * np.array([0.1, 1.0, 3.0, 0.5], np.float32)
    node = helper.make_node("Gather", ["table", "idx"], ["y"], axis=0)
    path = make_model(tmp_path, [node], [("idx", TensorProto.INT64, [5])], ["y"], [("table", table)])
    graph = quantized(path, "w8a16" if bits == 16 else "w8a8", {"y": (-3.0, 4.0)})
    t = graph.tensor("table")
    if block:  # scales [channel][block]: channel axis 1, blocks of 2 rows along axis 0
        absmax = np.abs(table).reshape(4, 2, 4).max(axis=1).T.reshape(-1)
        t.encoding = symmetric_encoding(absmax, bits, axis=1, block_axis=0, block_size=block)
    else:
        t.encoding = symmetric_encoding(np.abs(table).max(axis=0), bits, axis=1)
    t.const = quantize(table, t.encoding).astype({4: np.int8, 8: np.int8, 16: np.int16}[bits])
    t.dtype = t.const.dtype
    node = node_of(graph, "Gather")
    node.attrs.update(RULES["Gather"](node, graph))
    idx = np.array([7, 0, 3, 3, 1], np.int64)
    rows = gm.reencode(t.const.astype(np.int64), t.encoding, enc_of(graph, "y"))
    check(tmp_path, graph, {"idx": idx}, {"y": rows[idx]}, f"gather_pc{bits}_{block}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_gather_of_an_activation_pinned(tmp_path, precision):
    rng = np.random.default_rng(5)
    node = helper.make_node("Gather", ["x", "idx"], ["y"], axis=1)
    path = make_model(tmp_path, [node], [("x", F, [2, 5]), ("idx", TensorProto.INT64, [3])], ["y"])
    graph = quantized(path, precision, {"x": (-1.0, 3.0)}, pins={"y": (-2.0, 2.0)})
    feeds = {"x": uniform(rng, [2, 5], -1.2, 3.2), "idx": np.array([4, 0, 2], np.int64)}
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    expected = gm.reencode(q_in(graph, feeds, "x"), ex, ey)[:, [4, 0, 2]]
    check(tmp_path, graph, feeds, {"y": expected}, f"gather_act{precision}")


# ---- (N22) Pad ---------------------------------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
@pytest.mark.parametrize("mode,value,pin", [("constant", 0.0, False), ("constant", 0.75, False),
                                            ("constant", -1.25, True), ("reflect", None, False),
                                            ("edge", None, True)])
def test_pad(tmp_path, precision, mode, value, pin):
    rng = np.random.default_rng(13)
    pads = [0, 1, 2, 0, 2, 1]
    inputs = ["x", "pads"] + (["value"] if value is not None else [])
    consts = [("pads", np.array(pads, np.int64))] + ([("value", np.array(value, np.float32))] if value is not None else [])
    node = helper.make_node("Pad", inputs, ["y"], mode=mode)
    path = make_model(tmp_path, [node], [("x", F, [2, 3, 4])], ["y"], consts)
    graph = quantized(path, precision, {"x": (-2.0, 3.0)}, pins={"y": (-2.5, 1.5)} if pin else None)
    feeds = {"x": uniform(rng, [2, 3, 4], -2.0, 3.0)}
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    q = q_in(graph, feeds, "x")
    if mode == "constant":
        expected = gm.pad_constant(q, ex, ey, pads, graph.tensor("value") if value is not None else None)
    else:
        r = gm.recode(q, ex, ey)
        expected = np.pad(r, [(pads[d], pads[3 + d]) for d in range(3)], mode="reflect" if mode == "reflect" else "edge")
    check(tmp_path, graph, feeds, {"y": expected}, f"pad{precision}{mode}{pin}")


# ---- Resize: nearest (N20), linear (N23) -------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_resize_nearest_moves_reencoded_codes(tmp_path, precision):
    rng = np.random.default_rng(17)
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    path = make_model(tmp_path, [node], [("x", F, [1, 2, 3, 4])], ["y"],
                      [("scales", np.array([1, 1, 2, 1.5], np.float32))])
    graph = quantized(path, precision, {"x": (-2.0, 2.0), "y": (-1.0, 3.0)})
    feeds = {"x": uniform(rng, [1, 2, 3, 4], -2, 2)}
    r = gm.reencode(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"))
    # half_pixel + round_prefer_floor: output i reads floor-rounded (i + 0.5) / scale - 0.5
    rows = [0, 0, 1, 1, 2, 2]
    cols = [0, 0, 1, 2, 2, 3]
    expected = r[:, :, rows][:, :, :, cols]
    check(tmp_path, graph, feeds, {"y": expected}, f"resize_nearest{precision}")


RESIZE_CASES = [
    ("half_pixel", [1, 1, 2, 2], [1, 2, 3, 4]),
    ("align_corners", [1, 1, 1.5, 2.5], [1, 2, 4, 4]),
    ("asymmetric", [1, 1, 0.5, 3], [1, 1, 4, 2]),
    ("pytorch_half_pixel", [1, 1, 2, 1], [2, 2, 3, 3]),
    ("half_pixel", [1, 2, 2, 2], [1, 2, 2, 3]),  # three resized axes
    ("tf_crop_and_resize", [1, 1, 2, 2], [1, 1, 3, 3]),
    ("align_corners", [1, 1, 2.5, 2.5], [1, 2, 8, 8]),  # fractions of 7/19: a Q20 weight's rounding shows at 16 bits
]


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("coord,scales,shape", RESIZE_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(RESIZE_CASES)])
def test_resize_linear(tmp_path, precision, coord, scales, shape):
    rng = np.random.default_rng(len(coord) + len(shape))
    inputs = ["x", "roi", "scales"]
    consts = [("scales", np.array(scales, np.float32)),
              ("roi", np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2] if coord == "tf_crop_and_resize" else [], np.float32))]
    attrs = {"mode": "linear", "coordinate_transformation_mode": coord}
    if coord == "tf_crop_and_resize":
        attrs["extrapolation_value"] = 0.5
    node = helper.make_node("Resize", inputs, ["y"], **attrs)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], consts)
    graph = quantized(path, precision, {"x": (-2.0, 3.0), "y": (-2.5, 3.0)})
    feeds = {"x": uniform(rng, shape, -2, 3)}
    y_shape = graph.tensor("y").shape
    expected = gm.resize_linear(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"),
                                golden.onnx_attrs(node_of(graph, "Resize")), y_shape)
    check(tmp_path, graph, feeds, {"y": expected}, f"resize_{coord}{precision}{len(shape)}")
