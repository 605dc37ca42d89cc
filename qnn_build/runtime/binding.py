"""ctypes binding to libqnnb: compose a model library into a backend, finalize, execute."""

import ctypes
import math
import os
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..data.model_io import IOInfo, NodeInfo
from ..errors import QnnBuildError, RuntimeFailure, missing_file
from ..options import parse_precision
from ..toolchain import build_runtime
from ..toolchain.targets import check_binary_for, host_target
from ..data.dtypes import numpy_dtype
from .reencode import Reencoded
from .stats import stats

QNNB_MAX_RANK = 8
# Inputs and outputs up to this size go through buffers made once, whose addresses the pointer
# arrays already hold: copying that little costs less than asking numpy for an array's address.
_STAGED_BYTES = 1 << 14
_COMPOSE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


# --profiling-level names -> qnnb_profiling_level
PROFILING_LEVELS = {"off": 0, "basic": 1, "detailed": 2}


@lru_cache(maxsize=None)
def runtime_library(path: str | None = None) -> ctypes.CDLL:
    """The runtime library: `path`, $QNNB_RUNTIME, or built from the sources into the cache."""
    if path is None:
        path = os.environ.get("QNNB_RUNTIME")
    if path is None:
        path = str(build_runtime())
    if not Path(path).is_file():
        raise missing_file(path, "runtime library")
    lib = ctypes.CDLL(str(Path(path).resolve()))
    vp, i32, cp = ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p
    lib.qnnb_graph_create.argtypes = [cp, ctypes.POINTER(vp)]
    lib.qnnb_graph_free.argtypes = [vp]
    lib.qnnb_graph_free.restype = None
    lib.qnnb_graph_compose.argtypes = [vp, vp]
    lib.qnnb_graph_set_threads.argtypes = [vp, i32]
    lib.qnnb_graph_finalize.argtypes = [vp]
    lib.qnnb_graph_execute.argtypes = [vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]
    lib.qnnb_graph_num_io.argtypes = [vp, i32]
    lib.qnnb_graph_num_io.restype = i32
    lib.qnnb_graph_io.argtypes = [vp, i32, i32, ctypes.POINTER(cp), ctypes.POINTER(ctypes.c_int),
                                  ctypes.POINTER(i32), ctypes.POINTER(ctypes.c_int64)]
    lib.qnnb_graph_set_keep_tensors.argtypes = [vp, i32]
    lib.qnnb_graph_set_native_io.argtypes = [vp, i32, i32]
    lib.qnnb_graph_num_tensors.argtypes = [vp]
    lib.qnnb_graph_num_tensors.restype = i32
    lib.qnnb_graph_tensor.argtypes = [vp, i32, ctypes.POINTER(cp), ctypes.POINTER(ctypes.c_int),
                                      ctypes.POINTER(i32), ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(vp)]
    lib.qnnb_graph_serialize_for.argtypes = [vp, cp, ctypes.POINTER(vp), ctypes.POINTER(ctypes.c_size_t)]
    lib.qnnb_buffer_free.argtypes = [vp]
    lib.qnnb_buffer_free.restype = None
    lib.qnnb_graph_load_context_file.argtypes = [vp, cp]
    lib.qnnb_graph_load_context.argtypes = [vp, vp, ctypes.c_size_t]
    lib.qnnb_graph_memory_plan.argtypes = [vp, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]
    lib.qnnb_graph_scratch_bytes.argtypes = [vp, ctypes.POINTER(ctypes.c_uint64)]
    lib.qnnb_graph_set_profiling.argtypes = [vp, i32]
    lib.qnnb_graph_num_nodes.argtypes = [vp]
    lib.qnnb_graph_num_nodes.restype = i32
    lib.qnnb_graph_node.argtypes = [vp, i32, ctypes.POINTER(cp), ctypes.POINTER(cp), ctypes.POINTER(cp),
                                    ctypes.POINTER(i32)]
    lib.qnnb_graph_node_output.argtypes = [vp, i32, i32, ctypes.POINTER(i32)]
    lib.qnnb_graph_node_times.argtypes = [vp, ctypes.POINTER(ctypes.c_uint64), i32]
    lib.qnnb_graph_last_error.argtypes = [vp]
    lib.qnnb_graph_last_error.restype = cp
    lib.qnnb_status_string.argtypes = [ctypes.c_int]
    lib.qnnb_status_string.restype = cp
    lib.qnnb_runtime_version.restype = cp
    return lib


