"""The presets under configs/: the zoo, and the precisions, backends and targets a spec may name.

configs/
  zoo.yaml              name, version, host_target, defaults for specs
  precisions.yaml       per precision (names, aliases and bits: qnn_build/options.py) the default
                        thresholds and whether it is built yet; optionally zoo-wide quantizer options
  backends/<name>.yaml  one per backend: the precisions it runs, whether it is built yet, where
                        its `backend@where` names point (`placements`: a folder of configs/; default
                        targets/, the machines), and its own test settings with their defaults (`test`)
  targets/<name>.yaml   one per target machine: triple, compiler, flags, library file name
  socs/<name>.yaml      one per Snapdragon SoC, the htp backend's places: chip, QNN SoC id, HTP arch
Each file is checked against a $defs entry of configs.schema.json (a placement folder's files against
the entry PLACEMENT_SCHEMAS names).
"""

import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..options import PRECISIONS, QUANTIZATION, Precision
from .spec_error import SpecError
from .validate import check_against, check_schema, schema_problem
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
    placements: dict[str, dict[str, dict]] = field(default_factory=dict)  # folder -> name -> its file

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
        """'npu@aarch64-windows' -> ('npu', 'aarch64-windows'); 'cpu' -> ('cpu', its default place:
        the host target for a backend placed on machines)."""
        backend, _, where = str(text).partition("@")
        if backend not in self.backends:
            raise UnknownName(f"unknown backend '{backend}'{_hint(backend, self.backends)} "
                              f"(known: {', '.join(sorted(self.backends))}; see configs/backends/)")
        where = where or self.default_placement(backend)
        folder = self.placement_folder(backend)
        known = self.placements[folder]
        if where not in known:
            kind = "target" if folder == "targets" else f"place for {backend}"
            raise UnknownName(f"unknown {kind} '{where}'{_hint(where, known)} "
                              f"(known: {', '.join(sorted(known))}; see configs/{folder}/)")
        return backend, where

    def placement_folder(self, backend: str) -> str:
        """The configs/ folder whose file names are `backend@where`'s places."""
        return self.backends[backend].get("placements", "targets")

    def default_placement(self, backend: str) -> str:
        return self.backends[backend].get("default_placement", self.host_target)

    def machine_of(self, backend: str, where: str) -> str | None:
        """The configs/targets/ machine a slot `backend@where` runs on; None when its places are not
        machines (its artifacts are then not model libraries of ours)."""
        return where if self.placement_folder(backend) == "targets" else None

    def backend_tests(self) -> tuple:
        """((backend, (setting, ...)), ...): the test settings each backend declares (its yaml's
        `test`), which a spec sets as test.<backend>_<setting> (the htp's: htp_samples, htp_thresholds)."""
        return tuple((name, tuple(sorted(info["test"]))) for name, info in sorted(self.backends.items())
                     if info.get("test"))

    def backend_test_default(self, backend: str, setting: str):
        """A backend's default for one of its test settings (None: it declares none)."""
        return self.backends[backend].get("test", {}).get(setting)

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


# A folder of places a backend yaml may name (`placements`) -> the configs.schema.json entry of its files;
# another folder's files are checked against the backend yaml's own `placement_schema`.
PLACEMENT_SCHEMAS = {"targets": "target", "socs": "soc"}


@lru_cache(maxsize=None)
def package_configs() -> Configs:
    """The configs/ nearest this package (else under the working directory), loaded once."""
    return load_configs(find_configs_dir(Path(__file__).parent))


def load_configs(configs_dir) -> Configs:
    configs_dir = Path(configs_dir)
    zoo = _load(configs_dir / "zoo.yaml", "zoo")
    precisions = _load(configs_dir / "precisions.yaml", "precisions")
    backends = {path.stem: _load(path, "backend") for path in sorted(configs_dir.glob("backends/*.yaml"))}
    targets = {path.stem: _load(path, "target") for path in sorted(configs_dir.glob("targets/*.yaml"))}
    placements = {"targets": {name: source.data for name, source in targets.items()}}
    for source in backends.values():
        folder = source.data.get("placements", "targets")
        if folder not in placements:
            check = _place_check(source, folder)
            placements[folder] = {path.stem: check(YamlSource(path)).data
                                  for path in sorted(configs_dir.glob(f"{folder}/*.yaml"))}
    configs = Configs(
        dir=configs_dir,
        zoo=zoo.data,
        precisions={name: {**_identity(PRECISIONS[name]), **info} for name, info in precisions.data["precisions"].items()
                    if name in PRECISIONS},
        quantization_defaults={**{o.spec_key: o.to_spec(o.default) for o in QUANTIZATION},
                               **precisions.data.get("quantization", {})},
        backends={name: source.data for name, source in backends.items()},
        targets=placements["targets"],
        placements=placements,
    )
    _check_consistency(configs, zoo, precisions, backends, targets)
    return configs


def _identity(p: Precision) -> dict:
    """What the precision table says of a precision, as configs/ entries spell it."""
    return {"aliases": list(p.aliases), "kind": "quantized" if p.is_quantized else "float",
            "weight_bits": p.weight_bits, "activation_bits": p.act_bits}


def _place_check(backend: YamlSource, folder: str):
    """How a file of a backend's placement folder is checked: a kind this package knows
    (PLACEMENT_SCHEMAS), else the schema its yaml gives (`placement_schema`)."""
    if folder in PLACEMENT_SCHEMAS:
        return lambda source: _checked(source, f"configs.schema.json#{PLACEMENT_SCHEMAS[folder]}")
    schema = backend.data.get("placement_schema")
    if schema is None:
        raise backend.error(("placements",), f"no kind of place '{folder}' (known: {', '.join(PLACEMENT_SCHEMAS)}); "
                                             "give its files' JSON Schema as placement_schema")
    if schema_problem(schema):
        raise backend.error(("placement_schema",), f"not a JSON Schema: {schema_problem(schema)}")

    def check(source):
        check_against(source, schema)
        return source
    return check


def _checked(source: YamlSource, schema_name: str) -> YamlSource:
    check_schema(source, schema_name)
    return source


def _load(path: Path, kind: str) -> YamlSource:
    source = YamlSource(path)
    check_schema(source, f"configs.schema.json#{kind}")
    return source


def _check_consistency(configs: Configs, zoo, precisions, backends, targets) -> None:
    """Cross-file checks the schema cannot express: names match files, references resolve."""
    for name in precisions.data["precisions"]:
        if name not in PRECISIONS:
            raise precisions.error(("precisions", name), f"not a precision qnn-build knows (known: {', '.join(PRECISIONS)})")
    missing = [name for name in PRECISIONS if name not in configs.precisions]
    if missing:
        raise precisions.error(("precisions",), f"no entry for {missing[0]} (every precision has one; "
                                                f"`available: false` leaves it out of builds)")
    for files in (backends, targets):
        for stem, source in files.items():
            if source.data["name"] != stem:
                raise source.error(("name",), f"must match the file name '{stem}'")
    for backend, source in backends.items():
        named = {("precisions",): source.data.get("precisions", []), ("unsupported",): source.data.get("unsupported", {}),
                 ("test", "thresholds"): source.data.get("test", {}).get("thresholds", {})}
        for key, names in named.items():
            for index, name in enumerate(names):
                if name not in configs.precisions:
                    at = (*key, index) if key == ("precisions",) else (*key, name)
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
