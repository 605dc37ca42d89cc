"""GPTQ weight rounding (`weight_rounding: gptq`, docs/quantization.md (17)-(20)): its layer inputs
are the layer's own (im2col patches of a conv with pads, strides, dilations and groups), it lowers
every layer's output error on the calibration data against nearest rounding, keeps the weights in
their encodings' integer range with the scales unchanged, and gives the same bytes twice."""

import json

import numpy as np
import onnx
import pytest
from cli_util import one_error_line, qnn_build
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from qnn_build.convert import build_graph, convert, float_model
from qnn_build.data.samples import iter_samples
from qnn_build.quant import QuantOptions
from qnn_build.quant.apply import _weight, weight_axes
from qnn_build.quant.encoding import dequantize, quantize
from qnn_build.quant.gptq import _as_matrix, collect_hessians, gptq_layers, gptq_quantize, input_rows

RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A strided padded conv, a dilated grouped conv, a 1x1 conv and a Gemm; inputs with correlated
    channels (where error feedback has something to work with)."""
    d = tmp_path_factory.mktemp("gptq")
    ws = {"w1": RNG.standard_normal((16, 4, 3, 3)) * 0.3, "b1": RNG.standard_normal(16) * 0.1,
          "w2": RNG.standard_normal((64, 8, 3, 3)) * 0.2,
          "w3": RNG.standard_normal((8, 64, 1, 1)) * 0.2,
          "wf": RNG.standard_normal((10, 128)) * 0.1, "bf": RNG.standard_normal(10) * 0.1}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[2, 1, 2, 1], dilations=[2, 1], group=2,
                              name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
             helper.make_node("Flatten", ["c3"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in ws.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "model.onnx")
    base = RNG.standard_normal((48, 1, 1, 8, 8))
    x = base + 0.3 * RNG.standard_normal((48, 1, 4, 8, 8))
    np.savez(d / "calib.npz", x=x.astype(np.float32))
    return d


def test_the_layer_inputs_times_the_weight_are_the_layer_outputs(work):
    """input_rows (im2col per group) in the order _as_matrix lays the weight out: rows · Wᵀ = the conv."""
    graph = build_graph(work / "model.onnx")
    model = onnx.load(work / "model.onnx")
    x = np.load(work / "calib.npz")["x"][0]
    names = ["r1", "c2", "r2", "c3"]
    for n in names:
        model.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    ref = dict(zip(["y"] + names, ReferenceEvaluator(model).run(None, {"x": x})))
    for node in graph.nodes:
        if node.op_type != "Conv" or node.inputs[0] != "r1" and node.inputs[0] != "r2":
            continue
        w = graph.tensor(node.inputs[1]).const.astype(np.float64)
        mats, _ = _as_matrix(node, w)
        rows = input_rows(node, ref[node.inputs[0]], w.shape)
        out = np.concatenate([r @ m.T for r, m in zip(rows, mats)], axis=1)      # [N·H·W, O]
        expected = ref[node.outputs[0]].transpose(0, 2, 3, 1).reshape(-1, w.shape[0])
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
        # H from a subset of positions (GPTQ_MAX_ROWS): rows of the same patches, every group alike
        some = input_rows(node, ref[node.inputs[0]], w.shape, max_rows=5)
        assert all(len(part) == 5 for part in some)
        whole = np.concatenate(rows, axis=1)
        for row in np.concatenate(some, axis=1):
            assert (whole == row).all(axis=1).any()


def _layer_error(node, w, q, enc, hessians):
    """E[(x·(Wq − W))²] summed over the outputs: tr(ΔW H ΔWᵀ) / 2 with H of (17)."""
    d = dequantize(q, enc).astype(np.float64) - w
    mats, _ = _as_matrix(node, d)
    return sum(float(np.trace(m @ h @ m.T)) for m, h in zip(mats, hessians)) / 2


@pytest.mark.parametrize("bits,block", [(8, None), (4, None), (4, 32)], ids=["8bit", "4bit", "4bit-block32"])
def test_gptq_lowers_every_layers_output_error_and_stays_in_range(work, bits, block):
    graph = build_graph(work / "model.onnx")
    with float_model(graph) as model:
        hessians = collect_hessians(graph, model, iter_samples(work / "calib.npz", model.inputs)[1])
    layers = gptq_layers(graph)
    assert {n.name for n in layers.values()} == {"conv1", "conv2", "conv3", "fc"}
    assert [h.shape for h in hessians["w2"]] == [(72, 72)] * 2     # one H per group, K = 8 channels · 3 · 3
    blocked = 0
    for name, node in layers.items():
        w = graph.tensor(name).const
        enc = _weight(node, graph, w, weight_axes(node, graph, 1), bits, QuantOptions(block_size=block))
        blocked += enc.block_axis >= 0
        q = gptq_quantize(node, w, enc, hessians[name])
        assert q.shape == w.shape and q.min() >= -enc.qmax and q.max() <= enc.qmax  # symmetric, as (6)
        nearest = quantize(w, enc)
        assert _layer_error(node, w, q, enc, hessians[name]) < _layer_error(node, w, nearest, enc, hessians[name])
    assert blocked == (2 if block else 0)   # conv3 (64 input channels) and fc (128); the others have fewer than 32


def test_same_bytes_twice_and_the_scales_of_nearest(work, tmp_path):
    opts = QuantOptions(weight_rounding="gptq", block_size=32)
    for run in ("a", "b"):
        convert(work / "model.onnx", tmp_path / run, precision="w4a16", calibration=work / "calib.npz", options=opts)
    convert(work / "model.onnx", tmp_path / "nearest", precision="w4a16", calibration=work / "calib.npz",
            options=QuantOptions(block_size=32, weight_rounding="nearest"))
    assert (tmp_path / "a" / "model.bin").read_bytes() == (tmp_path / "b" / "model.bin").read_bytes()
    assert (tmp_path / "a" / "model.bin").read_bytes() != (tmp_path / "nearest" / "model.bin").read_bytes()
    encodings = [json.loads((tmp_path / r / "model.encodings.json").read_text()) for r in ("a", "nearest")]
    assert [doc.pop("quantization")["weight_rounding"] for doc in encodings] == ["gptq", "nearest"]
    assert encodings[0] == encodings[1]


def test_an_unknown_weight_rounding_on_the_command_line_is_refused_by_argparse(work, tmp_path):
    result = qnn_build("convert", work / "model.onnx", "-o", tmp_path / "out", "--precision", "w8a8",
                       "--calibration", work / "calib.npz", "--weight-rounding", "stochastic")
    assert result.returncode == 2 and "invalid choice: 'stochastic'" in result.stderr.splitlines()[-1]


@pytest.mark.parametrize("args,fragments", [
    (["--config", "bad.json"], ["bad.json: weight_rounding: unknown value 'adaround'", "nearest, gptq"]),
    (["--calibration-stats", "stats.npz", "--weight-rounding", "gptq"], ["weight_rounding gptq", "--calibration"]),
], ids=["config", "statistics-only"])
def test_a_bad_weight_rounding_is_one_line(work, tmp_path, args, fragments):
    (tmp_path / "bad.json").write_text(json.dumps({"weight_rounding": "adaround"}))
    qnn_build("calibrate", work / "model.onnx", "--calibration", work / "calib.npz", "-o", tmp_path / "stats.npz")
    result = qnn_build("convert", work / "model.onnx", "-o", tmp_path / "out", "--precision", "w8a8",
                       "--calibration", work / "calib.npz", *args, cwd=tmp_path)
    if "--calibration-stats" in args:  # statistics alone: no calibration samples to take H from
        result = qnn_build("convert", work / "model.onnx", "-o", tmp_path / "out", "--precision", "w8a8", *args,
                           cwd=tmp_path)
    one_error_line(result, *fragments)
