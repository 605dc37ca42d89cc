"""Layer normalisation exported node by node becomes one LayerNormalization node.

Exporters below opset 17 (torch, paddle2onnx) write nn.LayerNorm as

    d = x - ReduceMean(x);  y = d / Sqrt(ReduceMean(Pow(d, 2)) + eps) [* gamma] [+ beta]

over trailing axes, and tf2onnx writes Keras' with the moments folded into a scale and a shift:

    m = mean(x);  r = Reciprocal(Sqrt(mean((x - m)²) + eps)) * gamma;  y = x * r + (beta - m * r)

its means ReduceMean or GlobalAveragePool (a rank-3 tensor's last axis). Why fuse: quantized, each
of the eight or more outputs between x and y would get its own encoding and round (the variance and
its square root at 8 bits lose most of the normalisation's precision), and each runs as its own pass
over the tensor; as one LayerNormalization only y is encoded and the npu computes it in integers from
x in one kernel (docs/npu.md (N29)). onnxruntime's optimizer and the QNN converter make the same
fusion. Pow(d, 2) may also be Mul(d, d). Every tensor in between must be read only inside the pattern
(d by the square and the Div; m and r by their two uses) and not be a graph output, and gamma and
beta must be constants that broadcast to the normalised shape.
"""

import numpy as np

from .graph import Graph, Node
from .patterns import near, only_reader, other_input, private, replace_chains, scalar


def fuse_layernorm(graph: Graph) -> None:
    users = graph.consumers()
    producer = graph.producers()
    replaced: dict[int, Node] = {}  # id(last node of a pattern) -> its LayerNormalization
    dropped: set[int] = set()
    for node in graph.nodes:
        if node.op_type == "Div" and len(node.inputs) == 2:
            match = _match(graph, node, users, producer)
        elif node.op_type == "Add" and len(node.inputs) == 2:
            match = _match_moments(graph, node, users, producer)
        else:
            match = None
        if match is None:
            continue
        x, axis, eps, nodes, gamma, beta = match
        last = nodes[-1]
        inputs = [x, graph.add_const(last.name + "_ln_scale", gamma)]
        if beta is not None:
            inputs.append(graph.add_const(last.name + "_ln_bias", beta))
        replaced[id(last)] = Node(last.name + "_layernorm", "LayerNormalization", inputs, [last.outputs[0]],
                                  {"axis": axis, "epsilon": eps})
        dropped.update(id(n) for n in nodes[:-1])
    replace_chains(graph, replaced, dropped)


def _match(graph, div, users, producer):
    """(x, axis, epsilon, the pattern's nodes with the last one last, gamma, beta or None) when `div`
    is the division of a decomposed layer normalisation."""
    sub, sqrt = producer.get(div.inputs[0]), producer.get(div.inputs[1])
    if sub is None or sqrt is None or sub.op_type != "Sub" or sqrt.op_type != "Sqrt" or len(sub.inputs) != 2:
        return None
    x, mean = sub.inputs[0], producer.get(sub.inputs[1])
    rank = len(graph.tensor(x).shape) if x in graph.tensors else 0
    axes = _reduced_axes(graph, mean, x, rank)
    if axes is None or axes != list(range(axes[0], rank)) or graph.const(x) is not None:
        return None
    add_eps = producer.get(sqrt.inputs[0])
    if add_eps is None or add_eps.op_type != "Add":
        return None
    var = next((producer.get(i) for i in add_eps.inputs if graph.const(i) is None), None)
    eps = scalar(graph, other_input(add_eps, var.outputs[0])) if var is not None else None
    if var is None or eps is None or eps < 0:
        return None
    square = producer.get(var.inputs[0])
    squared = square.outputs[0] if square else None
    if _reduced_axes(graph, var, squared, rank) != axes or not _squares(graph, square, div.inputs[0]):
        return None
    d = div.inputs[0]
    if {id(n) for n in users.get(d, [])} != {id(square), id(div)} or d in graph.outputs \
            or d in graph.source_encodings:
        return None
    nodes = [mean, sub, square, var, add_eps, sqrt, div]
    if not all(private(graph, n, users) for n in (mean, square, var, add_eps, sqrt)):
        return None
    norm_shape = tuple(graph.tensor(x).shape[axes[0]:])
    gamma, beta = np.ones(norm_shape, np.float32), None
    mul = only_reader(div, users) if private(graph, div, users) else None
    scale = _trailing_const(graph, mul, div.outputs[0], "Mul", norm_shape)
    if scale is not None:
        gamma = scale
        nodes.append(mul)
        add = only_reader(mul, users) if private(graph, mul, users) else None
        shift = _trailing_const(graph, add, mul.outputs[0], "Add", norm_shape)
        if shift is not None:
            beta = shift
            nodes.append(add)
    return x, axes[0], float(eps), nodes, gamma, beta


