"""npu movement, pooling, reduction, normalisation and remaining elementwise kernels against the
NumPy golden model (tests/npu/golden_misc.py), exactly (0 LSB), on randomized one-op graphs; and the
same graphs on the cpu float simulation within one output step."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import build_graph, write_artifacts
from qnn_build.npu.lower import RULES, add_npu_params
from qnn_build.quant import QuantOptions, Stats, quantize_graph
from qnn_build.quant.apply import activation_names
from qnn_build.quant.calibrate import TensorStats
from qnn_build.quant.encoding import activation_encoding, quantize, symmetric_encoding
from qnn_build.quant.precision import PRECISIONS
from qnn_build.runtime.binding import Model, RuntimeFailure
from qnn_build.toolchain import build_model_lib

from . import golden
from . import golden_misc as gm

F = TensorProto.FLOAT
ALL_PRECISIONS = ["w8a8", "w8a16", "w16a16", "w4a8", "w4a16"]


# ---- harness -----------------------------------------------------------------------------------

def make_model(tmp_path, nodes, inputs, outputs, inits=(), opset=17):
    """inputs: (name, elem_type, shape); inits: (name, array); outputs: names (float) or (name, elem_type),
    shapes inferred."""
    ins = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    outs = [helper.make_tensor_value_info(*((n, F) if isinstance(n, str) else n), None) for n in outputs]
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in inits]
    model = helper.make_model(helper.make_graph(nodes, "g", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model = onnx.shape_inference.infer_shapes(model)
    infos = {v.name: v for v in model.graph.value_info}
    for o in model.graph.output:
        if o.name in infos:
            o.CopyFrom(infos[o.name])
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def quantized(path, precision, ranges, pins=None, rng=None):
    """The lowered graph quantized with the given float ranges (others random); `pins` forces an
    activation's range even where it would share its input's encoding."""
    rng = rng or np.random.default_rng(0)
    graph = build_graph(path)
    names = activation_names(graph)
    full = {n: ranges.get(n) or random_range(rng) for n in names}
    stats = Stats({n: TensorStats(lo, hi, np.zeros(16, np.int64), None) for n, (lo, hi) in full.items()})
    overrides = {"activations": {n: pinned(*r) for n, r in (pins or {}).items()}}
    quantize_graph(graph, PRECISIONS[precision], stats, QuantOptions(), overrides)
    add_npu_params(graph)
    return graph


def pinned(lo, hi):
    """An encoding override: the range [lo, hi] whatever the statistics."""
    return lambda stats, bits: activation_encoding(lo, hi, bits)


def build_lib(graph, tmp_path, tag):
    out = tmp_path / tag
    write_artifacts(graph, out, "model.onnx", "w8a8")
    return build_model_lib(out / "model.cpp", out / "model.bin", out / f"lib{tag}.so")


def run(lib, feeds, backend="npu", threads=1):
    model = Model(lib, backend=backend, threads=threads, keep_tensors=True)
    outs = model.run(feeds)
    return model, outs


def random_range(rng):
    lo = -rng.uniform(0.1, 4.0) if rng.random() < 0.8 else 0.0
    return lo, rng.uniform(0.1, 4.0)


def codes(model, name):
    return model.tensors(float_only=False)[name].astype(np.int64)


def enc_of(graph, name):
    return graph.tensor(name).encoding


def q_in(graph, feeds, name):
    return golden.quantize_input(feeds[name], enc_of(graph, name))


def node_of(graph, op):
    return next(n for n in graph.nodes if n.op_type == op)


def check(tmp_path, graph, feeds, expected: dict, tag, cpu_tolerance=1, threads=(1, 3)):
    """The npu's codes equal `expected` exactly, for every thread count; the cpu simulation of the
    same graph agrees within `cpu_tolerance` output steps (None: not compared)."""
    lib = build_lib(graph, tmp_path, tag)
    for t in threads:
        model, _ = run(lib, feeds, threads=t)
        for name, want in expected.items():
            got = codes(model, name)
            np.testing.assert_array_equal(got, np.asarray(want).reshape(got.shape), err_msg=f"{name}, threads={t}")
    if cpu_tolerance is not None:
        _, cpu_outs = run(lib, feeds, backend="cpu")
        for name, want in expected.items():
            if name not in cpu_outs:
                continue
            e = enc_of(graph, name)
            cpu_codes = quantize(cpu_outs[name].astype(np.float32), e)
            diff = np.abs(cpu_codes - np.asarray(want).reshape(cpu_codes.shape))
            assert diff.max(initial=0) <= cpu_tolerance, f"{name}: npu and cpu differ by {diff.max()} steps"


def uniform(rng, shape, lo=-4.0, hi=4.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


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


# ---- (N24) / (N25) pooling ---------------------------------------------------------------------

POOLS = [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 3], "strides": [1, 2], "pads": [0, 1, 1, 0], "dilations": [2, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    {"kernel_shape": [4], "strides": [3], "pads": [2, 1]},
    {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0]},
    {"kernel_shape": [5, 4], "strides": [1, 1], "pads": [2, 1, 2, 2]},  # MaxPool: > 16 taps, separable passes
]


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("window", range(len(POOLS)))
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "AveragePoolInclPad"])
def test_pools(tmp_path, op, window, precision):
    rng = np.random.default_rng(window)
    attrs = dict(POOLS[window])
    onnx_op = op
    if op == "AveragePoolInclPad":
        onnx_op, attrs["count_include_pad"] = "AveragePool", 1
    if onnx_op == "AveragePool" and "dilations" in attrs:
        attrs.pop("dilations")  # AveragePool has dilations only from opset 19
    shape = [2, 3, 7, 8] if len(attrs["kernel_shape"]) == 2 else [2, 3, 9]
    node = helper.make_node(onnx_op, ["x"], ["y"], **attrs)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"])
    pins = {"y": (-1.0, 2.0)} if onnx_op == "MaxPool" and window % 2 else None
    graph = quantized(path, precision, {"x": (-2.0, 2.5), "y": (-1.5, 2.0)}, pins=pins)
    feeds = {"x": uniform(rng, shape, -2.2, 2.7)}
    lowered = node_of(graph, onnx_op)
    fn = gm.max_pool if onnx_op == "MaxPool" else gm.average_pool
    expected = fn(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), graph.tensor("y").shape,
                  golden.onnx_attrs(lowered))
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{window}{precision}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["GlobalMaxPool", "GlobalAveragePool"])
def test_global_pools(tmp_path, op, precision):
    rng = np.random.default_rng(len(op))
    node = helper.make_node(op, ["x"], ["y"])
    path = make_model(tmp_path, [node], [("x", F, [2, 4, 5, 6])], ["y"])
    graph = quantized(path, precision, {"x": (-2.0, 2.5), "y": (-0.5, 1.0)}, pins={"y": (-0.5, 1.5)})
    feeds = {"x": uniform(rng, [2, 4, 5, 6], -2.2, 2.7)}
    expected = gm.global_pool(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"),
                              "max" if op == "GlobalMaxPool" else "avg")
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}")


# ---- (N24)-(N26) reductions --------------------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("axes,keep", [([1], 1), ([0, 2], 0), ([-1], 1), (None, 0)])
def test_reductions(tmp_path, op, axes, keep, precision):
    rng = np.random.default_rng(len(op) + keep)
    shape = [2, 3, 5]
    inputs, consts = ["x"], []
    if axes is not None:
        inputs.append("axes")
        consts.append(("axes", np.array(axes, np.int64)))
    node = helper.make_node(op, inputs, ["y"], keepdims=keep)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], consts, opset=18)
    y_range = (-6.0, 8.0) if op == "ReduceSum" else (-1.5, 2.0)
    graph = quantized(path, precision, {"x": (-2.0, 2.5), "y": y_range})
    feeds = {"x": uniform(rng, shape, -2.2, 2.7)}
    lowered = node_of(graph, op)
    expected = gm.reduce(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), op, lowered.attrs["axes"])
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}{keep}{len(axes or [])}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,last", [(1, 0), (2, 1), (0, 0)])
def test_arg(tmp_path, op, axis, last, precision):
    rng = np.random.default_rng(axis)
    shape = [3, 6, 4]
    node = helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=1, select_last_index=last)
    path = make_model(tmp_path, [node], [("x", F, shape)], [("y", TensorProto.INT64)])
    graph = quantized(path, precision, {"x": (-2.0, 2.5)})
    x = np.round(uniform(rng, shape, -2, 2.5) * 2) / 2  # ties in codes
    feeds = {"x": x}
    expected = gm.arg(q_in(graph, feeds, "x"), axis, last, op == "ArgMax")
    lib = build_lib(graph, tmp_path, f"{op}{axis}{precision}")
    for t in (1, 3):
        _, outs = run(lib, feeds, threads=t)
        np.testing.assert_array_equal(outs["y"].reshape(expected.shape), expected)
    _, cpu = run(lib, feeds, backend="cpu")
    np.testing.assert_array_equal(cpu["y"].reshape(expected.shape), expected)


# ---- (N27) / (N28) Softmax, LogSoftmax ---------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis,shape,opset", [(-1, [3, 10], 17), (1, [2, 5, 3], 17), (1, [2, 3, 4], 11),
                                              (-1, [2, 300], 17)])
def test_softmax(tmp_path, op, axis, shape, opset, precision):
    rng = np.random.default_rng(len(shape) + opset)
    node = helper.make_node(op, ["x"], ["y"], axis=axis)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], opset=opset)
    y_range = (0.0, 1.0) if op == "Softmax" else (-12.0, 0.0)
    graph = quantized(path, precision, {"x": (-6.0, 5.0), "y": y_range})
    feeds = {"x": uniform(rng, shape, -6, 5)}
    q = q_in(graph, feeds, "x")
    ex, ey = enc_of(graph, "x"), enc_of(graph, "y")
    if opset < 13:  # coerced to 2-D at the axis
        flat = q.reshape(int(np.prod(shape[:axis])), -1)
        expected = gm.softmax(flat, ex, ey, -1, log=op == "LogSoftmax").reshape(shape)
    else:
        expected = gm.softmax(q, ex, ey, axis, log=op == "LogSoftmax")
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}{opset}{len(shape)}{shape[-1]}")


# ---- (N29) LayerNormalization, InstanceNormalization -------------------------------------------

@pytest.mark.parametrize("precision", ALL_PRECISIONS)
@pytest.mark.parametrize("bias,axis", [(True, -1), (False, -1), (True, 1)])
def test_layer_norm(tmp_path, precision, bias, axis):
    rng = np.random.default_rng(int(bias) + axis + 5)
    shape = [3, 4, 16]
    norm_shape = shape[axis:]
    gamma = rng.uniform(0.5, 1.5, norm_shape).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, norm_shape).astype(np.float32)
    inputs = ["x", "gamma"] + (["beta"] if bias else [])
    consts = [("gamma", gamma)] + ([("beta", beta)] if bias else [])
    node = helper.make_node("LayerNormalization", inputs, ["y"], axis=axis, epsilon=1e-5)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], consts)
    graph = quantized(path, precision, {"x": (-3.0, 5.0), "y": (-3.0, 3.0)})
    x = uniform(rng, shape, -3, 5)
    x[0, 0] = 1.0  # a constant row: the variance is epsilon alone
    feeds = {"x": x}
    node = node_of(graph, "LayerNormalization")
    g, b = graph.tensor(node.inputs[1]), graph.tensor(node.inputs[2]) if bias else None
    expected = gm.layer_norm(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), g,
                             golden.onnx_attrs(node), b)
    check(tmp_path, graph, feeds, {"y": expected}, f"ln{precision}{bias}{axis}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
def test_instance_norm(tmp_path, precision):
    rng = np.random.default_rng(21)
    shape = [2, 3, 5, 4]
    gamma = rng.uniform(0.5, 1.5, [3]).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, [3]).astype(np.float32)
    node = helper.make_node("InstanceNormalization", ["x", "gamma", "beta"], ["y"], epsilon=1e-5)
    path = make_model(tmp_path, [node], [("x", F, shape)], ["y"], [("gamma", gamma), ("beta", beta)])
    graph = quantized(path, precision, {"x": (-3.0, 5.0), "y": (-3.0, 3.0)})
    feeds = {"x": uniform(rng, shape, -3, 5)}
    expected = gm.instance_norm(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), graph.tensor("gamma"),
                                graph.tensor("beta"), golden.onnx_attrs(node_of(graph, "InstanceNormalization")))
    check(tmp_path, graph, feeds, {"y": expected}, f"in{precision}")


# ---- (N30)-(N33) elementwise -------------------------------------------------------------------

@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
@pytest.mark.parametrize("const_b", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_div(tmp_path, precision, const_b, seed):
    rng = np.random.default_rng(seed + 10 * const_b)
    b_val = rng.uniform(0.5, 3.0, [1, 4]).astype(np.float32) * np.array([1, -1, 1, -1], np.float32)
    node = helper.make_node("Div", ["a", "b"], ["y"])
    inputs = [("a", F, [3, 4])] + ([] if const_b else [("b", F, [3, 1])])
    path = make_model(tmp_path, [node], inputs, ["y"], [("b", b_val)] if const_b else [])
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "b": (0.0, 2.0), "y": (-4.0, 6.0)}, rng=rng)
    feeds = {"a": uniform(rng, [3, 4], -2, 3)}
    if not const_b:
        feeds["b"] = np.array([[0.0], [0.5], [1.7]], np.float32)  # a zero divisor saturates
    qa = q_in(graph, feeds, "a")
    tb = graph.tensor("b")
    qb = tb.const.astype(np.int64) if const_b else q_in(graph, feeds, "b")
    expected = gm.div(qa, qb, enc_of(graph, "a"), tb.encoding, enc_of(graph, "y"))
    # the cpu simulation divides by zero into +-inf/nan; compare where the divisor is nonzero
    check(tmp_path, graph, feeds, {"y": expected}, f"div{precision}{const_b}{seed}",
          cpu_tolerance=1 if const_b else None)


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
@pytest.mark.parametrize("op", ["Min", "Max"])
@pytest.mark.parametrize("const_b", [False, True])
def test_min_max(tmp_path, op, precision, const_b):
    rng = np.random.default_rng(len(op) + const_b)
    b_val = rng.uniform(-1, 1, [4]).astype(np.float32)
    node = helper.make_node(op, ["a", "b"], ["y"])
    inputs = [("a", F, [2, 3, 4])] + ([] if const_b else [("b", F, [3, 1])])
    path = make_model(tmp_path, [node], inputs, ["y"], [("b", b_val)] if const_b else [])
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "b": (-1.0, 4.0), "y": (-1.5, 2.5)})
    feeds = {"a": uniform(rng, [2, 3, 4], -2, 3)}
    if not const_b:
        feeds["b"] = uniform(rng, [3, 1], -1, 4)
    tb = graph.tensor("b")
    qb = tb.const.astype(np.int64) if const_b else q_in(graph, feeds, "b")
    expected = gm.min_max(q_in(graph, feeds, "a"), qb, enc_of(graph, "a"), tb.encoding, enc_of(graph, "y"), op == "Max")
    check(tmp_path, graph, feeds, {"y": expected}, f"{op}{precision}{const_b}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max"])
@pytest.mark.parametrize("const_first", [False, True])
def test_one_element_constant_operand(tmp_path, op, precision, const_first):
    """An activation with a one-element constant (x + 1, x / 1.41): at 8 bits a table of the
    activation's code, the same integers as the element loops."""
    rng = np.random.default_rng(len(op) + 2 * const_first)
    c_val = np.array([1.3 if op != "Max" else 0.4], np.float32).reshape([1, 1] if const_first else [])
    names = ["c", "a"] if const_first else ["a", "c"]
    path = make_model(tmp_path, [helper.make_node(op, names, ["y"])], [("a", F, [3, 2, 50])], ["y"], [("c", c_val)])
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "y": (-4.0, 6.0)}, rng=rng)
    feeds = {"a": uniform(rng, [3, 2, 50], -2.5, 3.5)}
    qa, tc = q_in(graph, feeds, "a"), graph.tensor("c")
    qc = tc.const.astype(np.int64).reshape(-1)  # 1-D: the golden model's requantize wants arrays
    operands = (qc, qa, tc.encoding, enc_of(graph, "a")) if const_first else (qa, qc, enc_of(graph, "a"), tc.encoding)
    if op in ("Add", "Sub"):
        expected = golden.add_sub(*operands, enc_of(graph, "y"), subtract=op == "Sub")
    elif op == "Mul":
        expected = golden.mul(*operands, enc_of(graph, "y"))
    elif op == "Div":
        expected = gm.div(*operands, enc_of(graph, "y"))
    else:
        expected = gm.min_max(*operands, enc_of(graph, "y"), True)
    check(tmp_path, graph, feeds, {"y": np.broadcast_to(expected, [3, 2, 50])}, f"{op}{precision}{const_first}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_where(tmp_path, precision):
    rng = np.random.default_rng(2)
    node = helper.make_node("Where", ["c", "a", "b"], ["y"])
    path = make_model(tmp_path, [node], [("c", TensorProto.BOOL, [2, 1, 4]), ("a", F, [2, 3, 4])], ["y"],
                      [("b", np.array(-0.75, np.float32))])
    graph = quantized(path, precision, {"a": (-2.0, 3.0), "y": (-1.0, 2.0)})
    feeds = {"c": rng.random([2, 1, 4]) < 0.5, "a": uniform(rng, [2, 3, 4], -2, 3)}
    tb = graph.tensor("b")
    expected = gm.where(feeds["c"], q_in(graph, feeds, "a"), tb.const.astype(np.int64), enc_of(graph, "a"),
                        tb.encoding, enc_of(graph, "y"))
    check(tmp_path, graph, feeds, {"y": expected}, f"where{precision}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
def test_prelu(tmp_path, precision):
    rng = np.random.default_rng(4)
    slope = np.array([0.1, 0.25, -0.5], np.float32).reshape(3, 1, 1)
    node = helper.make_node("PRelu", ["x", "slope"], ["y"])
    path = make_model(tmp_path, [node], [("x", F, [2, 3, 4, 5])], ["y"], [("slope", slope)])
    graph = quantized(path, precision, {"x": (-3.0, 3.0), "y": (-1.0, 3.0)})
    feeds = {"x": uniform(rng, [2, 3, 4, 5], -3, 3)}
    ts = graph.tensor("slope")
    expected = gm.prelu(q_in(graph, feeds, "x"), ts.const.astype(np.int64), enc_of(graph, "x"), ts.encoding,
                        enc_of(graph, "y"))
    check(tmp_path, graph, feeds, {"y": expected}, f"prelu{precision}")


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16"])
@pytest.mark.parametrize("exponent", [2.0, 0.5, 1.0])
def test_pow(tmp_path, precision, exponent):
    rng = np.random.default_rng(int(exponent * 2))
    node = helper.make_node("Pow", ["x", "e"], ["y"])
    path = make_model(tmp_path, [node], [("x", F, [3, 7])], ["y"], [("e", np.array(exponent, np.float32))])
    y_range = {2.0: (0.0, 9.0), 0.5: (0.0, 2.0), 1.0: (-1.0, 3.0)}[exponent]
    graph = quantized(path, precision, {"x": (-2.0, 3.0), "y": y_range})
    feeds = {"x": uniform(rng, [3, 7], -2, 3)}
    expected = gm.pow_(q_in(graph, feeds, "x"), enc_of(graph, "x"), enc_of(graph, "y"), exponent)
    check(tmp_path, graph, feeds, {"y": expected}, f"pow{precision}{exponent}",
          cpu_tolerance=None if exponent == 0.5 else 1)  # cpu: sqrt of a negative is nan


# ---- refusals ----------------------------------------------------------------------------------

@pytest.mark.parametrize("op,attrs,consts,words", [
    ("Pow", {}, [("e", np.array(3.0, np.float32))], "Pow with exponent 3"),
    ("ReduceProd", {"keepdims": 0}, [], "ReduceProd"),
    ("Resize", {"mode": "cubic"}, [("roi", np.array([], np.float32)), ("scales", np.array([1, 2], np.float32))],
     "Resize with mode 'cubic'"),
])
def test_unsupported_is_refused_at_finalize(tmp_path, op, attrs, consts, words):
    inputs = ["x"] + [c[0] for c in consts]
    node = helper.make_node(op, inputs, ["y"], **attrs)
    path = make_model(tmp_path, [node], [("x", F, [2, 3])], ["y"], consts)
    graph = quantized(path, "w8a8", {"x": (-1.0, 1.0)})
    lib = build_lib(graph, tmp_path, f"refuse{op}")
    with pytest.raises(RuntimeFailure, match=f"no npu kernel for {words}.*--float-fallback"):
        Model(lib, backend="npu")


def test_layer_norm_statistics_outputs_are_refused(tmp_path):
    node = helper.make_node("LayerNormalization", ["x", "g"], ["y", "mean", "inv"], axis=-1)
    path = make_model(tmp_path, [node], [("x", F, [2, 8])], ["y", "mean", "inv"], [("g", np.ones(8, np.float32))])
    graph = quantized(path, "w8a8", {"x": (-1.0, 1.0)})
    lib = build_lib(graph, tmp_path, "refuse_ln")
    with pytest.raises(RuntimeFailure, match="no npu kernel for LayerNormalization with the Mean / InvStdDev"):
        Model(lib, backend="npu")
    run(lib, {"x": np.zeros([2, 8], np.float32)}, backend="cpu")  # the cpu backend still runs it
