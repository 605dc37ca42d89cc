"""act_range auto's structural rules for values that are ranked, or carried side by side with values
of another scale (docs/quantization.md (21e)): a detector's head, where boxes in pixels and scores
in 0-1 share one Concat, and TopK / ReduceMax / ArgMax (in the graph or after it) pick the peaks.

- A head that ranks in the graph (TopK, ReduceMax, ArgMax: an end-to-end detector's) and gathers the
  picked rows: what it ranks and what it gathers, computed from the last weighted layers' outputs by
  cheap elementwise ops, and on to the outputs, take 16 bits: a score near the app's threshold and a
  box in pixels are the head's result itself, and at 8 bits they move by a step (onnxruntime leaves
  such a head in float).

- A Concat whose output spans MIXED_SCALE times the range of one of its inputs would leave that input
  fewer than 4 codes at 8 bits: it, and what carries its values on, takes 16 bits.
- What is ranked, and the narrow inputs of such a Concat (a raw head's scores, ranked after the
  graph), and what they are computed from through ops that keep the order of the peaks, take their
  minmax ranges: a clipping range saves codes for the many and flattens the few largest values, the
  very ones a ranking picks; the output's overall error, which (16) scores, barely sees them.
"""

import numpy as np

from ..ops.kinds import VALUE_KEEPERS

# A Concat's output range over its narrowest input's at which that input keeps under 4 of the 255
# 8-bit steps (255 / 64). Measured (4 calibration samples of bench/real_data.py): a detector's
# output that concatenates pixels and scores 1,000 to 4,200 (YOLOv8n, YOLO26n), every feature and
# head Concat of the zoo and the real models 15 or less (YOLOX's raw output).
MIXED_SCALE = 64.0
MIXED_BITS = 16

RANKING_OPS = frozenset({"TopK", "ReduceMax", "ReduceMin", "ArgMax", "ArgMin"})
# Output values that are input values, or selections of them, carried on unchanged (forward).
_CARRIERS = frozenset({"ReduceMax", "ReduceMin", "Concat"})
# Ops whose output's peaks are their inputs' peaks, moved or scaled (backward from a ranking):
# monotone functions, and products and sums (a score = objectness x class score).
_PEAK_KEEPERS = frozenset({"Concat", "Sigmoid", "Tanh", "Relu", "LeakyRelu", "Clip", "HardSigmoid", "Exp",
                           "Softplus", "Mul", "Div", "Add", "Sub"})


def mixed_scale_concats(graph, stats) -> dict[str, list[str]]:
    """The outputs of the Concats whose (calibrated) range is at least MIXED_SCALE times an input's,
    each with those narrow inputs."""
    found = {}
    for node in graph.nodes:
        out = node.outputs[0]
        if node.op_type != "Concat" or out not in stats:
            continue
        widths = {i: stats[i].max - stats[i].min for i in node.inputs if i in stats}
        wide = stats[out].max - stats[out].min
        narrow = [i for i, w in widths.items() if 0 < w and MIXED_SCALE * w <= wide]
        if len(widths) > 1 and narrow:
            found[out] = narrow
    return found


def carried_on(graph, starts) -> list[str]:
    """`starts` and the tensors that carry their values on: value keepers of them, their maxima and
    minima, Concats that take them (up to the graph's outputs)."""
    consumers = graph.consumers()
    found, todo = set(), list(starts)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        for node in consumers.get(name, []):
            if node.op_type in _CARRIERS or (node.op_type in VALUE_KEEPERS and node.inputs[0] == name):
                todo += [o for o in node.outputs if o and _is_float(graph, o)]
    return [n for n in graph.tensors if n in found]


def ranked_tensors(graph, also=()) -> list[str]:
    """What a ranking op reads, and the tensors `also` (the narrow inputs of mixed-scale Concats: a
    raw head's scores, ranked after the graph), back through value keepers and _PEAK_KEEPERS to the
    tensors that compute them."""
    def back(node):
        if node.op_type in VALUE_KEEPERS:
            return [node.inputs[0]]
        return [i for i in node.inputs if i] if node.op_type in _PEAK_KEEPERS | RANKING_OPS else []
    starts = [n.inputs[0] for n in graph.nodes if n.op_type in RANKING_OPS] + list(also)
    found = _walk_back(graph, starts, back)
    return [n for n in graph.tensors if n in found]


def _walk_back(graph, starts, back) -> set[str]:
    """The float activations `starts` and those back(node) names, from each one's producer on."""
    producer = graph.producers()
    found, todo = set(), list(starts)
    while todo:
        name = todo.pop()
        if name in found or not _is_float(graph, name) or graph.tensor(name).is_const:
            continue
        found.add(name)
        if name in producer:
            todo += back(producer[name])
    return found


def _is_float(graph, name) -> bool:
    return graph.tensor(name).dtype == np.float32


# Index outputs of a ranking, and the ops that move indices on to a gather.
_INDEX_SOURCES = frozenset({"TopK", "ArgMax", "ArgMin"})
_INDEX_MOVERS = frozenset({"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Expand", "Tile", "Identity", "Cast"})
_GATHERS = frozenset({"Gather", "GatherElements", "GatherND"})
# The cheap elementwise ops between a head's last weighted layers and its ranking.
_HEAD_OPS = VALUE_KEEPERS | _PEAK_KEEPERS | {"Split", "Where", "ReduceMax", "ReduceMin", "Neg", "Abs"}


def head_tensors(graph) -> list[str]:
    """What a ranking op in the graph reads, and the data a gather picks by a ranking's indices,
    back through _HEAD_OPS to the tensors the last weighted layers (or the inputs) give; then what
    rankings and gathers of them give, on through value keepers, Where and Concat."""
    producer, consumers = graph.producers(), graph.consumers()

    def indexed_by_ranking(name):
        node = producer.get(name)
        while node is not None and node.op_type in _INDEX_MOVERS:
            node = producer.get(node.inputs[0])
        return node is not None and node.op_type in _INDEX_SOURCES

    starts = [n.inputs[0] for n in graph.nodes if n.op_type in RANKING_OPS or
              (n.op_type in _GATHERS and indexed_by_ranking(n.inputs[1]))]
    found = _walk_back(graph, starts, lambda node: [i for i in node.inputs if i] if node.op_type in _HEAD_OPS else [])
    forward = [o for n in graph.nodes if n.op_type in RANKING_OPS | _GATHERS and n.inputs[0] in found
               for o in n.outputs if o]
    while forward:
        name = forward.pop()
        if name in found or not _is_float(graph, name):
            continue
        found.add(name)
        for node in consumers.get(name, []):
            if node.op_type in VALUE_KEEPERS | _CARRIERS | {"Where"}:
                forward += [o for o in node.outputs if o]
    return [n for n in graph.tensors if n in found]
