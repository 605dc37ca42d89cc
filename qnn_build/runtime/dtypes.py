"""The runtime's dtype codes (qnnb.h's qnnb_dtype, which are ONNX's TensorProto codes) as numpy
dtypes. A table rather than onnx.helper: importing onnx costs about a CPU-second, which every step
that only loads a library or reads a context binary (net-run, test, context-binary) paid for this."""

import numpy as np

NUMPY_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
                9: np.bool_, 10: np.float16}


def numpy_dtype(code: int) -> np.dtype:
    """The numpy dtype of a runtime dtype code; KeyError or ValueError for a code ONNX does not have."""
    if code in NUMPY_DTYPES:
        return np.dtype(NUMPY_DTYPES[code])
    from onnx import helper  # int4 (an ml_dtypes type) and any code not in the table

    return np.dtype(helper.tensor_dtype_to_np_dtype(code))
