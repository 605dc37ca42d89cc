"""Quantization: precisions, calibration statistics, range algorithms, encodings (AIMET JSON),
cross-layer equalization and bias correction. The maths: docs/quantization.md."""

from .apply import QuantOptions, quantize_graph, resolve_auto
from .calibrate import Stats, collect_stats, iter_samples
from .precision import Precision, parse_precision

__all__ = ["QuantOptions", "quantize_graph", "resolve_auto", "Stats", "collect_stats", "iter_samples", "Precision", "parse_precision"]
