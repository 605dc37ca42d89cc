"""ONNX -> Graph: load (external data too), pin input dims and values, choose outputs, fold, and
check that every remaining tensor has a static shape."""

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import ConvertError, missing_file
from .contrib_ops import expand_contrib_ops
from .fold import fold_to_fixed_point, static_shapes
from .graph import Graph, Node, Tensor

# Opsets 7 up to what the installed onnx defines; an op whose newer version changed in a way a rule
# does not know is refused by that rule.
MIN_OPSET, MAX_OPSET = 7, onnx.defs.onnx_opset_version()


def load_onnx(path) -> onnx.ModelProto:
    path = Path(path)
    if not path.is_file():
        raise ConvertError(str(missing_file(path, "model")))
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:
        raise ConvertError(f"{path}: not an ONNX model (the file does not parse as an ONNX protobuf)") from None
    if not model.graph.node and not model.graph.output:
        raise ConvertError(f"{path}: not an ONNX model (no graph in the file)")
    try:
        onnx.load_external_data_for_model(model, str(path.parent))
    except Exception as e:
        raise ConvertError(f"{path}: cannot load external data: {e}") from None
    try:
        onnx.checker.check_model(model, full_check=False)
    except Exception as e:
        # An op deprecated at a later opset (GroupNormalization-18) is still valid at the model's.
        if "is deprecated in domain_version" not in str(e):
            raise ConvertError(f"{path}: invalid ONNX model: {str(e).strip().splitlines()[0]}") from None
    return model


def import_onnx(model: onnx.ModelProto, input_dims: dict[str, list[int]] | None = None,
                input_values: dict[str, object] | None = None, out_nodes: list[str] | None = None,
                source: str = "") -> Graph:
    """The folded, fully static graph of `model`."""
    model = _copy(model)
    opset = _check_opset(model, source)
    _drop_initializer_inputs(model)
    _pin_dims(model, input_dims or {}, source)
    _pin_values(model, input_values or {}, source)
    _forget_dynamic_output_shapes(model)
    expand_contrib_ops(model, opset)
    if out_nodes:
        _set_outputs(model, out_nodes, source)
    model = fold_to_fixed_point(model)
    return _to_graph(model, opset, source)


