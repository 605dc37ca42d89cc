"""onnx's reference implementation (onnx.reference), as qnn-build evaluates ONNX with it: constant
folding (fold.py).

One correction: before opset 14, BatchNormalization is in inference mode when it has one output,
but onnx's opset-9 reference normalises with the batch statistics whenever `momentum` is set, and
the schema's default sets it (onnx/onnx#8442); its opset-6 one does so unless `is_test` is set.
Here a one-output node (without training_mode=1) is evaluated in inference mode, as onnxruntime
does; a training-mode node is not evaluated.
"""

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun


class BatchNormalization(OpRun):
    op_domain = ""

    def _run(self, x, scale, bias, mean, var, epsilon=1e-5, training_mode=0, **_):
        if len(self.onnx_node.output) > 1 or training_mode:
            raise NotImplementedError("BatchNormalization in training mode")
        scale, bias, mean, var = (a.reshape((-1,) + (1,) * (x.ndim - 2)) for a in (scale, bias, mean, var))
        return (((x - mean) / np.sqrt(var + epsilon) * scale + bias).astype(x.dtype),)


CORRECTED_OPS = [BatchNormalization]


def evaluator(model: onnx.ModelProto) -> ReferenceEvaluator:
    return ReferenceEvaluator(model, new_ops=CORRECTED_OPS)
