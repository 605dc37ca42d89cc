"""npu: the integer accelerator on our runtime (bit-exact, deterministic; docs/npu.md). At fp16 it
runs every op (its float16 path). At a quantized precision an op runs in integers when it has an npu
kernel:
- a convert-time parameter rule (npu_lowering/lower.py RULES, one per kernel family);
- an integer kernel that needs no parameters (ArgMax/ArgMin/TopK of integer codes, (N26), (N26a);
  Trilu and IsNaN of codes, (N36));
- a byte mover (ops/kinds.py BYTE_MOVERS: the npu runs the cpu kernel on the stored integers);
- a domain boundary that --float-fallback inserts (Quantize/Dequantize, (N40)-(N41)).
(Table entries whose prepare only refuses with "no npu kernel for ..." do not count.) Anything else
needs `--float-fallback` (kept in fp16). tests/test_float_fallback.py holds this equal to the
runtime's registry by finalizing one-node graphs on the npu.
"""

from functools import lru_cache

from ..options import parse_precision
from .native import NativeBackend

# npu kernels without convert-time parameters (no entry in npu_lowering/lower.py RULES).
PARAMLESS_KERNELS = frozenset({"ArgMax", "ArgMin", "TopK", "Trilu", "IsNaN"})

# Converter-inserted boundaries between the integer and the fp16 domain (runtime/npu/convert_ops.cpp).
BOUNDARY_OPS = frozenset({"Quantize", "Dequantize"})


@lru_cache(maxsize=None)
def integer_ops() -> frozenset:
    """Every runtime op type the npu runs in integers. Its lowering's rules are imported when asked
    (only convert asks): the steps that load and run a model (context-binary, net-run, test) then
    depend on no converter module (their tool-version stamps, sconstool/stamps.py)."""
    from ..npu_lowering.lower import RULES
    from ..ops.kinds import BYTE_MOVERS
    return frozenset(RULES) | PARAMLESS_KERNELS | BYTE_MOVERS | BOUNDARY_OPS


class Npu(NativeBackend):
    name = "npu"

    def supports_op(self, op_type: str, precision: str) -> bool:
        return op_type in integer_ops() or not parse_precision(precision).is_quantized

    def node_refusal(self, node, graph, precision: str) -> str | None:
        """By op type, then by the node's own lowering rule: what its kernel cannot honour (a scatter's
        reduction, Mod by a divisor computed at run time, ...: its `npu_unsupported`, (N34))."""
        if not self.supports_op(node.op_type, precision):
            return f"no npu kernel for {node.op_type}"
        from ..npu_lowering.lower import refusal
        why = refusal(node, graph)
        return None if why is None else f"no npu kernel for {node.op_type} with {why}"
