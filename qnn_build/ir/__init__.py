"""The graph the converter works on: ONNX import, folding, and graph passes."""

from .graph import Graph, Node, Tensor
from .onnx_import import import_onnx

__all__ = ["Graph", "Node", "Tensor", "import_onnx"]
