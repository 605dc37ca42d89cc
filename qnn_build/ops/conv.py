"""Conv and ConvTranspose: every attribute made explicit for the runtime.

Runtime params (both ops): kernel_shape, strides, dilations (one int per spatial dim), pads (begins
then ends), group. auto_pad and ConvTranspose's output_shape/output_padding are resolved here into
explicit pads, and the output shape the graph holds is checked against them.
"""

from ..errors import ConvertError
from .base import OpRule, rank_of, require_dtype, same, unsupported

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def int_list(node, name, default, count):
    """An int-list attribute (or its default), which must hold exactly `count` values."""
    value = [int(v) for v in node.attrs.get(name, default)]
    if len(value) != count:
        raise unsupported(node, f"attribute '{name}' has {len(value)} values; expected {count}")
    return value


def _present(inputs):
    """The node's inputs without trailing absent ones (the runtime sees those as nullptr)."""
    inputs = list(inputs)
    while inputs and not inputs[-1]:
        inputs.pop()
    return inputs


def _common(node, graph):
    """(spatial rank, kernel_shape, strides, dilations, group, auto_pad) after the shared checks."""
    x, w = node.inputs[0], node.inputs[1]
    require_dtype(node, graph, _present(node.inputs) + node.outputs[:1])
    rank = rank_of(graph, x)
    if rank not in (3, 4, 5):
        raise unsupported(node, f"input rank {rank}; only 1D, 2D and 3D convolutions (rank 3-5) are supported")
    if rank_of(graph, w) != rank:
        raise ConvertError(f"{node.describe()}: weight rank {rank_of(graph, w)} != input rank {rank}")
    r = rank - 2
    kernel = int_list(node, "kernel_shape", graph.tensor(w).shape[2:], r)
    if kernel != list(graph.tensor(w).shape[2:]):
        raise ConvertError(f"{node.describe()}: kernel_shape {kernel} != weight shape {graph.tensor(w).shape}")
    strides = int_list(node, "strides", [1] * r, r)
    dilations = int_list(node, "dilations", [1] * r, r)
    if min(strides + dilations + kernel) < 1:
        raise unsupported(node, "strides, dilations and kernel_shape must be >= 1")
    group = int(node.attrs.get("group", 1))
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad not in AUTO_PADS:
        raise unsupported(node, f"auto_pad '{auto_pad}'")
    return r, kernel, strides, dilations, group, auto_pad


def same_pads(auto_pad, in_size, out_size, stride, extent):
    """(begin, end) padding of SAME_UPPER/SAME_LOWER: the total split, extra on the end for UPPER."""
    total = max(0, (out_size - 1) * stride + extent - in_size)
    small = total // 2
    return (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)


def _conv(node, graph):
    r, kernel, strides, dilations, group, auto_pad = _common(node, graph)
    x_shape = graph.tensor(node.inputs[0]).shape
    w_shape = graph.tensor(node.inputs[1]).shape
    y_shape = graph.tensor(node.outputs[0]).shape
    if group < 1 or x_shape[1] % group or w_shape[0] % group or w_shape[1] * group != x_shape[1]:
        raise ConvertError(f"{node.describe()}: channels {x_shape[1]} / weight {w_shape} do not fit group {group}")
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if auto_pad == "NOTSET":
        pads = int_list(node, "pads", [0] * 2 * r, 2 * r)
    elif auto_pad == "VALID":
        pads = [0] * 2 * r
    else:
        pairs = [same_pads(auto_pad, x_shape[2 + i], -(-x_shape[2 + i] // strides[i]), strides[i], extents[i])
                 for i in range(r)]
        pads = [p[0] for p in pairs] + [p[1] for p in pairs]
    if min(pads) < 0:
        raise unsupported(node, f"negative pads {pads}")
    expected = [(x_shape[2 + i] + pads[i] + pads[r + i] - extents[i]) // strides[i] + 1 for i in range(r)]
    if list(y_shape[2:]) != expected or y_shape[1] != w_shape[0]:
        raise ConvertError(f"{node.describe()}: output shape {y_shape} does not match the attributes "
                           f"(expected spatial dims {expected})")
    return [same(node, inputs=_present(node.inputs), outputs=node.outputs[:1], kernel_shape=kernel,
                 strides=strides, dilations=dilations, pads=pads, group=group)]


def _conv_transpose(node, graph):
    r, kernel, strides, dilations, group, auto_pad = _common(node, graph)
    x_shape = graph.tensor(node.inputs[0]).shape
    w_shape = graph.tensor(node.inputs[1]).shape
    y_shape = graph.tensor(node.outputs[0]).shape
    if group < 1 or x_shape[1] % group or w_shape[0] != x_shape[1] or y_shape[1] != w_shape[1] * group:
        raise ConvertError(f"{node.describe()}: channels {x_shape[1]} / weight {w_shape} do not fit group {group}")
    out_pad = int_list(node, "output_padding", [0] * r, r)
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    # The size before any padding is cut off: what every output_shape/auto_pad rule starts from.
    full = [strides[i] * (x_shape[2 + i] - 1) + out_pad[i] + extents[i] for i in range(r)]
    target = None
    if "output_shape" in node.attrs:
        target = [int(v) for v in node.attrs["output_shape"]]
        target = target[-r:] if len(target) in (r, r + 2) else None
        if target is None:
            raise unsupported(node, f"output_shape {node.attrs['output_shape']} has the wrong length")
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = [x_shape[2 + i] * strides[i] for i in range(r)]
    if target is not None:
        # ONNX: the total padding is split evenly, the odd one at the end for SAME_UPPER, else at the begin.
        totals = [max(0, full[i] - target[i]) for i in range(r)]
        if auto_pad == "SAME_UPPER":
            pads = [t // 2 for t in totals] + [t - t // 2 for t in totals]
        else:
            pads = [t - t // 2 for t in totals] + [t // 2 for t in totals]
        expected = target
    else:
        pads = [0] * 2 * r if auto_pad == "VALID" else int_list(node, "pads", [0] * 2 * r, 2 * r)
        expected = [full[i] - pads[i] - pads[r + i] for i in range(r)]
    if min(pads) < 0:
        raise unsupported(node, f"negative pads {pads}")
    if list(y_shape[2:]) != expected:
        raise ConvertError(f"{node.describe()}: output shape {y_shape} does not match the attributes "
                           f"(expected spatial dims {expected})")
    return [same(node, inputs=_present(node.inputs), outputs=node.outputs[:1], kernel_shape=kernel,
                 strides=strides, dilations=dilations, pads=pads, group=group)]


RULES = [
    OpRule("Conv", _conv),
    OpRule("ConvTranspose", _conv_transpose),
]
