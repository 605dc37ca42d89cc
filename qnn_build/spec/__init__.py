"""The spec layer: models/*.yaml -> checked Spec -> per-step config files. See docs/spec.md.

    specs = load_zoo(sorted(Path("models").glob("*.yaml")))
    for spec in specs:
        write_step_configs(resolve(spec, root="."), "out")
"""

from .configs import Configs, load_configs
from .load import load_spec
from .model import ResolvedSpec, Spec
from .resolve import config_files, resolve, write_step_configs
from .spec_error import SpecError
from .zoo import load_zoo

__all__ = [
    "Configs", "ResolvedSpec", "Spec", "SpecError",
    "config_files", "load_configs", "load_spec", "load_zoo", "resolve", "write_step_configs",
]
