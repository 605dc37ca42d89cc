"""Running a model on Qualcomm's HTP backend (emulated on x86-64): HtpModel, with the interface of
our runtime's Model (inputs, outputs, run, timings), so net-run and the test step drive it alike.

It opens either an htp context (model.htp.onnx beside its .bin and .json; checked first, sidecar.py)
or a model.qdq.onnx, which the QNN EP compiles at load for the SoC given.

From a context, the session holds the EPContext node alone, so everything that runs is Qualcomm's
context binary: the graph's inputs are quantized here and its outputs dequantized here, with the
encodings of the sidecar and the same equations (1)-(2) (quant/encoding.py) the npu's host side
uses, so both backends see the same input codes. `run_codes` gives the outputs' integer codes.
"""

import tempfile
import time
from pathlib import Path

import numpy as np

from ..quant.encoding import Encoding, dequantize, quantize
from ..runtime.binding import IOInfo
from .ep import HtpError, require, session_options
from .profile import read_profile
from .sidecar import artifact_paths, load_checked, precision_of
from .socs import get_soc


def _encoding(entry: dict) -> Encoding | None:
    enc = entry.get("encoding")
    if enc is None:
        return None
    signed = np.dtype(entry["context"]["dtype"]).kind == "i"
    return Encoding(enc["bitwidth"], signed, np.array([enc["scale"]], np.float32), np.array([enc["offset"]], np.int32))


def _context_only(wrapper_bytes: bytes, info: dict) -> bytes:
    """The wrapper reduced to its EPContext node: the graph's I/O are the context's own tensors."""
    import onnx
    from onnx import helper
    wrapper = onnx.load_from_string(wrapper_bytes)
    node = next(n for n in wrapper.graph.node if n.op_type == "EPContext")

    def value_info(entry):
        name = entry.get("context", {}).get("name", entry["name"])
        dtype = entry.get("context", {}).get("dtype", entry["dtype"])
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), entry["shape"])

    graph = helper.make_graph([node], "context", [value_info(e) for e in info["inputs"]],
                              [value_info(e) for e in info["outputs"]])
    model = helper.make_model(graph, opset_imports=wrapper.opset_import)
    model.ir_version = wrapper.ir_version
    return model.SerializeToString()


