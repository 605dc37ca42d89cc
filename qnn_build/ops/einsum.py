"""Einsum, lowered to the runtime's Transpose, Reshape, ReduceSum and MatMul (float32), as
onnxruntime evaluates it: operands contracted pairwise from the left; before each product every
index that no later operand nor the output needs is summed out; the pair is then one batched
MatMul of [batch, kept-left, contracted] by [batch, contracted, kept-right].

Refused at convert time, naming the node: an index repeated within one operand (a diagonal or a
trace) and an ellipsis that covers different numbers of dims in different operands.
"""

import numpy as np

from ..ir.graph import Node
from .base import OpRule, require_dtype, unsupported


def _parse(node, equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Operand terms and the output term, each a string of one letter per dim (an ellipsis
    becomes upper-case letters, which ONNX equations leave free for us)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise unsupported(node, f"equation '{equation}' names {len(terms)} operands, the node has {len(ranks)}")
    ellipsis_dims = {rank - len(t.replace("...", "")) for t, rank in zip(terms, ranks) if "..." in t}
    if len(ellipsis_dims) > 1:
        raise unsupported(node, f"an ellipsis over different numbers of dims in '{equation}'")
    fill = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:ellipsis_dims.pop() if ellipsis_dims else 0]
    terms = [t.replace("...", fill) for t in terms]
    for t, rank in zip(terms, ranks):
        if len(t) != rank:
            raise unsupported(node, f"term '{t}' of '{equation}' does not match an operand of rank {rank}")
        if len(set(t)) != len(t):
            raise unsupported(node, f"an index repeated within one operand ('{t}': a diagonal)")
    if arrow:
        out = rhs.replace("...", fill)
    else:  # implicit output: the ellipsis, then every index used once, in alphabetical order
        once = sorted(c for c in set("".join(terms)) if "".join(terms).count(c) == 1 and c not in fill)
        out = fill + "".join(once)
    return terms, out


class _Lowering:
    """Emits runtime nodes into `nodes`; each value is (tensor name, its index letters)."""

    def __init__(self, node, graph):
        self.node, self.graph, self.nodes, self.sizes = node, graph, [], {}

    def _emit(self, op, inputs, shape, final=False, **params):
        out = self.node.outputs[0] if final else self.graph.add_activation(
            f"{self.node.outputs[0]}/{op.lower()}{len(self.nodes)}", np.float32, shape)
        name = self.node.name if final else f"{self.node.name}/{len(self.nodes)}"
        self.nodes.append(Node(name, op, inputs, [out], params))
        return out

    def shape(self, letters):
        return tuple(self.sizes[c] for c in letters)

    def sum_out(self, value, keep: set):
        name, letters = value
        axes = [i for i, c in enumerate(letters) if c not in keep]
        if not axes:
            return value
        rest = "".join(c for c in letters if c in keep)
        return self._emit("ReduceSum", [name], self.shape(rest), axes=axes), rest

    def arrange(self, value, letters, final=False):
        """The value with its dims in the order of `letters` (a Transpose unless already so)."""
        name, have = value
        if have == letters:
            return value
        return self._emit("Transpose", [name], self.shape(letters), final, perm=[have.index(c) for c in letters]), letters

    def reshape(self, name, shape, final=False):
        return self._emit("Reshape", [name], tuple(shape), final)

    def contract(self, left, right, needed: set):
        left, right = self.sum_out(left, needed | set(right[1])), self.sum_out(right, needed | set(left[1]))
        batch = [c for c in left[1] if c in right[1] and c in needed]
        summed = [c for c in left[1] if c in right[1] and c not in needed]
        lo = [c for c in left[1] if c not in right[1]]
        ro = [c for c in right[1] if c not in left[1]]
        b, m, k, n = (int(np.prod(self.shape(x), dtype=np.int64)) for x in (batch, lo, summed, ro))
        a_name, _ = self.arrange(left, "".join(batch + lo + summed))
        b_name, _ = self.arrange(right, "".join(batch + summed + ro))
        product = self._emit("MatMul", [self.reshape(a_name, (b, m, k)), self.reshape(b_name, (b, k, n))], (b, m, n))
        letters = "".join(batch + lo + ro)
        return self.reshape(product, self.shape(letters)), letters


def _einsum(node, graph):
    require_dtype(node, graph, node.inputs + node.outputs)
    ops = [graph.tensor(n).shape for n in node.inputs]
    terms, out = _parse(node, node.attrs["equation"], [len(s) for s in ops])
    low = _Lowering(node, graph)
    for term, shape in zip(terms, ops):
        for c, d in zip(term, shape):
            if low.sizes.setdefault(c, d) != d:
                raise unsupported(node, f"index '{c}' has sizes {low.sizes[c]} and {d} (broadcasting in einsum)")
    if set(out) - set(low.sizes):
        raise unsupported(node, f"output index not in any operand: '{out}'")
    values = list(zip(node.inputs, terms))
    acc = values[0]
    for k in range(1, len(values)):
        needed = set(out).union(*(t for _, t in values[k + 1:]))
        acc = low.contract(acc, values[k], needed)
    acc = low.sum_out(acc, set(out))
    if acc[1] == out and low.nodes and low.nodes[-1].outputs[0] == acc[0]:
        low.nodes[-1].outputs[0], low.nodes[-1].name = node.outputs[0], node.name  # it writes the output
    elif acc[1] == out:
        low.reshape(acc[0], low.shape(out), final=True)
    else:
        low.arrange(acc, out, final=True)
    return low.nodes


RULES = [OpRule("Einsum", _einsum)]
