import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from qnn_build.convert import convert
from qnn_build.runtime import load
from qnn_build.toolchain import build_model_lib

from .opcase import OpCase, make_model

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ints(*shape, dtype=np.int64, lo=-100, hi=100):
    return rng.integers(lo, hi, size=shape).astype(dtype)


def i64(*values):
    return np.array(values, dtype=np.int64)


CASES = [
    # Copies: Identity and the four reshaping ops, every opset flavour of their axes/shape.
    OpCase("Identity", {"x": r(2, 3)}, id="identity"),
    OpCase("Identity", {"x": ints(4, 5, dtype=np.int32)}, id="identity_int32"),
    OpCase("Reshape", {"x": r(2, 3, 4)}, consts={"s": i64(4, -1)}, id="reshape"),
    OpCase("Reshape", {"x": r(2, 3, 4)}, consts={"s": i64(0, 12)}, opset=13, id="reshape_zero_dim"),
    OpCase("Reshape", {"x": ints(2, 6, dtype=np.uint8, lo=0, hi=255)}, consts={"s": i64(3, 4)}, id="reshape_uint8"),
    OpCase("Flatten", {"x": r(2, 3, 4, 5)}, id="flatten_default"),
    OpCase("Flatten", {"x": r(2, 3, 4, 5)}, attrs={"axis": 0}, id="flatten_axis0"),
    OpCase("Flatten", {"x": r(2, 3, 4, 5)}, attrs={"axis": -2}, id="flatten_neg_axis"),
    OpCase("Squeeze", {"x": r(1, 3, 1, 5)}, attrs={"axes": [0, 2]}, opset=11, id="squeeze_attr"),
    OpCase("Squeeze", {"x": r(1, 3, 1, 5)}, consts={"a": i64(-2)}, opset=13, id="squeeze_input"),
    OpCase("Squeeze", {"x": r(1, 3, 1, 5)}, opset=13, id="squeeze_all"),
    OpCase("Unsqueeze", {"x": r(3, 5)}, attrs={"axes": [0, 3]}, opset=11, id="unsqueeze_attr"),
    OpCase("Unsqueeze", {"x": r(3, 5)}, consts={"a": i64(-1, 1)}, opset=13, id="unsqueeze_input"),
    # Transpose: default (reversed), the 2-D case, NCHW <-> NHWC, odd shapes, small dtypes.
    OpCase("Transpose", {"x": r(2, 3, 4)}, id="transpose_default"),
    OpCase("Transpose", {"x": r(67, 45)}, attrs={"perm": [1, 0]}, id="transpose_2d"),
    OpCase("Transpose", {"x": r(2, 8, 13, 11)}, attrs={"perm": [0, 2, 3, 1]}, id="transpose_nchw_nhwc"),
    OpCase("Transpose", {"x": r(2, 13, 11, 8)}, attrs={"perm": [0, 3, 1, 2]}, id="transpose_nhwc_nchw"),
    OpCase("Transpose", {"x": r(3, 4, 5, 6)}, attrs={"perm": [2, 0, 3, 1]}, id="transpose_4d_mixed"),
    OpCase("Transpose", {"x": r(2, 3, 4, 5, 6)}, attrs={"perm": [4, 1, 3, 0, 2]}, id="transpose_5d"),
    OpCase("Transpose", {"x": r(5, 1, 7)}, attrs={"perm": [2, 1, 0]}, id="transpose_unit_dim"),
    OpCase("Transpose", {"x": ints(9, 33, 2, dtype=np.int8)}, attrs={"perm": [1, 0, 2]}, id="transpose_int8"),
    OpCase("Transpose", {"x": ints(40, 37, dtype=np.int64)}, attrs={"perm": [1, 0]}, id="transpose_int64"),
    OpCase("Transpose", {"x": r(16, 35).astype(np.float16)}, attrs={"perm": [1, 0]}, id="transpose_float16"),
    # Concat and Split.
    OpCase("Concat", {"a": r(2, 3), "b": r(2, 5)}, attrs={"axis": 1}, id="concat_axis1"),
    OpCase("Concat", {"a": r(2, 3, 4), "b": r(1, 3, 4), "c": r(3, 3, 4)}, attrs={"axis": 0}, id="concat_axis0"),
    OpCase("Concat", {"a": r(2, 3, 4), "b": r(2, 3, 2)}, attrs={"axis": -1}, id="concat_neg_axis"),
    OpCase("Concat", {"a": r(2, 3)}, consts={"b": r(2, 1)}, attrs={"axis": 1}, id="concat_const"),
    OpCase("Concat", {"a": ints(3, 2), "b": ints(3, 4)}, attrs={"axis": 1}, id="concat_int64"),
    OpCase("Split", {"x": r(6, 4)}, n_outputs=3, id="split_equal"),
    OpCase("Split", {"x": r(2, 7)}, attrs={"axis": 1, "split": [2, 5]}, n_outputs=2, opset=11, id="split_attr"),
    OpCase("Split", {"x": r(2, 7)}, consts={"s": i64(3, 0, 4)}, attrs={"axis": -1}, n_outputs=3, opset=13,
           id="split_input_zero_part"),
    OpCase("Split", {"x": r(7, 3)}, attrs={"num_outputs": 3}, n_outputs=3, opset=18, id="split_num_outputs"),
    OpCase("Split", {"x": ints(4, 6, dtype=np.int32)}, attrs={"axis": 1}, n_outputs=2, id="split_int32"),
    # Slice: attributes (opset 9), inputs, negative and clamped bounds, steps both ways.
    OpCase("Slice", {"x": r(5, 6)}, attrs={"starts": [1, 0], "ends": [4, 10], "axes": [0, 1]}, opset=9,
           id="slice_attrs"),
    OpCase("Slice", {"x": r(5, 6, 7)}, consts={"s": i64(1, -5), "e": i64(-1, 100), "a": i64(0, 2)},
           id="slice_neg_and_clamped"),
    OpCase("Slice", {"x": r(20, 10)}, consts={"s": i64(0, 1), "e": i64(20, 9), "a": i64(0, 1), "st": i64(3, 2)},
           id="slice_steps"),
    OpCase("Slice", {"x": r(20, 10, 5)}, consts={"s": i64(-1, 8), "e": i64(-1000, 1), "a": i64(0, 1),
                                                 "st": i64(-1, -3)}, id="slice_neg_steps"),
    OpCase("Slice", {"x": r(4, 6)}, consts={"s": i64(1), "e": i64(3)}, id="slice_default_axes"),
    OpCase("Slice", {"x": r(4, 6)}, consts={"s": i64(10), "e": i64(12), "a": i64(1)}, id="slice_empty"),
    OpCase("Slice", {"x": ints(8, 6, dtype=np.int32)}, consts={"s": i64(2), "e": i64(-1), "a": i64(-1)},
           id="slice_int32"),
    # Gather: constant or activation indices, int64 / int32, negative, scalar, any axis.
    OpCase("Gather", {"x": r(5, 4)}, consts={"i": i64(0, 4, -1, 2)}, id="gather_axis0_const"),
    OpCase("Gather", {"x": r(3, 5, 4), "i": np.array([[1, -2], [0, 4]], dtype=np.int64)}, attrs={"axis": 1},
           id="gather_axis1_2d_indices"),
    OpCase("Gather", {"x": r(3, 5, 4), "i": np.array([3, 0, -1], dtype=np.int32)}, attrs={"axis": -1},
           id="gather_last_axis_int32"),
    OpCase("Gather", {"x": r(6, 3)}, consts={"i": np.array(2, dtype=np.int64)}, id="gather_scalar_index"),
    OpCase("Gather", {"i": i64(1, 0, 1)}, consts={"x": ints(3, 4)}, input_order=["x", "i"],
           id="gather_const_data_int64"),
    # Expand and Tile.
    OpCase("Expand", {"x": r(3, 1)}, consts={"s": i64(2, 3, 4)}, id="expand_broadcast"),
    OpCase("Expand", {"x": r(1, 4)}, consts={"s": i64(3, 1)}, id="expand_both"),
    OpCase("Expand", {"x": r(2, 1, 3)}, consts={"s": i64(2, 5, 3)}, id="expand_middle"),
    OpCase("Expand", {"x": ints(3, dtype=np.int32)}, consts={"s": i64(1)}, id="expand_unchanged_int32"),
    OpCase("Tile", {"x": r(2, 3)}, consts={"rep": i64(2, 3)}, id="tile"),
    OpCase("Tile", {"x": r(2, 3, 4)}, consts={"rep": i64(1, 1, 2)}, id="tile_last"),
    OpCase("Tile", {"x": ints(3, dtype=np.uint8, lo=0, hi=200)}, consts={"rep": i64(4)}, id="tile_uint8"),
    # Pad: modes, opset 2 attributes, inputs from 11, axes from 18, negative pads.
    OpCase("Pad", {"x": r(1, 2, 4, 5)}, consts={"p": i64(0, 0, 1, 2, 0, 0, 3, 1)}, id="pad_constant_zero"),
    OpCase("Pad", {"x": r(2, 3)}, consts={"p": i64(1, 2, 0, 1), "v": np.array(1.5, dtype=np.float32)},
           id="pad_constant_value"),
    OpCase("Pad", {"x": r(3, 4)}, consts={"p": i64(2, 3, 1, 2)}, attrs={"mode": "reflect"}, id="pad_reflect"),
    OpCase("Pad", {"x": r(3, 4)}, consts={"p": i64(2, 3, 4, 2)}, attrs={"mode": "edge"}, id="pad_edge"),
    OpCase("Pad", {"x": r(3, 4)}, consts={"p": i64(2, 3, 1, 5)}, attrs={"mode": "wrap"}, opset=19, id="pad_wrap"),
    OpCase("Pad", {"x": r(2, 3, 4)}, attrs={"pads": [0, 1, 1, 0, 2, 0], "value": 2.0}, opset=9, id="pad_attrs"),
    OpCase("Pad", {"x": r(2, 3, 4)}, consts={"p": i64(1, 2), "v": np.array(0.5, dtype=np.float32),
                                             "a": i64(-1)}, opset=18, id="pad_axes"),
    OpCase("Pad", {"x": r(3, 6)}, consts={"p": i64(-1, 2, 1, -3)}, id="pad_negative_crops"),
    OpCase("Pad", {"x": ints(2, 3, dtype=np.int32)}, consts={"p": i64(1, 1, 1, 1), "v": np.array(7, np.int32)},
           id="pad_int32"),
    # DepthToSpace / SpaceToDepth.
    OpCase("DepthToSpace", {"x": r(2, 8, 3, 4)}, attrs={"blocksize": 2}, id="depth_to_space_dcr"),
    OpCase("DepthToSpace", {"x": r(2, 18, 3, 2)}, attrs={"blocksize": 3, "mode": "CRD"}, id="depth_to_space_crd"),
    OpCase("SpaceToDepth", {"x": r(2, 3, 6, 4)}, attrs={"blocksize": 2}, id="space_to_depth"),
    # Cast.
    OpCase("Cast", {"x": r(3, 4) * 100}, attrs={"to": 7}, id="cast_f32_int64_truncates"),
    OpCase("Cast", {"x": r(3, 4) * 50}, attrs={"to": 6}, id="cast_f32_int32"),
    OpCase("Cast", {"x": r(3, 4) * 50}, attrs={"to": 3}, id="cast_f32_int8"),
    OpCase("Cast", {"x": np.abs(r(3, 4)) * 100}, attrs={"to": 2}, id="cast_f32_uint8"),
    OpCase("Cast", {"x": np.array([0, 1.5, -0.0, np.nan, -2], np.float32)}, attrs={"to": 9}, id="cast_f32_bool"),
    OpCase("Cast", {"x": np.concatenate([r(40) * 1000, [65504, 65520, 1e-8, -3e-5, np.inf, 70000]]).astype(np.float32)},
           attrs={"to": 10}, id="cast_f32_f16"),
    OpCase("Cast", {"x": (r(50) * 100).astype(np.float16)}, attrs={"to": 1}, id="cast_f16_f32"),
    OpCase("Cast", {"x": ints(3, 4)}, attrs={"to": 1}, id="cast_int64_f32"),
    OpCase("Cast", {"x": ints(3, 4, dtype=np.int32, lo=-1000, hi=1000)}, attrs={"to": 3}, id="cast_int32_int8_wraps"),
    OpCase("Cast", {"x": ints(3, 4, dtype=np.int32)}, attrs={"to": 7}, id="cast_int32_int64"),
    OpCase("Cast", {"x": rng.random((3, 4)) > 0.5}, attrs={"to": 1}, id="cast_bool_f32"),
    OpCase("Cast", {"x": ints(5, dtype=np.uint8, lo=0, hi=255)}, attrs={"to": 10}, id="cast_uint8_f16"),
    OpCase("Cast", {"x": r(3, 4)}, attrs={"to": 1}, id="cast_same_type"),
    OpCase("Cast", {"x": r(2, 3) * 10}, attrs={"to": 6}, opset=9, id="cast_opset9"),
    OpCase("CastLike", {"x": r(2, 3) * 10}, consts={"t": np.zeros(1, np.int64)}, id="castlike_int64"),
]


