"""docs/quantization.md (3e): Floor, Ceil, Round, Sign and Mod of integers hold integers, and their
outputs get an encoding on which every integer of the calibrated range is a code. Converted from
calibration data at w8a8 and w8a16, the cpu simulation and the npu both give exactly the float op's
integers over the whole calibrated range (every input code), where the calibrated range's own scale
stored Sign's ±1 as ±0.996."""

import numpy as np
import pytest
from onnx import helper

from qnn_build.convert import convert
from qnn_build.quant import QuantOptions
from qnn_build.quant.encoding import dequantize, integer_encoding
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

from .harness import F, make_model

STEP_OPS = {"sign": np.sign, "floor": np.floor, "ceil": np.ceil, "round": np.rint}


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_integer_outputs_are_exact(tmp_path, precision):
    nodes = [helper.make_node(op.capitalize(), ["x"], [op], name=op) for op in STEP_OPS]
    nodes.append(helper.make_node("Mod", ["floor", "d"], ["mod"], name="mod", fmod=0))
    outputs = [*STEP_OPS, "mod"]
    n = 256 if precision == "w8a8" else 65536  # every input code once
    path = make_model(tmp_path, nodes, [("x", F, [n])], outputs, [("d", np.array(3.0, np.float32))], opset=18)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calib.npz", x=rng.uniform(-3.7, 5.2, (4, n)).astype(np.float32))
    out = tmp_path / "out"
    desc = convert(path, out, precision=precision, calibration=tmp_path / "calib.npz",
                   options=QuantOptions(act_range="minmax"))
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libintegers.so")
    e = desc["inputs"][0]["encoding"]
    x = ((np.arange(n) + e["offset"]) * np.float32(e["scale"])).astype(np.float32)  # the whole calibrated range
    assert x.min() < -3.5 and x.max() > 5.0
    expected = {op: f(x) for op, f in STEP_OPS.items()} | {"mod": np.mod(np.floor(x), 3.0)}
    assert set(np.unique(expected["sign"])) == {-1.0, 0.0, 1.0}
    for backend in ("cpu", "npu"):
        y = Model(lib, backend=backend).run({"x": x})
        for op, want in expected.items():
            np.testing.assert_array_equal(y[op], want, err_msg=f"{op} on the {backend}")


@pytest.mark.parametrize("lo,hi,bits,scale,offset", [
    (-1.0, 1.0, 8, 1 / 64, -64),       # Sign: 128 codes per 2, ±1 exact
    (-0.3, 0.98, 8, 1 / 64, -64),      # rounded out to [-1, 1]
    (0.0, 3.0, 8, 1 / 64, 0),          # 3 · 64 = 192 <= 255
    (-4.0, 5.0, 8, 1 / 16, -64),       # 9 integers: 16 codes each
    (-100.0, 155.0, 8, 1.0, -100),     # 255 integers: one code each
    (-2.0, 2.0, 16, 1 / 8192, -16384),  # 4 · 16384 = 65536 codes would be one too many
])
def test_integer_encoding(lo, hi, bits, scale, offset):
    e = integer_encoding(lo, hi, bits)
    assert (float(e.scales[0]), int(e.offsets[0])) == (scale, offset)
    ints = np.arange(np.floor(lo), np.ceil(hi) + 1)
    codes = ints / scale - offset
    assert np.all(codes >= 0) and np.all(codes <= 2 ** bits - 1)
    assert np.array_equal(dequantize(codes.astype(np.int64), e).astype(np.float64), ints)


def test_more_integers_than_codes_keep_the_calibrated_encoding():
    e = integer_encoding(-200.0, 300.0, 8)
    assert float(e.scales[0]) == np.float32(500 / 255)
