import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def pos(*shape):
    return (rng.random(shape) + 0.5).astype(np.float32)


CASES = [
    # Softmax / LogSoftmax: opset 13 (one axis) and the older coerce-to-2-D semantics.
    OpCase("Softmax", {"x": r(3, 10)}, id="softmax_2d_default"),
    OpCase("Softmax", {"x": r(2, 3, 4, 5)}, attrs={"axis": 1}, id="softmax_axis1_strided"),
    OpCase("Softmax", {"x": r(2, 300, 3)}, attrs={"axis": 1}, id="softmax_axis1_long_strided"),
    OpCase("Softmax", {"x": r(2, 3, 4)}, attrs={"axis": -2}, id="softmax_neg_axis"),
    OpCase("Softmax", {"x": r(2, 3, 4)}, attrs={"axis": 0}, id="softmax_axis0"),
    OpCase("Softmax", {"x": r(4, 1000, scale=10.0)}, id="softmax_large_values"),
    OpCase("Softmax", {"x": r(2, 3, 4)}, opset=11, id="softmax_opset11_default_axis1_coerced"),
    OpCase("Softmax", {"x": r(2, 3, 4)}, attrs={"axis": 2}, opset=11, id="softmax_opset11_axis2"),
    OpCase("Softmax", {"x": r(2, 3, 4)}, attrs={"axis": 0}, opset=9, id="softmax_opset9_axis0"),
    OpCase("Softmax", {"x": r(2, 3, 4)}, attrs={"axis": -1}, opset=7, id="softmax_opset7_neg_axis"),
    OpCase("LogSoftmax", {"x": r(3, 10)}, id="logsoftmax_2d"),
    OpCase("LogSoftmax", {"x": r(2, 3, 4, 5)}, attrs={"axis": 1}, id="logsoftmax_axis1_strided"),
    OpCase("LogSoftmax", {"x": r(2, 3, 4)}, opset=11, id="logsoftmax_opset11_coerced"),
    OpCase("LogSoftmax", {"x": r(4, 1000, scale=10.0)}, rtol=1e-4, id="logsoftmax_large_values"),
    # LayerNormalization: axes, epsilon, optional bias, Mean/InvStdDev outputs, broadcast scale.
    OpCase("LayerNormalization", {"x": r(2, 5, 8)}, consts={"s": r(8), "b": r(8)}, id="layernorm_last_axis"),
    OpCase("LayerNormalization", {"x": r(2, 5, 8)}, consts={"s": r(5, 8), "b": r(5, 8)},
           attrs={"axis": 1, "epsilon": 1e-3}, id="layernorm_axis1_eps"),
    OpCase("LayerNormalization", {"x": r(2, 5, 8)}, consts={"s": r(8)}, id="layernorm_no_bias"),
    OpCase("LayerNormalization", {"x": r(2, 5, 8), "s": r(8), "b": r(8)}, id="layernorm_runtime_scale"),
    OpCase("LayerNormalization", {"x": r(2, 5, 8)}, consts={"s": r(8), "b": r(8)}, attrs={"axis": -2},
           id="layernorm_neg_axis_broadcast_params"),
    OpCase("LayerNormalization", {"x": r(3, 4, 6)}, consts={"s": r(6), "b": r(6)}, n_outputs=3,
           id="layernorm_mean_invstd"),
    OpCase("LayerNormalization", {"x": r(4, 768) + 5.0}, consts={"s": r(768), "b": r(768)}, rtol=1e-4,
           atol=1e-5, id="layernorm_wide_offset"),
    # InstanceNormalization.
    OpCase("InstanceNormalization", {"x": r(2, 3, 4, 5)}, consts={"s": r(3), "b": r(3)}, id="instancenorm_4d"),
    OpCase("InstanceNormalization", {"x": r(2, 3, 7)}, consts={"s": r(3), "b": r(3)},
           attrs={"epsilon": 1e-2}, id="instancenorm_3d_eps"),
    OpCase("InstanceNormalization", {"x": r(1, 2, 2, 3, 4)}, consts={"s": r(2), "b": r(2)}, id="instancenorm_5d"),
    OpCase("GroupNormalization", {"x": r(2, 6, 4, 5)}, consts={"s": r(3), "b": r(3)}, attrs={"num_groups": 3},
           opset=18, id="groupnorm_per_group_params"),
    OpCase("GroupNormalization", {"x": r(1, 8, 9)}, consts={"s": r(8), "b": r(8)}, attrs={"num_groups": 2,
           "epsilon": 1e-3}, opset=21, id="groupnorm_opset21_per_channel"),
    # LRN: odd and even sizes, the default and other betas.
    OpCase("LRN", {"x": r(2, 7, 4, 5)}, attrs={"size": 3}, id="lrn_default"),
    OpCase("LRN", {"x": r(2, 7, 4, 5)}, attrs={"size": 5, "alpha": 2e-4, "beta": 0.5, "bias": 2.0}, id="lrn_beta_half"),
    OpCase("LRN", {"x": r(1, 16, 20, 20)}, attrs={"size": 5, "alpha": 1e-3, "beta": 0.9}, id="lrn_size5_beta"),
    # BatchNormalization that cannot fold into a Conv/Gemm: Mul + Add with precomputed constants.
    OpCase("BatchNormalization", {"x": r(2, 3, 4, 5)},
           consts={"g": r(3), "b": r(3), "m": r(3), "v": pos(3)}, id="batchnorm_4d"),
    OpCase("BatchNormalization", {"x": r(4, 6)},
           consts={"g": r(6), "b": r(6), "m": r(6), "v": pos(6)}, attrs={"epsilon": 1e-2}, id="batchnorm_2d_eps"),
    OpCase("BatchNormalization", {"x": r(2, 3, 5)},
           consts={"g": r(3), "b": r(3), "m": r(3), "v": pos(3)}, opset=9, id="batchnorm_opset9"),
    # A BatchNormalization of constants folds at convert time, in inference mode (onnx's opset-9
    # reference would use the batch statistics: qnn_build/ir/reference.py).
    OpCase("BatchNormalization", {}, consts={"x": r(2, 3, 5), "g": r(3), "b": r(3), "m": r(3), "v": pos(3)},
           attrs={"momentum": 0.9}, opset=9, id="batchnorm_opset9_constant_folds_in_inference_mode"),
    OpCase("BatchNormalization", {"x": r(2, 3, 2, 2)},
           consts={"g": r(3), "b": r(3), "m": r(3), "v": pos(3)}, opset=7, id="batchnorm_opset7"),
    OpCase("BatchNormalization", {"x": r(2, 3, 4, 5), "g": r(3), "b": r(3), "m": r(3), "v": pos(3)},
           attrs={"epsilon": 1e-3}, id="batchnorm_runtime_params"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_norm(case):
    check_op(case)


def test_lrn_even_size():
    """onnxruntime refuses even sizes; the ONNX spec's window is [c - floor((size-1)/2), c + ceil((size-1)/2)]."""
    from onnx_backend import run_onnx
    from .opcase import make_model
    x = r(2, 6, 3, 3)
    size, alpha, beta, bias = 4, 0.5, 0.8, 1.5
    case = OpCase("LRN", {"x": x}, attrs={"size": size, "alpha": alpha, "beta": beta, "bias": bias})
    got = run_onnx(make_model(case), case.inputs)["y0"]
    sq = np.zeros_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1], c + size // 2 + 1)
        sq[:, c] = (x[:, lo:hi] ** 2).sum(axis=1)
    np.testing.assert_allclose(got, x / (bias + alpha / size * sq) ** beta, rtol=1e-5, atol=1e-6)


def test_batchnorm_training_refused():
    from qnn_build.errors import ConvertError
    from onnx_backend import run_onnx
    from .opcase import make_model
    case = OpCase("BatchNormalization", {"x": r(2, 3, 4)},
                  consts={"g": r(3), "b": r(3), "m": r(3), "v": pos(3)}, attrs={"training_mode": 1}, n_outputs=3, opset=15)
    with pytest.raises(ConvertError, match="training_mode"):
        run_onnx(make_model(case), case.inputs)
