"""The convert step: model.onnx -> model.cpp + model.bin + model.json in one output directory."""

import json
from pathlib import Path


from . import __version__
from .atomic import write_bytes, write_text
from .codegen.cpp import dtype_name, generate_cpp, supported_dtype
from .codegen.weights import pack_weights
from .errors import ConvertError
from .ir.graph import Graph
from .ir.onnx_import import import_onnx, load_onnx
from .ir.passes import run_passes
from .ops import lower_graph


def build_graph(source, input_dims=None, input_values=None, out_nodes=None) -> Graph:
    """The lowered runtime graph of an ONNX file, as convert would write it."""
    model = load_onnx(source)
    graph = import_onnx(model, input_dims, input_values, out_nodes, source=Path(source).name)
    run_passes(graph)
    lower_graph(graph)
    _check_io(graph)
    return graph


def convert(source, out_dir, input_dims=None, input_values=None, out_nodes=None) -> dict:
    """Write DIR/model.cpp, DIR/model.bin and DIR/model.json. Returns the io description."""
    graph = build_graph(source, input_dims, input_values, out_nodes)
    consts = [(name, t.const) for name, t in graph.tensors.items() if t.is_const]
    for name, value in consts:
        if not supported_dtype(value.dtype):
            raise ConvertError(f"constant '{name}' has dtype {value.dtype}, which the runtime does not support")
    bin_bytes, entries = pack_weights(consts)
    cpp = generate_cpp(graph, entries)
    desc = io_description(graph, Path(source).name)
    out_dir = Path(out_dir)
    write_bytes(out_dir / "model.bin", bin_bytes)
    write_text(out_dir / "model.cpp", cpp)
    write_text(out_dir / "model.json", json.dumps(desc, indent=1, sort_keys=True) + "\n")
    return desc


def io_description(graph: Graph, source_name: str) -> dict:
    def entry(name):
        t = graph.tensor(name)
        return {"name": name, "shape": list(t.shape), "dtype": dtype_name(t.dtype),
                "layout": "NCHW" if len(t.shape) == 4 else "as-model"}

    ops: dict[str, int] = {}
    for n in graph.nodes:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return {
        "format_version": 1,
        "generator": f"qnn-build {__version__}",
        "source": source_name,
        "precision": "fp32",
        "inputs": [entry(n) for n in graph.inputs],
        "outputs": [entry(n) for n in graph.outputs],
        "ops": dict(sorted(ops.items())),
    }


def _check_io(graph: Graph) -> None:
    for name in graph.inputs + graph.outputs:
        dt = graph.tensor(name).dtype
        if not supported_dtype(dt):
            raise ConvertError(f"model input/output '{name}' has dtype {dt}, which the runtime does not support")
    if not graph.outputs:
        raise ConvertError("the model has no outputs")


__all__ = ["convert", "build_graph", "io_description"]
