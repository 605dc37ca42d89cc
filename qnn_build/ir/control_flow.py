"""If and Loop nodes that folding could not resolve, rewritten into plain nodes of the outer graph
so that the model has one static graph (fold.py calls this once folding has converged).

- An If whose condition is data: both branches are inlined and each output selected with Where.
- A Loop whose iterations can be counted at convert time (its trip count is a constant, or its
  condition comes only from constants and counters, as exporters write `for i in range(n)`) is
  unrolled that many times; its scan outputs are the iterations' values stacked.
- A Loop whose condition is data but whose trip count is a constant is unrolled that many times,
  each iteration's loop-carried state kept only while the condition has held (Where on a running
  flag: the state stops changing once the loop would have stopped). It may not have scan outputs:
  their length would depend on the data.
Anything else is refused naming the node and why. Every check that needs the shapes folding finds
afterwards is returned as a Check and made by check_shapes.
"""

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import ConvertError
from .reference import evaluator

# An unrolled Loop may add at most this many nodes: beyond it, conversion and compilation would take
# longer than a user waits (a 500-step decoder of 150 nodes is 75,000).
MAX_UNROLLED_NODES = 200_000


@dataclass
class Check:
    """Two values that must have one shape, and the one-line error if they do not."""
    a: str
    b: str
    message: str  # formatted with {a} and {b}: the two shapes


def check_shapes(checks: list[Check], shapes: dict) -> None:
    for c in checks:
        sa, sb = shapes.get(c.a), shapes.get(c.b)
        if sa is not None and sb is not None and sa != sb:
            raise ConvertError(c.message.format(a=list(sa), b=list(sb)))


def inline(graph: onnx.GraphProto, prefix: str, bind: dict[str, str]) -> tuple[list[onnx.NodeProto], list[str]]:
    """`graph`'s nodes as nodes of the outer graph, and the names of its outputs there. Its inputs
    are read from the outer names `bind` gives; names defined inside get `prefix`; names of the
    outer scope are kept."""
    rename = dict(bind)
    rename.update({init.name: prefix + init.name for init in graph.initializer})
    rename.update({o: prefix + o for n in graph.node for o in n.output if o})
    nodes = [helper.make_node("Constant", [], [rename[init.name]], value=init, name=prefix + init.name)
             for init in graph.initializer]
    for n in graph.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(n)
        copy.name = prefix + (n.name or n.output[0])
        copy.input[:] = [rename.get(i, i) for i in n.input]
        copy.output[:] = [rename.get(o, o) for o in n.output]
        _rename_in_subgraphs(copy, rename)
        nodes.append(copy)
    return nodes, [rename.get(o.name, o.name) for o in graph.output]


def _rename_in_subgraphs(node: onnx.NodeProto, rename: dict[str, str]) -> None:
    """Nested graphs (an If inside a branch) may read the inlined graph's names from the outer scope."""
    for a in node.attribute:
        graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
        for g in graphs:
            for n in g.node:
                n.input[:] = [rename.get(i, i) for i in n.input]
                _rename_in_subgraphs(n, rename)
            for out in g.output:
                out.name = rename.get(out.name, out.name)


def if_branch(node: onnx.NodeProto, condition: bool) -> tuple[list[onnx.NodeProto], list[str]]:
    """One branch of an If as nodes of the outer graph, and the names of its outputs there."""
    branch = next(a.g for a in node.attribute if a.name == ("then_branch" if condition else "else_branch"))
    return inline(branch, f"{_name(node)}/{'then' if condition else 'else'}/", {})


def rewrite_control_flow(model: onnx.ModelProto, checks: list[Check]) -> bool:
    """Every If and Loop left in the main graph rewritten as plain nodes; False if there were none."""
    g = model.graph
    if not any(n.op_type in ("If", "Loop") for n in g.node):
        return False
    consts = {init.name: numpy_helper.to_array(init) for init in g.initializer}
    nodes = []
    for node in g.node:
        if node.op_type == "If":
            nodes += _select_both_branches(node, checks)
        elif node.op_type == "Loop":
            nodes += _unroll(node, consts, model, checks)
        else:
            nodes.append(node)
    del g.node[:]
    g.node.extend(nodes)
    return True


def _select_both_branches(node, checks):
    (then_nodes, then_outs), (else_nodes, else_outs) = if_branch(node, True), if_branch(node, False)
    nodes = then_nodes + else_nodes
    for out, a, b in zip(node.output, then_outs, else_outs):
        nodes.append(helper.make_node("Where", [node.input[0], a, b], [out], name=f"{_name(node)}/select/{out}"))
        checks.append(Check(a, b, f"node '{_name(node)}' (If): its condition depends on the data, and its branches "
                                  f"give '{out}' different shapes ({{a}} and {{b}}); pin the inputs the condition "
                                  f"comes from with --input-value so that it folds"))
    return nodes


