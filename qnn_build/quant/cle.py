"""Cross-layer equalization (--cle): for Conv -> Relu -> Conv, move per-channel scale from the first
conv's output channels to the second conv's matching input channels so both quantize with less
loss. Relu(x / s) = Relu(x) / s for s > 0, so the float function is unchanged. Equation (11)."""

import numpy as np

from ..ir.graph import Graph, Node

HOMOGENEOUS = {"Relu"}  # activations that commute with positive scaling


def equalize(graph: Graph) -> int:
    """Equalize every Conv -> Relu -> Conv chain in place; returns how many pairs were scaled."""
    users = graph.consumers()
    producer = graph.producers()
    pairs = 0
    for act in graph.nodes:
        if act.op_type not in HOMOGENEOUS:
            continue
        first = producer.get(act.inputs[0])
        nexts = users.get(act.outputs[0], [])
        if first is None or first.op_type != "Conv" or len(nexts) != 1 or nexts[0].op_type != "Conv":
            continue
        second = nexts[0]
        if (len(users.get(first.outputs[0], [])) != 1 or act.outputs[0] in graph.outputs
                or first.outputs[0] in graph.outputs or second.inputs[0] != act.outputs[0]):
            continue
        if _scale_pair(graph, first, second):
            pairs += 1
    return pairs


def _scale_pair(graph: Graph, first: Node, second: Node) -> bool:
    w1, w2 = graph.const(first.inputs[1]), graph.const(second.inputs[1])
    if w1 is None or w2 is None:
        return False
    b1 = graph.const(first.inputs[2]) if len(first.inputs) > 2 and first.inputs[2] else None
    if len(first.inputs) > 2 and first.inputs[2] and b1 is None:
        return False
    channels = w1.shape[0]
    groups2 = int(second.attrs.get("group", 1))
    per_group_in = w2.shape[1]
    per_group_out = w2.shape[0] // groups2
    if per_group_in * groups2 != channels:
        return False
    r1 = np.abs(w1.reshape(channels, -1)).max(axis=1).astype(np.float64)
    # Range of input channel c in the second conv: its weights in its group's output channels.
    r2 = np.zeros(channels)
    for c in range(channels):
        g, local = divmod(c, per_group_in)
        r2[c] = np.abs(w2[g * per_group_out:(g + 1) * per_group_out, local]).max()
    s = np.ones(channels)
    ok = (r1 > 0) & (r2 > 0)
    s[ok] = np.sqrt(r1[ok] / r2[ok])                       # (11)
    shape1 = (-1,) + (1,) * (w1.ndim - 1)
    new_w1 = (w1 / s.reshape(shape1)).astype(np.float32)
    new_w2 = w2.astype(np.float64).copy()
    for c in range(channels):
        g, local = divmod(c, per_group_in)
        new_w2[g * per_group_out:(g + 1) * per_group_out, local] *= s[c]
    first.inputs[1] = graph.add_const(first.inputs[1] + "_cle", new_w1)
    second.inputs[1] = graph.add_const(second.inputs[1] + "_cle", new_w2.astype(np.float32))
    if b1 is not None:
        first.inputs[2] = graph.add_const(first.inputs[2] + "_cle", (b1 / s).astype(np.float32))
    return True
