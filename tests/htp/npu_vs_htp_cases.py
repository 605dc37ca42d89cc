"""The case table of the npu-vs-htp bench (differential.py): every op the npu runs in integers, over
shapes, strides, pads, broadcasting, per-channel and 4-bit weights, saturating ranges, zero points at
the ends of the code range, and scales that put requantization exactly at .5. Each case runs at 8- and
16-bit activations unless it says otherwise. `SUBSET` is what CI runs (one or two cases of the ops
whose arithmetic differs most); `bench/npu_vs_htp.py` runs them all."""

import math

import numpy as np
from onnx import helper

from .differential import Case

RNG = np.random.default_rng(15)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def weights(*shape, scale=0.2):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# Unary ops: (input range, output range) per case kind. The 'full' input of 4096 elements holds
# every 8-bit code (and every 16th 16-bit one); 'zp_low'/'zp_high' put the input's zero point at
# code 0 / the top code; 'saturating' narrows the output range below the function's.
UNARY = {
    "Relu": ((-4, 4), (0, 4)), "Sigmoid": ((-8, 8), (0, 1)), "Tanh": ((-4, 4), (-1, 1)),
    "HardSigmoid": ((-4, 4), (0, 1)), "HardSwish": ((-4, 4), (-0.375, 4)), "Exp": ((-4, 2), (0, math.e ** 2)),
    "Log": ((0, 8), (-4, math.log(8))), "Sqrt": ((0, 8), (0, math.sqrt(8))), "Reciprocal": ((0, 8), (0, 8)),
    "Erf": ((-3, 3), (-1, 1)), "Elu": ((-4, 4), (-1, 4)), "LeakyRelu": ((-4, 4), (-0.04, 4)),
    "Softplus": ((-4, 4), (0, 4.02)), "Abs": ((-4, 4), (0, 4)), "Neg": ((-4, 4), (-4, 4)),
    "Gelu": ((-4, 4), (-0.17, 4)), "Clip": ((-4, 4), (-1, 2)),
    # the table ops of docs/npu.md (N7a), (N7b)
    "Sin": ((-4, 4), (-1, 1)), "Cos": ((-4, 4), (-1, 1)), "Softsign": ((-4, 4), (-0.8, 0.8)),
    "Mish": ((-4, 4), (-0.31, 4)), "Selu": ((-4, 4), (-1.76, 4.2)), "Celu": ((-4, 4), (-1, 4)),
    "Floor": ((-4, 4), (-4, 3)), "Ceil": ((-4, 4), (-3, 4)), "Round": ((-4, 4), (-4, 4)), "Sign": ((-4, 4), (-1, 1)),
}


def unary_cases(op):
    (lo, hi), (olo, ohi) = UNARY[op]
    extra, opset = {}, {"Gelu": 20, "Mish": 18}.get(op, 17)
    ins = ["x"]
    if op == "Clip":
        extra = {"min": np.float32(-1), "max": np.float32(2)}
        ins = ["x", "min", "max"]
    kinds = {"full": ((lo, hi), (olo, ohi)),
             "saturating": ((lo, hi), (olo / 2, ohi / 2))}
    if lo < 0:
        kinds["zp_low"] = ((0, hi), (min(olo, 0) if op in ("Neg",) else 0, ohi))
        kinds["zp_high"] = ((lo, 0), (olo, max(ohi, 0) if op in ("Neg", "Abs") else max(-lo, 0.01)))
    if op == "Neg":
        kinds["zp_low"] = ((0, hi), (-hi, 0))
        kinds["zp_high"] = ((lo, 0), (0, -lo))
    return [Case(op, k, [node(op, ins, ["y"])], {"x": ([1, 4096], r_in)}, {"y": r_out}, inits=dict(extra),
                 opset=opset) for k, (r_in, r_out) in kinds.items()]


