"""Quantization: calibration statistics, range algorithms, encodings (AIMET JSON), cross-layer
equalization, bias correction, GPTQ and the range search. The maths: docs/quantization.md.

The quantizer builds and runs nothing itself: what it needs to run (the float model, a way to
compile and score a candidate, the calibration samples) is handed in by convert as arguments.
Its options and the precisions are declared in qnn_build/options.py.
"""

from .apply import QuantOptions, quantize_graph, resolve_auto
from .calibrate import Stats, collect_stats

__all__ = ["QuantOptions", "quantize_graph", "resolve_auto", "Stats", "collect_stats"]
