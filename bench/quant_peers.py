"""The peer quantizers that bench/bench_quant.py compares ours with, each as one function
`(float.onnx, out.onnx, calibration samples, ...) -> out.onnx` that onnxruntime then runs.

- onnxruntime: quant_pre_process, then quantize_static (QDQ, per-channel) with MinMax or Percentile
  calibration; and, for 4-bit weights, its MatMulNBits quantizer (weight-only, float activations).
- NNCF: post-training quantization of the ONNX model (default preset, a QDQ model), and its 4-bit
  weight compression (weight-only) where the model has MatMul weights.

Peers are benchmark-only dependencies: `pip install nncf openvino` (onnxruntime's MatMulNBits
quantizer also needs `onnx_ir`). A peer that is not installed raises PeerUnavailable.
"""

import contextlib
import io
import logging
from pathlib import Path

import numpy as np
import onnx


class PeerUnavailable(Exception):
    """The tool is not installed, or does not apply to this model (the reason is the message)."""


@contextlib.contextmanager
def quiet():
    """Peers print progress bars and per-tensor notes to stdout/stderr; keep the tables readable."""
    buf = io.StringIO()
    loggers = [logging.getLogger(), logging.getLogger("nncf")]  # nncf's has its own stdout handler
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            yield buf
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def ort_session(path, threads: int = 1):
    """An onnxruntime CPU session with its default graph optimizations (QDQ fused to integer kernels)."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def const_matmul_weights(model: onnx.ModelProto) -> list[str]:
    """Names of MatMul nodes whose second input is an initializer (what weight-only 4-bit quantizes)."""
    inits = {i.name for i in model.graph.initializer}
    return [n.name or n.output[0] for n in model.graph.node
            if n.op_type == "MatMul" and len(n.input) > 1 and n.input[1] in inits]


# --- onnxruntime -----------------------------------------------------------------------------------

def _ort_reader(samples):
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):
        def __init__(self):
            self._it = iter(samples)

        def get_next(self):
            return next(self._it, None)

        def rewind(self):
            self._it = iter(samples)

    return Reader()


def at_opset_13(src, dst) -> Path:
    """`src` itself, or its conversion to opset 13 when it is older: onnxruntime's per-channel QDQ
    needs QuantizeLinear's axis (opset 13); on an opset 11/12 model (the PP-OCR models) it writes a
    w8a8 model that onnxruntime then refuses to load (INVALID_GRAPH). Same float model either way."""
    from onnx import version_converter

    model = onnx.load(str(src))
    if next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13) >= 13:
        return Path(src)
    onnx.save(version_converter.convert_version(model, 13), str(dst))
    return Path(dst)


def ort_static(src, dst, samples, method: str = "minmax", act_bits: int = 8, weight_bits: int = 8,
               percentile: float = 99.99, workdir=None) -> str:
    """quant_pre_process then quantize_static: QDQ, per-channel weights, unsigned activations. When
    quant_pre_process itself fails (its symbolic shape inference asserts on some models), the model
    is quantized without it, as onnxruntime allows; the returned note says so ("" otherwise)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    act_type = {8: QuantType.QUInt8, 16: QuantType.QUInt16}[act_bits]
    weight_type = {8: QuantType.QInt8, 4: QuantType.QInt4, 16: QuantType.QInt16}[weight_bits]
    calib = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile}[method]
    pre = Path(workdir or Path(dst).parent) / (Path(dst).stem + ".pre.onnx")
    extra = {"CalibPercentile": percentile} if method == "percentile" else {}
    src = at_opset_13(src, pre.with_suffix(".opset13.onnx"))
    note = ""
    # quant_pre_process and quantize_static leave files in the working directory (sym_shape_infer_temp.onnx,
    # external *.data): run them in the work folder, with absolute paths.
    src, pre, dst = Path(src).resolve(), pre.resolve(), Path(dst).resolve()
    with quiet(), contextlib.chdir(pre.parent):
        try:
            quant_pre_process(str(src), str(pre))
        except Exception as e:  # noqa: BLE001 - any failure of the optional step
            note, pre = f"without quant_pre_process ({type(e).__name__} in it)", src
        quantize_static(str(pre), str(dst), _ort_reader(samples), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=act_type, weight_type=weight_type, calibrate_method=calib,
                        extra_options=extra)
    return note


