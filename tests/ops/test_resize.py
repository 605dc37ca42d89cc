import numpy as np
import pytest

from onnx.reference import ReferenceEvaluator

from .opcase import OpCase, make_model
from .test_movement import check_unpinned, run_unpinned

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f32(*values):
    return np.array(values, dtype=np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


EMPTY = np.array([], dtype=np.float32)


def resize(x, attrs=None, scales=None, sizes=None, roi=None, opset=19, id="", **kw):
    """A Resize row (opset 11+): roi, scales and sizes as initializers, absent ones left out."""
    consts = {"roi": EMPTY if roi is None else roi}
    order = ["x", "roi"]
    if scales is not None:
        consts["scales"] = scales
        order.append("scales")
    if sizes is not None:
        if scales is None:
            order.append("")
        consts["sizes"] = sizes
        order.append("sizes")
    return OpCase("Resize", {"x": x}, attrs=attrs or {}, consts=consts, input_order=order, opset=opset, id=id, **kw)


CASES = [
    # Nearest: every nearest_mode, coordinate modes, scales and sizes, up and down.
    resize(r(1, 2, 4, 5), {"mode": "nearest"}, scales=f32(1, 1, 2, 3), id="nearest_up_scales"),
    resize(r(1, 2, 6, 8), {"mode": "nearest"}, scales=f32(1, 1, 0.6, 0.6), id="nearest_down_scales"),
    resize(r(1, 1, 4, 4), {"mode": "nearest"}, sizes=i64(1, 1, 7, 9), id="nearest_up_sizes"),
    resize(r(1, 1, 5, 7), {"mode": "nearest"}, sizes=i64(1, 1, 3, 2), id="nearest_down_sizes"),
    resize(r(1, 1, 4, 4), {"mode": "nearest", "nearest_mode": "round_prefer_ceil",
                           "coordinate_transformation_mode": "asymmetric"}, sizes=i64(1, 1, 8, 8),
           id="nearest_round_prefer_ceil_asymmetric"),
    resize(r(1, 1, 4, 4), {"mode": "nearest", "nearest_mode": "floor",
                           "coordinate_transformation_mode": "align_corners"}, sizes=i64(1, 1, 8, 8),
           id="nearest_floor_align_corners"),
    resize(r(1, 1, 4, 4), {"mode": "nearest", "nearest_mode": "ceil"}, sizes=i64(1, 1, 8, 8),
           id="nearest_ceil_half_pixel"),
    resize(r(1, 1, 5, 6), {"mode": "nearest", "coordinate_transformation_mode": "pytorch_half_pixel"},
           sizes=i64(1, 1, 8, 1), id="nearest_pytorch_half_pixel"),
    # onnxruntime spells the spec's tf_half_pixel_for_nearest "tf_half_pixel_for_nn"; the rule takes both.
    resize(r(1, 1, 3, 5), {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
           scales=f32(1, 1, 2.5, 1.5), opset=11, id="nearest_tf_half_pixel_for_nn"),
    resize(r(2, 3, 4), {"mode": "nearest"}, scales=f32(1, 2, 2), id="nearest_3d"),
    resize(r(7), {"mode": "nearest"}, scales=f32(2.0), id="nearest_1d"),
    resize((r(1, 2, 3, 4) * 100).astype(np.int32), {"mode": "nearest"}, scales=f32(1, 1, 2, 2), id="nearest_int32"),
    resize((r(1, 2, 3, 4) * 100).astype(np.int8), {"mode": "nearest"}, scales=f32(1, 1, 1.5, 2), id="nearest_int8"),
    resize(rng.integers(0, 255, (1, 3, 4, 4)).astype(np.uint8), {"mode": "nearest"}, scales=f32(1, 1, 0.5, 2),
           id="nearest_uint8"),
    resize(r(1, 1, 4, 4), {"mode": "nearest", "axes": [3, 2]}, scales=f32(3, 2), id="nearest_axes_3_2"),
    resize(r(1, 1, 4, 6), {"mode": "nearest", "keep_aspect_ratio_policy": "not_larger"}, sizes=i64(1, 1, 7, 7),
           id="nearest_not_larger"),
    resize(r(1, 1, 4, 6), {"mode": "nearest", "keep_aspect_ratio_policy": "not_smaller", "axes": [2, 3]},
           sizes=i64(7, 7), id="nearest_not_smaller"),
    # Linear: every coordinate mode, up and down, outer dims with scale 1 and not.
    resize(r(1, 2, 4, 5), {"mode": "linear"}, scales=f32(1, 1, 2, 2), id="linear_up_half_pixel"),
    resize(r(2, 3, 8, 9), {"mode": "linear"}, scales=f32(1, 1, 0.6, 0.5), id="linear_down_half_pixel"),
    resize(r(1, 1, 4, 5), {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
           scales=f32(1, 1, 2, 3), id="linear_align_corners"),
    resize(r(1, 1, 4, 5), {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
           scales=f32(1, 1, 2.5, 2), id="linear_asymmetric"),
    resize(r(1, 1, 4, 8), {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
           sizes=i64(1, 1, 3, 1), id="linear_pytorch_half_pixel"),
    resize(r(1, 1, 5, 6), {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
           scales=f32(1, 1, 1.7, 2.3), id="linear_half_pixel_symmetric"),
    resize(r(1, 3, 40, 1), {"mode": "linear"}, sizes=i64(1, 3, 93, 1), id="linear_one_axis_only"),
    resize(r(6, 7), {"mode": "linear"}, scales=f32(2, 0.5), id="linear_2d"),
    resize(r(3, 4, 5), {"mode": "linear"}, scales=f32(2, 1.5, 2), id="linear_3d_trilinear"),
    resize(r(1, 2, 40, 64), {"mode": "linear"}, scales=f32(1, 1, 2, 2), id="linear_large"),
    resize(r(1, 1, 4, 5), {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
           sizes=i64(1, 1, 3, 3), roi=f32(0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7), id="linear_tf_crop_and_resize"),
    resize(r(1, 1, 4, 5), {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                           "extrapolation_value": 10.0}, sizes=i64(1, 1, 3, 3),
           roi=f32(0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7), id="linear_tf_crop_and_resize_extrapolation"),
    resize(r(1, 1, 4, 5), {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize",
                           "extrapolation_value": -3.0}, sizes=i64(1, 1, 5, 4),
           roi=f32(0, 0, -0.3, 0.6, 1, 1, 1.2, 1.7), id="nearest_tf_crop_and_resize"),
    # Cubic.
    resize(r(1, 1, 4, 4), {"mode": "cubic"}, scales=f32(1, 1, 2, 2), rtol=1e-4, atol=1e-5, id="cubic_up"),
    resize(r(1, 2, 8, 8), {"mode": "cubic"}, scales=f32(1, 1, 0.8, 0.6), rtol=1e-4, atol=1e-5, id="cubic_down"),
    resize(r(1, 1, 4, 4), {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
           scales=f32(1, 1, 2, 2), rtol=1e-4, atol=1e-5, id="cubic_align_corners"),
    resize(r(1, 1, 4, 4), {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
           scales=f32(1, 1, 2, 1.5), rtol=1e-4, atol=1e-5, id="cubic_exclude_outside"),
    resize(r(1, 1, 4, 4), {"mode": "cubic", "coordinate_transformation_mode": "asymmetric"},
           sizes=i64(1, 1, 9, 10), rtol=1e-4, atol=1e-5, id="cubic_asymmetric_sizes"),
    # Older opsets: Resize-10 and Upsample (asymmetric, legacy nearest rounding).
    OpCase("Resize", {"x": r(1, 1, 3, 4)}, consts={"s": f32(1, 1, 2, 3)}, attrs={"mode": "nearest"}, opset=10,
           id="resize10_nearest"),
    OpCase("Resize", {"x": r(1, 1, 6, 8)}, consts={"s": f32(1, 1, 0.5, 0.75)}, attrs={"mode": "nearest"},
           opset=10, id="resize10_nearest_down"),
    OpCase("Resize", {"x": r(1, 1, 3, 4)}, consts={"s": f32(1, 1, 2, 2.5)}, attrs={"mode": "linear"}, opset=10,
           id="resize10_linear"),
    OpCase("Upsample", {"x": r(1, 2, 3, 4)}, consts={"s": f32(1, 1, 2, 3)}, opset=9, id="upsample9_nearest"),
    OpCase("Upsample", {"x": r(1, 2, 3, 4)}, consts={"s": f32(1, 1, 2, 2)}, attrs={"mode": "linear"}, opset=9,
           id="upsample9_linear"),
    OpCase("Upsample", {"x": r(1, 2, 3, 4)}, attrs={"scales": [1.0, 1.0, 2.0, 2.0]}, opset=7, id="upsample7_attr"),
]


# onnxruntime lacks these or departs from the spec (int64 Resize; tf_crop_and_resize rows; the
# spec's unrounded length_resized = scale * length in align_corners; its own antialias filter):
# compare with onnx's reference implementation instead.
REFERENCE_CASES = [
    resize(r(1, 1, 4, 5), {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
           scales=f32(1, 1, 0.6, 1.5), id="linear_align_corners_fractional_length"),
    resize(r(1, 1, 4, 4), {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
           scales=f32(1, 1, 0.8, 0.8), rtol=1e-4, id="cubic_align_corners_down"),
    resize(r(1, 2, 12, 10), {"mode": "linear", "antialias": 1}, scales=f32(1, 1, 0.4, 0.7), rtol=1e-4,
           id="linear_antialias_down"),
    resize(r(1, 1, 9, 11), {"mode": "cubic", "antialias": 1}, sizes=i64(1, 1, 4, 5), rtol=1e-4,
           id="cubic_antialias_down"),
    resize(r(1, 1, 9, 11), {"mode": "linear", "antialias": 1, "exclude_outside": 1}, scales=f32(1, 1, 0.5, 2),
           rtol=1e-4, id="linear_antialias_exclude_outside"),
    resize(r(1, 1, 4, 5), {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                           "extrapolation_value": 10.0}, sizes=i64(1, 1, 4, 4),
           roi=f32(0, 0, -0.4, 0.6, 1, 1, 1.2, 1.7), id="linear_tf_crop_and_resize_extrapolate_rows"),
    resize((r(1, 2, 3, 4) * 100).astype(np.int64), {"mode": "nearest"}, scales=f32(1, 1, 2, 2), id="nearest_int64"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_resize(case):
    check_unpinned(case)


@pytest.mark.parametrize("case", REFERENCE_CASES, ids=str)
def test_resize_reference(case):
    model = make_model(case)
    expected = ReferenceEvaluator(model).run(None, case.inputs)[0]
    got = run_unpinned(model, case.inputs)["y0"]
    np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.atol, err_msg=str(case))
