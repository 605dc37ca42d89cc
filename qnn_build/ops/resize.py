"""Resize (opset 10-19) and Upsample (opset 7-9), lowered to one runtime "Resize" node.

The rule resolves the effective per-axis scale as the ONNX spec does (from `sizes`: out / in in
float32, with keep_aspect_ratio_policy; from `scales` as given; axes not listed: 1), the spec's
unrounded length_resized (scale * in: align_corners and tf_crop_and_resize divide by it), the roi
for tf_crop_and_resize, and every attribute default. Before opset 11 the coordinate mapping is
"asymmetric" and nearest rounds the legacy way (truncate when upsampling, ceil when downsampling),
which the kernel calls nearest_mode "legacy". Modes nearest (any dtype), linear and cubic (float32),
with antialias; onnxruntime's spelling "tf_half_pixel_for_nn" is accepted too.
"""

import numpy as np

from .base import OpRule, norm_axis, optional_const, require_dtype, same, unsupported
from .movement import require_movable

_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nearest", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _f32(values) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float32).reshape(-1)]


def _legacy_scales(node, graph) -> list[float]:
    """Upsample-7's scales attribute, or the scales input of Upsample-9 / Resize-10."""
    if "scales" in node.attrs:
        return _f32(node.attrs["scales"])
    scales = optional_const(graph, node, 1)
    if scales is None:
        raise unsupported(node, "scales must be given")
    return _f32(scales)


def _scales_from_sizes(node, sizes, in_shape, axes) -> tuple[list[float], list[float]]:
    """(scales, lengths) for explicit sizes. Scales are float32 out / in (as onnxruntime computes
    them); lengths, the spec's length_resized, are scale * in in float64 (as the reference does)."""
    rank = len(in_shape)
    scales, exact = [1.0] * rank, [1.0] * rank
    for a, size in zip(axes, sizes):
        if in_shape[a] == 0:
            raise unsupported(node, f"resizing an empty dim {a}")
        scales[a] = float(np.float32(size) / np.float32(in_shape[a]))
        exact[a] = size / in_shape[a]
    policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise unsupported(node, f"keep_aspect_ratio_policy '{policy}'")
    if policy != "stretch":
        pick = min if policy == "not_larger" else max
        scale, scale64 = pick(scales[a] for a in axes), pick(exact[a] for a in axes)
        scales = [scale if a in axes else 1.0 for a in range(rank)]
        exact = [scale64 if a in axes else 1.0 for a in range(rank)]
    return scales, [s * n for s, n in zip(exact, in_shape)]


def _resize(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    require_movable(node, graph, [x, y])
    in_shape = graph.tensor(x).shape
    rank = len(in_shape)
    mode = node.attrs.get("mode", "nearest")
    mode = "linear" if mode == "bilinear" else mode
    if mode not in ("nearest", "linear", "cubic"):
        raise unsupported(node, f"mode '{mode}'")
    params = {"mode": mode}
    if node.op_type == "Upsample" or graph.opset < 11:
        scales = _legacy_scales(node, graph)
        params.update(coordinate_transformation_mode="asymmetric", nearest_mode="legacy")
    else:
        scales = _resize_scales(node, graph, in_shape, params)
    if len(scales) != rank:
        raise unsupported(node, f"{len(scales)} scales for rank {rank}")
    if any(s <= 0 for s in scales):
        raise unsupported(node, f"scales {scales} must be positive")
    if mode != "nearest":
        require_dtype(node, graph, [x, y])
    return [same(node, "Resize", inputs=[x], outputs=[y], scales=scales, **params)]


def _resize_scales(node, graph, in_shape, params) -> list[float]:
    """Opset 11+: scales or sizes (and roi, axes); fills params with the explicit attributes."""
    rank = len(in_shape)
    a = node.attrs
    coord = a.get("coordinate_transformation_mode", "half_pixel")
    coord = "tf_half_pixel_for_nearest" if coord == "tf_half_pixel_for_nn" else coord  # onnxruntime's spelling
    nearest = a.get("nearest_mode", "round_prefer_floor")
    if coord not in _COORD_MODES:
        raise unsupported(node, f"coordinate_transformation_mode '{coord}'")
    if nearest not in _NEAREST_MODES:
        raise unsupported(node, f"nearest_mode '{nearest}'")
    axes = [norm_axis(node, int(v), rank) for v in a["axes"]] if a.get("axes") is not None else list(range(rank))
    scales_in, sizes_in = optional_const(graph, node, 2), optional_const(graph, node, 3)
    if sizes_in is not None and sizes_in.size:
        if len(sizes_in.reshape(-1)) != len(axes):
            raise unsupported(node, f"{sizes_in.size} sizes for {len(axes)} axes")
        scales, lengths = _scales_from_sizes(node, [int(v) for v in sizes_in.reshape(-1)], in_shape, axes)
    elif scales_in is not None and scales_in.size:
        given = _f32(scales_in)
        if len(given) != len(axes):
            raise unsupported(node, f"{len(given)} scales for {len(axes)} axes")
        scales = [1.0] * rank
        for axis, s in zip(axes, given):
            scales[axis] = s
        lengths = [s * n for s, n in zip(scales, in_shape)]
    else:
        raise unsupported(node, "neither scales nor sizes is given")
    if coord == "tf_crop_and_resize":
        roi_in = optional_const(graph, node, 1)
        roi = [0.0] * rank + [1.0] * rank
        if roi_in is not None and roi_in.size:
            given = _f32(roi_in)
            if len(given) != 2 * len(axes):
                raise unsupported(node, f"roi has {len(given)} values for {len(axes)} axes")
            for k, axis in enumerate(axes):
                roi[axis], roi[rank + axis] = given[k], given[len(axes) + k]
        params["roi"] = roi
    params.update(coordinate_transformation_mode=coord, nearest_mode=nearest,
                  extrapolation_value=float(a.get("extrapolation_value", 0.0)),
                  cubic_coeff_a=float(a.get("cubic_coeff_a", -0.75)),
                  exclude_outside=int(a.get("exclude_outside", 0)), antialias=int(a.get("antialias", 0)),
                  lengths=[float(v) for v in lengths])
    return scales


RULES = [
    OpRule("Resize", _resize),
    OpRule("Upsample", _resize),
]
