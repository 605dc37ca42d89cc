"""npu Conv, ConvTranspose, Gemm and MatMul against the NumPy golden model, exactly (0 LSB), on
randomized one-op graphs; the fast paths against the reference loops (QNNB_NPU_REFERENCE=1), the
x86-64 baseline paths (QNNB_ISA=x86-64-v3, where the CPU would take AVX-512 ones) and across thread
counts, byte for byte. docs/npu.md (N10)-(N15)."""

import itertools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import build_graph, write_artifacts
from qnn_build.npu_lowering.lower import add_npu_params
from qnn_build.quant import QuantOptions, Stats, quantize_graph
from qnn_build.quant.calibrate import TensorStats
from qnn_build.options import PRECISIONS
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

from . import golden_conv as golden
from .golden import onnx_attrs, quantize_input

_counter = itertools.count()


def make_model(tmp_path, op, inputs, inits, attrs=None, opset=17):
    """A one-op ONNX model: `inputs` {name: shape} are graph inputs, `inits` {name: array} initializers,
    node inputs in the order inputs then inits (an empty name for an absent optional one)."""
    names = list(inputs) + list(inits)
    node = helper.make_node(op, names, ["y"], name="the_op", **(attrs or {}))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.astype(np.float32), n) for n, v in inits.items() if v is not None])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    path = tmp_path / f"model{next(_counter)}.onnx"
    onnx.save(model, path)
    return path


def float_output(path, feeds):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def quantized(path, precision, ranges, block_size=None, per_channel=True):
    graph = build_graph(path)
    stats = Stats({name: TensorStats(lo, hi, np.zeros(16, np.int64), None) for name, (lo, hi) in ranges.items()})
    quantize_graph(graph, PRECISIONS[precision], stats, QuantOptions(block_size=block_size, per_channel=per_channel))
    add_npu_params(graph)
    return graph


def build(graph, tmp_path):
    tag = f"conv{next(_counter)}"
    out = tmp_path / tag
    write_artifacts(graph, out, "model.onnx", "w8a8")
    return build_model_lib(out / "model.cpp", out / "model.bin", out / f"lib{tag}.so")


def run(lib, feeds, threads=1):
    model = Model(lib, backend="npu", threads=threads, keep_tensors=True)
    model.run(feeds)
    return model.tensors(float_only=False)["y"].astype(np.int64)


def ranges_for(rng, feeds, y, shrink=True):
    """Calibration ranges: each input's, and the float output's (sometimes shrunk, so some outputs
    saturate)."""
    ranges = {n: (float(v.min()), float(v.max())) for n, v in feeds.items()}
    f = rng.uniform(0.6, 1.0) if shrink else 1.0
    ranges["y"] = (float(y.min()) * f, float(y.max()) * f)
    return ranges


def const_ints(graph, name):
    t = graph.tensor(name)
    return None if t is None or not name else np.asarray(t.const, np.int64)


def check_paths(lib, feeds, expected, monkeypatch, threads=(2,)):
    """The default (fast) path at 1 thread and at `threads`, the baseline ISA's fast paths and the
    reference loops, all equal `expected`."""
    np.testing.assert_array_equal(run(lib, feeds), expected)
    for t in threads:
        np.testing.assert_array_equal(run(lib, feeds, threads=t), expected)
    for variable in ("QNNB_ISA", "QNNB_NPU_REFERENCE"):
        monkeypatch.setenv(variable, "x86-64-v3" if variable == "QNNB_ISA" else "1")
        try:
            np.testing.assert_array_equal(run(lib, feeds), expected, err_msg=variable)
        finally:
            monkeypatch.delenv(variable)


# ---- Conv -----------------------------------------------------------------------------------------

