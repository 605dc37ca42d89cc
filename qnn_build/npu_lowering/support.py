"""Which runtime ops the npu runs in integers: the one place Python knows it.

An op runs in integers on the npu when it has a convert-time parameter rule (`RULES` of
npu_lowering/lower.py, one per kernel family), or an integer kernel that needs no parameters (ArgMax/ArgMin of
integer codes, (N26)), or when it only moves bytes (its output keeps the input's encoding: the npu
runs the cpu kernel on the stored integers, `kByteMovers` in runtime/npu/registry.cpp), or when it is
a domain boundary that --float-fallback inserts (Quantize/Dequantize, docs/npu.md (N40)-(N41)).
(Table entries whose prepare only refuses with "no npu kernel for ..." do not count.) Anything else needs `--float-fallback` (kept in fp16).
tests/test_float_fallback.py keeps this in sync with the runtime's registry by finalizing one-node
graphs on the npu.
"""

# Mirror of kByteMovers in qnn_build/runtime/npu/registry.cpp.
BYTE_MOVERS = frozenset({"Identity", "Reshape", "Transpose", "Slice", "Gather", "Split", "Expand", "Tile",
                         "DepthToSpace", "SpaceToDepth", "GatherElements", "GatherND"})

# npu kernels without convert-time parameters (no entry in npu_lowering/lower.py RULES).
PARAMLESS_KERNELS = frozenset({"ArgMax", "ArgMin"})

# Converter-inserted boundaries between the integer and the fp16 domain (runtime/npu/convert_ops.cpp).
BOUNDARY_OPS = frozenset({"Quantize", "Dequantize"})


def npu_integer_ops() -> frozenset:
    """Every runtime op type the npu has an integer kernel (or a byte mover) for."""
    from .lower import RULES
    return frozenset(RULES) | PARAMLESS_KERNELS | BYTE_MOVERS | BOUNDARY_OPS


def has_npu_kernel(op_type: str) -> bool:
    return op_type in npu_integer_ops()
