"""The tensor dtypes of the runtime's C API (qnnb_dtype in qnnb.h): what a graph may hold, how
model.cpp names each, and how model.json spells it."""

import numpy as np

from ..data.dtypes import RUNTIME_DTYPES

DTYPE_ENUM = {dtype: name for dtype, name in RUNTIME_DTYPES.values()}


def supported_dtype(dtype) -> bool:
    return np.dtype(dtype) in DTYPE_ENUM


def dtype_name(dtype) -> str:
    return np.dtype(dtype).name if np.dtype(dtype) != np.bool_ else "bool"
