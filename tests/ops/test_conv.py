import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def conv(x, w, b=None, id="", w_input=False, **attrs):
    """A Conv row: weights (and bias) as initializers, or as graph inputs with w_input."""
    consts = {"w": w} if b is None else {"w": w, "b": b}
    inputs = {"x": x}
    if w_input:
        inputs, consts = {**inputs, **consts}, {}
    return OpCase("Conv", inputs, attrs, consts=consts, rtol=1e-4, atol=1e-4, id=id)


def convt(x, w, b=None, id="", **attrs):
    consts = {"w": w} if b is None else {"w": w, "b": b}
    return OpCase("ConvTranspose", {"x": x}, attrs, consts=consts, rtol=1e-4, atol=1e-4, id=id)


CONV_CASES = [
    # 2D basics and each path: im2col, direct, pointwise, depthwise.
    conv(r(1, 3, 7, 7), r(4, 3, 3, 3), r(4), id="conv2d_small_im2col"),
    conv(r(1, 3, 7, 7), r(4, 3, 3, 3), pads=[1, 1, 1, 1], id="conv2d_pad_no_bias"),
    conv(r(2, 32, 9, 11), r(24, 32, 3, 3), r(24), pads=[1, 1, 1, 1], id="conv2d_direct"),
    conv(r(1, 32, 9, 11), r(8, 32, 3, 3), r(8), id="conv2d_direct_no_pad"),
    conv(r(1, 32, 10, 10), r(8, 32, 5, 3), r(8), pads=[2, 0, 1, 3], id="conv2d_direct_asym_pads"),
    conv(r(1, 32, 12, 12), r(8, 32, 3, 3), r(8), pads=[2, 2, 2, 2], dilations=[2, 2], id="conv2d_direct_dilated"),
    conv(r(1, 64, 30, 30), r(16, 64, 3, 3), r(16), pads=[1, 1, 1, 1], id="conv2d_direct_multi_block"),
    conv(r(2, 32, 12, 11), r(24, 32, 3, 3), r(24), pads=[1, 1, 1, 1], strides=[2, 2], id="conv2d_direct_s2"),
    conv(r(1, 16, 13, 14), r(8, 16, 5, 4), r(8), pads=[2, 1, 0, 2], strides=[3, 2], dilations=[1, 2],
         id="conv2d_direct_s3x2_dilated"),
    conv(r(1, 16, 11, 11), r(8, 16, 1, 1), r(8), strides=[2, 2], id="conv2d_direct_1x1_s2"),
    conv(r(2, 16, 6, 5), r(12, 16, 1, 1), r(12), id="conv2d_pointwise"),
    # batched: a few positions per image, several images, one product (silero's sequence form);
    # one input channel with a long kernel takes the GEMM paths (silero's STFT), not depthwise rows.
    conv(r(8, 20, 6), r(24, 20, 3), r(24), pads=[1, 1], strides=[2], id="conv1d_batched"),
    conv(r(3, 5, 4, 3), r(7, 5, 2, 2), id="conv2d_batched_no_bias"),
    conv(r(3, 1, 640), r(40, 1, 256), strides=[128], id="conv1d_long_single_channel_batched"),
    conv(r(1, 1, 576), r(40, 1, 256), r(40), strides=[128], id="conv1d_long_single_channel"),
    conv(r(1, 8, 6, 70), r(8, 1, 5, 5), r(8), group=8, pads=[2, 2, 2, 2], id="conv2d_depthwise_5x5_vector_blocks"),
    conv(r(1, 16, 70, 70), r(8, 16, 1, 1), r(8), id="conv2d_pointwise_blocks"),
    conv(r(1, 8, 9, 9), r(6, 8, 1, 1), r(6), strides=[2, 2], id="conv2d_1x1_strided"),
    conv(r(1, 8, 9, 9), r(6, 8, 1, 1), pads=[1, 0, 0, 1], id="conv2d_1x1_padded"),
    conv(r(1, 3, 11, 10), r(5, 3, 3, 3), r(5), strides=[2, 3], pads=[1, 1, 1, 1], id="conv2d_strides"),
    conv(r(1, 3, 12, 12), r(5, 3, 3, 2), strides=[2, 2], dilations=[2, 3], pads=[2, 1, 0, 2], id="conv2d_strided_dilated"),
    conv(r(1, 3, 40, 40), r(8, 3, 7, 7), r(8), strides=[2, 2], pads=[3, 3, 3, 3], id="conv2d_stem_blocks"),
    conv(r(1, 4, 7, 7), r(4, 4, 3, 3), auto_pad="SAME_UPPER", strides=[2, 2], id="conv2d_same_upper"),
    conv(r(1, 4, 8, 8), r(4, 4, 4, 4), auto_pad="SAME_LOWER", strides=[3, 3], id="conv2d_same_lower"),
    conv(r(1, 4, 7, 7), r(4, 4, 3, 3), auto_pad="VALID", strides=[2, 2], id="conv2d_valid"),
    conv(r(1, 32, 7, 7), r(32, 32, 3, 3), r(32), auto_pad="SAME_UPPER", id="conv2d_same_direct"),
    # groups and depthwise
    conv(r(1, 8, 6, 6), r(6, 4, 3, 3), r(6), group=2, pads=[1, 1, 1, 1], id="conv2d_group2"),
    conv(r(1, 64, 8, 8), r(64, 32, 3, 3), r(64), group=2, pads=[1, 1, 1, 1], id="conv2d_group2_direct"),
    conv(r(2, 8, 9, 9), r(8, 1, 3, 3), r(8), group=8, pads=[1, 1, 1, 1], id="conv2d_depthwise"),
    conv(r(1, 8, 9, 9), r(8, 1, 3, 3), group=8, strides=[2, 2], pads=[1, 1, 1, 1], id="conv2d_depthwise_s2"),
    conv(r(1, 8, 12, 12), r(8, 1, 5, 5), r(8), group=8, strides=[2, 2], pads=[2, 2, 1, 1], id="conv2d_depthwise_5x5_s2"),
    conv(r(1, 8, 12, 12), r(8, 1, 7, 7), r(8), group=8, pads=[3, 3, 3, 3], id="conv2d_depthwise_7x7"),
    conv(r(1, 8, 12, 12), r(8, 1, 3, 3), r(8), group=8, strides=[3, 3], dilations=[2, 2], id="conv2d_depthwise_generic"),
    conv(r(1, 4, 9, 9), r(8, 1, 5, 5), r(8), group=4, dilations=[2, 1], pads=[4, 2, 3, 2], id="conv2d_depthwise_mult2"),
    conv(r(1, 8, 8, 8), r(8, 1, 3, 3), r(8), group=8, auto_pad="SAME_UPPER", strides=[2, 2], id="conv2d_depthwise_same"),
    # 1D and 3D
    conv(r(2, 5, 20), r(6, 5, 3), r(6), pads=[1, 2], strides=[2], id="conv1d"),
    conv(r(1, 32, 50), r(16, 32, 5), r(16), pads=[2, 2], dilations=[2], id="conv1d_direct"),
    conv(r(1, 32, 1200), r(16, 32, 3), r(16), pads=[1, 1], strides=[2], id="conv1d_direct_long_s2"),
    conv(r(1, 6, 20), r(6, 1, 4), group=6, pads=[3, 0], id="conv1d_depthwise"),
    conv(r(1, 2, 5, 6, 7), r(3, 2, 3, 3, 3), r(3), pads=[1, 0, 1, 1, 1, 0], strides=[1, 2, 2], id="conv3d"),
    conv(r(1, 4, 4, 5, 6), r(4, 2, 2, 2, 2), group=2, dilations=[2, 1, 2], id="conv3d_group"),
    # weights given as graph inputs (onnx node tests do this), and an old opset
    conv(r(1, 32, 6, 6), r(8, 32, 3, 3), r(8), w_input=True, pads=[1, 1, 1, 1], id="conv2d_weight_input_direct"),
    conv(r(1, 3, 6, 6), r(4, 3, 3, 3), w_input=True, strides=[2, 2], id="conv2d_weight_input"),
    OpCase("Conv", {"x": r(1, 2, 5, 5)}, {"kernel_shape": [3, 3]}, consts={"w": r(3, 2, 3, 3)}, opset=7,
           rtol=1e-4, atol=1e-4, id="conv2d_opset7"),
]

