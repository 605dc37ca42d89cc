"""htp: Qualcomm's QNN HTP backend (the Hexagon NPU of Snapdragon SoCs) through onnxruntime-qnn
(qnn_build/htp/, docs/htp.md). Its places are SoCs (configs/socs/); its context step reads the QDQ
export (model.qdq.onnx) and writes a real QNN context binary with its EPContext wrapper and sidecar;
it loads and runs them on the HTP backend, which on x86-64 emulates the SoC's HTP here."""

from pathlib import Path

from ..errors import QnnBuildError
from ..spec.configs import package_configs
from .contract import Backend, Placement


class Htp(Backend):
    name = "htp"
    context_name = "model.htp.onnx"
    context_rows = ("qnn_version", "qnn_build_id")

    def supports_op(self, op_type: str, precision: str) -> bool:
        from ..htp.support import supports
        return supports(op_type, precision)

    def placement(self, where: str | None) -> Placement:
        from ..htp.socs import get_soc
        soc = get_soc(where or package_configs().default_placement(self.name))
        return Placement(self.name, soc["name"], runs_here=True, machine=None)  # HTP emulation runs here

    def context_files(self, output) -> list[Path]:
        from ..htp.sidecar import artifact_paths
        paths = artifact_paths(output)
        return [paths["wrapper"], paths["binary"], paths["sidecar"]]

    def build_context(self, source, output, *, placement: Placement, precision: str | None = None,
                      runtime: str | None = None) -> dict:
        from ..htp.generate import generate_context
        info = generate_context(source, output, placement.name, precision=precision)
        floats = f"; {len(info['float_nodes'])} node(s) in float: {', '.join(info['float_nodes'][:4])}" \
            if info["float_nodes"] else ""
        summary = (f"{info['chip']}, HTP v{info['htp_arch']}, QNN {info['qnn_version']}: {info['binary']['bytes']} "
                   f"bytes in {info['generate_seconds']:.1f} s{floats}")
        return {**info, "file_bytes": info["binary"]["bytes"], "summary": summary}

    def record_api_calls(self, source, folder, *, placement: Placement) -> None:
        from ..htp.generate import record_qnn_api
        record_qnn_api(source, folder, placement.name)

    def describe_context(self, path) -> dict | None:
        from ..htp.sidecar import context_info
        return context_info(path)

    def load(self, model=None, *, context=None, threads: int = 1, runtime: str | None = None,
             precision: str | None = None, placement: Placement | None = None):
        from ..htp.session import HtpModel
        if (model is None) == (context is None):
            raise QnnBuildError("load a model.qdq.onnx (with a SoC) or a model.htp.onnx context (one of them)")
        return HtpModel(context or model, soc=placement.name if placement else None, precision=precision)
