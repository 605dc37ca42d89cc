"""What the npu cannot honour stops finalize with one message naming the op and what it cannot do
(docs/npu.md (N34)); the cpu backend still runs such graphs. The converter's per-node answer
(backends/npu.py node_refusal, (N42)) agrees: --float-fallback keeps exactly those nodes in fp16."""

import re

import numpy as np
import pytest
from onnx import helper

from qnn_build.convert import convert
from qnn_build.runtime.binding import Model, RuntimeFailure
from qnn_build.toolchain import build_model_lib

from .harness import F, build_lib, make_model, quantized, run


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


# (N42): the npu backend answers per node, with its attributes, constants and encodings; the runtime
# refuses the same node by itself, naming it, its op and the reason; --float-fallback keeps exactly
# that node in fp16. op, attributes, constant inputs, runtime inputs (besides x), the reason
PER_NODE = [
    ("ScatterElements", {"axis": 0, "reduction": "add"}, [("i", np.array([[0, 1, 1], [1, 0, 0]], np.int64))], ["u"],
     "ScatterElements with reduction 'add'"),
    ("ScatterND", {"reduction": "mul"}, [("i", np.array([[1], [0]], np.int64))], ["u"], "ScatterND with reduction 'mul'"),
    ("ScatterElements", {"axis": 0}, [("i", np.array([[0, 1, 1], [1, 0, 0]], np.int64))], ["u"], None),
    ("Mod", {"fmod": 1}, [], ["u"], "Mod with a divisor computed at run time"),
    ("Pow", {}, [("e", np.array(3.0, np.float32))], [], "Pow with exponent 3"),
    ("ReduceProd", {"keepdims": 0}, [], [], "ReduceProd"),
]


@pytest.mark.parametrize("op,attrs,consts,extra,reason", PER_NODE)
def test_the_npu_refuses_per_node_and_fallback_keeps_that_node(tmp_path, op, attrs, consts, extra, reason):
    operands = ["a", *[c[0] for c in consts], *extra]  # data, indices, updates; Mod's divisor; Pow's exponent
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"], name="scale"),
             helper.make_node(op, operands, ["y"], name="the_node", **attrs)]
    inputs = [("x", F, [2, 3])] + [(n, F, [2, 3]) for n in extra]
    path = make_model(tmp_path, nodes, inputs, ["y"], [("k", np.array(1.5, np.float32)), *consts])
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calib.npz", **{n: rng.uniform(0.5, 2.0, (4, 2, 3)).astype(np.float32) for n, _, _ in inputs})
    plain = convert(path, tmp_path / "plain", precision="w8a8", calibration=tmp_path / "calib.npz")
    lib = build_model_lib(tmp_path / "plain/model.cpp", tmp_path / "plain/model.bin", tmp_path / "plain/lib.so")
    assert "float_fallback" not in plain
    if reason is None:
        Model(lib, backend="npu")
    else:
        with pytest.raises(RuntimeFailure, match=re.escape(f"node 'the_node' ({op}): no npu kernel for {reason}; "
                                                            "convert with --float-fallback")):
            Model(lib, backend="npu")
    kept = convert(path, tmp_path / "fb", precision="w8a8", calibration=tmp_path / "calib.npz", float_fallback=True)
    assert kept["float_fallback"] == ([] if reason is None else
                                      [{"name": "the_node", "op": op, "reason": f"no npu kernel for {reason}"}])
    lib = build_model_lib(tmp_path / "fb/model.cpp", tmp_path / "fb/model.bin", tmp_path / "fb/lib.so")
    feeds = {n: rng.uniform(0.5, 2.0, (2, 3)).astype(np.float32) for n, _, _ in inputs}
    got, want = Model(lib, backend="npu").run(feeds)["y"], Model(lib, backend="cpu").run(feeds)["y"]
    np.testing.assert_allclose(got, want, rtol=0, atol=0.02 * np.abs(want).max())  # fp16 or 8-bit steps