CONV_CASES = [
    # x shape, weight shape, attrs
    ([1, 8, 9, 10], [6, 8, 3, 3], {"pads": [1, 1, 1, 1]}),
    ([2, 6, 7, 8], [4, 3, 3, 2], {"group": 2, "strides": [2, 1], "pads": [0, 1, 2, 0]}),
    ([1, 5, 11, 9], [5, 1, 3, 3], {"group": 5, "pads": [1, 1, 1, 1], "strides": [2, 2]}),      # depthwise
    ([1, 4, 10, 10], [8, 1, 3, 3], {"group": 4, "dilations": [2, 2], "pads": [2, 2, 2, 2]}),   # multiplier 2
    ([2, 7, 13], [9, 7, 3], {"strides": [2], "dilations": [2], "pads": [3, 1]}),               # 1-D
    ([1, 3, 12, 12], [70, 3, 5, 5], {"strides": [2, 2], "pads": [2, 1, 2, 1]}),                # 3 input channels
    ([1, 16, 6, 5], [20, 16, 1, 1], {}),                                                       # pointwise
    ([2, 1, 9, 11], [16, 1, 3, 3], {"pads": [1, 1, 1, 1]}),                                    # 1 input channel
    ([1, 72, 5, 4], [72, 1, 3, 3], {"group": 72, "pads": [1, 1, 1, 1], "strides": [2, 1]}),   # depthwise, 2 blocks
    ([2, 20, 6, 6], [20, 1, 5, 5], {"group": 20, "pads": [2, 1, 2, 2], "dilations": [1, 2]}), # depthwise 5x5
    ([1, 16, 9], [16, 1, 3], {"group": 16, "pads": [1, 0], "strides": [2]}),                  # depthwise 1-D
    ([1, 40, 5, 6], [40, 1, 3, 3], {"group": 40, "pads": [1, 1, 1, 1], "strides": [1, 2]}),   # depthwise, 3 vectors
]


