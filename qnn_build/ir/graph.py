"""The converter's graph: named tensors with static shapes, and nodes in execution order.

The same structure holds the imported ONNX graph (ONNX op types and attributes) and, after lowering,
the runtime graph (runtime op types and their parameters), so passes and codegen share one shape.
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Tensor:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    const: np.ndarray | None = None  # constant tensors carry their value
    encoding: Any = None  # quant.encoding.Encoding once quantized

    @property
    def is_const(self) -> bool:
        return self.const is not None


@dataclass
class Node:
    name: str
    op_type: str
    inputs: list[str]  # "" for an absent optional input
    outputs: list[str]  # "" for an absent optional output
    attrs: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"node '{self.name}' ({self.op_type})"


@dataclass
class Graph:
    tensors: dict[str, Tensor]
    nodes: list[Node]
    inputs: list[str]
    outputs: list[str]
    opset: int
    source: str = ""
    # Activations written by unrolled LSTM/GRU/RNN -> their role across time steps (ir/rnn_lowering.py)
    recurrent: dict[str, str] = field(default_factory=dict)
    # Tensor -> the encoding the source model's Q/DQ nodes give it (a QDQ model, ir/qdq_import.py).
    # Passes keep a tensor that has one: it is a rounding the model does.
    source_encodings: dict[str, Any] = field(default_factory=dict)

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def const(self, name: str) -> np.ndarray | None:
        """The constant value of an input name, or None (absent or not constant)."""
        t = self.tensors.get(name) if name else None
        return None if t is None else t.const

    def add_const(self, hint: str, value: np.ndarray) -> str:
        value = np.ascontiguousarray(value)
        name = self.unique_name(hint)
        self.tensors[name] = Tensor(name, value.dtype, tuple(value.shape), value)
        return name

    def add_activation(self, hint: str, dtype, shape) -> str:
        name = self.unique_name(hint)
        self.tensors[name] = Tensor(name, np.dtype(dtype), tuple(int(d) for d in shape))
        return name

    def unique_name(self, hint: str) -> str:
        name, k = hint, 0
        while name in self.tensors:
            k += 1
            name = f"{hint}_{k}"
        return name

    def consumers(self) -> dict[str, list[Node]]:
        users: dict[str, list[Node]] = {}
        for node in self.nodes:
            for name in node.inputs:
                if name:
                    users.setdefault(name, []).append(node)
        return users

    def producers(self) -> dict[str, Node]:
        return {out: node for node in self.nodes for out in node.outputs if out}

    def rename_uses(self, old: str, new: str) -> None:
        """Point every reader of `old` (nodes and graph outputs) at `new`."""
        for node in self.nodes:
            node.inputs = [new if n == old else n for n in node.inputs]
        self.outputs = [new if n == old else n for n in self.outputs]

    def prune(self) -> None:
        """Drop nodes whose outputs nobody reads, and tensors nothing refers to."""
        needed = set(self.outputs)
        kept = []
        for node in reversed(self.nodes):
            if any(o in needed for o in node.outputs if o):
                kept.append(node)
                needed.update(i for i in node.inputs if i)
        self.nodes = kept[::-1]
        live = needed | set(self.inputs)
        for node in self.nodes:
            live.update(o for o in node.outputs if o)
        self.tensors = {k: v for k, v in self.tensors.items() if k in live}
