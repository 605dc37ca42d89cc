import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pool(op, x, id, opset=19, **attrs):
    return OpCase(op, {"x": x}, attrs, opset=opset, id=id)


CASES = [
    # MaxPool
    pool("MaxPool", r(1, 3, 8, 8), "max2d_default", kernel_shape=[2, 2]),
    pool("MaxPool", r(2, 4, 9, 9), "max2d_3x3_s2_pads", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    pool("MaxPool", r(1, 3, 10, 9), "max2d_asym_pads", kernel_shape=[3, 2], strides=[1, 2], pads=[2, 0, 1, 1]),
    pool("MaxPool", r(1, 3, 10, 10), "max2d_dilations", kernel_shape=[2, 3], dilations=[2, 3], strides=[1, 1]),
    pool("MaxPool", r(1, 3, 10, 11), "max2d_ceil", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    # A ceil_mode window that would start in the end padding is dropped: onnxruntime always does,
    # ONNX shape inference from opset 22 on (before, it keeps one more output than onnxruntime).
    pool("MaxPool", r(1, 2, 5, 5), "max2d_ceil_last_window_dropped", opset=22, kernel_shape=[3, 3], strides=[3, 3],
         pads=[1, 1, 1, 1], ceil_mode=1),
    pool("MaxPool", r(1, 3, 7, 8), "max2d_same_upper", kernel_shape=[3, 2], strides=[2, 3], auto_pad="SAME_UPPER"),
    pool("MaxPool", r(1, 3, 7, 8), "max2d_same_lower", kernel_shape=[3, 2], strides=[2, 3], auto_pad="SAME_LOWER"),
    pool("MaxPool", r(1, 3, 7, 8), "max2d_valid", kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID"),
    pool("MaxPool", r(1, 3, 13, 13), "max2d_stride3", kernel_shape=[4, 4], strides=[3, 3], pads=[1, 2, 1, 2]),
    pool("MaxPool", r(2, 3, 20), "max1d", kernel_shape=[3], strides=[2], pads=[1, 1]),
    pool("MaxPool", r(1, 2, 6, 7, 8), "max3d", kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0]),
    pool("MaxPool", r(1, 2, 9, 9, 9), "max3d_dilations_ceil", kernel_shape=[2, 2, 2], strides=[2, 2, 2],
         dilations=[2, 2, 2], ceil_mode=1),
    pool("MaxPool", (rng.random((1, 3, 8, 8)) * 255).astype(np.uint8), "max2d_uint8", kernel_shape=[3, 3],
         pads=[1, 1, 1, 1]),
    pool("MaxPool", (rng.random((1, 3, 8, 8)) * 255 - 128).astype(np.int8), "max2d_int8", kernel_shape=[2, 2],
         strides=[2, 2]),
    pool("MaxPool", r(1, 3, 8, 8), "max2d_opset8", opset=8, kernel_shape=[2, 2], strides=[2, 2]),
    # AveragePool
    pool("AveragePool", r(1, 3, 8, 8), "avg2d_default", kernel_shape=[2, 2]),
    pool("AveragePool", r(2, 4, 9, 9), "avg2d_pads", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    pool("AveragePool", r(2, 4, 9, 9), "avg2d_pads_include", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
         count_include_pad=1),
    pool("AveragePool", r(1, 3, 10, 9), "avg2d_asym_pads_include", kernel_shape=[3, 2], strides=[1, 2],
         pads=[2, 0, 1, 1], count_include_pad=1),
    pool("AveragePool", r(1, 3, 10, 11), "avg2d_ceil", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    pool("AveragePool", r(1, 3, 7, 7), "avg2d_ceil_include", kernel_shape=[3, 3], strides=[3, 3], ceil_mode=1,
         count_include_pad=1),
    pool("AveragePool", r(1, 2, 5, 5), "avg2d_ceil_last_window_dropped", opset=22, kernel_shape=[3, 3],
         strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
    pool("AveragePool", r(1, 3, 6, 6), "avg2d_ceil_pads_include", kernel_shape=[3, 3], strides=[2, 2],
         pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
    pool("AveragePool", r(1, 3, 12, 12), "avg2d_dilations", kernel_shape=[2, 2], dilations=[2, 2], strides=[1, 1]),
    pool("AveragePool", r(1, 3, 12, 12), "avg2d_dilations_pads_include", kernel_shape=[3, 3], dilations=[2, 2],
         strides=[2, 2], pads=[1, 1, 2, 2], count_include_pad=1),
    pool("AveragePool", r(1, 3, 7, 8), "avg2d_same_upper", kernel_shape=[3, 2], strides=[2, 3], auto_pad="SAME_UPPER"),
    pool("AveragePool", r(1, 3, 7, 8), "avg2d_same_lower", kernel_shape=[3, 2], strides=[2, 3], auto_pad="SAME_LOWER"),
    pool("AveragePool", r(1, 3, 7, 8), "avg2d_same_lower_include", kernel_shape=[3, 3], strides=[2, 2],
         auto_pad="SAME_LOWER", count_include_pad=1),
    pool("AveragePool", r(1, 3, 30, 30), "avg2d_3x3_s1_wide", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    pool("AveragePool", r(2, 3, 20), "avg1d", kernel_shape=[4], strides=[3], pads=[1, 2], count_include_pad=1),
    pool("AveragePool", r(1, 2, 6, 7, 8), "avg3d", kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0]),
    pool("AveragePool", r(1, 2, 9, 9, 9), "avg3d_dilations_ceil_include", kernel_shape=[2, 2, 2],
         strides=[2, 2, 2], dilations=[2, 2, 2], ceil_mode=1, count_include_pad=1),
    pool("AveragePool", r(1, 3, 8, 8), "avg2d_opset7", opset=7, kernel_shape=[2, 2], strides=[2, 2]),
    # LpPool
    pool("LpPool", r(1, 3, 8, 8), "lp2d_default", kernel_shape=[2, 2]),
    pool("LpPool", r(1, 3, 9, 9), "lp2d_p3_pads_strides", p=3, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    pool("LpPool", r(1, 3, 9, 9), "lp2d_p1_same_upper", p=1, kernel_shape=[2, 3], auto_pad="SAME_UPPER"),
    pool("LpPool", r(1, 3, 10, 10), "lp2d_dilations", kernel_shape=[2, 2], dilations=[2, 2]),
    pool("LpPool", r(2, 3, 20), "lp1d", kernel_shape=[3], strides=[2]),
    pool("LpPool", r(1, 3, 8, 8), "lp2d_opset11", opset=11, kernel_shape=[2, 2], strides=[2, 2]),
    # Global pools
    pool("GlobalAveragePool", r(2, 5, 7, 7), "global_avg2d"),
    pool("GlobalAveragePool", r(1, 3, 37), "global_avg1d"),
    pool("GlobalAveragePool", r(1, 3, 4, 5, 6), "global_avg3d"),
    pool("GlobalMaxPool", r(2, 5, 7, 7), "global_max2d"),
    pool("GlobalMaxPool", r(1, 3, 4, 5, 6), "global_max3d"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pool(case):
    check_op(case)
