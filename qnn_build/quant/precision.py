"""Precisions: fp32, fp16, and wWaA (W-bit weights, A-bit activations), with their aliases."""

from dataclasses import dataclass

from ..errors import QnnBuildError


@dataclass(frozen=True)
class Precision:
    name: str
    weight_bits: int | None  # None: float
    act_bits: int | None

    @property
    def is_quantized(self) -> bool:
        return self.weight_bits is not None

    @property
    def param_bits(self) -> int:
        """Bits of constants other than conv/matmul weights: 4-bit applies to weights only."""
        return max(self.weight_bits or 0, 8)


PRECISIONS = {p.name: p for p in [
    Precision("fp32", None, None), Precision("fp16", None, None),
    Precision("w8a8", 8, 8), Precision("w8a16", 8, 16), Precision("w16a16", 16, 16),
    Precision("w4a8", 4, 8), Precision("w4a16", 4, 16),
]}
ALIASES = {"int8": "w8a8", "int16": "w16a16", "int4": "w4a16", "float32": "fp32", "float16": "fp16"}


def parse_precision(text: str) -> Precision:
    key = ALIASES.get(text.lower(), text.lower())
    if key not in PRECISIONS:
        raise QnnBuildError(f"unknown precision '{text}' (one of {', '.join(list(PRECISIONS) + list(ALIASES))})")
    return PRECISIONS[key]
