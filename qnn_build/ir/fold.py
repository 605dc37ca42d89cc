"""Folding at the ONNX level, repeated to a fixed point: constants, shape subgraphs, and If nodes
whose condition became known once inputs were pinned (an If whose condition stays data is computed
both ways and selected with Where).

Shapes come from onnx's own shape inference; constant nodes are evaluated by onnx's reference
implementation (reference.py), so every op onnx knows can fold without a rule of ours.
"""

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from ..errors import ConvertError
from .reference import evaluator

# Ops whose output is not a function of their inputs, and ops that must stay in the graph.
_NEVER_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
               "Bernoulli", "If", "Loop", "Scan"}
# A folded constant larger than this stays a computation. Generous: some exporters make real
# weights with ConstantOfShape, and those must become constants.
_MAX_FOLDED_BYTES = 1 << 30


# Ops onnx's shape inference leaves untyped whose first output has their first input's type and
# shape: function ops without an inference rule, and the ops ir/contrib_ops.py emits below the opset
# that defines them (Gelu: 20, LayerNormalization: 17).
_SHAPE_OF_INPUT0 = {"GroupNormalization", "Gelu", "LayerNormalization"}


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        model = shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:  # onnx raises several types; all mean the same to the user
        raise ConvertError(f"shape inference failed: {_first_line(e)}") from None
    g = model.graph
    known = {vi.name: vi for vi in list(g.input) + list(g.value_info) + list(g.output)
             if vi.type.tensor_type.elem_type}
    for node in g.node:
        out = node.output[0] if node.output else ""
        if node.op_type in _SHAPE_OF_INPUT0 and node.input[0] in known and out and out not in known:
            vi = onnx.ValueInfoProto()
            vi.CopyFrom(known[node.input[0]])
            vi.name = out
            for o in g.output:
                if o.name == out:
                    o.CopyFrom(vi)
            g.value_info.append(vi)
            known[out] = vi
    return model


def static_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...] | None]:
    """Every value's shape as ints, or None where some dim is unknown."""
    shapes: dict[str, tuple[int, ...] | None] = {}
    g = model.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            shapes.setdefault(vi.name, None)
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        shapes[vi.name] = None if any(d is None for d in dims) else tuple(dims)
    for init in g.initializer:
        shapes[init.name] = tuple(init.dims)
    return shapes


def fold_to_fixed_point(model: onnx.ModelProto, max_rounds: int = 50) -> onnx.ModelProto:
    """Fold until nothing changes. An If whose condition stays data is then computed both ways and
    selected with Where (each output's branches must agree on its shape), and folding resumes."""
    selects: list[tuple[str, str, str, str]] = []
    for _ in range(max_rounds):
        model = infer_shapes(model)
        if not _fold_once(model) and not _select_data_ifs(model, selects):
            break
    _check_selects(model, selects)
    return model


def _select_data_ifs(model: onnx.ModelProto, selects: list) -> bool:
    """Every If left (its condition is not a constant) becomes both branches and a Where per output."""
    g = model.graph
    if not any(n.op_type == "If" for n in g.node):
        return False
    nodes = []
    for node in g.node:
        if node.op_type != "If":
            nodes.append(node)
            continue
        (then_nodes, then_outs), (else_nodes, else_outs) = _branch(node, True), _branch(node, False)
        nodes += then_nodes + else_nodes
        name = node.name or node.output[0]
        for out, a, b in zip(node.output, then_outs, else_outs):
            nodes.append(helper.make_node("Where", [node.input[0], a, b], [out], name=f"{name}/select/{out}"))
            selects.append((name, out, a, b))
    del g.node[:]
    g.node.extend(nodes)
    return True


def _check_selects(model: onnx.ModelProto, selects: list) -> None:
    shapes = static_shapes(model)
    for name, out, a, b in selects:
        if shapes.get(a) is not None and shapes.get(b) is not None and shapes[a] != shapes[b]:
            raise ConvertError(f"node '{name}' (If): its condition depends on the data, and its branches give "
                               f"'{out}' different shapes ({list(shapes[a])} and {list(shapes[b])}); pin the inputs "
                               f"the condition comes from with --input-value so that it folds")


