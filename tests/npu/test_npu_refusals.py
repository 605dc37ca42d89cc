"""What the npu cannot honour stops finalize with one message naming the op and what it cannot do
(docs/npu.md (N34)); the cpu backend still runs such graphs."""

import numpy as np
import pytest
from onnx import helper

from qnn_build.runtime.binding import Model, RuntimeFailure

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