def _unroll(node, consts, model, checks) -> list[onnx.NodeProto]:
    name = _name(node)
    body = next(a.g for a in node.attribute if a.name == "body")
    n_carried = len(node.input) - 2
    n_scans = len(body.output) - 1 - n_carried
    trip = _input(node, 0)
    max_trips = int(np.asarray(consts[trip]).reshape(-1)[0]) if trip in consts else None
    if trip and max_trips is None:
        raise ConvertError(f"node '{name}' (Loop): its trip count '{trip}' depends on the data; pin the inputs "
                           f"it comes from with --input-value so that it folds")
    count = _count_iterations(node, body, consts, model, max_trips)
    body, hoisted, bind = _hoist_constants(body, f"{name}/const/")
    size = max(len(body.node), 1)
    if count is not None:
        _check_budget(name, count, size, "runs")
        return hoisted + _unroll_counted(node, body, bind, count, n_carried, n_scans)
    if max_trips is None:
        raise ConvertError(f"node '{name}' (Loop): its condition depends on the data and it has no trip count, so "
                           f"its number of iterations is unknown; pin the inputs the condition comes from with "
                           f"--input-value so that it folds")
    if n_scans:
        raise ConvertError(f"node '{name}' (Loop): its condition depends on the data, so its scan output "
                           f"'{node.output[n_carried]}' would have a length that depends on the data; pin the inputs "
                           f"the condition comes from with --input-value so that it folds")
    _check_budget(name, max_trips, size, "may run")
    return hoisted + _unroll_masked(node, body, bind, max_trips, n_carried, checks)


def _check_budget(name, trips, size, verb):
    if trips * size > MAX_UNROLLED_NODES:
        raise ConvertError(f"node '{name}' (Loop): it {verb} {trips} iterations of {size} nodes, more than the "
                           f"{MAX_UNROLLED_NODES} nodes a model may unroll into; cut the graph before it with "
                           f"--out-node and run the loop on the host")


def _unroll_counted(node, body, bind, count, n_carried, n_scans):
    name = _name(node)
    carried = [node.input[2 + j] for j in range(n_carried)]
    scans: list[list[str]] = [[] for _ in range(n_scans)]
    nodes = []
    true = _constant(nodes, f"{name}/true", np.array(True))
    axis0 = _constant(nodes, f"{name}/axis0", np.array([0], np.int64))
    for k in range(count):
        prefix = f"{name}/{k}/"
        step = _constant(nodes, f"{prefix}iteration", np.array(k, np.int64))
        body_nodes, outs = inline(body, prefix, {**bind, **_body_inputs(body, step, true, carried)})
        nodes += body_nodes
        carried = outs[1:1 + n_carried]
        for s, out in enumerate(outs[1 + n_carried:]):
            stacked = f"{prefix}scan/{s}"
            nodes.append(helper.make_node("Unsqueeze", [out, axis0], [stacked], name=stacked))
            scans[s].append(stacked)
    for out, value in zip(node.output, carried):
        nodes.append(helper.make_node("Identity", [value], [out], name=f"{name}/out/{out}"))
    for s, out in enumerate(node.output[n_carried:]):
        if not scans[s]:
            raise ConvertError(f"node '{name}' (Loop): it runs no iteration, so its scan output '{out}' is empty")
        nodes.append(helper.make_node("Concat", scans[s], [out], axis=0, name=f"{name}/out/{out}"))
    return nodes


def _unroll_masked(node, body, bind, trips, n_carried, checks):
    """`trips` iterations, each one's state kept only while the loop's condition has held."""
    name = _name(node)
    carried = [node.input[2 + j] for j in range(n_carried)]
    nodes = []
    scalar = _constant(nodes, f"{name}/scalar", np.zeros(0, np.int64))
    running = _input(node, 1) or _constant(nodes, f"{name}/true", np.array(True))
    running = _as_scalar(nodes, running, scalar, f"{name}/running")
    for k in range(trips):
        prefix = f"{name}/{k}/"
        step = _constant(nodes, f"{prefix}iteration", np.array(k, np.int64))
        body_nodes, outs = inline(body, prefix, {**bind, **_body_inputs(body, step, running, carried)})
        nodes += body_nodes
        kept = []
        for j, (old, new) in enumerate(zip(carried, outs[1:1 + n_carried])):
            kept.append(f"{prefix}kept/{j}")
            nodes.append(helper.make_node("Where", [running, new, old], [kept[-1]], name=kept[-1]))
            if k == 0:
                checks.append(Check(old, new, f"node '{name}' (Loop): its condition depends on the data, and its "
                                              f"loop-carried '{body.input[2 + j].name}' changes shape between "
                                              f"iterations ({{a}} to {{b}}), so it cannot be unrolled with a mask"))
        carried = kept
        cond = _as_scalar(nodes, outs[0], scalar, f"{prefix}condition")
        nodes.append(helper.make_node("And", [running, cond], [f"{prefix}running"], name=f"{prefix}running"))
        running = f"{prefix}running"
    for out, value in zip(node.output, carried):
        nodes.append(helper.make_node("Identity", [value], [out], name=f"{name}/out/{out}"))
    return nodes


