"""The loaded spec (what the user asked for, checked and canonical) and its per-step resolution."""

from dataclasses import dataclass, field
from pathlib import Path

from .configs import Configs
from .yaml_source import YamlSource


@dataclass
class Spec:
    """One model spec after validation. Paths are absolute; precisions canonical; defaults merged."""

    name: str
    path: Path                         # the spec file
    source: Path                       # the ONNX model
    inputs: dict[str, dict]            # input name -> {"shape": [int], "value": number | list | None}
    outputs: list[str]                 # empty: the model's own outputs
    precisions: list[str]              # canonical names, in spec order
    targets: list[tuple[str, str]]     # (backend, target) pairs, in spec order
    calibration: Path | None
    quantization: dict                 # every option, spec values over configs/precisions.yaml defaults
    test: dict | None                  # {"data", "labels", "samples", "thresholds": {precision: {...}}}
    configs: Configs = field(repr=False, compare=False)
    yaml: YamlSource = field(repr=False, compare=False)
    skip: dict = field(default_factory=dict)  # backend or slot -> {precision: why not built}

    def where(self, *key) -> str:
        """'models/x.yaml:12' for a key path, so later steps can point at the spec line too."""
        return f"{self.yaml.display}:{self.yaml.line_of(key)}"

    def skip_reason(self, precision: str, slot: str) -> str | None:
        """Why the spec leaves this (precision, slot) out (its `skip:`), or None."""
        backend = slot.partition("@")[0]
        for key in (slot, backend):
            if precision in self.skip.get(key, {}):
                return self.skip[key][precision]
        return None

    def slot(self, backend: str, target: str) -> str:
        """The name of a (backend, place) pair in file paths: 'cpu' at its default place (the host), else
        'npu@aarch64-windows'; 'htp@x-elite' even at its default (a SoC, not a machine)."""
        at_home = target == self.configs.default_placement(backend) and self.configs.machine_of(backend, target)
        return backend if at_home else f"{backend}@{target}"  # a place that is no machine is always named


@dataclass
class ResolvedSpec:
    """The config dict of every build step of one spec. Paths inside are relative to the project root."""

    name: str
    convert: dict[str, dict]               # precision -> convert config
    model_lib: dict[str, dict]             # target -> model-lib config
    test: dict[tuple[str, str], dict]      # (precision, slot) -> test config; empty without a test section
    release: dict
    slots: dict[str, dict] = field(default_factory=dict)  # slot -> {"backend", "target", "available"}
