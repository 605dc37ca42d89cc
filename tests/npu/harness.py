"""Shared by the npu's one-op tests (test_npu_movement, _pool, _norm, _arith, _refusals, _mutations):
one-op ONNX graphs built in code, quantized with chosen ranges and lowered for the npu, run on the
npu at several thread counts and compared with the golden model exactly, and with the cpu simulation."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from qnn_build.convert import build_graph, write_artifacts
from qnn_build.npu_lowering.lower import add_npu_params
from qnn_build.quant import QuantOptions, Stats, quantize_graph
from qnn_build.quant.apply import activation_names
from qnn_build.quant.calibrate import TensorStats
from qnn_build.quant.encoding import activation_encoding, quantize
from qnn_build.options import PRECISIONS
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

from . import golden

F = TensorProto.FLOAT
ALL_PRECISIONS = ["w8a8", "w8a16", "w16a16", "w4a8", "w4a16"]


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
