"""The htp backend: Qualcomm's QNN HTP (the Hexagon NPU of Snapdragon SoCs) through onnxruntime-qnn.

    model.qdq.onnx (convert --qdq) --context-binary--> model.htp.onnx + model.htp.bin + model.htp.json
                                   --net-run/test----> outputs from Qualcomm's HTP backend (emulated)

ep.py        onnxruntime-qnn: availability, versions, session options for a SoC
socs.py      the SoCs of configs/socs/ (chip, QNN SoC id, HTP architecture)
generate.py  the context binary, generated in a fresh process; refused nodes named
sidecar.py   model.htp.json, and the checks every load makes (sha256, SoC, QNN version)
session.py   HtpModel: load and run (our interface: inputs, outputs, run, timings)
profile.py   QNN's per-node profile events
docs/htp.md has the whole picture.
"""

from .ep import HtpError, available, require, versions

__all__ = ["HtpError", "available", "require", "versions"]
