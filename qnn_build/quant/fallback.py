"""`--float-fallback`: nodes the npu has no integer kernel for are kept in fp16.

After quantization, every node the integer backend cannot run (`refusal(node)`, handed in by
convert: the npu's backends/npu.py node_refusal, which looks at the node's attributes, constants and
encodings, not only its op) and that touches an integer-encoded activation is kept in fp16
(docs/quantization.md "Float fallback", docs/npu.md (N40)-(N42)):
- its float activations get the fp16 encoding; its float constants are stored as float16 (from
  their float values, not from the integers quantization made of them);
- an integer activation it reads goes through a converter-inserted `Dequantize` node (integer ->
  fp16, (1)); a graph input only fallback nodes read becomes fp16 itself;
- an output that an integer node (or a graph output that integer nodes also read) needs keeps its
  name and integer encoding, written by a converter-inserted `Quantize` node (fp16 -> integer, (2))
  from the node's new fp16 output; fallback consumers read the fp16 tensor directly.
"""

from typing import Callable

import numpy as np

from ..ir.graph import Graph, Node
from .encoding import fp16_encoding


def float_constants(graph: Graph) -> dict:
    """The float values of every float32 constant, taken before quantization replaces them."""
    return {name: t.const for name, t in graph.tensors.items() if t.is_const and t.dtype == np.float32}


def _int_activation(graph: Graph, name: str) -> bool:
    t = graph.tensors.get(name) if name else None
    return (t is not None and not t.is_const and t.dtype == np.float32 and t.encoding is not None
            and not t.encoding.is_float)


def fallback_nodes(graph: Graph, refusal: Callable[[Node], str | None]) -> list[tuple[Node, str]]:
    """Nodes the integer backend refuses that read or write an integer activation, with its reason."""
    found = []
    for n in graph.nodes:
        if any(_int_activation(graph, x) for x in n.inputs + n.outputs) and (why := refusal(n)) is not None:
            found.append((n, why))
    return found


def apply_float_fallback(graph: Graph, float_consts: dict, refusal: Callable[[Node], str | None]) -> list[dict]:
    """Keep the fallback nodes in fp16 and insert the boundary nodes. Returns [{"name", "op", "reason"}]
    of the nodes kept in fp16, in graph order."""
    refused = fallback_nodes(graph, refusal)
    if not refused:
        return []
    fallback = [n for n, _ in refused]
    fb = {id(n) for n in fallback}
    users = graph.consumers()
    half_of: dict[str, str] = {}   # integer activation -> its fp16 version
    const_of: dict[str, str] = {}  # float constant -> its float16 version
    out: list[Node] = []

    def fp16_activation(hint: str, shape) -> str:
        name = graph.add_activation(hint, np.float32, shape)
        graph.tensor(name).encoding = fp16_encoding()
        return name

    for node in graph.nodes:
        if id(node) not in fb:
            out.append(node)
            continue
        for k, name in enumerate(node.inputs):
            t = graph.tensors.get(name) if name else None
            if t is None:
                continue
            if t.is_const:
                if name in float_consts:
                    node.inputs[k] = _half_const(graph, name, float_consts[name], users, fb, const_of)
            elif _int_activation(graph, name):
                if name not in half_of:
                    if name in graph.inputs and all(id(u) in fb for u in users.get(name, [])):
                        t.encoding = fp16_encoding()  # the host rounds it to half on entry
                        half_of[name] = name
                    else:
                        half = fp16_activation(f"{name}/fp16", t.shape)
                        out.append(Node(f"{name}/dequantize", "Dequantize", [name], [half]))
                        half_of[name] = half
                node.inputs[k] = half_of[name]
        out.append(node)
        for k, name in enumerate(node.outputs):
            if not _int_activation(graph, name):
                continue
            t = graph.tensor(name)
            if all(id(u) in fb for u in users.get(name, [])):
                t.encoding = fp16_encoding()
                continue
            half = fp16_activation(f"{name}/fp16", t.shape)
            node.outputs[k] = half
            out.append(Node(f"{name}/quantize", "Quantize", [half], [name]))
            for u in users.get(name, []):
                if id(u) in fb:
                    u.inputs = [half if i == name else i for i in u.inputs]
            half_of[name] = half
    graph.nodes = out
    return [{"name": n.name, "op": n.op_type, "reason": why} for n, why in refused]


def _half_const(graph: Graph, name: str, value: np.ndarray, users, fb, const_of) -> str:
    """A float16 constant with `value`: the tensor itself when only fallback nodes read it."""
    if name in const_of:
        return const_of[name]
    half = np.ascontiguousarray(np.asarray(value, np.float32).astype(np.float16))
    if all(id(u) in fb for u in users.get(name, [])):
        t = graph.tensor(name)
        t.const, t.dtype, t.encoding = half, np.dtype(np.float16), None
        const_of[name] = name
    else:
        const_of[name] = graph.add_const(f"{name}/fp16", half)
    return const_of[name]


def describe(kept: list[dict]) -> str:
    """One line for the convert step's output."""
    if not kept:
        return "float fallback: every node runs in integers"
    reasons: dict[str, int] = {}
    for k in kept:
        reasons[k["reason"]] = reasons.get(k["reason"], 0) + 1
    summary = "; ".join(f"{why} x{n}" if n > 1 else why for why, n in sorted(reasons.items()))
    names = ", ".join(k["name"] for k in kept[:8]) + (f", ... ({len(kept)} in all)" if len(kept) > 8 else "")
    return f"float fallback: {len(kept)} node(s) kept in fp16: {summary} [{names}]"
