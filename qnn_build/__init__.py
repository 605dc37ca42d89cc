"""qnn-build: ONNX models built like software.

The workflow steps (convert, model-lib, context-binary, net-run) are command lines in `qnn_build.cli`;
each reads files and writes files. See docs/pipeline.md for the flow.
"""

__version__ = "0.1.0"