class Model:
    """A graph ready to execute: a model library composed into a backend and finalized, or a
    context binary loaded (`context=`, no model library needed)."""

    def __init__(self, model_lib=None, backend: str = "cpu", threads: int = 1, runtime: str | None = None,
                 keep_tensors: bool = False, context=None, precision: str | None = None, replace: dict | None = None):
        """replace: tensor name -> (Encoding or None, constant data or None), put in place of the
        library's while it composes (runtime/reencode.py; the range search)."""
        self.timings: dict[str, float] = {}
        self.backend = backend
        self.target = host_target().name  # where it runs: a library or context of another machine is refused
        self.precision: str | None = None  # of a model library (a context does not record it)
        self._graph = None
        self._rt = runtime_library(runtime)
        if context is not None:
            self._retrieve(context, backend, threads, keep_tensors)
            return
        t0 = time.perf_counter()
        path = Path(model_lib)
        if not path.is_file():
            raise missing_file(model_lib, "model library")
        check_binary_for(path, host_target())  # built for another machine: say which, not dlopen's words
        try:
            self._lib = ctypes.CDLL(str(path.resolve()))  # kept: constants point into it
            compose = self._lib.qnnb_model_compose
        except (OSError, AttributeError) as e:
            raise QnnBuildError(f"{model_lib}: not a qnn-build model library ({e})") from None
        self.precision = _library_precision(self._lib)
        _check_precision(model_lib, self.precision, precision)
        t1 = time.perf_counter()
        self._create(backend, threads, keep_tensors)
        if replace:
            self._reencoded = Reencoded(self._lib, replace)  # alive until finalize has copied what it holds
            compose = self._reencoded.compose
        self._check(self._rt.qnnb_graph_compose(self._graph, ctypes.cast(compose, ctypes.c_void_p)), "compose")
        t2 = time.perf_counter()
        self.inputs = self._io(False)
        self.outputs = self._io(True)
        self._check(self._rt.qnnb_graph_finalize(self._graph), "finalize")
        self._bind_io()
        t3 = time.perf_counter()
        self.timings = {"load_us": (t1 - t0) * 1e6, "compose_us": (t2 - t1) * 1e6, "finalize_us": (t3 - t2) * 1e6}

    def set_native_io(self, inputs: bool, outputs: bool) -> None:
        """Native io (qnn-net-run's --use_native_input_files / --use_native_output_files): inputs and
        outputs with an unsigned 8/16-bit encoding are fed and returned as their integer codes (uint8 /
        uint16, real = scale * (code + offset)); `inputs` and `outputs` then show those dtypes."""
        self._check(self._rt.qnnb_graph_set_native_io(self._graph, int(inputs), int(outputs)), "native io")
        self.inputs, self.outputs = self._io(False), self._io(True)
        self._bind_io()

    def _create(self, backend: str, threads: int, keep_tensors: bool) -> None:
        self._graph = ctypes.c_void_p()
        status = self._rt.qnnb_graph_create(backend.encode(), ctypes.byref(self._graph))
        if status != 0:
            self._graph = None
            raise QnnBuildError(f"backend '{backend}' is not available in this runtime")
        if int(threads) < 1:
            raise QnnBuildError(f"threads must be at least 1, not {threads}")
        self._check(self._rt.qnnb_graph_set_threads(self._graph, int(threads)), "set threads")
        self._check(self._rt.qnnb_graph_set_keep_tensors(self._graph, int(keep_tensors)), "keep tensors")

    def _retrieve(self, context, backend: str, threads: int, keep_tensors: bool) -> None:
        """Load a context binary: a path (memory-mapped) or bytes."""
        if not isinstance(context, (bytes, bytearray)) and not Path(context).is_file():
            raise missing_file(context, "context binary")
        t0 = time.perf_counter()
        self._create(backend, threads, keep_tensors)
        if isinstance(context, (bytes, bytearray)):
            self._context_bytes = bytes(context)  # used in place or copied by the runtime; kept alive
            status = self._rt.qnnb_graph_load_context(self._graph, self._context_bytes, len(self._context_bytes))
        else:
            status = self._rt.qnnb_graph_load_context_file(self._graph, os.fsencode(context))
        if status != 0:  # the runtime's message names the check that failed
            where = "context binary" if isinstance(context, (bytes, bytearray)) else str(context)
            raise RuntimeFailure(f"{where}: {self._rt.qnnb_graph_last_error(self._graph).decode('utf-8', 'replace')}")
        self.timings = {"retrieve_us": (time.perf_counter() - t0) * 1e6}
        self.inputs = self._io(False)
        self.outputs = self._io(True)
        self._bind_io()

    def context_binary(self, target: str | None = None) -> bytes:
        """This finalized graph's context binary, for this runtime or for the target whose context
        target string is `target` (Target.context_target)."""
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        where = target.encode() if target else None
        self._check(self._rt.qnnb_graph_serialize_for(self._graph, where, ctypes.byref(data), ctypes.byref(size)),
                    "serialize")
        try:
            return ctypes.string_at(data.value, size.value)
        finally:
            self._rt.qnnb_buffer_free(data)

    def memory_plan(self) -> dict[str, int]:
        """{"arena_bytes", "tensor_bytes", "scratch_bytes"}: the one activation arena against every
        activation apart, and the kernels' one shared scratch."""
        arena, total, scratch = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
        self._check(self._rt.qnnb_graph_memory_plan(self._graph, ctypes.byref(arena), ctypes.byref(total)), "plan")
        self._check(self._rt.qnnb_graph_scratch_bytes(self._graph, ctypes.byref(scratch)), "plan")
        return {"arena_bytes": arena.value, "tensor_bytes": total.value, "scratch_bytes": scratch.value}

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            detail = self._rt.qnnb_graph_last_error(self._graph).decode("utf-8", "replace") if self._graph else ""
            kind = self._rt.qnnb_status_string(status).decode()
            raise RuntimeFailure(f"{what} failed ({kind}): {detail}")

    def _io(self, is_output: bool) -> list[IOInfo]:
        out = []
        for i in range(self._rt.qnnb_graph_num_io(self._graph, int(is_output))):
            name, dtype, rank = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int32()
            dims = (ctypes.c_int64 * QNNB_MAX_RANK)()
            self._check(self._rt.qnnb_graph_io(self._graph, int(is_output), i, ctypes.byref(name),
                                               ctypes.byref(dtype), ctypes.byref(rank), dims), "io query")
            out.append(IOInfo(name.value.decode("utf-8"), numpy_dtype(dtype.value), tuple(dims[: rank.value])))
        return out

    def _bind_io(self) -> None:
        """What run() needs, made once: the pointer arrays execute takes and, per input and output,
        its size and (when small) its buffer, whose address the pointer array holds."""
        self._in_ptrs = (ctypes.c_void_p * max(len(self.inputs), 1))()
        self._out_ptrs = (ctypes.c_void_p * len(self.outputs))()
        self._in_plan, self._out_plan = [], []
        for ptrs, infos, plan in ((self._in_ptrs, self.inputs, self._in_plan),
                                  (self._out_ptrs, self.outputs, self._out_plan)):
            for i, info in enumerate(infos):
                size = math.prod(info.shape)
                buf = np.zeros(info.shape, info.dtype) if size * info.dtype.itemsize <= _STAGED_BYTES else None
                if buf is not None:
                    ptrs[i] = buf.ctypes.data
                plan.append((info.name, info.dtype, info.shape, size, buf))
        self._execute = self._rt.qnnb_graph_execute

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Execute once. Inputs are converted to each input's dtype and must have its size."""
        large = []  # inputs passed in place, alive until execute returns
        for i, (name, dtype, shape, size, buf) in enumerate(self._in_plan):
            if name not in feeds:
                raise QnnBuildError(f"missing input '{name}'")
            a = np.asarray(feeds[name]) if buf is not None else np.ascontiguousarray(feeds[name], dtype=dtype)
            if a.size != size:
                raise QnnBuildError(f"input '{name}' has {a.size} elements; expected shape {list(shape)}")
            if buf is not None:
                buf[...] = a if a.shape == shape else a.reshape(shape)  # converts to dtype
            else:
                self._in_ptrs[i] = a.ctypes.data
                large.append(a)
        outs = []
        for i, (_, dtype, shape, _, buf) in enumerate(self._out_plan):
            if buf is None:
                buf = np.empty(shape, dtype)
                self._out_ptrs[i] = buf.ctypes.data
            outs.append(buf)
        status = self._execute(self._graph, self._in_ptrs, self._out_ptrs)
        if status != 0:
            self._check(status, "execute")
        # a staged output's buffer is reused by the next run: the caller gets a copy
        return {name: (out.copy() if staged is not None else out)
                for (name, _, _, _, staged), out in zip(self._out_plan, outs)}

    def tensors(self, float_only: bool = True) -> dict[str, np.ndarray]:
        """Every activation after the last execute, as stored (a copy). Needs keep_tensors=True.
        float_only: just the float32 ones (what calibration reads)."""
        out = {}
        for i in range(self._rt.qnnb_graph_num_tensors(self._graph)):
            name, dtype, rank = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int32()
            dims, data = (ctypes.c_int64 * QNNB_MAX_RANK)(), ctypes.c_void_p()
            self._check(self._rt.qnnb_graph_tensor(self._graph, i, ctypes.byref(name), ctypes.byref(dtype),
                                                   ctypes.byref(rank), dims, ctypes.byref(data)), "tensor query")
            if not data.value or (float_only and dtype.value != 1) or dtype.value == 22:
                continue
            np_dtype = numpy_dtype(dtype.value)
            shape = tuple(dims[: rank.value])
            nbytes = int(np.prod(shape)) * np_dtype.itemsize
            raw = (ctypes.c_char * nbytes).from_address(data.value)
            out[name.value.decode("utf-8")] = np.frombuffer(raw, np_dtype).reshape(shape).copy()
        return out

    def set_profiling(self, level: str) -> None:
        """'off', 'basic' or 'detailed': at 'detailed' every run() times each node of the schedule
        (read with node_times_us()); below it the runtime takes no timestamps."""
        if level not in PROFILING_LEVELS:
            raise QnnBuildError(f"unknown profiling level '{level}' (choose from {', '.join(PROFILING_LEVELS)})")
        self._check(self._rt.qnnb_graph_set_profiling(self._graph, PROFILING_LEVELS[level]), "set profiling")

    def nodes(self) -> list[NodeInfo]:
        """The finalized schedule in execution order."""
        out = []
        for i in range(self._rt.qnnb_graph_num_nodes(self._graph)):
            name, op, fused, count = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int32()
            self._check(self._rt.qnnb_graph_node(self._graph, i, ctypes.byref(name), ctypes.byref(op),
                                                 ctypes.byref(fused), ctypes.byref(count)), "node query")
            shapes = []
            for k in range(count.value):
                index, rank = ctypes.c_int32(), ctypes.c_int32()
                dims = (ctypes.c_int64 * QNNB_MAX_RANK)()
                self._check(self._rt.qnnb_graph_node_output(self._graph, i, k, ctypes.byref(index)), "node query")
                if index.value < 0:
                    shapes.append(())
                    continue
                self._check(self._rt.qnnb_graph_tensor(self._graph, index.value, None, None, ctypes.byref(rank),
                                                       dims, None), "node query")
                shapes.append(tuple(dims[: rank.value]))
            out.append(NodeInfo(name.value.decode("utf-8", "replace"), op.value.decode(), fused.value.decode(),
                                tuple(shapes)))
        return out

    def node_times_us(self) -> np.ndarray:
        """Each node's time in the last run(), microseconds, in schedule order (needs 'detailed')."""
        count = self._rt.qnnb_graph_num_nodes(self._graph)
        ns = (ctypes.c_uint64 * max(count, 1))()
        self._check(self._rt.qnnb_graph_node_times(self._graph, ns, count), "node times")
        return np.frombuffer(ns, np.uint64, count).astype(np.float64) / 1e3

    def profile_nodes(self, node_us: list[list[float]]) -> list[dict]:
        """profile.json's `nodes`: the schedule with each node's time in every run (node_us: the
        node_times_us() of each run, in order)."""
        nodes = []
        for i, info in enumerate(self.nodes()):
            times = [run[i] for run in node_us]
            node = {"name": info.name, "op": info.op, "outputs": [list(s) for s in info.outputs],
                    "time_us": [round(t, 3) for t in times], "stats": stats(times)}
            if info.fused:
                node["fused"] = info.fused
            nodes.append(node)
        return nodes

    def encoding(self, name: str) -> None:
        """Outputs come back as floats, dequantized by the runtime: no code to compare in LSB."""
        return None

    def close(self) -> None:
        if getattr(self, "_graph", None):
            self._rt.qnnb_graph_free(self._graph)
            self._graph = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _library_precision(lib) -> str | None:
    """The precision a model library was converted at (None: built before libraries recorded it)."""
    try:
        symbol = lib.qnnb_model_precision  # a char array: its address is the string
    except AttributeError:
        return None
    return ctypes.string_at(ctypes.cast(symbol, ctypes.c_void_p).value).decode()


def _check_precision(model_lib, actual: str | None, expected: str | None) -> None:
    """A step told which precision to expect refuses a library converted at another, before compose."""
    if not expected:
        return
    want = parse_precision(expected).name
    if actual != want:
        raise QnnBuildError(f"{model_lib}: this model library was converted at {actual or 'an unrecorded precision'}, "
                            f"not {want} (convert again with --precision {want})")


def load(model_lib, backend: str = "cpu", threads: int = 1, runtime: str | None = None) -> Model:
    return Model(model_lib, backend, threads, runtime)


def load_context(context, backend: str = "cpu", threads: int = 1, runtime: str | None = None) -> Model:
    """A context binary (a path or its bytes) ready to execute on `backend`."""
    return Model(None, backend, threads, runtime, context=context)
