"""Graph passes on the imported graph, before lowering: each a small function, run in order."""

import numpy as np

from .bias_reshape import move_bias_before_reshape
from .gelu_fusion import fuse_gelu
from .layernorm_fusion import fuse_layernorm
from .mask_select import select_masked_scores
from .scale_fold import fold_column_scale
from .graph import Graph, Node


def drop_identities(graph: Graph) -> None:
    """Identity and inference-mode Dropout pass their input through: readers use the input instead.
    Where the output is a graph output fed straight by a graph input, the node stays (as a copy); so
    does one whose output the source model encodes otherwise than its input (a requantization)."""
    kept = []
    encs = graph.source_encodings
    for node in graph.nodes:
        if node.op_type in ("Identity", "Dropout") and node.inputs and node.inputs[0]:
            src, dst = node.inputs[0], node.outputs[0]
            if (dst in graph.outputs and (src in graph.inputs or src in graph.outputs or graph.const(src) is not None)) \
                    or (dst in encs and src in encs and encs[src].key() != encs[dst].key()):
                kept.append(Node(node.name, "Identity", [src], [dst]))
                continue
            if dst in graph.outputs:
                # Let the producer write the graph output's name directly.
                _rename_output(graph, src, dst)
                if src in encs:
                    encs.setdefault(dst, encs.pop(src))
            else:
                graph.rename_uses(dst, src)
                if dst in encs:  # the input's encoding, or it had none
                    encs[src] = encs.pop(dst)
            continue
        kept.append(node)
    graph.nodes = kept
    graph.prune()


def _rename_output(graph: Graph, old: str, new: str) -> None:
    for node in graph.nodes:
        node.outputs = [new if o == old else o for o in node.outputs]
        node.inputs = [new if i == old else i for i in node.inputs]
    graph.outputs = [new if o == old else o for o in graph.outputs]
    graph.tensors[new].shape = graph.tensors[old].shape


def fold_batchnorm(graph: Graph) -> None:
    """BatchNormalization right after a Conv, ConvTranspose or Gemm (whose output nothing else reads)
    becomes that layer's weights and bias: W' = W * s, b' = (b - mean) * s + beta,
    s = gamma / sqrt(var + eps), s along the weight's output-channel axis."""
    users = graph.consumers()
    producer = graph.producers()
    removed = set()
    for bn in graph.nodes:
        if bn.op_type != "BatchNormalization" or len([o for o in bn.outputs if o]) != 1:
            continue
        params = [graph.const(n) for n in bn.inputs[1:5]]
        layer = producer.get(bn.inputs[0])
        if any(p is None for p in params) or layer is None or len(users.get(bn.inputs[0], [])) != 1:
            continue
        if bn.inputs[0] in graph.outputs or bn.inputs[0] in graph.source_encodings or layer.op_type not in ("Conv", "ConvTranspose", "Gemm"):
            continue
        weight = graph.const(layer.inputs[1])
        bias = graph.const(layer.inputs[2]) if len(layer.inputs) > 2 and layer.inputs[2] else None
        if weight is None or (len(layer.inputs) > 2 and layer.inputs[2] and bias is None):
            continue
        gamma, beta, mean, var = (p.astype(np.float64) for p in params)
        scale = gamma / np.sqrt(var + float(bn.attrs.get("epsilon", 1e-5)))
        if layer.op_type == "Conv":
            new_w = weight * scale.reshape(-1, *([1] * (weight.ndim - 1)))
        elif layer.op_type == "ConvTranspose":  # W [C_in, C_out / group, k...]: channel g · C_out/group + m
            group = int(layer.attrs.get("group", 1))
            grouped = weight.reshape(group, weight.shape[0] // group, *weight.shape[1:])
            new_w = (grouped * scale.reshape(group, 1, -1, *([1] * (weight.ndim - 2)))).reshape(weight.shape)
        elif layer.attrs.get("transB", 0):
            new_w = weight * scale.reshape(-1, 1)
        else:
            new_w = weight * scale.reshape(1, -1)
        if layer.op_type == "Gemm" and (layer.attrs.get("alpha", 1.0) != 1.0 or layer.attrs.get("beta", 1.0) != 1.0):
            continue
        old_b = np.zeros_like(scale) if bias is None else np.broadcast_to(bias.astype(np.float64), scale.shape)
        new_b = (old_b - mean) * scale + beta
        w_name = graph.add_const(layer.inputs[1] + "_bnfold", new_w.astype(np.float32))
        b_name = graph.add_const(layer.name + "_bias_bnfold", new_b.astype(np.float32))
        layer.inputs = [layer.inputs[0], w_name, b_name]
        layer.outputs = [bn.outputs[0]]
        removed.add(id(bn))
    graph.nodes = [n for n in graph.nodes if id(n) not in removed]
    graph.prune()


PASSES = [drop_identities, fold_batchnorm, fuse_gelu, fuse_layernorm, fold_column_scale, move_bias_before_reshape,
          select_masked_scores]


def run_passes(graph: Graph) -> Graph:
    for p in PASSES:
        p(graph)
    return graph
