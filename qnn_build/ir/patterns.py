"""The vocabulary of the fusion and folding passes (gelu_fusion, layernorm_fusion, scale_fold,
bias_reshape): reading a matched chain of nodes and replacing it by one node."""

from .graph import Graph, Node


def scalar(graph: Graph, name):
    """The float value of a one-element float constant, else None."""
    value = graph.const(name)
    if value is None or value.size != 1 or value.dtype.kind != "f":
        return None
    return float(value.reshape(()))


def near(value, want) -> bool:
    return value is not None and abs(value - want) <= 1e-6 * abs(want)


def other_input(node: Node, name):
    """The input of a two-input node that is not `name`, else None."""
    others = [i for i in node.inputs if i != name]
    return others[0] if len(others) == 1 and len(node.inputs) == 2 else None


def other_constant(graph: Graph, node: Node, name):
    other = other_input(node, name)
    return None if other is None else scalar(graph, other)


def only_reader(node: Node, users):
    readers = users.get(node.outputs[0], [])
    return readers[0] if len(readers) == 1 else None


def private(graph: Graph, node: Node, users) -> bool:
    """The node's one output has one reader, is not a graph output, and the source model does not
    round it (a QDQ model's encoding)."""
    return (len([o for o in node.outputs if o]) == 1 and node.outputs[0] not in graph.outputs
            and node.outputs[0] not in graph.source_encodings and len(users.get(node.outputs[0], [])) == 1)


def replace_chains(graph: Graph, replaced: dict[int, Node], dropped: set[int]) -> None:
    """Each node whose id is a key of `replaced` becomes its value (a chain's last node becomes the
    fused node, which writes the chain's output); the nodes in `dropped` go; then unread tensors."""
    if not replaced:
        return
    graph.nodes = [replaced.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    graph.prune()
