"""cpu: the float simulation on our runtime. Every op the converter lowers to has a cpu kernel, at
every precision it runs (configs/backends/cpu.yaml): quantized graphs run in float on their
dequantized values."""

from .native import NativeBackend


class Cpu(NativeBackend):
    name = "cpu"

    def supports_op(self, op_type: str, precision: str) -> bool:
        return True
