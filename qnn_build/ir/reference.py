"""onnx's reference implementation (onnx.reference), as qnn-build evaluates ONNX with it: constant
folding (fold.py) and the float64 accuracy reference of the tests.

Two corrections. Before opset 14, BatchNormalization is in inference mode when it has one output,
but onnx's opset-9 reference normalises with the batch statistics whenever `momentum` is set, and
the schema's default sets it (onnx/onnx#8442); its opset-6 one does so unless `is_test` is set.
Here a one-output node (without training_mode=1) is evaluated in inference mode, as onnxruntime
does; a training-mode node is not evaluated.

GatherElements: onnx's reference gathers with numpy.choose, which takes at most 64 choices, so it
fails on any axis longer than 64 (a detector's TopK of anchors gathers from thousands); here it is
numpy.take_along_axis, negative indices counted from the end as the spec says.

GRU: onnx's reference ignores sequence_lens, so a padded batch (PyTorch's pack_padded_sequence
exports it) ran its padding through the recurrence. Here each batch entry runs its own length: the
outputs past it are 0 and the last state is its last step's (the reverse direction starts there).
"""

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_gru import GRU as OnnxGRU


class BatchNormalization(OpRun):
    op_domain = ""

    def _run(self, x, scale, bias, mean, var, epsilon=1e-5, training_mode=0, **_):
        if len(self.onnx_node.output) > 1 or training_mode:
            raise NotImplementedError("BatchNormalization in training mode")
        scale, bias, mean, var = (a.reshape((-1,) + (1,) * (x.ndim - 2)) for a in (scale, bias, mean, var))
        return (((x - mean) / np.sqrt(var + epsilon) * scale + bias).astype(x.dtype),)


class GatherElements(OpRun):
    op_domain = ""

    def _run(self, data, indices, axis=0):
        indices = np.where(indices < 0, indices + data.shape[axis], indices)
        return (np.take_along_axis(data, indices.astype(np.int64), axis=axis),)


class GRU(OnnxGRU):
    op_domain = ""

    def _run(self, X, W, R, B=None, sequence_lens=None, initial_h=None, layout=None, **attrs):
        steps = X.shape[1 if layout == 1 else 0]
        if sequence_lens is None or np.all(sequence_lens == steps):
            return super()._run(X, W, R, B, None, initial_h, layout=layout, **attrs)
        if layout == 1:
            raise NotImplementedError("GRU with sequence_lens in layout 1")
        directions, hidden = W.shape[0], R.shape[-1]
        Y = np.zeros((steps, directions, X.shape[1], hidden), X.dtype)
        Y_h = np.zeros((directions, X.shape[1], hidden), X.dtype) if initial_h is None else initial_h.copy()
        for b, n in enumerate(int(n) for n in sequence_lens):
            if n == 0:
                continue
            h0 = None if initial_h is None else initial_h[:, b:b + 1]
            # The last state: Y's last valid step forwards, its first backwards.
            y = super()._run(X[:n, b:b + 1], W, R, B, None, h0, layout=layout, **attrs)[0]
            Y[:n, :, b:b + 1] = y
            for d in range(directions):
                backwards = d == 1 or self.direction == "reverse"
                Y_h[d, b] = y[0 if backwards else n - 1, d, 0]
        return (Y,) if self.n_outputs == 1 else (Y, Y_h)


CORRECTED_OPS = [BatchNormalization, GatherElements, GRU]


def evaluator(model: onnx.ModelProto) -> ReferenceEvaluator:
    return ReferenceEvaluator(model, new_ops=CORRECTED_OPS)


def run_float64(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The outputs of `model` computed in float64: float32 weights, constants, casts and inputs
    become float64 (exactly), so the only rounding left is float64's. The reference to measure a
    float32 backend against, onnxruntime's float32 included."""
    model = as_float64(model)
    feeds = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in feeds.items()}
    return dict(zip([o.name for o in model.graph.output], evaluator(model).run(None, feeds)))


def as_float64(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` with every float32 tensor and type made float64, subgraphs included."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    _graph_as_float64(copy.graph)
    return copy


def _graph_as_float64(graph: onnx.GraphProto) -> None:
    for init in graph.initializer:
        _tensor_as_float64(init)
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        if value.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            value.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and not any(a.name == "value" for a in node.attribute):
            # its default value is a float32 zero: made explicit, it becomes float64 like the rest
            node.attribute.append(onnx.helper.make_attribute("value", numpy_helper.from_array(np.zeros(1, np.float32))))
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                _tensor_as_float64(attr.t)
            elif attr.type == onnx.AttributeProto.GRAPH:
                _graph_as_float64(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    _graph_as_float64(g)
            elif node.op_type == "Cast" and attr.name == "to" and attr.i == onnx.TensorProto.FLOAT:
                attr.i = onnx.TensorProto.DOUBLE


def _tensor_as_float64(tensor: onnx.TensorProto) -> None:
    if tensor.data_type == onnx.TensorProto.FLOAT:
        tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name))