CONVT_CASES = [
    convt(r(1, 3, 4, 4), r(3, 2, 3, 3), r(2), id="convt2d"),
    convt(r(2, 4, 5, 5), r(4, 3, 3, 3), r(3), strides=[2, 2], pads=[1, 1, 1, 1], id="convt2d_strided_pads"),
    convt(r(1, 4, 5, 4), r(4, 3, 4, 4), strides=[2, 2], pads=[1, 1, 1, 1], id="convt2d_4x4_s2"),
    convt(r(1, 3, 4, 4), r(3, 2, 3, 3), strides=[3, 2], output_padding=[1, 1], id="convt2d_output_padding"),
    convt(r(1, 3, 4, 5), r(3, 2, 3, 3), strides=[2, 2], dilations=[2, 2], pads=[1, 2, 0, 1], id="convt2d_dilated"),
    convt(r(1, 3, 4, 4), r(3, 2, 3, 3), strides=[3, 2], output_shape=[10, 8], id="convt2d_output_shape"),
    convt(r(1, 3, 4, 4), r(3, 2, 3, 3), strides=[2, 2], output_shape=[9, 8], id="convt2d_output_shape_odd"),
    convt(r(1, 3, 4, 4), r(3, 2, 3, 3), strides=[2, 2], auto_pad="SAME_UPPER", id="convt2d_same_upper"),
    convt(r(1, 3, 4, 4), r(3, 2, 3, 3), strides=[2, 2], auto_pad="SAME_LOWER", id="convt2d_same_lower"),
    convt(r(1, 6, 4, 4), r(6, 2, 3, 3), r(4), group=2, strides=[2, 2], id="convt2d_group2"),
    convt(r(1, 4, 3, 3), r(4, 1, 2, 2), r(4), group=4, strides=[2, 2], id="convt2d_depthwise"),
    convt(r(1, 16, 20, 20), r(16, 8, 4, 4), r(8), strides=[2, 2], pads=[1, 1, 1, 1], id="convt2d_blocks"),
    convt(r(2, 3, 7), r(3, 4, 3), r(4), strides=[2], pads=[1, 0], id="convt1d"),
    convt(r(1, 2, 3, 4, 5), r(2, 3, 3, 3, 3), r(3), strides=[1, 2, 2], pads=[1, 0, 1, 0, 1, 1], id="convt3d"),
]


@pytest.mark.parametrize("case", CONV_CASES + CONVT_CASES, ids=str)
def test_conv(case):
    check_op(case)


# One row per packed_gemm path (direct, pointwise, im2col, batched) with partial row and column tiles.
ISA_CASES = [c for c in CONV_CASES if c.id in ("conv2d_direct", "conv2d_pointwise_blocks", "conv2d_small_im2col",
                                               "conv1d_batched", "conv2d_group2_direct")]


@pytest.mark.parametrize("case", ISA_CASES, ids=str)
def test_conv_paths_give_the_same_bytes(case, monkeypatch):
    """The x86-64 baseline tiles (QNNB_ISA=x86-64-v3, read when the weights are packed) give the bytes of
    the AVX-512 ones where the CPU has them, and two threads the bytes of one (core/packed_gemm.h)."""
    from onnx_backend import run_onnx
    from .opcase import make_model
    model = make_model(case)
    here = run_onnx(model, case.inputs, threads=1)["y0"]
    np.testing.assert_array_equal(run_onnx(model, case.inputs, threads=2)["y0"], here)
    monkeypatch.setenv("QNNB_ISA", "x86-64-v3")
    np.testing.assert_array_equal(run_onnx(model, case.inputs, threads=1)["y0"], here)
