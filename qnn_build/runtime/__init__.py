"""Running model libraries from Python: the ctypes binding to the runtime's C API (compose, finalize,
execute, serialize and load context binaries). The qnn-net-run file formats are in qnn_build/data.

    import qnn_build.runtime as rt
    model = rt.load("out/digits_cnn/fp32/libmodel.so", backend="cpu")
    outputs = model.run({"image": x})        # dict of numpy arrays in, dict out
    open("model.ctx", "wb").write(model.context_binary())
    model = rt.load_context("model.ctx", backend="cpu")   # no model library needed
"""

from .binding import IOInfo, Model, load, load_context, runtime_library

__all__ = ["IOInfo", "Model", "load", "load_context", "runtime_library"]