def _match_moments(graph, add, users, producer):
    """The same for tf2onnx's Keras form, the moments folded into a scale and a shift:
    m = mean(x), r = gamma / Sqrt(mean((x - m)²) + eps), y = x · r + (beta − m · r)."""
    pair = [producer.get(i) for i in add.inputs]
    if any(p is None for p in pair):
        return None
    for scaled, shift in (pair, pair[::-1]):
        if scaled.op_type != "Mul" or shift.op_type != "Sub" or not private(graph, shift, users):
            continue
        beta = graph.const(shift.inputs[0])
        mean_r = producer.get(shift.inputs[1])
        if beta is None or mean_r is None or mean_r.op_type != "Mul" or not private(graph, mean_r, users):
            continue
        r = next((producer.get(i) for i in scaled.inputs if i in mean_r.inputs and producer.get(i)), None)
        if r is None or r.op_type != "Mul" or not private(graph, scaled, users):
            continue
        x, mean = other_input(scaled, r.outputs[0]), producer.get(other_input(mean_r, r.outputs[0]) or "")
        recip = next((producer.get(i) for i in r.inputs if graph.const(i) is None), None)
        gamma = graph.const(other_input(r, recip.outputs[0]) or "") if recip is not None else None
        if x is None or mean is None or gamma is None or recip.op_type != "Reciprocal":
            continue
        sqrt = producer.get(recip.inputs[0])
        add_eps = producer.get(sqrt.inputs[0]) if sqrt is not None and sqrt.op_type == "Sqrt" else None
        if add_eps is None or add_eps.op_type != "Add":
            continue
        var = next((producer.get(i) for i in add_eps.inputs if graph.const(i) is None), None)
        eps = scalar(graph, other_input(add_eps, var.outputs[0])) if var is not None else None
        square = producer.get(var.inputs[0]) if var is not None and var.inputs else None
        sub = producer.get(square.inputs[0]) if square is not None and square.inputs else None
        if eps is None or eps < 0 or sub is None or sub.op_type != "Sub" or sub.inputs != [x, mean.outputs[0]]:
            continue
        rank = len(graph.tensor(x).shape) if x in graph.tensors else 0
        axes = _reduced_axes(graph, mean, x, rank)
        if axes is None or axes != list(range(axes[0], rank)) or _reduced_axes(graph, var, square.outputs[0],
                                                                               rank) != axes:
            continue
        d = sub.outputs[0]
        if not _squares(graph, square, d) or not all(private(graph, n, users)
                                                     for n in (square, var, add_eps, sqrt, recip)):
            continue
        if {id(n) for n in users.get(d, [])} != {id(square)} or d in graph.outputs or d in graph.source_encodings:
            continue
        readers = {id(n) for n in users.get(mean.outputs[0], [])} | {id(n) for n in users.get(r.outputs[0], [])}
        if readers != {id(sub), id(mean_r), id(scaled)} or any(
                t in graph.outputs or t in graph.source_encodings for t in (mean.outputs[0], r.outputs[0])):
            continue
        norm_shape = tuple(graph.tensor(x).shape[axes[0]:])
        try:
            gamma = np.ascontiguousarray(np.broadcast_to(gamma.astype(np.float32), norm_shape))
            beta = np.ascontiguousarray(np.broadcast_to(beta.astype(np.float32), norm_shape))
        except ValueError:
            continue
        nodes = [mean, sub, square, var, add_eps, sqrt, recip, r, mean_r, shift, scaled, add]
        return x, axes[0], float(eps), nodes, gamma, beta
    return None


def _reduced_axes(graph, node, x, rank):
    """The sorted non-negative axes when `node` is ReduceMean(x) keeping dims (or GlobalAveragePool:
    every axis from 2), else None."""
    if node is None or not node.inputs or node.inputs[0] != x or not x:
        return None
    if node.op_type == "GlobalAveragePool" and rank >= 3:
        return list(range(2, rank))
    if node.op_type != "ReduceMean":
        return None
    if not node.attrs.get("keepdims", 1) or node.attrs.get("noop_with_empty_axes", 0):
        return None
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        axes = graph.const(node.inputs[1])
    if axes is None or rank == 0:
        return None
    return sorted(int(a) % rank for a in np.asarray(axes).reshape(-1))


def _squares(graph, node, d) -> bool:
    """`node` is Pow(d, 2) or Mul(d, d)."""
    if node is None:
        return False
    if node.op_type == "Pow":
        return len(node.inputs) == 2 and node.inputs[0] == d and near(scalar(graph, node.inputs[1]), 2.0)
    return node.op_type == "Mul" and node.inputs == [d, d]


def _trailing_const(graph, node, operand, op, norm_shape):
    """The constant other operand of `node` (an `op` reading `operand`), broadcast to the normalised
    shape, when it broadcasts there without adding dims; else None."""
    if node is None or node.op_type != op:
        return None
    other = other_input(node, operand)
    value = graph.const(other) if other else None
    if value is None or value.dtype.kind != "f" or value.ndim > len(norm_shape):
        return None
    try:
        return np.ascontiguousarray(np.broadcast_to(value.astype(np.float32), norm_shape))
    except ValueError:
        return None
