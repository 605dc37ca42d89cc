"""Recurrent ops (RNN, GRU, LSTM): one runtime node each, with every attribute made explicit.

Runtime node: the ONNX inputs X, W, R, B, sequence_lens, initial_h (, initial_c, P for LSTM) and the
ONNX outputs (absent ones ""), with params
  hidden_size, direction ("forward" | "reverse" | "bidirectional"), layout (0 seq-first, 1 batch-first),
  clip (inf for none), linear_before_reset (GRU),
  activations: one code per activation slot (per direction, as ONNX lists them),
  activation_alpha / activation_beta: one value per slot, ONNX/onnxruntime defaults filled in.
sequence_lens is dropped when it is a constant equal to seq_length everywhere; otherwise the kernel
honours per-batch lengths (as onnxruntime: steps past a row's length leave its state and write zeros to Y).
"""

import math

import numpy as np

from .base import OpRule, require_dtype, same, unsupported

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}

# name -> (runtime code, alpha default, beta default); None: the function takes no such value;
# "required": ONNX gives no default (Affine and ScaledTanh are no longer ONNX ops), so the model must.
ACTIVATIONS = {
    "relu": (0, None, None),
    "tanh": (1, None, None),
    "sigmoid": (2, None, None),
    "affine": (3, "required", "required"),
    "leakyrelu": (4, 0.01, None),
    "thresholdedrelu": (5, 1.0, None),
    "scaledtanh": (6, "required", "required"),
    "hardsigmoid": (7, 0.2, 0.5),
    "elu": (8, 1.0, None),
    "softsign": (9, None, None),
    "softplus": (10, None, None),
}


def _input(node, index: int) -> str:
    return node.inputs[index] if index < len(node.inputs) else ""


def _activations(node, num_directions: int):
    """(codes, alphas, betas), one per activation slot. As in onnxruntime, alpha/beta values are
    consumed in order only by the functions that take them."""
    names = node.attrs.get("activations") or DEFAULT_ACTIVATIONS[node.op_type] * num_directions
    per_dir = len(DEFAULT_ACTIVATIONS[node.op_type])
    if len(names) != per_dir * num_directions:
        raise unsupported(node, f"activations lists {len(names)} functions; expected {per_dir * num_directions}")
    alphas = list(node.attrs.get("activation_alpha", []))
    betas = list(node.attrs.get("activation_beta", []))
    codes, a_out, b_out = [], [], []
    for name in names:
        entry = ACTIVATIONS.get(name.lower())
        if entry is None:
            raise unsupported(node, f"activation '{name}' (supported: {', '.join(sorted(ACTIVATIONS))})")
        code, a_def, b_def = entry
        values = []
        for default, pool, what in ((a_def, alphas, "alpha"), (b_def, betas, "beta")):
            if default is None:
                values.append(0.0)
            elif pool:
                values.append(float(pool.pop(0)))
            elif default == "required":
                raise unsupported(node, f"activation '{name}' needs an explicit activation_{what}")
            else:
                values.append(float(default))
        codes.append(code)
        a_out.append(values[0])
        b_out.append(values[1])
    return codes, a_out, b_out


def _check_shape(node, graph, name: str, expected: tuple, what: str) -> None:
    if name and tuple(graph.tensor(name).shape) != expected:
        raise unsupported(node, f"{what} '{name}' has shape {list(graph.tensor(name).shape)}; expected {list(expected)}")


def _sequence_lens(node, graph, seq: int, batch: int) -> str:
    """The sequence_lens input to keep: "" when absent or a constant equal to seq_length everywhere."""
    name = _input(node, 4)
    if not name:
        return ""
    require_dtype(node, graph, [name], (np.int32,))
    _check_shape(node, graph, name, (batch,), "sequence_lens")
    value = graph.const(name)
    if value is None:
        return name
    if np.any(value < 0) or np.any(value > seq):
        raise unsupported(node, f"sequence_lens {value.tolist()} outside [0, {seq}]")
    return "" if np.all(value == seq) else name


def _lower(node, graph):
    op, gates = node.op_type, GATES[node.op_type]
    x, w, r = node.inputs[:3]
    float_ins = [_input(node, i) for i in (0, 1, 2, 3, 5, 6, 7)]
    require_dtype(node, graph, float_ins + node.outputs)
    direction = node.attrs.get("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise unsupported(node, f"direction '{direction}'")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(node.attrs.get("layout", 0))
    if layout not in (0, 1):
        raise unsupported(node, f"layout {layout}")
    if op == "LSTM" and int(node.attrs.get("input_forget", 0)) != 0:
        raise unsupported(node, "input_forget=1 (coupled input/forget gates)")
    lbr = int(node.attrs.get("linear_before_reset", 0))
    if op == "GRU" and lbr not in (0, 1):
        raise unsupported(node, f"linear_before_reset {lbr}")

    x_shape = graph.tensor(x).shape
    if len(x_shape) != 3:
        raise unsupported(node, f"X has rank {len(x_shape)}; expected 3")
    seq, batch, inp = (x_shape[1], x_shape[0], x_shape[2]) if layout else x_shape
    hidden = int(graph.tensor(r).shape[-1])
    if int(node.attrs.get("hidden_size", hidden)) != hidden:
        raise unsupported(node, f"hidden_size {node.attrs['hidden_size']} but R has {hidden} columns")
    state_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    _check_shape(node, graph, w, (dirs, gates * hidden, inp), "W")
    _check_shape(node, graph, r, (dirs, gates * hidden, hidden), "R")
    _check_shape(node, graph, _input(node, 3), (dirs, 2 * gates * hidden), "B")
    _check_shape(node, graph, _input(node, 5), state_shape, "initial_h")
    _check_shape(node, graph, _input(node, 6), state_shape, "initial_c")
    _check_shape(node, graph, _input(node, 7), (dirs, 3 * hidden), "P")

    clip = node.attrs.get("clip")
    if clip is not None and not clip > 0:
        raise unsupported(node, f"clip {clip} (must be positive)")
    codes, alphas, betas = _activations(node, dirs)
    params = dict(hidden_size=hidden, direction=direction, layout=layout,
                  clip=math.inf if clip is None else float(clip),
                  activations=codes, activation_alpha=alphas, activation_beta=betas)
    if op == "GRU":
        params["linear_before_reset"] = lbr
    n_in = 8 if op == "LSTM" else 6
    inputs = [_input(node, i) for i in range(n_in)]
    inputs[4] = _sequence_lens(node, graph, seq, batch)
    outputs = list(node.outputs) + [""] * ((3 if op == "LSTM" else 2) - len(node.outputs))
    return [same(node, inputs=inputs, outputs=outputs, **params)]


RULES = [OpRule("RNN", _lower), OpRule("GRU", _lower), OpRule("LSTM", _lower)]
