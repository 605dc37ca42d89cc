"""The reference step: onnxruntime runs the SOURCE model in float over the test data.

One reference per model, shared by every precision and target. Inputs pinned to a constant in the
spec (`value`) are fed as that constant; the others come from the test data, one sample at a time,
reshaped to the spec's pinned shape (so a dynamic batch dim sees 1, as the builds do). Outputs are
the spec's `outputs` (tensors inside the graph are exposed as extra graph outputs) or the model's
own. The result is an .npz with one [samples, *shape] float32 array per output.
"""

from pathlib import Path

import numpy as np

from ..errors import QnnBuildError, missing_file
from ..data.npz import open_npz, sample, sample_count, save_npz

_ORT_DTYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(int16)": np.int16,
    "tensor(uint16)": np.uint16, "tensor(int32)": np.int32, "tensor(uint32)": np.uint32,
    "tensor(int64)": np.int64, "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_,
}


def run_reference(source, data_path, output, input_dims=None, input_values=None, out_nodes=None,
                  samples=None) -> dict:
    """Write `output` (.npz). Returns {"samples": n, "outputs": {name: shape}}."""
    session, output_names = _session(Path(source), out_nodes or [])
    input_dims, input_values = dict(input_dims or {}), dict(input_values or {})
    fed = [i for i in session.get_inputs() if i.name not in input_values]
    data = open_npz(data_path, "test data")
    count = sample_count(data, [i.name for i in fed], samples, data_path)
    constants = {i.name: _constant(i, input_values[i.name], input_dims.get(i.name))
                 for i in session.get_inputs() if i.name in input_values}
    results = {name: [] for name in output_names}
    for k in range(count):
        feeds = dict(constants)
        for info in fed:
            value = sample(data, info.name, k, input_dims.get(info.name), data_path)
            feeds[info.name] = value.astype(_ORT_DTYPES.get(info.type, np.float32), copy=False)
        try:
            values = session.run(output_names, feeds)
        except Exception as e:  # noqa: BLE001 -- onnxruntime raises its own exception types
            raise QnnBuildError(f"{source}: onnxruntime failed on sample {k}: {_first_line(e)}") from None
        for name, value in zip(output_names, values):
            results[name].append(np.asarray(value, dtype=np.float32))
    arrays = {name: np.stack(values) for name, values in results.items()}
    save_npz(output, arrays, compressed=False)
    return {"samples": count, "outputs": {name: list(a.shape[1:]) for name, a in arrays.items()}}


def _session(source: Path, out_nodes: list[str]):
    import onnx
    import onnxruntime as ort

    if not source.is_file():
        raise missing_file(source, "source model")
    try:
        model = onnx.load(str(source))
    except Exception as e:  # noqa: BLE001 -- protobuf and onnx errors alike become one line
        raise QnnBuildError(f"{source}: cannot load the ONNX model: {_first_line(e)}") from None
    graph_outputs = [o.name for o in model.graph.output]
    wanted = list(out_nodes) or graph_outputs
    missing = [name for name in wanted if name not in graph_outputs]
    if missing:
        _expose(model, missing)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 -- onnxruntime raises its own exception types
        raise QnnBuildError(f"{source}: onnxruntime cannot load the model: {_first_line(e)}") from None
    return session, wanted


def _expose(model, names: list[str]) -> None:
    """Make tensors inside the graph graph outputs, typed from shape inference."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    produced = {out for node in model.graph.node for out in node.output}
    for name in names:
        if name not in produced and name not in known:
            raise QnnBuildError(f"output '{name}' is not a tensor of the model")
        if name in known:
            model.graph.output.append(known[name])
        else:
            model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))


def _constant(info, value, shape) -> np.ndarray:
    dtype = _ORT_DTYPES.get(info.type, np.float32)
    array = np.asarray(value, dtype=dtype)
    if shape is None:
        return array
    return np.ascontiguousarray(np.broadcast_to(array, shape))


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