def binary_cases(op):
    """Same shapes, broadcasting, a constant operand, exact halves (s_y = 2 s_x), saturation, zero
    points at the ends."""
    y = {"Add": (-2, 2), "Sub": (-2, 2), "Mul": (-1, 1), "Div": (-4, 4), "Min": (-1, 1), "Max": (-1, 1)}[op]
    half = {"Add": (-2, 2), "Sub": (-2, 2), "Mul": (-4 / 255, 4 / 255), "Div": (-2, 2),
            "Min": (-2, 2), "Max": (-2, 2)}[op]
    b_range = (0.25, 2) if op == "Div" else (-1, 1)

    def case(name, a_shape, b_shape, ranges, out):
        return Case(op, name, [node(op, ["a", "b"], ["y"])],
                    {"a": (a_shape, ranges[0]), "b": (b_shape, ranges[1])}, {"y": out})

    cases = [case("same_shape", [1, 8, 32], [1, 8, 32], [(-1, 1), b_range], y),
             case("broadcast", [1, 8, 4, 8], [1, 8, 1, 1], [(-1, 1), b_range], y),
             case("half", [1, 1024], [1, 1024], [(-1, 1), b_range], half),
             case("saturating", [1, 256], [1, 256], [(-1, 1), b_range], (y[0] / 4, y[1] / 4)),
             case("zp_edges", [1, 256], [1, 256], [(0, 2), (-2, 0) if op != "Div" else (0, 2)], y)]
    const = Case(op, "constant", [node(op, ["a", "c"], ["y"])], {"a": ([1, 256], (-1, 1))}, {"y": y},
                 inits={"c": np.float32(0.75)})
    return cases + [const]


def conv_cases():
    x = {"x": ([1, 8, 10, 10], (-2, 2))}
    base = {"w": weights(16, 8, 3, 3), "b": weights(16)}
    out = (-6, 6)
    cases = [
        Case("Conv", "3x3_pad1", [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], x, {"y": out}, inits=base),
        Case("Conv", "stride2_asym_pad", [node("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[0, 0, 1, 1])],
             x, {"y": out}, inits=base),
        Case("Conv", "1x1_no_bias", [node("Conv", ["x", "w"], ["y"])], {"x": ([1, 8, 6, 6], (0, 4))}, {"y": out},
             inits={"w": weights(16, 8, 1, 1)}),
        Case("Conv", "depthwise", [node("Conv", ["x", "w", "b"], ["y"], group=8, pads=[1, 1, 1, 1])], x,
             {"y": (-2, 2)}, inits={"w": weights(8, 1, 3, 3, scale=0.5), "b": weights(8)}),
        Case("Conv", "dilated", [node("Conv", ["x", "w", "b"], ["y"], dilations=[2, 2], pads=[2, 2, 2, 2])], x,
             {"y": out}, inits=base),
        Case("Conv", "saturating", [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], x, {"y": (-1, 1)},
             inits=base),
        Case("Conv", "conv1d", [node("Conv", ["x", "w", "b"], ["y"], pads=[2, 2])], {"x": ([1, 8, 40], (-2, 2))},
             {"y": out}, inits={"w": weights(8, 8, 5), "b": weights(8)}),
    ]
    cases += [Case("Conv", "3x3_w4", [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], x, {"y": out},
                   inits=base, weights=4)]
    return cases


def product_cases():
    return [
        Case("ConvTranspose", "stride2", [node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2],
                                                pads=[1, 1, 1, 1], output_padding=[1, 1])],
             {"x": ([1, 8, 5, 5], (-2, 2))}, {"y": (-4, 4)}, inits={"w": weights(8, 4, 3, 3), "b": weights(4)}),
        Case("Gemm", "bias", [node("Gemm", ["x", "w", "b"], ["y"])], {"x": ([4, 32], (-2, 2))}, {"y": (-6, 6)},
             inits={"w": weights(32, 16), "b": weights(16)}),
        Case("Gemm", "trans_b", [node("Gemm", ["x", "w", "b"], ["y"], transB=1)], {"x": ([4, 32], (0, 4))},
             {"y": (-6, 6)}, inits={"w": weights(16, 32), "b": weights(16)}),
        Case("Gemm", "bias_w4", [node("Gemm", ["x", "w", "b"], ["y"])], {"x": ([4, 32], (-2, 2))}, {"y": (-6, 6)},
             inits={"w": weights(32, 16), "b": weights(16)}, weights=4),
        Case("MatMul", "const_b", [node("MatMul", ["x", "w"], ["y"])], {"x": ([2, 4, 32], (-2, 2))},
             {"y": (-6, 6)}, inits={"w": weights(32, 16)}),
        Case("MatMul", "two_activations", [node("MatMul", ["a", "b"], ["y"])],
             {"a": ([1, 2, 8, 16], (-2, 2)), "b": ([1, 2, 16, 8], (-1, 1))}, {"y": (-8, 8)}),
    ]