def run_unpinned(model: onnx.ModelProto, feeds: dict) -> dict:
    """Our cpu outputs with every graph input kept an input. (run_onnx pins integer inputs as
    constants, which would fold these one-node models away before any kernel runs.)"""
    with tempfile.TemporaryDirectory(prefix="qnnb-test-") as tmp:
        d = Path(tmp)
        onnx.save(model, str(d / "model.onnx"))
        convert(d / "model.onnx", d)
        lib = build_model_lib(d / "model.cpp", d / "model.bin", d / "libmodel.so")
        m = load(lib)
        try:
            return m.run(feeds)
        finally:
            m.close()


def check_unpinned(case: OpCase) -> None:
    """check_op, with integer inputs left as inputs so the kernel sees them."""
    model = make_model(case)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, case.inputs)
    got = run_unpinned(model, case.inputs)
    for i, exp in enumerate(expected):
        out = got[f"y{i}"]
        assert out.dtype == exp.dtype, f"{case}: output {i} dtype {out.dtype} != {exp.dtype}"
        assert out.shape == exp.shape, f"{case}: output {i} shape {out.shape} != {exp.shape}"
        np.testing.assert_allclose(out, exp, rtol=case.rtol, atol=case.atol, err_msg=str(case))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_movement(case):
    check_unpinned(case)
