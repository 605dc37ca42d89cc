"""Recurrent ops unrolled into primitive runtime ops, so a quantized graph runs them in integers.

The runtime nodes `LSTM`, `GRU` and `RNN` (qnn_build/ops/rnn.py: every attribute explicit) are
rewritten, on the float graph before calibration, into ops that both the cpu backend and the npu
run: MatMul (X_t·W^T and H·R^T against constant weights pre-transposed to [input, gates·hidden],
so the quantizer gives them per-channel weight encodings), Add (biases, as constant operands),
Sigmoid/Tanh/... (LUTs on the npu), Mul, Sub, Clip, Split (gates, time steps), Concat (outputs over
time) and Reshape/Transpose. The sequence length is static, so the loop over time is unrolled; each
step's tensors get their own calibrated encodings. Y, Y_h and Y_c keep their names.

Per direction (ONNX gate orders: LSTM i,o,f,c; GRU z,r,h), with XW = X·W^T + Wb (+ Rb where it
may be folded) computed for all steps at once by one MatMul, then split into steps:
  LSTM:  g = XW_t + H·R^T;  i,o,f = f(clip(g_iof [+ P ⊙ C]));  c~ = g(clip(g_c))
         C = f ⊙ C + i ⊙ c~;  H = o ⊙ h(C)          (peepholes: o uses the new C)
  GRU:   zr = f(clip(XW_zr + H·R_zr^T));  z, r = split(zr)
         lbr=0: h~ = g(clip(XW_h + (r ⊙ H)·R_h^T))   lbr=1: h~ = g(clip(XW_h + r ⊙ (H·R_h^T + Rb_h)))
         H = h~ + z ⊙ (H − h~)
  RNN:   H = f(clip(XW_t + H·R^T))
Zero initial states drop their terms; constant ones are folded where both operands are constant.
Every activation the expansion writes is recorded in `graph.recurrent` with its role, the same for
all time steps (`LSTM/d0/c` for every step's cell state), so the quantizer can give the recurrence
its own bitwidth and one encoding per role (docs/quantization.md "The recurrence at 16 bits").
Refused (naming the node): weights that are not constants, sequence_lens shorter than the sequence,
activations without a primitive form (ThresholdedRelu).
"""

import math
import re

import numpy as np

from ..errors import ConvertError
from .graph import Graph, Node

RECURRENT_OPS = ("LSTM", "GRU", "RNN")

# Runtime activation codes (qnn_build/ops/rnn.py ACTIVATIONS).
_RELU, _TANH, _SIGMOID, _AFFINE, _LEAKY, _THRESHOLDED, _SCALED_TANH, _HARD_SIGMOID, _ELU, _SOFTSIGN, \
    _SOFTPLUS = range(11)
_CODE_NAMES = ["Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid",
               "Elu", "Softsign", "Softplus"]


def lower_recurrent(graph: Graph, ops=RECURRENT_OPS) -> int:
    """Replace every LSTM/GRU/RNN runtime node (of `ops`) by its unrolled primitive ops; returns how many."""
    out, count = [], 0
    for node in graph.nodes:
        if node.op_type in ops:
            out.extend(_Unroll(graph, node).run())
            count += 1
        else:
            out.append(node)
    if count:
        graph.nodes = out
        graph.prune()
    return count


def _refuse(node: Node, why: str) -> ConvertError:
    return ConvertError(f"{node.describe()}: cannot lower to primitive ops for a quantized precision: {why}")


