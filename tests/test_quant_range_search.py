"""The range search (`act_range: search`, docs/quantization.md (13)-(15)): it never ends worse than
its starting ranges on the calibration objective, its scoring (a library composed with other
encodings) equals the library convert writes, and it gives the same bytes twice."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import build_graph, calibrate, convert, cpu_compiler, float_model
from qnn_build.data.samples import iter_samples
from qnn_build.options import parse_precision
from qnn_build.quant import QuantOptions
from qnn_build.quant.encoding import activation_encoding
from qnn_build.quant.range_search import (AUTO_METHODS, SEARCH_PASSES, _Scorer, candidate_ranges, reference_outputs,
                                          search_ranges)
from qnn_build.runtime import load
from qnn_build.toolchain import build_model_lib

RNG = np.random.default_rng(3)


def samples(work, graph):
    """The search's Reference: the calibration samples and the float model's outputs on them."""
    with float_model(graph) as model:
        return reference_outputs(model, iter_samples(work / "calib.npz", model.inputs)[1])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A conv net with a HardSwish, a bias and an input whose channel 0 has rare large values that the
    first conv nearly ignores: clipping them is worth it at 8 bits."""
    d = tmp_path_factory.mktemp("search")
    w1 = (RNG.standard_normal((8, 3, 3, 3)) * 0.5).astype(np.float32)
    w1[:, 0] *= 0.01
    b1 = RNG.standard_normal(8).astype(np.float32)
    w2 = (RNG.standard_normal((6, 8, 3, 3)) * 0.3).astype(np.float32)
    wf = (RNG.standard_normal((96, 4)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1"),
             helper.make_node("HardSwish", ["c1"], ["h1"], name="hswish"),
             helper.make_node("Conv", ["h1", "w2"], ["c2"], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu"),
             helper.make_node("Flatten", ["r2"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "wf"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "s", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(v, k) for k, v in {"w1": w1, "b1": b1, "w2": w2, "wf": wf}.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), d / "model.onnx")
    x = RNG.standard_normal((32, 1, 3, 8, 8))
    x[:, :, 0] = RNG.standard_t(2, (32, 1, 8, 8)) * 3
    np.savez(d / "calib.npz", x=x.astype(np.float32))
    return d


@pytest.mark.parametrize("precision,options", [
    ("w8a8", QuantOptions(act_range="search")),
    ("w8a8", QuantOptions(act_range="search", bias_correction=True)),
    ("w4a8", QuantOptions(act_range="search")),
    ("w8a16", QuantOptions(act_range="search")),
], ids=["w8a8", "w8a8-bias-correction", "w4a8", "w8a16"])
def test_the_search_never_ends_worse_than_its_start(work, precision, options):
    graph = build_graph(work / "model.onnx", lower_rnn=True)
    stats = calibrate(work / "model.onnx", work / "calib.npz")
    prec = parse_precision(precision)
    result = search_ranges(graph, prec, stats, options, None, samples(work, graph), cpu_compiler(work / "libs"))
    assert result.error <= result.start_error
    assert "r2" in result.ranges and "c2" not in result.ranges  # c2 takes the Relu's encoding (fused)
    bound = sum(len(candidate_ranges(stats[n], prec.act_bits)) for n in result.ranges)
    assert result.evaluations <= 1 + SEARCH_PASSES * bound
    if precision == "w8a8":  # the outliers make clipping pay at 8 bits
        assert result.changed and result.error < result.start_error


def test_the_search_scores_what_convert_writes(work):
    """(13) from the library composed with the found encodings equals (13) from the converted library."""
    graph = build_graph(work / "model.onnx", lower_rnn=True)
    stats = calibrate(work / "model.onnx", work / "calib.npz")
    # nearest rounding: search_ranges is given no GPTQ H here, as convert gives it with gptq
    precision, options = parse_precision("w8a8"), QuantOptions(act_range="search", weight_rounding="nearest")
    result = search_ranges(graph, precision, stats, options, None, samples(work, graph), cpu_compiler(work / "libs"))
    scorer = _Scorer(graph, precision, stats, options, None, samples(work, graph), cpu_compiler(work / "scorer"))
    assert scorer.error(result.ranges).sum() == result.error

    convert(work / "model.onnx", work / "out", precision="w8a8", calibration=work / "calib.npz", options=options)
    model = load(build_model_lib(work / "out" / "model.cpp", work / "out" / "model.bin", work / "out" / "lib.so"))
    xs = np.load(work / "calib.npz")["x"]
    ours = np.stack([model.run({"x": x})["y"] for x in xs]).astype(np.float64)
    floats = np.stack([out["y"] for out in scorer._ref]).astype(np.float64)
    assert np.sum((ours - floats) ** 2) / np.sum(floats ** 2) == pytest.approx(result.error, rel=1e-12)


def test_the_search_gives_the_same_bytes_twice(work):
    for out in ("a", "b"):
        convert(work / "model.onnx", work / out, precision="w8a8", calibration=work / "calib.npz",
                options=QuantOptions(act_range="search"))
    for name in ("model.cpp", "model.bin", "model.encodings.json"):
        assert (work / "a" / name).read_bytes() == (work / "b" / name).read_bytes(), name


def test_candidates_start_with_minmax_and_differ_in_encoding(work):
    stats = calibrate(work / "model.onnx", work / "calib.npz")
    for name in ("x", "h1", "r2"):
        cands = candidate_ranges(stats[name], 8)
        assert cands[0] == (stats[name].min, stats[name].max)
        keys = {(float(e.scales[0]), int(e.offsets[0])) for e in (activation_encoding(lo, hi, 8) for lo, hi in cands)}
        assert len(keys) == len(cands) >= 2


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_auto_takes_the_best_fixed_method_only_when_it_scores_significantly_better(work, precision):
    """(21): every candidate method is scored once; the result is minmax or a method whose error is
    significantly below minmax's (16); at 8 bits the input's outliers make a percentile pay."""
    graph = build_graph(work / "model.onnx", lower_rnn=True)
    stats = calibrate(work / "model.onnx", work / "calib.npz")
    prec = parse_precision(precision)
    result = search_ranges(graph, prec, stats, QuantOptions(act_range="auto"), None, samples(work, graph),
                           cpu_compiler(work / "libs"))
    assert result.evaluations == len(AUTO_METHODS) + 1  # and bias correction (21b): conv1 has a bias
    assert result.error <= result.start_error
    labels = [m if p is None else f"{m} {p}" for m, p in AUTO_METHODS]
    assert result.method in labels
    if result.method == "minmax":
        assert not result.changed and result.error == result.start_error
    else:
        assert result.changed and result.error < result.start_error
    if precision == "w8a8":
        assert result.method != "minmax"


def test_auto_without_samples_is_minmax_and_nearest(work):
    """Statistics alone cannot score a candidate or give GPTQ its H: auto is then the plain method."""
    stats_path = work / "stats.npz"
    calibrate(work / "model.onnx", work / "calib.npz", out_path=stats_path)
    for out, options in (("plain", QuantOptions()), ("auto", QuantOptions(act_range="auto", weight_rounding="auto"))):
        convert(work / "model.onnx", work / out, precision="w8a8", calibration_stats=stats_path, options=options)
    for name in ("model.cpp", "model.bin", "model.encodings.json"):
        assert (work / "plain" / name).read_bytes() == (work / "auto" / name).read_bytes(), name