def movement_cases():
    x = {"x": ([1, 4, 6, 8], (-2, 2))}
    idx = np.array([3, 0, 2], np.int64)

    def mover(op, name, ins, inits=None, out=None, **attrs):
        return Case(op, name, [node(op, ins, ["y"], **attrs)], x, {"y": out}, inits=inits or {})

    return [
        mover("Identity", "reencode", ["x"], out=(-1, 3)),
        mover("Reshape", "flatten", ["x", "s"], {"s": np.array([1, -1], np.int64)}),
        mover("Transpose", "nhwc", ["x"], perm=[0, 2, 3, 1]),
        mover("Slice", "strided", ["x", "st", "en", "ax", "sp"],
              {"st": np.array([1], np.int64), "en": np.array([6], np.int64), "ax": np.array([2], np.int64),
               "sp": np.array([2], np.int64)}),
        mover("Gather", "axis1", ["x", "i"], {"i": idx}, axis=1),
        mover("Expand", "broadcast", ["x", "s"], {"s": np.array([2, 4, 6, 8], np.int64)}),
        mover("Tile", "twice", ["x", "r"], {"r": np.array([1, 1, 2, 1], np.int64)}),
        mover("DepthToSpace", "dcr", ["x"], blocksize=2),
        mover("SpaceToDepth", "two", ["x"], blocksize=2),
        mover("Pad", "constant", ["x", "p", "v"], {"p": np.array([0, 0, 1, 2, 0, 0, 1, 0], np.int64),
                                                  "v": np.float32(0.5)}, out=(-2, 2)),
        mover("Pad", "reflect", ["x", "p"], {"p": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}, mode="reflect"),
        mover("Resize", "nearest", ["x", "", "sc"], {"sc": np.array([1, 1, 2, 2], np.float32)}, out=(-2, 2),
              mode="nearest"),
        mover("Resize", "nearest_reencode", ["x", "", "sc"], {"sc": np.array([1, 1, 2, 2], np.float32)},
              out=(-3, 3), mode="nearest"),
        mover("Resize", "linear_half_pixel", ["x", "", "sc"], {"sc": np.array([1, 1, 2, 2], np.float32)},
              out=(-2, 2), mode="linear"),
        mover("Resize", "linear_align_corners", ["x", "", "", "sz"], {"sz": np.array([1, 4, 11, 15], np.int64)},
              out=(-2, 2), mode="linear", coordinate_transformation_mode="align_corners"),
        mover("GatherElements", "axis3", ["x", "i"], {"i": RNG.integers(0, 8, (1, 4, 6, 3)).astype(np.int64)}, axis=3),
        mover("GatherND", "pairs", ["x", "i"], {"i": np.array([[0, 1], [0, 3]], np.int64)}),
        Case("Split", "three", [node("Split", ["x", "s"], ["y0", "y1"], axis=3)], x, {"y0": None, "y1": (-1, 1)},
             inits={"s": np.array([3, 5], np.int64)}),
        Case("Concat", "reencode", [node("Concat", ["a", "b"], ["y"], axis=1)],
             {"a": ([1, 2, 4, 4], (-1, 1)), "b": ([1, 3, 4, 4], (-3, 2))}, {"y": (-2, 2)}),
    ]


