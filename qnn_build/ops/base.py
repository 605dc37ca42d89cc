"""What an op rule is, and the small helpers rules share.

A rule lowers one ONNX node into runtime nodes: runtime op types with explicit parameters (every
default resolved, every constant input turned into a parameter), so kernels never re-derive ONNX
semantics. Anything a rule cannot honour is refused here, at convert time, naming the node.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ConvertError
from ..ir.graph import Graph, Node

LowerFn = Callable[[Node, Graph], list[Node]]


@dataclass(frozen=True)
class OpRule:
    op_type: str
    lower: LowerFn


def unsupported(node: Node, why: str) -> ConvertError:
    return ConvertError(f"{node.describe()}: unsupported: {why}")


def require_dtype(node: Node, graph: Graph, names, allowed=(np.float32,)) -> None:
    """Every named tensor must have one of the `allowed` dtypes."""
    allowed = tuple(np.dtype(a) for a in allowed)
    for name in names:
        if name and graph.tensor(name).dtype not in allowed:
            kinds = "/".join(str(a) for a in allowed)
            raise unsupported(node, f"tensor '{name}' has dtype {graph.tensor(name).dtype}; only {kinds} is supported")


def require_const(node: Node, graph: Graph, index: int, what: str) -> np.ndarray:
    """The value of an input that must be known at convert time."""
    name = node.inputs[index] if index < len(node.inputs) else ""
    value = graph.const(name)
    if value is None:
        raise unsupported(node, f"{what} (input {index}) must be a constant")
    return value


def optional_const(graph: Graph, node: Node, index: int):
    """The constant value of an optional input, or None when the input is absent."""
    if index >= len(node.inputs) or not node.inputs[index]:
        return None
    value = graph.const(node.inputs[index])
    if value is None:
        raise unsupported(node, f"input {index} must be a constant")
    return value


def rank_of(graph: Graph, name: str) -> int:
    return len(graph.tensor(name).shape)


def norm_axis(node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ConvertError(f"{node.describe()}: axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def same(node: Node, op_type: str | None = None, inputs=None, outputs=None, **params) -> Node:
    """A runtime node with the ONNX node's name and io (unless given) and explicit `params`."""
    return Node(node.name, op_type or node.op_type, list(node.inputs if inputs is None else inputs),
                list(node.outputs if outputs is None else outputs), params)


def passthrough(dtypes=(np.float32,)) -> LowerFn:
    """A rule for ops whose runtime node is the ONNX node with no parameters."""
    def lower(node: Node, graph: Graph) -> list[Node]:
        require_dtype(node, graph, node.inputs + node.outputs, dtypes)
        return [same(node)]
    return lower