def _copy(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    return m


def _check_opset(model, source) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            if not MIN_OPSET <= o.version <= MAX_OPSET:
                raise ConvertError(f"{source}: opset {o.version} is not supported (supported: "
                                   f"{MIN_OPSET}..{MAX_OPSET})")
            return o.version
    raise ConvertError(f"{source}: the model imports no default-domain opset")


def _drop_initializer_inputs(model):
    """Old exporters list weights among the graph inputs; they are constants, not inputs. (IR 4
    made that optional; shape inference of an older IR ignores initializers that are not inputs.)"""
    model.ir_version = max(model.ir_version, 4)
    inits = {i.name for i in model.graph.initializer}
    keep = [i for i in model.graph.input if i.name not in inits]
    del model.graph.input[:]
    model.graph.input.extend(keep)


def _graph_input(model, name, source, flag):
    for vi in model.graph.input:
        if vi.name == name:
            return vi
    names = ", ".join(vi.name for vi in model.graph.input)
    raise ConvertError(f"{source}: {flag} names '{name}', which is not an input of the model (inputs: {names})")


def _pin_dims(model, input_dims, source):
    for name, dims in input_dims.items():
        vi = _graph_input(model, name, source, "--input-dim")
        shape = vi.type.tensor_type.shape
        if len(shape.dim) != len(dims) and len(shape.dim) > 0:
            raise ConvertError(f"{source}: --input-dim {name} has rank {len(dims)} but the model's input "
                               f"'{name}' has rank {len(shape.dim)}")
        if any(int(d) <= 0 for d in dims):
            raise ConvertError(f"{source}: --input-dim {name}: dims must be positive, got {list(dims)}")
        del shape.dim[:]
        for d in dims:
            shape.dim.add().dim_value = int(d)


def _pin_values(model, input_values, source):
    for name, value in input_values.items():
        vi = _graph_input(model, name, source, "--input-value")
        tt = vi.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        arr = np.asarray(value, dtype=dtype)
        dims = [d.dim_value for d in tt.shape.dim] if tt.HasField("shape") else list(arr.shape)
        if arr.ndim == len(dims) and all(d in (0, a) for d, a in zip(dims, arr.shape)):
            pass  # the value's own shape fits (dims of 0 are unknown)
        elif all(d > 0 for d in dims) and int(np.prod(dims)) == arr.size:
            arr = arr.reshape(dims)
        elif arr.size != 1 or any(d not in (0, 1) for d in dims):
            raise ConvertError(f"{source}: --input-value {name}: {arr.size} value(s) given for an input of "
                               f"shape {dims}")
        else:
            arr = arr.reshape([1] * len(dims))
        model.graph.initializer.append(numpy_helper.from_array(arr, name))
        keep = [i for i in model.graph.input if i.name != name]
        del model.graph.input[:]
        model.graph.input.extend(keep)


def _forget_dynamic_output_shapes(model):
    """A graph output declared with symbolic dims gets its shape from the graph instead. Exporters
    write what the user guessed (ddddocr's recogniser declares [1, seqlen] for an output of
    [seqlen, 1, classes]); onnxruntime only warns, and shape inference keeps a declared shape that
    conflicts with the one it finds, which left the output without a static shape."""
    for vi in model.graph.output:
        tt = vi.type.tensor_type
        if tt.HasField("shape") and not all(d.HasField("dim_value") for d in tt.shape.dim):
            tt.ClearField("shape")


def _set_outputs(model, out_nodes, source):
    produced = {o for n in model.graph.node for o in n.output}
    produced.update(i.name for i in model.graph.input)
    del model.graph.output[:]
    for name in out_nodes:
        if name not in produced:
            raise ConvertError(f"{source}: --out-node '{name}' is not a tensor of the model")
        model.graph.output.add().name = name


def _to_graph(model, opset, source) -> Graph:
    g = model.graph
    shapes = static_shapes(model)
    dtypes = {vi.name: vi.type.tensor_type.elem_type for vi in list(g.input) + list(g.value_info) + list(g.output)}
    tensors: dict[str, Tensor] = {}
    for init in g.initializer:
        arr = numpy_helper.to_array(init)
        tensors[init.name] = Tensor(init.name, arr.dtype, tuple(arr.shape), arr)
    nodes = []
    for i, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{i}"
        if n.domain not in ("", "ai.onnx"):
            raise ConvertError(f"node '{name}' ({n.domain}.{n.op_type}): op not supported (custom domain)")
        attrs = {a.name: _attr_value(a) for a in n.attribute}
        nodes.append(Node(name, n.op_type, list(n.input), list(n.output), attrs))
    graph = Graph(tensors, nodes, [vi.name for vi in g.input], [vi.name for vi in g.output], opset, source)
    _drop_unread_outputs(graph)
    tensors = graph.tensors  # prune made a new dict
    producer = graph.producers()
    for name in _value_names(graph):
        if name in tensors:
            continue
        shape, elem = shapes.get(name), dtypes.get(name, 0)
        if shape is None or elem == 0:
            where = producer[name].describe() if name in producer else "a graph input"
            dims = _dims_text(g, name)
            cause = _data_dependent_cause(name, producer)
            if cause is not None:
                inputs = ", ".join(f"'{i}'" for i in cause.inputs if i)
                raise ConvertError(f"tensor '{name}' (output of {where}) has no static shape{dims}: {cause.describe()} "
                                   f"makes an output whose shape depends on the input data, which a compiled graph "
                                   f"cannot hold; cut the graph before it with --out-node (its inputs: {inputs}) and "
                                   f"run it on the host")
            hint = f"; pin it with --input-dim" if name in graph.inputs else "; pin the model's dynamic input dims with --input-dim"
            raise ConvertError(f"tensor '{name}' (output of {where}) has no static shape{dims}{hint}")
        tensors[name] = Tensor(name, helper.tensor_dtype_to_np_dtype(elem), shape)
    graph.prune()
    return graph


# Ops whose output shape depends on the values of their inputs, not only on their shapes.
DATA_DEPENDENT_SHAPE_OPS = {"NonZero", "NonMaxSuppression", "Unique", "Compress", "StringSplit", "RegexFullMatch"}


def _data_dependent_cause(name, producer):
    """The nearest node above `name` whose output shape depends on data, or None."""
    seen, todo = set(), [name]
    while todo:
        t = todo.pop()
        node = producer.get(t)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node.op_type in DATA_DEPENDENT_SHAPE_OPS:
            return node
        todo.extend(i for i in node.inputs if i)
    return None


def _attr_value(attr):
    """Attribute values as plain Python: strings decoded, tensors as numpy arrays."""
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8") for v in value]
    return value


def _drop_unread_outputs(graph: Graph) -> None:
    """Optional outputs nobody reads (Dropout's mask, ...) become absent before shapes are checked."""
    graph.prune()
    read = {i for n in graph.nodes for i in n.inputs if i} | set(graph.outputs)
    for n in graph.nodes:
        n.outputs = [o if (o in read or k == 0) else "" for k, o in enumerate(n.outputs)]


def _value_names(graph):
    names = list(graph.inputs)
    for n in graph.nodes:
        names.extend(o for o in n.outputs if o)
    names.extend(graph.outputs)
    return names


def _dims_text(g, name):
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.name == name and vi.type.tensor_type.HasField("shape"):
            dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                    for d in vi.type.tensor_type.shape.dim]
            return f" [{', '.join(dims)}]"
    return ""
