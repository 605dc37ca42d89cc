"""Lowering to the npu: the convert-time integer parameters of the npu kernels (fixed-point
multipliers, lookup tables, re-expressed biases), stored as node parameters (`npu_*`) so every host
runs the same integers. The kernels themselves are C++ in qnn_build/runtime/npu/. Semantics:
docs/npu.md."""
