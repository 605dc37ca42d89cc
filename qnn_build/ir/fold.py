"""Folding at the ONNX level, repeated to a fixed point: constants, shape subgraphs, and If nodes
whose condition became known once inputs were pinned (the If and Loop nodes left are rewritten by
control_flow.py, and folding resumes).

Shapes come from onnx's own shape inference; constant nodes are evaluated by onnx's reference
implementation (reference.py), so every op onnx knows can fold without a rule of ours.
"""

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from ..errors import ConvertError
from .control_flow import Check, check_shapes, if_branch, rewrite_control_flow
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


# Initializers larger than this are given to shape inference by type and shape only: their values
# never decide a shape (shape tensors, axes, Resize's scales are small), and serializing them for
# onnx's inference each round was most of a big model's conversion time.
_SHAPE_ONLY_ELEMENTS = 1024


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with every value's type and shape that onnx's inference (with data propagation)
    finds, in place; returned for convenience."""
    g = model.graph
    skeleton = onnx.ModelProto()
    skeleton.ir_version, skeleton.producer_name = model.ir_version, model.producer_name
    skeleton.opset_import.extend(model.opset_import)
    skeleton.functions.extend(model.functions)
    sg = skeleton.graph
    sg.name = g.name
    sg.node.extend(g.node)
    sg.input.extend(g.input)
    sg.output.extend(g.output)
    sg.value_info.extend(g.value_info)
    for init in g.initializer:
        if int(np.prod(init.dims)) > _SHAPE_ONLY_ELEMENTS:
            sg.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
        else:
            sg.initializer.append(init)
    try:
        inferred = shape_inference.infer_shapes(skeleton, check_type=False, strict_mode=False, data_prop=True).graph
    except Exception as e:  # onnx raises several types; all mean the same to the user
        raise ConvertError(f"shape inference failed: {_first_line(e)}") from None
    del g.value_info[:]
    g.value_info.extend(inferred.value_info)
    del g.output[:]
    g.output.extend(inferred.output)
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
    """Fold until nothing changes. The If and Loop nodes left are then rewritten as plain nodes
    (control_flow.py), and folding resumes."""
    checks: list[Check] = []
    for _ in range(max_rounds):
        model = infer_shapes(model)
        if not _fold_once(model) and not rewrite_control_flow(model, checks):
            break
    check_shapes(checks, static_shapes(model))
    return model


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
    nodes, outs = if_branch(node, condition)
    prefix = f"{node.name or node.output[0]}/{'then' if condition else 'else'}/"
    return nodes + [helper.make_node("Identity", [o], [out], name=f"{prefix}{out}/out")
                    for out, o in zip(node.output, outs)]


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
