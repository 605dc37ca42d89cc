"""Convert-time preparation for the npu backend: fixed-point multipliers and lookup tables, stored
as node parameters so every host runs the same integers. Semantics: docs/npu.md."""
