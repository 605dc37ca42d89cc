"""The tensor dtypes of the runtime's C API (qnnb_dtype in qnnb.h): what a graph may hold, how
model.cpp names each, and how model.json spells it."""

import numpy as np

DTYPE_ENUM = {
    np.dtype(np.float32): "QNNB_FLOAT32", np.dtype(np.uint8): "QNNB_UINT8", np.dtype(np.int8): "QNNB_INT8",
    np.dtype(np.uint16): "QNNB_UINT16", np.dtype(np.int16): "QNNB_INT16", np.dtype(np.int32): "QNNB_INT32",
    np.dtype(np.int64): "QNNB_INT64", np.dtype(np.bool_): "QNNB_BOOL", np.dtype(np.float16): "QNNB_FLOAT16",
}


def supported_dtype(dtype) -> bool:
    return np.dtype(dtype) in DTYPE_ENUM


def dtype_name(dtype) -> str:
    return np.dtype(dtype).name if np.dtype(dtype) != np.bool_ else "bool"
