"""load_zoo: every spec of the zoo, with names unique across files (they name the out/ folders)."""

from pathlib import Path

from .configs import Configs, find_configs_dir, load_configs
from .load import load_spec
from .model import Spec


def load_zoo(spec_paths, configs: Configs | str | Path | None = None) -> list[Spec]:
    """Load the specs in the given order. `configs` as for load_spec; found from the first spec when None."""
    spec_paths = [Path(p) for p in spec_paths]
    if not spec_paths:
        return []
    if not isinstance(configs, Configs):
        configs = load_configs(configs if configs is not None else find_configs_dir(spec_paths[0].parent))
    specs, by_name = [], {}
    for path in spec_paths:
        spec = load_spec(path, configs)
        if spec.name in by_name:
            first = by_name[spec.name]
            how = "" if "name" in spec.yaml.data else " (from the file name)"
            raise spec.yaml.error(("name",), f"model name '{spec.name}'{how} is already used by "
                                             f"{first.where('name')}; names must be unique")
        by_name[spec.name] = spec
        specs.append(spec)
    return specs
