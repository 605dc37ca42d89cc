"""Which runtime ops the htp runs: those onnxruntime-qnn's QNN EP has an op builder for (its
op_builder_factory, onnxruntime-qnn 2.7.0), and those the QDQ export writes as other ops (GRU and
RNN unrolled, Identity and the --float-fallback boundaries as no node at all). The QNN EP has the
last word when it compiles a model: a node it refuses fails the context step, naming the node and
its reason (generate.py)."""

QNN_EP_BUILDERS = frozenset({
    "Abs", "Add", "And", "ArgMax", "ArgMin", "Asin", "Atan", "AveragePool", "BatchNormalization", "Cast", "Ceil",
    "Clip", "Concat", "Conv", "ConvTranspose", "Cos", "CumSum", "DepthToSpace", "DequantizeLinear", "Div", "Einsum",
    "Elu", "Equal", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "GatherND", "Gelu", "Gemm",
    "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "GridSample", "GroupNormalization",
    "HardSigmoid", "HardSwish", "InstanceNormalization", "Inverse", "IsNaN", "LayerNormalization", "LeakyRelu",
    "Less", "LessOrEqual", "Log", "LogSoftmax", "LpNormalization", "LRN", "LSTM", "MatMul", "Max", "MaxPool",
    "Mean", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pad", "Pow", "PRelu", "QuantizeLinear", "Reciprocal",
    "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "Relu", "Reshape", "Resize", "RoiAlign",
    "Round", "ScatterElements", "ScatterND", "Sigmoid", "Sign", "Sin", "Slice", "Softmax", "SpaceToDepth", "Split",
    "Sqrt", "Squeeze", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu", "Tile", "TopK", "Transpose", "Unsqueeze",
    "Upsample", "Where"})

# Runtime ops the export writes as other ONNX ops (codegen/qdq.py UNROLLED, qdq_ops.py ALIASES).
EXPORTED_AS_OTHERS = frozenset({"GRU", "RNN", "Identity", "Quantize", "Dequantize"})


def supports(op_type: str, precision: str) -> bool:
    return op_type in QNN_EP_BUILDERS or op_type in EXPORTED_AS_OTHERS
