"""The exact GELU as exported node by node, 0.5 * x * (1 + erf(x / sqrt(2))), becomes one Gelu node.

Why: quantized, each of the five nodes' outputs would get its own 8-bit encoding (x / sqrt(2), the
Erf, the + 1, the products), and every one of them rounds; as one Gelu only its output is encoded
(on the npu one lookup table of the input code). Float results agree to rounding. onnxruntime's
transformer optimizer and the QNN converter make the same fusion. Two export shapes are matched:

    torch.nn.GELU:   Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
    Hugging Face:    Mul(Mul(x, 0.5), Add(Erf(Div(x, sqrt 2)), 1))

with Div by sqrt(2) or Mul by 1/sqrt(2), and either operand order of Add and Mul. Every tensor in
between must have that one reader and not be a graph output.
"""

import math

from .graph import Graph, Node
from .patterns import near, only_reader, other_constant, other_input, private, replace_chains, scalar


def fuse_gelu(graph: Graph) -> None:
    users = graph.consumers()
    producer = graph.producers()
    replaced: dict[int, Node] = {}  # id(last node of a pattern) -> its Gelu
    dropped: set[int] = set()
    for erf in graph.nodes:
        if erf.op_type != "Erf":
            continue
        match = _match(graph, erf, users, producer)
        if match is None:
            continue
        x, nodes = match
        last = nodes[-1]
        replaced[id(last)] = Node(last.name + "_gelu", "Gelu", [x], [last.outputs[0]], {"approximate": "none"})
        dropped.update(id(n) for n in nodes[:-1])
    replace_chains(graph, replaced, dropped)


def _match(graph, erf, users, producer):
    """(x, the pattern's nodes with the last one last) when `erf` is the Erf of an exact GELU."""
    scale = producer.get(erf.inputs[0])
    x = _scaled_input(graph, scale)
    if x is None or not private(graph, scale, users) or not private(graph, erf, users):
        return None
    add = only_reader(erf, users)
    if add is None or add.op_type != "Add" or other_constant(graph, add, erf.outputs[0]) != 1.0:
        return None
    if not private(graph, add, users):
        return None
    product = only_reader(add, users)
    if product is None or product.op_type != "Mul":
        return None
    partner = other_input(product, add.outputs[0])
    if partner == x:  # torch: (x * (1 + erf)) * 0.5
        if not private(graph, product, users):
            return None
        half = only_reader(product, users)
        if half is None or half.op_type != "Mul" or not near(other_constant(graph, half, product.outputs[0]), 0.5):
            return None
        return x, [scale, erf, add, product, half]
    halved = producer.get(partner)  # Hugging Face: (x * 0.5) * (1 + erf)
    if (halved is None or halved.op_type != "Mul" or not private(graph, halved, users) or x not in halved.inputs
            or not near(other_constant(graph, halved, x), 0.5)):
        return None
    return x, [halved, scale, erf, add, product]


def _scaled_input(graph, node):
    """x when `node` is x / sqrt(2) or x * (1 / sqrt(2)) with x an activation."""
    if node is None or node.op_type not in ("Div", "Mul") or len(node.inputs) != 2:
        return None
    want = math.sqrt(2.0) if node.op_type == "Div" else 1.0 / math.sqrt(2.0)
    orders = [(0, 1)] if node.op_type == "Div" else [(0, 1), (1, 0)]
    for a, c in orders:
        x = node.inputs[a]
        if graph.const(x) is None and near(scalar(graph, node.inputs[c]), want):
            return x
    return None