class HtpModel:
    backend = "htp"
    target: str  # the SoC it runs as: the context's own, or the one a QDQ model is compiled for

    def __init__(self, path, soc: str | None = None, precision: str | None = None, profiling_level: str = "off"):
        require()
        self.path = Path(path)
        self._profile_dir = tempfile.TemporaryDirectory(prefix="qnnb-htp-profile-")
        self._session = None
        start = time.perf_counter()
        if artifact_paths(self.path)["sidecar"].is_file():
            self.info, wrapper_bytes, _ = load_checked(self.path, soc, precision)
            self.target, self.precision = self.info["soc"], self.info["precision"]
            self._model_bytes = _context_only(wrapper_bytes, self.info)
            self._encodings = {e["name"]: _encoding(e) for e in self.info["inputs"] + self.info["outputs"]}
            self._context_names = {e["name"]: e.get("context", {}).get("name", e["name"])
                                   for e in self.info["inputs"] + self.info["outputs"]}
            self._timing_key = "retrieve_us"
        else:
            self._open_qdq(soc, precision)
        self._level = profiling_level
        self._open()
        self.timings = {self._timing_key: (time.perf_counter() - start) * 1e6}
        self.inputs = [self._io(i) for i in self._session.get_inputs()]
        self.outputs = [self._io(o) for o in self._session.get_outputs()]

    def _open_qdq(self, soc, precision) -> None:
        import onnx
        if not self.path.is_file():
            raise HtpError(f"{self.path}: model not found")
        if soc is None:
            raise HtpError(f"{self.path}: running a QDQ model on the htp needs --soc (it is compiled for one SoC)")
        self._model_bytes = self.path.read_bytes()
        self.precision = precision_of(onnx.load_from_string(self._model_bytes), self.path)
        if precision and precision != self.precision:
            raise HtpError(f"{self.path}: this model was exported at {self.precision}, not {precision}")
        self.target, self.info, self._encodings, self._context_names = soc, None, {}, {}
        self._timing_key = "load_us"

    def _open(self) -> None:
        import onnxruntime as ort
        provider = {}
        if self._level in ("basic", "detailed"):
            provider = {"profiling_level": self._level, "profiling_file_path": str(self.profile_csv)}
        config = {"ep.context_file_path": str(self.path.absolute())} if self.info else {}
        options = session_options(get_soc(self.target), self.precision == "fp16", provider=provider, config=config)
        try:
            self._session = ort.InferenceSession(self._model_bytes, options)
        except Exception as e:  # onnxruntime raises its own exception types
            first = str(e).strip().splitlines()[0]
            raise HtpError(f"{self.path}: the HTP backend could not load it: {first}") from None

    @property
    def profile_csv(self) -> Path:
        return Path(self._profile_dir.name) / "profile.csv"

    def _io(self, arg) -> IOInfo:
        """Graph-level I/O: the float tensors the caller feeds and reads (names as in the model)."""
        graph_name = next((k for k, v in self._context_names.items() if v == arg.name), arg.name)
        entry = next((e for e in (self.info or {}).get("inputs", []) + (self.info or {}).get("outputs", [])
                      if e["name"] == graph_name), None)
        dtype = np.dtype(entry["dtype"]) if entry else np.dtype(_ORT_TYPES.get(arg.type, np.float32))
        return IOInfo(graph_name, dtype, tuple(int(d) for d in arg.shape))

    def set_profiling(self, level: str) -> None:
        """basic/detailed: QNN's profile events (a new session when the level changes)."""
        if level != self._level:
            self._level = level
            self.close(keep_profile=False)
            self._open()

    def run_codes(self, feeds: dict) -> dict[str, np.ndarray]:
        """One inference; outputs as the context gives them: integer codes (float for fp16 contexts)."""
        session_feeds = {}
        for info in self.inputs:
            if info.name not in feeds:
                raise HtpError(f"missing input '{info.name}'")
            value = np.asarray(feeds[info.name], info.dtype).reshape(info.shape)
            enc = self._encodings.get(info.name)
            if enc is not None:
                value = quantize(value, enc).astype(np.dtype(self._context_dtype(info.name)))
            session_feeds[self._context_names.get(info.name, info.name)] = value
        names = [o.name for o in self._session.get_outputs()]
        values = self._session.run(names, session_feeds)
        return {info.name: value for info, value in zip(self.outputs, values)}

    def run(self, feeds: dict) -> dict[str, np.ndarray]:
        """One inference; float32 outputs (dequantized by (1) where the context's output is integer)."""
        out = {}
        for name, value in self.run_codes(feeds).items():
            enc = self._encodings.get(name)
            out[name] = dequantize(value.astype(np.int64), enc) if enc is not None else value.astype(np.float32)
        return out

    def encoding(self, name: str) -> Encoding | None:
        return self._encodings.get(name)

    def _context_dtype(self, name: str) -> str:
        return next(e["context"]["dtype"] for e in self.info["inputs"] + self.info["outputs"] if e["name"] == name)

    def node_times_us(self) -> np.ndarray:
        return np.zeros(0)  # QNN reports its per-node events when the session ends: profile_nodes()

    def profile_nodes(self, node_us=None) -> list[dict]:
        """profile.json's `nodes` from QNN's per-node events (emulated cycles), not from node_us
        (node_times_us() has none); ends the session."""
        self.close()
        return read_profile(self.profile_csv)["nodes"] if self.profile_csv.is_file() else []

    def close(self, keep_profile: bool = True) -> None:
        self._session = None  # onnxruntime writes the profile when the session is released
        if not keep_profile and self.profile_csv.is_file():
            self.profile_csv.unlink()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        self._profile_dir.cleanup()


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(uint8)": np.uint8,
              "tensor(uint16)": np.uint16, "tensor(int8)": np.int8, "tensor(int16)": np.int16,
              "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_}
