"""The runtime's tensor dtypes (qnnb_dtype in qnnb.h, whose codes are ONNX's TensorProto codes): each
code's numpy dtype and the enum name model.cpp spells. A table rather than onnx.helper: importing onnx
costs about a CPU-second, which every step that only loads a library or reads a context binary
(net-run, test, context-binary) would pay."""

import numpy as np

RUNTIME_DTYPES = {  # code: (numpy dtype, qnnb.h's name); QNNB_INT4 (22) is packed weights only
    1: (np.dtype(np.float32), "QNNB_FLOAT32"), 2: (np.dtype(np.uint8), "QNNB_UINT8"),
    3: (np.dtype(np.int8), "QNNB_INT8"), 4: (np.dtype(np.uint16), "QNNB_UINT16"),
    5: (np.dtype(np.int16), "QNNB_INT16"), 6: (np.dtype(np.int32), "QNNB_INT32"),
    7: (np.dtype(np.int64), "QNNB_INT64"), 9: (np.dtype(np.bool_), "QNNB_BOOL"),
    10: (np.dtype(np.float16), "QNNB_FLOAT16"),
}


def numpy_dtype(code: int) -> np.dtype:
    """The numpy dtype of a runtime dtype code; KeyError or ValueError for a code ONNX does not have."""
    if code in RUNTIME_DTYPES:
        return RUNTIME_DTYPES[code][0]
    from onnx import helper  # int4 (an ml_dtypes type) and any code not in the table

    return np.dtype(helper.tensor_dtype_to_np_dtype(code))