class _Unroll:
    """One recurrent node's expansion. Operand values are tensor names (activations), numpy arrays
    (constants, folded when both operands are constant) or None (an exact zero)."""

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node, self.nodes = graph, node, []
        self.consts: dict = {}  # (shape, bytes) -> constant name
        self.prefix = node.name or node.outputs[0]
        p = node.attrs
        self.op = node.op_type
        self.hidden = int(p["hidden_size"])
        self.direction = p.get("direction", "forward")
        self.dirs = 2 if self.direction == "bidirectional" else 1
        self.layout = int(p.get("layout", 0))
        self.clip = float(p.get("clip", math.inf))
        self.codes = [int(c) for c in p["activations"]]
        self.alphas = [float(a) for a in p.get("activation_alpha", [0.0] * len(self.codes))]
        self.betas = [float(b) for b in p.get("activation_beta", [0.0] * len(self.codes))]
        self.lbr = int(p.get("linear_before_reset", 0))
        self.gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[self.op]

    # ---- emitting nodes ----

    def _name(self, hint: str) -> str:
        return self.graph.unique_name(f"{self.prefix}/{hint}")

    def mark(self, name: str, role: str) -> None:
        """Record an activation of the expansion with its role: the hint without its time step."""
        self.graph.recurrent[name] = f"{self.prefix}/{re.sub(r'/t[0-9]+/', '/', role)}"

    def emit(self, op_type: str, inputs, shape, hint: str, out: str | None = None, **params) -> str:
        names = [self.const_name(v, hint) if isinstance(v, np.ndarray) else v for v in inputs]
        y = out or self.graph.add_activation(self._name(hint), np.float32, shape)
        self.nodes.append(Node(y if out is None else self._name(hint), op_type, names, [y], params))
        self.mark(y, hint)
        return y

    def const_name(self, value: np.ndarray, hint: str) -> str:
        """One constant for equal values: every time step reads the same R, not a copy of it."""
        value = np.asarray(value, np.float32)
        key = (value.shape, value.tobytes())
        if key not in self.consts:
            self.consts[key] = self.graph.add_const(self._name(re.sub(r"/t[0-9]+/", "/", hint) + "_const"), value)
        return self.consts[key]

    def shape(self, v):
        return tuple(v.shape) if isinstance(v, np.ndarray) else tuple(self.graph.tensor(v).shape)

    def add(self, a, b, hint):
        if a is None or b is None:
            return b if a is None else a
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return (a + b).astype(np.float32)
        return self.emit("Add", [a, b], np.broadcast_shapes(self.shape(a), self.shape(b)), hint)

    def sub(self, a, b, hint):
        if b is None:
            return a
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return (a - b).astype(np.float32)
        if a is None:
            a = np.zeros((), np.float32)
        return self.emit("Sub", [a, b], np.broadcast_shapes(self.shape(a), self.shape(b)), hint)

    def mul(self, a, b, hint):
        if a is None or b is None:
            return None
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return (a * b).astype(np.float32)
        return self.emit("Mul", [a, b], np.broadcast_shapes(self.shape(a), self.shape(b)), hint)

    def matmul(self, a, w: np.ndarray, hint):
        """a [rows, k] · w [k, n] with w constant (a MatMul weight: per-channel when quantized)."""
        if a is None:
            return None
        if isinstance(a, np.ndarray):
            return (a.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
        return self.emit("MatMul", [a, np.ascontiguousarray(w, np.float32)], (self.shape(a)[0], w.shape[1]), hint)

    def split(self, v: str, axis: int, sizes, hint, over_time: bool = False):
        if len(sizes) == 1:
            return [v]
        shape = list(self.shape(v))
        outs = []
        for k, s in enumerate(sizes):
            shape[axis] = s
            outs.append(self.graph.add_activation(self._name(f"{hint}{k}"), np.float32, shape))
            self.mark(outs[-1], hint if over_time else f"{hint}{k}")  # time steps share one role
        self.nodes.append(Node(self._name(hint), "Split", [v], outs, {"axis": axis, "split": [int(s) for s in sizes]}))
        return outs

    def reshape(self, v: str, shape, hint, out=None):
        return self.emit("Reshape", [v], shape, hint, out=out)

    def concat(self, values, axis: int, hint, out=None):
        shape = list(self.shape(values[0]))
        shape[axis] = sum(self.shape(v)[axis] for v in values)
        if len(values) == 1 and out is None:
            return values[0]
        return self.emit("Concat", values, shape, hint, out=out, axis=axis)

    def clip_(self, v, hint):
        if math.isinf(self.clip):
            return v
        return self.emit("Clip", [v], self.shape(v), hint, min=-self.clip, max=self.clip)

    def activate(self, v: str, slot: int, hint: str) -> str:
        """Activation slot `slot` (per direction, as ONNX lists them) applied to activation `v`."""
        code, a, b = self.codes[slot], self.alphas[slot], self.betas[slot]
        shape = self.shape(v)
        simple = {_RELU: "Relu", _TANH: "Tanh", _SIGMOID: "Sigmoid", _SOFTPLUS: "Softplus"}
        if code in simple:
            return self.emit(simple[code], [v], shape, hint)
        if code == _LEAKY:
            return self.emit("LeakyRelu", [v], shape, hint, alpha=a)
        if code == _HARD_SIGMOID:
            return self.emit("HardSigmoid", [v], shape, hint, alpha=a, beta=b)
        if code == _ELU:
            return self.emit("Elu", [v], shape, hint, alpha=a)
        if code == _AFFINE:
            return self.add(self.mul(v, np.array(a, np.float32), hint + "_scale"), np.array(b, np.float32), hint)
        if code == _SCALED_TANH:
            t = self.emit("Tanh", [self.mul(v, np.array(b, np.float32), hint + "_in")], shape, hint + "_tanh")
            return self.mul(t, np.array(a, np.float32), hint)
        if code == _SOFTSIGN:  # x / (1 + |x|)
            d = self.add(self.emit("Abs", [v], shape, hint + "_abs"), np.array(1.0, np.float32), hint + "_den")
            return self.mul(v, self.emit("Reciprocal", [d], shape, hint + "_rcp"), hint)
        raise _refuse(self.node, f"activation {_CODE_NAMES[code] if 0 <= code < len(_CODE_NAMES) else code} "
                                 f"has no primitive form here")

    # ---- the expansion ----

    def input(self, i: int) -> str:
        return self.node.inputs[i] if i < len(self.node.inputs) else ""

    def const_input(self, i: int, what: str, required: bool = True):
        name = self.input(i)
        if not name:
            return None
        value = self.graph.const(name)
        if value is None and required:
            raise _refuse(self.node, f"{what} '{name}' must be a constant")
        return None if value is None else np.asarray(value, np.float32)

    def initial_states(self, i: int, what: str):
        """One value per direction, each [batch, hidden]: None (zero), an array, or a tensor name."""
        name = self.input(i)
        if not name:
            return [None] * self.dirs
        value = self.graph.const(name)
        axis = 1 if self.layout else 0
        if value is not None:
            parts = [np.take(np.asarray(value, np.float32), d, axis=axis) for d in range(self.dirs)]
            return [None if not np.any(p) else np.ascontiguousarray(p) for p in parts]
        parts = self.split(name, axis, [1] * self.dirs, f"{what}_dir")
        return [self.reshape(p, (self.batch, self.hidden), f"{what}_d{d}") for d, p in enumerate(parts)]

    def run(self) -> list[Node]:
        node, g = self.node, self.graph
        if self.input(4):
            raise _refuse(node, "sequence_lens shorter than the sequence (steps past a row's length)")
        x = self.input(0)
        xs = g.tensor(x).shape
        self.seq, self.batch, inp = (xs[1], xs[0], xs[2]) if self.layout else tuple(xs)
        H, G = self.hidden, self.gates
        W = self.const_input(1, "W")
        R = self.const_input(2, "R")
        B = self.const_input(3, "B")
        if B is None:
            B = np.zeros((self.dirs, 2 * G * H), np.float32)
        P = self.const_input(7, "P") if self.op == "LSTM" else None
        h0 = self.initial_states(5, "initial_h")
        c0 = self.initial_states(6, "initial_c") if self.op == "LSTM" else [None] * self.dirs

        # X as [seq * batch, input], time-major.
        if self.layout:
            x = self.emit("Transpose", [x], (self.seq, self.batch, inp), "x_seq_first", perm=[1, 0, 2])
        x2 = self.reshape(x, (self.seq * self.batch, inp), "x_rows")

        per_dir = []
        for d in range(self.dirs):
            per_dir.append(self.direction_steps(d, x2, W[d], R[d], B[d], None if P is None else P[d], h0[d], c0[d]))

        outs = list(node.outputs) + [""] * 3
        y, y_h, y_c = outs[0], outs[1], outs[2]
        if y:
            ordered = [per_dir[d][0][t] for t in range(self.seq) for d in range(self.dirs)]
            rows = self.concat(ordered, 0, "y_rows")
            self.finish(rows, (self.seq, self.dirs, self.batch, H), [2, 0, 1, 3], y, "y")
        for k, name in ((1, y_h), (2, y_c)):
            if name:
                last = self.concat([per_dir[d][k] for d in range(self.dirs)], 0, f"{'hc'[k - 1]}_rows")
                self.finish(last, (self.dirs, self.batch, H), [1, 0, 2], name, f"y_{'hc'[k - 1]}")
        return self.nodes

    def finish(self, rows: str, shape, perm, out: str, hint: str) -> None:
        """rows [.., hidden] -> the ONNX output `out` (seq-first shape; batch-first via Transpose)."""
        if not self.layout:
            self.reshape(rows, shape, hint, out=out)
            return
        v = self.reshape(rows, shape, hint + "_seq_first")
        self.emit("Transpose", [v], tuple(shape[p] for p in perm), hint, out=out, perm=perm)

    def direction_steps(self, d, x2, W, R, B, P, h, c):
        """Unrolls direction d: (list of H_t in time order, last H, last C)."""
        H, G, op = self.hidden, self.gates, self.op
        reverse = self.direction == "reverse" or d == 1
        wb, rb = B[:G * H], B[G * H:]
        rt = np.ascontiguousarray(R.T)  # [hidden, G*hidden]
        # Biases folded into the input projection: all of Rb except GRU's Rb_h (added inside r ⊙ (.)
        # with linear_before_reset, where it cannot move).
        fold = wb + rb
        if op == "GRU" and self.lbr:
            fold = np.concatenate([wb[:2 * H] + rb[:2 * H], wb[2 * H:]])
        tag = f"d{d}"
        xw = self.matmul(x2, np.ascontiguousarray(W.T), f"{tag}/xw")
        xw = self.add(xw, fold if np.any(fold) else None, f"{tag}/xw_b")
        steps = self.split(xw, 0, [self.batch] * self.seq, f"{tag}/xw_t", over_time=True)
        slot = (0 if d == 0 else len(self.codes) // 2)
        hs = [None] * self.seq
        order = range(self.seq - 1, -1, -1) if reverse else range(self.seq)
        for t in order:
            s = f"{tag}/t{t}"
            if op == "LSTM":
                h, c = self.lstm_step(steps[t], h, c, rt, P, slot, s)
            elif op == "GRU":
                h = self.gru_step(steps[t], h, R, rb, slot, s)
            else:
                pre = self.clip_(self.add(steps[t], self.matmul(h, rt, s + "/hr"), s + "/pre"), s + "/clip")
                h = self.activate(pre, slot, s + "/h")
            hs[t] = h
        return hs, h, c

    def lstm_step(self, xw_t, h, c, rt, P, slot, s):
        H = self.hidden
        gates = self.add(xw_t, self.matmul(h, rt, s + "/hr"), s + "/gates")
        if P is None:
            iof, g_c = self.split(gates, 1, [3 * H, H], s + "/g")
            i, o, f = self.split(self.activate(self.clip_(iof, s + "/iof_clip"), slot, s + "/iof"), 1, [H] * 3,
                                 s + "/iof_")
        else:
            g_i, g_o, g_f, g_c = self.split(gates, 1, [H] * 4, s + "/g")
            p_i, p_o, p_f = P[:H], P[H:2 * H], P[2 * H:]
            i = self.activate(self.clip_(self.add(g_i, self.mul(c, p_i, s + "/pi"), s + "/gi"), s + "/i_clip"),
                              slot, s + "/i")
            f = self.activate(self.clip_(self.add(g_f, self.mul(c, p_f, s + "/pf"), s + "/gf"), s + "/f_clip"),
                              slot, s + "/f")
        cc = self.activate(self.clip_(g_c, s + "/c_clip"), slot + 1, s + "/cc")
        c = self.add(self.mul(f, c, s + "/fc"), self.mul(i, cc, s + "/ic"), s + "/c")
        if P is not None:
            o = self.activate(self.clip_(self.add(g_o, self.mul(c, p_o, s + "/po"), s + "/go"), s + "/o_clip"),
                              slot, s + "/o")
        h = self.mul(o, self.activate(c, slot + 2, s + "/hc"), s + "/h")
        return h, c

    def gru_step(self, xw_t, h, R, rb, slot, s):
        H = self.hidden
        x_zr, x_h = self.split(xw_t, 1, [2 * H, H], s + "/x")
        r_zr = np.ascontiguousarray(R[:2 * H].T)
        r_h = np.ascontiguousarray(R[2 * H:].T)
        zr = self.activate(self.clip_(self.add(x_zr, self.matmul(h, r_zr, s + "/hr_zr"), s + "/zr_pre"),
                                      s + "/zr_clip"), slot, s + "/zr")
        z, r = self.split(zr, 1, [H, H], s + "/zr_")
        if self.lbr:
            hr = self.add(self.matmul(h, r_h, s + "/hr_h"), rb[2 * H:] if np.any(rb[2 * H:]) else None, s + "/hr_hb")
            pre = self.add(x_h, self.mul(r, hr, s + "/rhr"), s + "/h_pre")
        else:
            pre = self.add(x_h, self.matmul(self.mul(r, h, s + "/rh"), r_h, s + "/rh_r"), s + "/h_pre")
        hh = self.activate(self.clip_(pre, s + "/h_clip"), slot + 1, s + "/hh")
        if h is None:  # H = (1 - z) ⊙ h~
            return self.sub(hh, self.mul(z, hh, s + "/zh"), s + "/h")
        return self.add(hh, self.mul(z, self.sub(h, hh, s + "/h_diff"), s + "/zd"), s + "/h")