def conv_case(tmp_path, rng, precision, case, bias=True, block_size=None, op="Conv"):
    x_shape, w_shape, attrs = case
    w = rng.normal(0, 1, w_shape) * rng.uniform(0.2, 2.0, [w_shape[0]] + [1] * (len(w_shape) - 1))
    out_ch = w_shape[0] if op == "Conv" else w_shape[1] * attrs.get("group", 1)
    inits = {"w": w, "b": rng.normal(0, 2, [out_ch]) if bias else None}
    if not bias:
        inits.pop("b")
    attrs = dict(attrs, kernel_shape=w_shape[2:])
    path = make_model(tmp_path, op, {"x": x_shape}, inits, attrs)
    x = rng.uniform(-2 if rng.random() < 0.7 else 0, 3, x_shape).astype(np.float32)
    feeds = {"x": x}
    graph = quantized(path, precision, ranges_for(rng, feeds, float_output(path, feeds)), block_size)
    node = graph.nodes[0]
    ex, ew, ey = (graph.tensor(n).encoding for n in ("x", "w", "y"))
    qx = quantize_input(x, ex)
    b = graph.tensor(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if op == "Conv":
        expected = golden.conv(qx, ex, const_ints(graph, "w"), ew, ey, onnx_attrs(node), b)
    else:
        expected = golden.conv_transpose(qx, ex, const_ints(graph, "w"), ew, ey, onnx_attrs(node),
                                         graph.tensor("y").shape, b)
    return graph, feeds, expected


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16", "w4a8", "w4a16"])
@pytest.mark.parametrize("index", range(len(CONV_CASES)))
def test_conv_equals_golden(tmp_path, monkeypatch, precision, index):
    rng = np.random.default_rng(100 * index + len(precision) + ord(precision[1]))
    graph, feeds, expected = conv_case(tmp_path, rng, precision, CONV_CASES[index], bias=index % 3 != 1)
    lib = build(graph, tmp_path)
    check_paths(lib, feeds, expected, monkeypatch)


@pytest.mark.parametrize("precision", ["w4a8", "w4a16"])
@pytest.mark.parametrize("seed", range(2))
def test_conv_blockwise_equals_golden(tmp_path, monkeypatch, precision, seed):
    rng = np.random.default_rng(seed + 7)
    case = ([1, 64, 7, 6], [12, 64, 3, 3], {"pads": [1, 0, 1, 2]}) if seed == 0 else \
        ([2, 64, 9], [10, 32, 3], {"group": 2, "pads": [1, 1]})
    graph, feeds, expected = conv_case(tmp_path, rng, precision, case, bias=True, block_size=16)
    assert graph.tensor("w").encoding.block_axis == 1 and "npu_block_mult" in graph.nodes[0].attrs
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


# ---- ConvTranspose --------------------------------------------------------------------------------

TRANSPOSE_CASES = [
    ([1, 6, 5, 4], [6, 4, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}),
    ([2, 4, 4, 5], [4, 3, 2, 3], {"group": 2, "strides": [1, 2], "dilations": [2, 1], "pads": [0, 1, 1, 0]}),
    ([1, 5, 7], [5, 2, 4], {"strides": [3], "pads": [2, 1], "output_padding": [2]}),
    ([2, 32, 5, 6], [32, 16, 2, 2], {"strides": [2, 2]}),                                  # the U-Net's upsampling
    ([1, 9, 4, 3], [9, 70, 3, 3], {"strides": [2, 2], "pads": [1, 0, 0, 1]}),  # taps overlap; 2 channel blocks
    ([1, 6, 3, 3, 2], [6, 3, 2, 3, 2], {"strides": [1, 2, 2], "dilations": [2, 1, 1]}),    # 3-D
    ([1, 24, 4, 5], [24, 1, 2, 2], {"strides": [2, 2]}),           # disjoint taps, one channel (ppocr's)
    ([2, 8, 3, 4], [8, 20, 2, 2], {"strides": [3, 2], "pads": [1, 0, 0, 1]}),  # disjoint, gaps, cut
]


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16", "w4a16"])
@pytest.mark.parametrize("index", range(len(TRANSPOSE_CASES)))
def test_conv_transpose_equals_golden(tmp_path, monkeypatch, precision, index):
    rng = np.random.default_rng(31 * index + len(precision))
    graph, feeds, expected = conv_case(tmp_path, rng, precision, TRANSPOSE_CASES[index], bias=index != 1,
                                       op="ConvTranspose")
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


def test_conv_transpose_blockwise_equals_golden(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    case = ([1, 32, 4, 3], [32, 6, 3, 3], {"group": 2, "strides": [2, 2], "pads": [1, 0, 0, 1]})
    graph, feeds, expected = conv_case(tmp_path, rng, "w4a8", case, block_size=8, op="ConvTranspose")
    assert graph.tensor("w").encoding.block_axis == 0
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


# ---- Gemm and MatMul --------------------------------------------------------------------------------

def product_case(tmp_path, rng, precision, op, a_shape, b_shape, attrs=None, c_shape=None, b_const=True,
                 block_size=None, per_channel=True, a=None, b=None):
    """A one-op product with random operands (or the given float `a` and `b`)."""
    attrs = attrs or {}
    if b is None:
        b = rng.normal(0, 1, b_shape) * rng.uniform(0.2, 2.0, [1] * (len(b_shape) - 1) + [b_shape[-1]])
    inputs = {"a": a_shape}
    inits = {}
    if b_const:
        inits["w"] = b
    else:
        inputs["w"] = b_shape
    if c_shape is not None:
        inits["c"] = rng.normal(0, 2, c_shape)
    path = make_model(tmp_path, op, inputs, inits, attrs)
    feeds = {"a": (rng.uniform(-2, 3, a_shape) if a is None else a).astype(np.float32)}
    if not b_const:
        feeds["w"] = rng.uniform(-1.5, 1, b_shape).astype(np.float32)
    graph = quantized(path, precision, ranges_for(rng, feeds, float_output(path, feeds)), block_size, per_channel)
    node = graph.nodes[0]
    ea, eb, ey = (graph.tensor(n).encoding for n in ("a", "w", "y"))
    qa = quantize_input(feeds["a"], ea)
    qb = const_ints(graph, "w") if b_const else quantize_input(feeds["w"], eb)
    c = graph.tensor("c") if c_shape is not None else None
    expected = golden.product(qa, ea, qb, eb, ey, onnx_attrs(node), c)
    return graph, feeds, expected


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16", "w4a8", "w4a16"])
@pytest.mark.parametrize("case", [
    ([5, 30], [30, 20], {}, [20]),
    ([3, 17], [40, 17], {"transB": 1, "alpha": 0.7, "beta": 1.3}, [40]),
    ([17, 4], [17, 70], {"transA": 1, "alpha": -0.5}, [1, 70]),
    ([9, 64], [64, 33], {"beta": 0.0}, [33]),
    ([1, 24], [24, 10], {}, None),
])
def test_gemm_equals_golden(tmp_path, monkeypatch, precision, case):
    a_shape, b_shape, attrs, c_shape = case
    rng = np.random.default_rng(a_shape[0] * 7 + b_shape[1] + len(precision))
    graph, feeds, expected = product_case(tmp_path, rng, precision, "Gemm", a_shape, b_shape, attrs, c_shape)
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


@pytest.mark.parametrize("precision", ["w8a8", "w8a16", "w16a16", "w4a8"])
@pytest.mark.parametrize("case", [([2, 7, 36], [36, 19]), ([50, 13], [13, 130]), ([3, 8], [8]), ([16], [16, 5])])
def test_matmul_weight_equals_golden(tmp_path, monkeypatch, precision, case):
    a_shape, b_shape = case
    rng = np.random.default_rng(sum(a_shape) + len(precision))
    graph, feeds, expected = product_case(tmp_path, rng, precision, "MatMul", a_shape, b_shape)
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


def test_matmul_per_tensor_weight_equals_golden(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    graph, feeds, expected = product_case(tmp_path, rng, "w8a8", "MatMul", [4, 20], [20, 9], per_channel=False)
    assert len(graph.tensor("w").encoding.scales) == 1
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


@pytest.mark.parametrize("precision", ["w4a8", "w4a16"])
@pytest.mark.parametrize("op,case", [("MatMul", ([3, 5, 64], [64, 24], {}, None)),
                                     ("Gemm", ([4, 96], [40, 96], {"transB": 1, "beta": 0.5}, [40])),
                                     ("Gemm", ([2, 64], [64, 8], {}, [8])),
                                     ("MatMul", ([3, 32], [32, 8], {}, None))])  # one block: still (N11)
def test_product_blockwise_equals_golden(tmp_path, monkeypatch, precision, op, case):
    a_shape, b_shape, attrs, c_shape = case
    rng = np.random.default_rng(len(a_shape) + b_shape[0])
    graph, feeds, expected = product_case(tmp_path, rng, precision, op, a_shape, b_shape, attrs, c_shape,
                                          block_size=32)
    assert graph.tensor("w").encoding.block_axis >= 0 and "npu_block_mult" in graph.nodes[0].attrs
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("case", [([2, 3, 10, 16], [2, 3, 16, 10]), ([4, 9, 8], [1, 8, 12]), ([6, 20], [20, 7]),
                                  ([1, 2, 13, 37], [1, 2, 37, 70]),   # K, M and N tails of the block kernel
                                  ([3, 20, 64], [3, 64, 130])])      # K in place, three column blocks
def test_matmul_activations_equal_golden(tmp_path, monkeypatch, precision, case):
    """Attention-style products: both operands activations with zero points (w8a8: the block
    kernel with B packed per call, act_product.h)."""
    a_shape, b_shape = case
    rng = np.random.default_rng(sum(b_shape) + len(precision))
    graph, feeds, expected = product_case(tmp_path, rng, precision, "MatMul", a_shape, b_shape, b_const=False)
    assert not graph.tensor("w").is_const
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


@pytest.mark.parametrize("attrs", [{"transB": 1, "alpha": -0.7}, {"transA": 1, "beta": 0.5}])
def test_gemm_activations_equal_golden(tmp_path, monkeypatch, attrs):
    """Gemm with B an activation: B read across its rows (transB), A's rows gathered (transA), the
    sign of alpha, a bias from C."""
    rng = np.random.default_rng(len(attrs))
    a_shape = [21, 11] if attrs.get("transA") else [11, 21]
    b_shape = [70, 21] if attrs.get("transB") else [21, 70]
    graph, feeds, expected = product_case(tmp_path, rng, "w8a8", "Gemm", a_shape, b_shape, attrs, [70], b_const=False)
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


@pytest.mark.parametrize("precision", ["w8a16", "w16a16"])
@pytest.mark.parametrize("op,case", [
    ("MatMul", ([3, 601], [601, 37], {}, None)),                 # K past one int32 run of pairs, odd K, N, M
    ("Gemm", ([35, 300], [70, 300], {"transB": 1}, [70])),       # rows past one task's 32, columns past 64
    ("Gemm", ([7, 1], [1, 33], {"alpha": -0.5}, [33])),           # K = 1, a negative alpha, a 7-row call
])
def test_wide_product_tails_equal_reference(tmp_path, monkeypatch, precision, op, case):
    """The 16-bit-activation block kernel (N15 "wide"): int32 lanes widened into int64 sums before
    they can overflow, and its row, column and K tails, against the golden model and the reference."""
    a_shape, b_shape, attrs, c_shape = case
    rng = np.random.default_rng(b_shape[0] + len(precision))
    graph, feeds, expected = product_case(tmp_path, rng, precision, op, a_shape, b_shape, attrs, c_shape)
    assert graph.tensor("a").encoding.bitwidth == 16
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch, threads=(2, 3))


@pytest.mark.parametrize("precision", ["w8a16", "w16a16"])
def test_wide_product_requantize_by_vector_and_by_column_equals_golden(tmp_path, monkeypatch, precision):
    """The wide path's outputs requantized 8 columns a vector (every shift t = 31 + npu_shift of the
    column block in [32, 63]) and column by column (a block holding a column of tiny weights, t > 63)."""
    rng = np.random.default_rng(11)
    b = rng.normal(0, 1, [48, 70])
    b[:, 3] *= 1e-12
    graph, feeds, expected = product_case(tmp_path, rng, precision, "MatMul", [5, 48], [48, 70], b=b)
    t = 31 + np.asarray(graph.nodes[0].attrs["npu_shift"])
    assert t[3] > 63 and ((t[32:] >= 32) & (t[32:] <= 63)).all()
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


@pytest.mark.parametrize("precision", ["w8a16", "w16a16"])
def test_wide_product_at_its_bound_equals_golden(tmp_path, monkeypatch, precision):
    """Every term near its largest (A at the top code, weights of one sign near max|w|): at w16a16
    (split rows, 128 pairs per int32 run) a lane kept past its run would overflow several times over
    K = 1201; at w8a16 (centred rows) the 256-pair passes already end each run within the bound."""
    rng = np.random.default_rng(5)
    a = np.full([2, 1201], 3.0)
    a[:, 0] = -1.0  # the range's other end, so the top code is 65535
    b = rng.uniform(0.9, 1.0, [1201, 40])
    graph, feeds, expected = product_case(tmp_path, rng, precision, "MatMul", [2, 1201], [1201, 40], a=a, b=b)
    assert np.abs(const_ints(graph, "w")).max() >= (120 if precision == "w8a16" else 30000)
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


# ---- refusals and the fast path at size --------------------------------------------------------------

def test_conv_vnni_block_tails_equal_reference(tmp_path, monkeypatch):
    """Channel counts around the 16/64 blocks and positions around the 6-row blocks."""
    for x_shape, w_shape, attrs in [([1, 9, 8, 11], [65, 9, 3, 3], {"pads": [1, 1, 1, 1]}),
                                    ([2, 130, 5, 5], [17, 130, 1, 1], {}),
                                    ([1, 12, 9, 9], [36, 4, 2, 2], {"group": 3, "strides": [2, 2]})]:
        rng = np.random.default_rng(w_shape[0])
        graph, feeds, expected = conv_case(tmp_path, rng, "w8a8", (x_shape, w_shape, attrs))
        check_paths(build(graph, tmp_path), feeds, expected, monkeypatch, threads=(2, 3, 5))


# A lone input channel whose window steps along W in whole quads (silero's STFT) runs as 4 channels
# of k/4 taps: a 1-D STFT-like case (258 filters: a 2-channel tail block) and a 2-D one padded along W.
@pytest.mark.parametrize("precision", ["w8a8", "w4a8"])
@pytest.mark.parametrize("case", [([2, 1, 832], [258, 1, 256], {"strides": [128]}),
                                  ([1, 1, 6, 40], [9, 1, 3, 8], {"strides": [1, 4], "pads": [1, 4, 1, 8]})])
def test_conv_lone_channel_in_quads_equals_golden(tmp_path, monkeypatch, precision, case):
    rng = np.random.default_rng(len(case[0]) + len(precision))
    graph, feeds, expected = conv_case(tmp_path, rng, precision, case)
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch, threads=(2, 3))


# The vnni and depthwise paths change layout 16 x 16 bytes at a time (conv_common.h transpose_bytes):
# whole and edge tiles of the input's channels x width and of the output's positions x channels.
LAYOUT_CASES = [
    ([1, 32, 7, 37], [24, 32, 3, 3], {"pads": [1, 1, 1, 1]}),                                 # vnni: 2 whole channel tiles
    ([1, 40, 3, 50], [70, 20, 1, 3], {"group": 2, "pads": [0, 1, 0, 1]}),                     # vnni: groups, edge tiles
    ([1, 48, 6, 35], [48, 1, 3, 3], {"group": 48, "pads": [1, 1, 1, 1]}),                     # depthwise, 210 positions
    ([1, 80, 9, 33], [80, 1, 5, 5], {"group": 80, "pads": [2, 2, 2, 2], "strides": [2, 2]}),  # depthwise: 2 blocks
]


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
@pytest.mark.parametrize("index", range(len(LAYOUT_CASES)))
def test_conv_layout_tiles_equal_golden(tmp_path, monkeypatch, precision, index):
    rng = np.random.default_rng(7 + index)
    graph, feeds, expected = conv_case(tmp_path, rng, precision, LAYOUT_CASES[index])
    check_paths(build(graph, tmp_path), feeds, expected, monkeypatch, threads=(2, 3))


def test_conv_bias_from_activation_refused(tmp_path):
    rng = np.random.default_rng(0)
    path = make_model(tmp_path, "Conv", {"x": [1, 4, 5, 5], "b": [6]}, {"w": rng.normal(0, 1, [6, 4, 3, 3])},
                      {"kernel_shape": [3, 3]})
    # node inputs are x, b, w in make_model's order: rebuild with the right order
    model = onnx.load(path)
    model.graph.node[0].input[:] = ["x", "w", "b"]
    onnx.save(model, path)
    feeds = {"x": rng.uniform(-1, 1, [1, 4, 5, 5]).astype(np.float32), "b": rng.normal(0, 1, [6]).astype(np.float32)}
    graph = quantized(path, "w8a8", ranges_for(rng, feeds, float_output(path, feeds)))
    assert "npu_refuse" in graph.nodes[0].attrs
    with pytest.raises(Exception, match="not a constant"):
        Model(build(graph, tmp_path), backend="npu")


def test_large_bias_takes_the_exact_fallback(tmp_path, monkeypatch):
    """Totals beyond int32 (a bias at the int32 limit) leave the vector requantize for the scalar one."""
    rng = np.random.default_rng(11)
    for op, x_shape, w_shape in [("Conv", [1, 8, 6, 6], [20, 8, 3, 3]), ("MatMul", [7, 32], [32, 24])]:
        w = rng.normal(0, 1e-3, w_shape)
        inits = {"w": w}
        attrs = {}
        if op == "Conv":
            inits["b"] = np.where(rng.random(w_shape[0]) < 0.5, 1e4, -1e4) * rng.uniform(0.5, 1, w_shape[0])
            attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
        path = make_model(tmp_path, op, {"x": x_shape}, inits, attrs)
        feeds = {"x": rng.uniform(-1, 1, x_shape).astype(np.float32)}
        y = float_output(path, feeds)
        graph = quantized(path, "w8a8", {"x": (-1.0, 1.0), "y": (float(y.min()) * 0.5, float(y.max()) * 0.5)})
        node = graph.nodes[0]
        ex, ew, ey = (graph.tensor(n).encoding for n in ("x", "w", "y"))
        qx = quantize_input(feeds["x"], ex)
        if op == "Conv":
            b = graph.tensor(node.inputs[2])
            assert np.abs(b.const).max() > 2 ** 30
            expected = golden.conv(qx, ex, const_ints(graph, "w"), ew, ey, onnx_attrs(node), b)
        else:
            expected = golden.product(qx, ex, const_ints(graph, "w"), ew, ey, onnx_attrs(node))
        check_paths(build(graph, tmp_path), feeds, expected, monkeypatch)


def test_16bit_weights_with_8bit_activations_refused(tmp_path):
    from qnn_build.quant.encoding import activation_encoding
    rng = np.random.default_rng(2)
    path = make_model(tmp_path, "Conv", {"x": [1, 4, 5, 5]}, {"w": rng.normal(0, 1, [3, 4, 1, 1])},
                      {"kernel_shape": [1, 1]})
    graph = build_graph(path)
    stats = Stats({n: TensorStats(-1.0, 1.0, np.zeros(16, np.int64), None) for n in ("x", "y")})
    quantize_graph(graph, PRECISIONS["w16a16"], stats, QuantOptions(),
                   {"activations": {"x": lambda s, bits: activation_encoding(-1.0, 1.0, 8)}})
    add_npu_params(graph)
    assert graph.tensor("x").encoding.bitwidth == 8 and graph.tensor("w").encoding.bitwidth == 16
    with pytest.raises(Exception, match="16-bit weights with 8-bit activations"):
        Model(build(graph, tmp_path), backend="npu")


@pytest.mark.parametrize("precision,block", [("w8a8", None), ("w8a16", None), ("w16a16", None), ("w4a8", 16)])
def test_npu_within_one_lsb_of_cpu_simulation(tmp_path, precision, block):
    """The cpu backend runs the same quantized graph in float (dequantized weights, rounded
    activations): the npu's integers agree within 1 LSB of the output encoding."""
    rng = np.random.default_rng(len(precision))
    cases = [("Conv", ([1, 32, 9, 9], [24, 32, 3, 3], {"pads": [1, 1, 1, 1], "strides": [2, 1]})),
             ("Conv", ([1, 16, 8, 8], [16, 1, 3, 3], {"group": 16, "pads": [1, 1, 1, 1]})),
             ("ConvTranspose", ([1, 32, 4, 4], [32, 8, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1]}))]
    for op, case in cases:
        graph, feeds, expected = conv_case(tmp_path, rng, precision, case, block_size=block, op=op)
        lib = build(graph, tmp_path)
        with Model(lib, backend="cpu") as cpu:
            y = cpu.run(feeds)["y"]
        ey = graph.tensor("y").encoding
        q_cpu = np.clip(np.round(y / ey.scales[0]) - ey.offsets[0], 0, ey.qmax)
        assert np.abs(run(lib, feeds) - q_cpu).max() <= 1, op
    for op, a_shape, b_shape, attrs, c_shape in [("Gemm", [6, 64], [48, 64], {"transB": 1, "alpha": 0.5}, [48]),
                                                  ("MatMul", [2, 5, 64], [64, 40], {}, None)]:
        graph, feeds, expected = product_case(tmp_path, rng, precision, op, a_shape, b_shape, attrs, c_shape,
                                              block_size=block)
        lib = build(graph, tmp_path)
        with Model(lib, backend="cpu") as cpu:
            y = cpu.run(feeds)["y"]
        ey = graph.tensor("y").encoding
        q_cpu = np.clip(np.round(y / ey.scales[0]) - ey.offsets[0], 0, ey.qmax)
        assert np.abs(run(lib, feeds) - q_cpu).max() <= 1, op