def ort_matmul_nbits(src, dst, block_size: int = 32) -> Path:
    """Weight-only 4-bit (MatMulNBits, symmetric, block-wise) of every MatMul with a constant weight."""
    model = onnx.load(str(src))
    if not const_matmul_weights(model):
        raise PeerUnavailable("n/a: no MatMul with a constant weight")
    try:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    except ImportError as e:
        raise PeerUnavailable(f"not installed ({e}; pip install onnx_ir)") from None
    with quiet():
        q = MatMulNBitsQuantizer(model, bits=4, block_size=block_size, is_symmetric=True)
        q.process()
        q.model.save_model_to_file(str(dst), use_external_data_format=False)
    return Path(dst)


# --- NNCF ------------------------------------------------------------------------------------------

def _nncf():
    try:
        import nncf
    except ImportError:
        raise PeerUnavailable("not installed (pip install nncf openvino)") from None
    return nncf


def nncf_ptq(src, dst, samples) -> Path:
    """nncf.quantize on the ONNX model, default preset, every calibration sample used."""
    nncf = _nncf()
    model = onnx.load(str(src))
    with quiet():
        q = nncf.quantize(model, nncf.Dataset(samples), subset_size=len(samples))
    onnx.save(q, str(dst))
    return Path(dst)


def nncf_int4(src, dst, group_size: int = 32) -> Path:
    """nncf.compress_weights INT4_SYM with groups of `group_size`, on every layer (weight-only)."""
    model = onnx.load(str(src))
    if not const_matmul_weights(model):
        raise PeerUnavailable("n/a: no MatMul with a constant weight")
    nncf = _nncf()
    with quiet():
        q = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT4_SYM, group_size=group_size,
                                  ratio=1.0, all_layers=True)
    onnx.save(q, str(dst))
    return Path(dst)


QDQ_OPS = {"QuantizeLinear", "DequantizeLinear", "Constant"}


def float_ops(path) -> list[str]:
    """Op types of a QDQ model that leave a float activation unquantized: an output of theirs that is
    used (by a node or as a graph output) and that no QuantizeLinear takes. Ours quantizes every one."""
    model = onnx.load(str(path))
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - contrib ops: unknown types count as float below
        pass
    elem = {vi.name: vi.type.tensor_type.elem_type
            for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, None}
    users: dict[str, list[str]] = {}
    for n in model.graph.node:
        for i in n.input:
            users.setdefault(i, []).append(n.op_type)
    graph_outputs = {o.name for o in model.graph.output}
    out = set()
    for n in model.graph.node:
        if n.op_type in QDQ_OPS:
            continue
        for o in n.output:
            if not o or (o not in users and o not in graph_outputs) or elem.get(o) not in floats:
                continue
            if "QuantizeLinear" not in users.get(o, []):
                out.add(n.op_type)
    return sorted(out)


def quantized_activations(path) -> int:
    """How many distinct non-constant tensors a QuantizeLinear of the model takes."""
    model = onnx.load(str(path))
    inits = {i.name for i in model.graph.initializer}
    consts = {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    return len({n.input[0] for n in model.graph.node
                if n.op_type == "QuantizeLinear" and n.input[0] not in inits and n.input[0] not in consts})


def float_activations(path) -> int:
    """Float activation tensors of a float model: its float inputs and the outputs of its nodes."""
    model = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    elem = {vi.name: vi.type.tensor_type.elem_type
            for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    inits = {i.name for i in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in inits]
    names += [o for n in model.graph.node if n.op_type != "Constant" for o in n.output if o]
    return sum(1 for n in names if elem.get(n) == onnx.TensorProto.FLOAT)


def versions() -> dict[str, str]:
    out = {}
    for name in ("onnxruntime", "nncf", "openvino"):
        try:
            out[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - a missing peer is reported as such
            out[name] = "not installed"
    return out


def run_onnx(path, samples) -> list[np.ndarray]:
    """Every output of the model at `path` over the samples, stacked: [N, *output shape] each."""
    sess = ort_session(path)
    outs = [sess.run(None, feeds) for feeds in samples]
    return [np.stack([o[i] for o in outs]) for i in range(len(outs[0]))]