def _fold_once(model: onnx.ModelProto) -> bool:
    g = model.graph
    opset = _default_opset(model)
    consts = {init.name: numpy_helper.to_array(init) for init in g.initializer}
    shapes = static_shapes(model)
    changed = False
    new_nodes: list[onnx.NodeProto] = []
    new_inits: list[onnx.TensorProto] = []
    for node in g.node:
        value = _try_fold(node, consts, shapes, opset, model)
        if isinstance(value, list) and value and isinstance(value[0], onnx.NodeProto):
            new_nodes.extend(value)  # an If replaced by its taken branch
            changed = True
        elif value is not None:
            for name, arr in zip(node.output, value):
                if name:
                    consts[name] = arr
                    new_inits.append(numpy_helper.from_array(np.asarray(arr), name))
            changed = True
        else:
            new_nodes.append(node)
    if changed:
        del g.node[:]
        g.node.extend(new_nodes)
        g.initializer.extend(new_inits)
        # Values that became initializers must not keep a stale value_info.
        folded = {i.name for i in new_inits}
        keep = [vi for vi in g.value_info if vi.name not in folded]
        del g.value_info[:]
        g.value_info.extend(keep)
    return changed


def _try_fold(node, consts, shapes, opset, model):
    if node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "Shape" and shapes.get(node.input[0]) is not None:
        shape = np.array(shapes[node.input[0]], dtype=np.int64)
        start = _attr(node, "start", 0)
        end = _attr(node, "end", None)
        return [shape[start:end]]
    if node.op_type == "Size" and shapes.get(node.input[0]) is not None:
        return [np.array(int(np.prod(shapes[node.input[0]])), dtype=np.int64)]
    if node.op_type == "If" and node.input[0] in consts:
        return _inline_if(node, bool(np.asarray(consts[node.input[0]]).reshape(-1)[0]))
    if node.op_type in _NEVER_FOLD or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                          for a in node.attribute):
        return None
    inputs = [i for i in node.input if i]
    if not all(i in consts for i in inputs):
        return None
    if node.op_type != "Constant" and not inputs:
        return None
    try:
        sub = helper.make_model(
            helper.make_graph([node], "fold", [helper.make_tensor_value_info(i, onnx.TensorProto.UNDEFINED, None)
                                               for i in inputs],
                              [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None)
                               for o in node.output if o]),
            opset_imports=[helper.make_opsetid("", opset)], ir_version=model.ir_version)
        outs = evaluator(sub).run(None, {i: consts[i] for i in inputs})
    except Exception:
        return None  # leave it to the converter, which names what it cannot do
    if sum(np.asarray(o).nbytes for o in outs) > _MAX_FOLDED_BYTES:
        return None
    it = iter(outs)
    return [np.asarray(next(it)) if o else None for o in node.output]


def _inline_if(node: onnx.NodeProto, condition: bool) -> list[onnx.NodeProto]:
    nodes, outs = _branch(node, condition)
    prefix = f"{node.name or node.output[0]}/{'then' if condition else 'else'}/"
    return nodes + [helper.make_node("Identity", [o], [out], name=f"{prefix}{out}/out")
                    for out, o in zip(node.output, outs)]


def _branch(node: onnx.NodeProto, condition: bool) -> tuple[list[onnx.NodeProto], list[str]]:
    """One branch of an If as nodes of the outer graph, and the names of its outputs there."""
    branch = next(a.g for a in node.attribute if a.name == ("then_branch" if condition else "else_branch"))
    prefix = f"{node.name or node.output[0]}/{'then' if condition else 'else'}/"
    # Names defined inside the branch get a prefix; names from the outer scope are kept.
    local = {init.name for init in branch.initializer}
    local.update(o for n in branch.node for o in n.output if o)
    rename = {name: prefix + name for name in local}
    nodes = []
    for init in branch.initializer:
        const = helper.make_node("Constant", [], [rename[init.name]], value=init, name=prefix + init.name)
        nodes.append(const)
    for n in branch.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(n)
        copy.name = prefix + (n.name or n.output[0])
        copy.input[:] = [rename.get(i, i) for i in n.input]
        copy.output[:] = [rename.get(o, o) for o in n.output]
        _rename_in_subgraphs(copy, rename)
        nodes.append(copy)
    return nodes, [rename.get(o.name, o.name) for o in branch.output]


def _rename_in_subgraphs(node: onnx.NodeProto, rename: dict[str, str]) -> None:
    """Nested graphs (of an If inside the branch) may read the branch's names from the outer scope."""
    for a in node.attribute:
        graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
        for g in graphs:
            for n in g.node:
                n.input[:] = [rename.get(i, i) for i in n.input]
                _rename_in_subgraphs(n, rename)
            for out in g.output:
                out.name = rename.get(out.name, out.name)


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _default_opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 1


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[-1] if text else type(e).__name__