def pool_cases():
    x = {"x": ([1, 4, 9, 9], (-2, 2))}

    def pool(op, name, out=None, ins=("x",), inits=None, **attrs):
        return Case(op, name, [node(op, list(ins), ["y"], **attrs)], x, {"y": out}, inits=inits or {})

    return [
        pool("AveragePool", "3x3_pad_exclude", (-2, 2), kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        pool("AveragePool", "3x3_pad_include", (-2, 2), kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
        pool("AveragePool", "2x2_stride2_ceil", (-1, 1), kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        pool("GlobalAveragePool", "plane", (-0.5, 0.5)),
        pool("MaxPool", "3x3_stride2", None, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        pool("GlobalMaxPool", "plane", None),
        pool("ReduceMean", "last_axis", (-1, 1), axes=[3], keepdims=1),
        pool("ReduceMax", "axis1", (-2, 2), axes=[1], keepdims=0),
        pool("ReduceMin", "axis2", (-2, 2), axes=[2], keepdims=1),
        pool("ReduceSum", "last_axis", (-8, 8), ins=("x", "a"), inits={"a": np.array([3], np.int64)}),
        Case("ArgMax", "axis3", [node("ArgMax", ["x"], ["y"], axis=3)], x, {"y": None}),
        Case("ArgMin", "axis1", [node("ArgMin", ["x"], ["y"], axis=1)], x, {"y": None}),
        Case("TopK", "k5_last_axis", [node("TopK", ["x", "k"], ["v", "i"], axis=-1)], {"x": ([4, 64], (-2, 2))},
             {"v": None, "i": None}, inits={"k": np.array([5], np.int64)}),
    ]


def norm_cases():
    return [
        Case("Softmax", "row64", [node("Softmax", ["x"], ["y"], axis=-1)], {"x": ([4, 64], (-8, 8))}, {"y": (0, 1)}),
        Case("Softmax", "row8_narrow", [node("Softmax", ["x"], ["y"], axis=-1)], {"x": ([64, 8], (-2, 2))},
             {"y": (0, 0.5)}),
        Case("LogSoftmax", "row64", [node("LogSoftmax", ["x"], ["y"], axis=-1)], {"x": ([4, 64], (-8, 8))},
             {"y": (-20, 0)}),
        Case("LayerNormalization", "last_axis", [node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)],
             {"x": ([8, 32], (-3, 3))}, {"y": (-4, 4)},
             inits={"g": (1 + weights(32)).astype(np.float32), "b": weights(32)}),
        Case("InstanceNormalization", "planes", [node("InstanceNormalization", ["x", "g", "b"], ["y"])],
             {"x": ([1, 4, 6, 6], (-3, 3))}, {"y": (-4, 4)},
             inits={"g": (1 + weights(4)).astype(np.float32), "b": weights(4)}),
    ]


def other_cases():
    a = {"a": ([1, 8, 4, 4], (-2, 2)), "b": ([1, 8, 4, 4], (-1, 1))}
    return [
        Case("PRelu", "per_channel", [node("PRelu", ["x", "s"], ["y"])], {"x": ([1, 8, 4, 4], (-2, 2))},
             {"y": (-0.5, 2)}, inits={"s": (np.abs(weights(8, 1, 1)) + 0.05).astype(np.float32)}),
        Case("Pow", "square", [node("Pow", ["x", "e"], ["y"])], {"x": ([1, 256], (-2, 2))}, {"y": (0, 4)},
             inits={"e": np.float32(2)}),
        Case("Pow", "sqrt", [node("Pow", ["x", "e"], ["y"])], {"x": ([1, 256], (0, 4))}, {"y": (0, 2)},
             inits={"e": np.float32(0.5)}),
        Case("Where", "select", [node("Where", ["c", "a", "b"], ["y"])], a, {"y": (-2, 2)},
             inits={"c": RNG.random((1, 8, 4, 4)) < 0.5}),
        # Comparisons (docs/npu.md (N35)): a score threshold, and two activations at different scales.
        Case("Greater", "threshold", [node("Greater", ["x", "t"], ["y"])], {"x": ([1, 4096], (-1, 1))},
             {"y": None}, inits={"t": np.float32(0.25)}),
        Case("Greater", "two_scales", [node("Greater", ["a", "b"], ["y"])], a, {"y": None}),
        *[Case(op, "threshold", [node(op, ["x", "t"], ["y"])], {"x": ([1, 4096], (-1, 1))}, {"y": None},
               inits={"t": np.float32(0.25)}) for op in ("Equal", "GreaterOrEqual", "Less", "LessOrEqual")],
        # (N36): Trilu moves codes and fills the zero point's; IsNaN of codes is false.
        Case("Trilu", "upper_k1", [node("Trilu", ["x", "k"], ["y"], upper=1)], {"x": ([2, 16, 16], (-2, 2))},
             {"y": None}, inits={"k": np.array(1, np.int64)}),
        Case("IsNaN", "codes", [node("IsNaN", ["x"], ["y"])], {"x": ([1, 256], (-2, 2))}, {"y": None}),
        # (N37): data and updates re-encoded to the output's encoding, then codes moved.
        Case("ScatterElements", "axis1", [node("ScatterElements", ["x", "i", "u"], ["y"], axis=1)],
             {"x": ([2, 16], (-2, 2)), "u": ([2, 4], (-1, 1))}, {"y": (-1.5, 1.5)},
             inits={"i": np.stack([RNG.permutation(16)[:4] for _ in range(2)]).astype(np.int64)}),
        Case("ScatterND", "rows", [node("ScatterND", ["x", "i", "u"], ["y"])],
             {"x": ([8, 16], (-2, 2)), "u": ([2, 16], (-1, 1))}, {"y": (-1.5, 1.5)},
             inits={"i": np.array([[1], [5]], np.int64)}),
        Case("OneHot", "of_argmax", [node("ArgMax", ["x"], ["i"], axis=1, keepdims=0),
                                     node("OneHot", ["i", "d", "v"], ["y"], axis=-1)],
             {"x": ([4, 16], (-2, 2))}, {"y": (-1, 2)},
             inits={"d": np.array(16, np.int64), "v": np.array([-0.5, 2.0], np.float32)}),
        # fmod=1: the HTP takes fmod=0 only, which onnxruntime's CPU (the exact value) refuses for floats
        Case("Mod", "fmod_constant", [node("Mod", ["x", "d"], ["y"], fmod=1)], {"x": ([1, 4096], (-4, 4))},
             {"y": (-1.5, 1.5)}, inits={"d": np.float32(1.5)}),
        # Small multi-op graphs: the ops as models chain them.
        Case("conv+relu", "pad1", [node("Conv", ["x", "w", "b"], ["t"], pads=[1, 1, 1, 1]), node("Relu", ["t"], ["y"])],
             {"x": ([1, 8, 8, 8], (0, 4))}, {"y": (0, 6)}, inits={"w": weights(16, 8, 3, 3), "b": weights(16)},
             pins={"t": (-6, 6)}),
        Case("matmul+softmax", "attention", [node("MatMul", ["q", "k"], ["t"]), node("Softmax", ["t"], ["y"], axis=-1)],
             {"q": ([1, 2, 8, 16], (-2, 2)), "k": ([1, 2, 16, 8], (-2, 2))}, {"y": (0, 1)}, pins={"t": (-16, 16)}),
    ]


def all_cases() -> list[Case]:
    cases = []
    for op in UNARY:
        cases += unary_cases(op)
    for op in ("Add", "Sub", "Mul", "Div", "Min", "Max"):
        cases += binary_cases(op)
    return cases + conv_cases() + product_cases() + movement_cases() + pool_cases() + norm_cases() + other_cases()


# What CI runs: the ops whose arithmetic is most particular, a case or two each.
SUBSET = {("Add", "half"), ("Mul", "same_shape"), ("Sigmoid", "full"), ("Conv", "3x3_pad1"),
          ("AveragePool", "3x3_pad_exclude"), ("Softmax", "row64"), ("Resize", "linear_half_pixel")}


def subset() -> list[Case]:
    return [c for c in all_cases() if (c.op, c.name) in SUBSET]
