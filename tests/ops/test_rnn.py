import numpy as np
import onnx
import onnxruntime as ort
import pytest

from qnn_build.errors import ConvertError
from onnx_backend import run_onnx

from .opcase import OpCase, check_op, make_model

rng = np.random.default_rng(0)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def r(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def rnn_case(op, id, seq=4, batch=3, inp=5, hidden=6, direction="forward", bias=True, init=False,
             peep=False, layout=0, seq_lens=None, weights_as_inputs=False, n_outputs=None, opset=17, scale=0.5,
             **attrs):
    """One RNN/GRU/LSTM row: random weights (W, R, B as initializers unless weights_as_inputs)."""
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    x = r(batch, seq, inp) if layout else r(seq, batch, inp)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    weights = {"W": r(dirs, g * hidden, inp, scale=scale), "R": r(dirs, g * hidden, hidden, scale=scale)}
    optional = {
        "B": r(dirs, 2 * g * hidden, scale=0.5) if bias else None,
        "sequence_lens": None if seq_lens is None else np.asarray(seq_lens, np.int32),
        "initial_h": r(*state) if init else None,
    }
    if op == "LSTM":
        optional["initial_c"] = r(*state) if init else None
        optional["P"] = r(dirs, 3 * hidden, scale=0.5) if peep else None
    inputs, consts = {"X": x}, {}
    (inputs if weights_as_inputs else consts).update(weights)
    order = ["X", "W", "R"]
    for name, value in optional.items():
        order.append(name if value is not None else "")
        if value is not None:
            (inputs if name in ("initial_h", "initial_c") else consts)[name] = value
    while order[-1] == "":
        order.pop()
    attrs = dict(hidden_size=hidden, **attrs)
    if direction != "forward":
        attrs["direction"] = direction
    if layout:
        attrs["layout"] = layout
    n_outputs = n_outputs or (3 if op == "LSTM" else 2)
    return OpCase(op, inputs, attrs, consts=consts, input_order=order, n_outputs=n_outputs, opset=opset,
                  rtol=1e-4, atol=1e-5, id=f"{op.lower()}_{id}")


CASES = [
    # LSTM
    rnn_case("LSTM", "seq1_batch1", seq=1, batch=1),
    rnn_case("LSTM", "defaults_no_bias", bias=False),
    rnn_case("LSTM", "init_states", init=True),
    rnn_case("LSTM", "peepholes", init=True, peep=True),
    rnn_case("LSTM", "reverse", direction="reverse", init=True),
    rnn_case("LSTM", "bidirectional", direction="bidirectional", init=True, peep=True),
    rnn_case("LSTM", "long_seq_big_hidden", seq=20, batch=2, inp=16, hidden=32),
    rnn_case("LSTM", "clip", init=True, peep=True, clip=0.5),
    rnn_case("LSTM", "weights_as_inputs", weights_as_inputs=True, init=True),
    rnn_case("LSTM", "seq_lens_full", seq_lens=[4, 4, 4]),
    rnn_case("LSTM", "seq_lens_varied", seq_lens=[4, 2, 1], init=True),
    rnn_case("LSTM", "seq_lens_varied_bidir", seq_lens=[1, 4, 3], direction="bidirectional"),
    rnn_case("LSTM", "seq_lens_with_zero", seq_lens=[4, 0, 2], init=True),
    rnn_case("LSTM", "batch11_hidden40", seq=3, batch=11, hidden=40, init=True),  # 8+3 rows, ragged panel
    rnn_case("LSTM", "y_only", n_outputs=1),
    # W of 64K floats or more per direction: the input projection by W packed at prepare.
    rnn_case("LSTM", "packed_w", seq=3, batch=2, inp=256, hidden=64, direction="bidirectional", init=True),
    rnn_case("LSTM", "opset7", opset=7, init=True, peep=True),
    rnn_case("LSTM", "activations", activations=["HardSigmoid", "LeakyRelu", "Softsign"],
             activation_alpha=[0.3, 0.05], activation_beta=[0.6]),
    rnn_case("LSTM", "activations_bidir", direction="bidirectional",
             activations=["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Elu", "Relu"]),
    # GRU
    rnn_case("GRU", "seq1_batch1", seq=1, batch=1),
    rnn_case("GRU", "defaults_no_bias", bias=False),
    rnn_case("GRU", "init_state", init=True),
    rnn_case("GRU", "linear_before_reset", init=True, linear_before_reset=1),
    rnn_case("GRU", "lbr_no_bias", bias=False, linear_before_reset=1),
    rnn_case("GRU", "reverse", direction="reverse", init=True),
    rnn_case("GRU", "bidirectional_lbr", direction="bidirectional", init=True, linear_before_reset=1),
    rnn_case("GRU", "long_seq_big_hidden", seq=20, batch=2, inp=16, hidden=32),
    rnn_case("GRU", "clip", init=True, clip=0.4),
    rnn_case("GRU", "clip_lbr", init=True, clip=0.4, linear_before_reset=1),
    rnn_case("GRU", "weights_as_inputs", weights_as_inputs=True),
    rnn_case("GRU", "batch13_hidden20", batch=13, hidden=20),
    rnn_case("GRU", "seq_lens_varied_reverse", seq_lens=[2, 4, 3], direction="reverse", init=True),
    rnn_case("GRU", "activations", activations=["HardSigmoid", "Softsign"]),
    rnn_case("GRU", "packed_w", seq=3, batch=2, inp=256, hidden=86, linear_before_reset=1),
    # RNN
    rnn_case("RNN", "seq1_batch1", seq=1, batch=1),
    rnn_case("RNN", "defaults", init=True),
    rnn_case("RNN", "reverse", direction="reverse"),
    rnn_case("RNN", "bidirectional", direction="bidirectional", init=True),
    rnn_case("RNN", "relu_clip", activations=["Relu"], clip=1.0),
    rnn_case("RNN", "affine", activations=["Affine"], activation_alpha=[0.5], activation_beta=[0.1]),
    rnn_case("RNN", "scaled_tanh", activations=["ScaledTanh"], activation_alpha=[0.7], activation_beta=[1.3]),
    rnn_case("RNN", "thresholded_relu", activations=["ThresholdedRelu"], activation_alpha=[0.2]),
    rnn_case("RNN", "softplus", activations=["Softplus"]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rnn(case):
    check_op(case)


# onnxruntime refuses layout=1: compare with its layout-0 result on transposed inputs instead.
BATCH_FIRST = [
    rnn_case("LSTM", "batch_first", direction="bidirectional", init=True, peep=True),
    rnn_case("LSTM", "batch_first_varied_lens", init=True, seq_lens=[4, 1, 3]),
    rnn_case("GRU", "batch_first", init=True, linear_before_reset=1),
    rnn_case("RNN", "batch_first", direction="bidirectional", init=True),
]


@pytest.mark.parametrize("case", BATCH_FIRST, ids=str)
def test_batch_first(case):
    model = make_model(case)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, case.inputs)
    swapped = {k: np.ascontiguousarray(v.swapaxes(0, 1)) for k, v in case.inputs.items()}
    bf = OpCase(case.op, swapped, dict(case.attrs, layout=1), consts=case.consts, input_order=case.input_order,
                n_outputs=case.n_outputs, opset=case.opset)
    got = run_onnx(make_model(bf), swapped)
    y, *states = expected
    expected = [y.transpose(2, 0, 1, 3)] + [s.swapaxes(0, 1) for s in states]
    for i, exp in enumerate(expected):
        np.testing.assert_allclose(got[f"y{i}"], exp, rtol=1e-4, atol=1e-5)


# Big enough that the kernel splits each step's product and gate math across threads. Those splits
# are exact, and so is the GEMM's (the X*W^T projection: every element is computed the same way
# wherever its row falls), so the two runs give the same bytes.
@pytest.mark.parametrize("op,extra", [("LSTM", dict(peep=True)), ("GRU", {}), ("GRU", dict(linear_before_reset=1))])
def test_threads(op, extra):
    case = rnn_case(op, "threads", seq=3, batch=96, inp=8, hidden=256, direction="bidirectional", init=True,
                    scale=0.1, **extra)
    model = make_model(case)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, case.inputs)
    one, two = run_onnx(model, case.inputs, threads=1), run_onnx(model, case.inputs, threads=2)
    for i, exp in enumerate(expected):
        assert two[f"y{i}"].tobytes() == one[f"y{i}"].tobytes()
        np.testing.assert_allclose(two[f"y{i}"], exp, rtol=1e-4, atol=1e-5)


def _with_outputs(case: OpCase, outputs: list[str]) -> onnx.ModelProto:
    """The case's model with the node's outputs renamed, "" for absent ones."""
    model = make_model(case)
    node = model.graph.node[0]
    del node.output[:]
    node.output.extend(outputs)
    kept = [o for o in model.graph.output if o.name in outputs]
    del model.graph.output[:]
    model.graph.output.extend(kept)
    return model


@pytest.mark.parametrize("op,outputs", [("LSTM", ["", "y1"]), ("LSTM", ["", "", "y2"]), ("LSTM", ["y0", "", "y2"]),
                                        ("GRU", ["", "y1"]), ("RNN", ["", "y1"])])
def test_absent_outputs(op, outputs):
    case = rnn_case(op, "absent", direction="bidirectional", init=True)
    model = _with_outputs(case, outputs)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, case.inputs)
    got = run_onnx(model, case.inputs)
    for name, exp in zip([o for o in outputs if o], expected):
        np.testing.assert_allclose(got[name], exp, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case,why", [
    (rnn_case("LSTM", "input_forget", input_forget=1), "input_forget"),
    (rnn_case("RNN", "bad_activation", activations=["Gelu"]), "activation 'Gelu'"),
    (rnn_case("RNN", "affine_no_alpha", activations=["Affine"]), "explicit activation_alpha"),
], ids=lambda v: v if isinstance(v, str) else str(v))
def test_refused(case, why):
    with pytest.raises(ConvertError, match=why):
        run_onnx(make_model(case), case.inputs)
