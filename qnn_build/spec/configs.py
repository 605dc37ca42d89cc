"""The presets under configs/: the zoo, and the precisions, backends and targets a spec may name.

configs/
  zoo.yaml              name, version, host_target, defaults for specs
  precisions.yaml       canonical precisions (+ aliases, bits, default thresholds), quantizer defaults
  backends/<name>.yaml  one per backend: the precisions it runs, whether it is built yet
  targets/<name>.yaml   one per target machine: triple, compiler, flags, library file name
Each file is checked against a $defs entry of configs.schema.json.
"""

import difflib
from dataclasses import dataclass
from pathlib import Path

from .spec_error import SpecError
from .validate import check_schema
from .yaml_source import YamlSource, display_path


class UnknownName(ValueError):
    """A spec named a precision, backend or target the configs do not define; str() says which."""


@dataclass
class Configs:
    dir: Path
    zoo: dict
    precisions: dict[str, dict]  # canonical name -> {aliases, kind, weight_bits, activation_bits, thresholds}
    quantization_defaults: dict
    backends: dict[str, dict]
    targets: dict[str, dict]

    @property
    def host_target(self) -> str:
        return self.zoo["host_target"]

    def canonical_precision(self, name: str) -> str:
        """'int8' -> 'w8a8', 'FP16' -> 'fp16'; UnknownName for anything else."""
        wanted = str(name).lower()
        for canonical, info in self.precisions.items():
            if wanted == canonical or wanted in info["aliases"]:
                return canonical
        spellings = [n for c, info in self.precisions.items() for n in [c, *info["aliases"]]]
        raise UnknownName(f"unknown precision '{name}'{_hint(wanted, spellings)} "
                          f"(known: {', '.join(self.precisions)})")

    def is_quantized(self, precision: str) -> bool:
        return self.precisions[precision]["kind"] == "quantized"

    def split_target(self, text: str) -> tuple[str, str]:
        """'npu@aarch64-windows' -> ('npu', 'aarch64-windows'); 'cpu' -> ('cpu', host target)."""
        backend, _, target = str(text).partition("@")
        if backend not in self.backends:
            raise UnknownName(f"unknown backend '{backend}'{_hint(backend, self.backends)} "
                              f"(known: {', '.join(sorted(self.backends))}; see configs/backends/)")
        target = target or self.host_target
        if target not in self.targets:
            raise UnknownName(f"unknown target '{target}'{_hint(target, self.targets)} "
                              f"(known: {', '.join(sorted(self.targets))}; see configs/targets/)")
        return backend, target

    def unsupported_reason(self, precision: str, backend: str) -> str | None:
        """None when `backend` runs `precision`; else why not, for the user."""
        info = self.backends[backend]
        if precision in info["precisions"]:
            return None
        why = info.get("unsupported", {}).get(precision)
        return why or f"the {backend} backend does not support {precision} (it runs: {', '.join(info['precisions'])})"


def _hint(word, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def find_configs_dir(start) -> Path:
    """The nearest configs/ (holding zoo.yaml) at or above `start`, else under the working directory."""
    start = Path(start).absolute()
    for folder in [start, *start.parents, Path.cwd()]:
        if (folder / "configs" / "zoo.yaml").is_file():
            return folder / "configs"
    raise SpecError(display_path(start), None, "", "no configs/zoo.yaml found in this or any parent "
                    "directory, nor in the working directory")


def load_configs(configs_dir) -> Configs:
    configs_dir = Path(configs_dir)
    zoo = _load(configs_dir / "zoo.yaml", "zoo")
    precisions = _load(configs_dir / "precisions.yaml", "precisions")
    backends = {path.stem: _load(path, "backend") for path in sorted(configs_dir.glob("backends/*.yaml"))}
    targets = {path.stem: _load(path, "target") for path in sorted(configs_dir.glob("targets/*.yaml"))}
    configs = Configs(
        dir=configs_dir,
        zoo=zoo.data,
        precisions=precisions.data["precisions"],
        quantization_defaults={"overrides": None, **precisions.data["quantization"]},
        backends={name: source.data for name, source in backends.items()},
        targets={name: source.data for name, source in targets.items()},
    )
    _check_consistency(configs, zoo, precisions, backends, targets)
    return configs


def _load(path: Path, kind: str) -> YamlSource:
    source = YamlSource(path)
    check_schema(source, f"configs.schema.json#{kind}")
    return source


def _check_consistency(configs: Configs, zoo, precisions, backends, targets) -> None:
    """Cross-file checks the schema cannot express: names match files, references resolve."""
    spelled = {}
    for canonical, info in configs.precisions.items():
        for index, name in enumerate([canonical, *info["aliases"]]):
            path = ("precisions", canonical) + (("aliases", index - 1) if index else ())
            if name in spelled:
                raise precisions.error(path, f"'{name}' already names precision '{spelled[name]}'")
            spelled[name] = canonical
    for files in (backends, targets):
        for stem, source in files.items():
            if source.data["name"] != stem:
                raise source.error(("name",), f"must match the file name '{stem}'")
    for backend, source in backends.items():
        for key in ("precisions", "unsupported"):
            for index, name in enumerate(source.data.get(key, {})):
                if name not in configs.precisions:
                    at = (key, index) if key == "precisions" else (key, name)
                    raise source.error(at, f"'{name}' is not a canonical precision in precisions.yaml")
    if not backends or not targets:
        raise SpecError(display_path(configs.dir), None, "", "needs backends/*.yaml and targets/*.yaml")
    if configs.host_target not in configs.targets:
        raise zoo.error(("host_target",), f"no configs/targets/{configs.host_target}.yaml")
    defaults = configs.zoo.get("defaults", {})
    for key, check in (("precisions", configs.canonical_precision), ("targets", configs.split_target)):
        for index, name in enumerate(defaults.get(key, [])):
            try:
                check(name)
            except UnknownName as err:
                raise zoo.error(("defaults", key, index), str(err)) from None