def _count_iterations(node, body, consts, model, max_trips) -> int | None:
    """How many times the Loop runs, if its condition comes only from constants, the iteration number
    and loop-carried values that start constant and are computed from those (counters); else None.
    The part of the body the condition needs is evaluated iteration by iteration."""
    cond = _input(node, 1)
    if cond and cond not in consts:
        return None
    producer = {o: n for n in body.node for o in n.output}
    body_inputs = [i.name for i in body.input]
    carried_in = {name: j for j, name in enumerate(body_inputs[2:])}
    local = {init.name for init in body.initializer}
    needed_nodes: dict[int, onnx.NodeProto] = {}
    needed_carried: set[int] = set()
    outer: set[str] = set()
    todo, seen = [body.output[0].name], set()
    while todo:
        value = todo.pop()
        if value in seen or not value:
            continue
        seen.add(value)
        if value in producer:
            n = producer[value]
            if n.op_type in ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                             "Bernoulli") or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                                 for a in n.attribute):
                return None
            needed_nodes[id(n)] = n
            todo.extend(n.input)
        elif value in carried_in:
            j = carried_in[value]
            if node.input[2 + j] not in consts:
                return None
            needed_carried.add(j)
            todo.append(body.output[1 + j].name)
        elif value in body_inputs[:2] or value in local:
            continue
        elif value in consts:
            outer.add(value)
        else:
            return None  # an outer value that is data
    carried = sorted(needed_carried)
    order = [n for n in body.node if id(n) in needed_nodes]
    undefined = lambda v: helper.make_tensor_value_info(v, onnx.TensorProto.UNDEFINED, None)  # noqa: E731
    inputs = body_inputs[:2] + [body_inputs[2 + j] for j in carried]
    outputs = [body.output[0].name] + [body.output[1 + j].name for j in carried]
    inits = list(body.initializer) + [numpy_helper.from_array(np.asarray(consts[v]), v) for v in sorted(outer)]
    slice_ = helper.make_model(helper.make_graph(order, "loop_condition", [undefined(v) for v in inputs],
                                                 [undefined(v) for v in outputs], inits),
                               opset_imports=list(model.opset_import), ir_version=model.ir_version)
    try:
        run = evaluator(slice_).run
    except Exception:
        return None
    running = bool(np.asarray(consts[cond]).reshape(-1)[0]) if cond else True
    state = [np.asarray(consts[node.input[2 + j]]) for j in carried]
    limit = max_trips if max_trips is not None else MAX_UNROLLED_NODES + 1
    count = 0
    while running and count < limit:
        try:
            outs = run(None, dict(zip(inputs, [np.array(count, np.int64), np.array(running)] + state)))
        except Exception:
            return None
        running, state = bool(np.asarray(outs[0]).reshape(-1)[0]), [np.asarray(o) for o in outs[1:]]
        count += 1
    return count


def _hoist_constants(body, prefix):
    """The body without its initializers and Constant nodes (the same in every iteration), those as
    nodes to place once before the unrolled iterations, and the names the body reads them by."""
    hoisted, bind = [], {}
    for init in body.initializer:
        bind[init.name] = prefix + init.name
        hoisted.append(helper.make_node("Constant", [], [bind[init.name]], value=init, name=bind[init.name]))
    rest = []
    for n in body.node:
        if n.op_type == "Constant" and not n.input:
            bind[n.output[0]] = prefix + n.output[0]
            copy = onnx.NodeProto()
            copy.CopyFrom(n)
            copy.name, copy.output[0] = bind[n.output[0]], bind[n.output[0]]
            hoisted.append(copy)
        else:
            rest.append(n)
    trimmed = onnx.GraphProto()
    trimmed.CopyFrom(body)
    del trimmed.initializer[:]
    del trimmed.node[:]
    trimmed.node.extend(rest)
    return trimmed, hoisted, bind


def _body_inputs(body, iteration, condition, carried):
    names = [i.name for i in body.input]
    return dict(zip(names, [iteration, condition] + list(carried)))


def _constant(nodes, name, value):
    nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value), name=name))
    return name


def _as_scalar(nodes, value, scalar_shape, name):
    """A condition of shape [] or [1] as a scalar, so that Where keeps the state's own shape."""
    nodes.append(helper.make_node("Reshape", [value, scalar_shape], [name], name=name))
    return name


def _input(node, k) -> str:
    return node.input[k] if len(node.input) > k else ""


def _name(node) -> str:
    return node.name or node.output[0]
