"""load_spec: a models/*.yaml file -> a checked, canonical Spec.

Two passes: the JSON Schema (schema.json) checks shapes and types; the checks here need the file
system or configs/ (files exist, names are known, precision/backend pairs are supported).
"""

import re
from pathlib import Path

from .configs import Configs, UnknownName, find_configs_dir, load_configs
from .files import check_npz_has, existing_file
from .model import Spec
from .validate import check_schema
from .yaml_source import YamlSource

NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")
THRESHOLD_KEYS = ("sqnr_db", "cosine", "max_abs", "rel_err", "top1")


def load_spec(path, configs: Configs | str | Path | None = None) -> Spec:
    """Load and check one spec. `configs`: a Configs, a configs/ directory, or None to find the
    nearest configs/ above the spec (else under the working directory)."""
    yaml = YamlSource(path)
    if not isinstance(configs, Configs):
        configs = load_configs(configs if configs is not None else find_configs_dir(Path(path).parent))
    check_schema(yaml, "schema.json", backend_tests=configs.backend_tests())  # test.<backend>_<setting> keys
    return _SpecChecker(yaml, configs).spec()


class _SpecChecker:
    def __init__(self, yaml: YamlSource, configs: Configs):
        self.yaml, self.data, self.configs = yaml, yaml.data, configs

    def spec(self) -> Spec:
        inputs = self._inputs()
        precisions = self._names("precisions", self.configs.canonical_precision)
        targets = self._names("targets", self.configs.split_target)
        self._check_supported(precisions, targets)
        return Spec(
            name=self._name(),
            path=self.yaml.path.absolute(),
            source=existing_file(self.yaml, ("source",)),
            inputs=inputs,
            outputs=_as_list(self.data.get("outputs")),
            precisions=[p for p, _ in precisions],
            targets=[t for t, _ in targets],
            calibration=self._calibration(precisions, inputs),
            quantization=self._quantization([p for p, _ in precisions]),
            test=self._test([p for p, _ in precisions], inputs),
            skip=self._skip([t for t, _ in targets]),
            configs=self.configs,
            yaml=self.yaml,
        )

    def _skip(self, targets) -> dict[str, dict[str, str]]:
        """skip: {backend or slot: {precision: why}}, precisions canonical; keys must name a listed target."""
        given = self.data.get("skip") or {}
        slots = {name for backend, where in targets for name in (backend, self._slot(backend, where))}
        out = {}
        for key, entries in given.items():
            if key not in slots:
                raise self.yaml.error(("skip", key), f"'{key}' is not a backend or slot of targets "
                                                     f"(they are: {', '.join(sorted(slots))})")
            try:
                out[key] = {self.configs.canonical_precision(p): why for p, why in entries.items()}
            except UnknownName as e:
                raise self.yaml.error(("skip", key), str(e)) from None
        return out

    def _slot(self, backend: str, where: str) -> str:
        return backend if where == self.configs.host_target else f"{backend}@{where}"

    def _name(self) -> str:
        if "name" in self.data:
            return self.data["name"]
        stem = self.yaml.path.stem
        if not NAME_PATTERN.fullmatch(stem):
            raise self.yaml.error(("name",), f"the file name '{stem}' is not a valid model name "
                                             "(letters, digits, '_', '.', '-'); add a `name:` key")
        return stem

    def _inputs(self) -> dict[str, dict]:
        inputs = {}
        for name, given in self.data["inputs"].items():
            entry = given if isinstance(given, dict) else {"shape": given}
            shape = [int(d) for d in entry["shape"]]
            value = entry.get("value")
            if isinstance(value, list) and _nested_shape(value) != shape:
                found = _nested_shape(value)
                raise self.yaml.error(("inputs", name, "value"),
                                      f"has shape {found} but the input's shape is {shape}" if found
                                      else "is a ragged list; give a number or a list of the input's shape")
            inputs[name] = {"shape": shape, "value": value}
        return inputs

    def _names(self, key: str, canonical) -> list[tuple]:
        """[(canonical value, key path)] for `precisions` / `targets`: one string or a list, or the default."""
        given = self.data.get(key)
        if given is None:
            entries = [(name, (key,)) for name in self.configs.zoo.get("defaults", {}).get(key, [])]
        elif isinstance(given, str):
            entries = [(given, (key,))]
        else:
            entries = [(name, (key, i)) for i, name in enumerate(given)]
        result, seen = [], {}
        for name, at in entries:
            try:
                value = canonical(name)
            except UnknownName as err:
                raise self.yaml.error(at, str(err)) from None
            if value in seen:
                also = "" if seen[value] == name else f" (as '{seen[value]}')"
                raise self.yaml.error(at, f"{_show(value)} is already listed{also}")
            seen[value] = name
            result.append((value, at))
        return result

    def _check_supported(self, precisions, targets) -> None:
        """A precision must run on at least one listed backend. Pairs that cannot run (fp32 on the
        npu, beside fp32 on the cpu) are left out of the matrix by the build, with a note."""
        for precision, at in precisions:
            reasons = {backend: self.configs.unsupported_reason(precision, backend) for (backend, _), _ in targets}
            if reasons and all(reasons.values()):
                backend, why = next(iter(reasons.items()))
                raise self.yaml.error(at, f"{precision} cannot run on {backend}: {why}")

    def _calibration(self, precisions, inputs) -> Path | None:
        quantized = [(p, at) for p, at in precisions if self.configs.is_quantized(p)]
        if self.data.get("calibration") is None:
            if quantized:
                precision, at = quantized[0]
                raise self.yaml.error(at, f"{precision} is quantized and needs calibration data: add "
                                          "`calibration:` (an .npz, or a qnn-net-run input_list .txt)")
            return None
        path = existing_file(self.yaml, ("calibration",), suffixes=(".npz", ".txt"))
        if path.suffix.lower() == ".npz":
            check_npz_has(self.yaml, ("calibration",), path, _fed_inputs(inputs), "input")
        return path

    def _quantization(self, precisions: list[str]) -> dict:
        given = self.data.get("quantization") or {}
        merged = {**self.configs.quantization_defaults, **given}
        if merged["block_size"] is not None:
            four_bit = [p for p, info in self.configs.precisions.items() if info["weight_bits"] == 4]
            if not set(four_bit) & set(precisions):
                raise self.yaml.error(("quantization", "block_size"), f"only applies to 4-bit weights "
                                      f"({', '.join(four_bit)}), and precisions has none; "
                                      "remove it or set it to null")
        if "percentile" in given and merged["act_range"] != "percentile":
            raise self.yaml.error(("quantization", "percentile"), "is only used with `act_range: percentile` "
                                  f"(act_range is {merged['act_range']})")
        if merged["overrides"] is not None:
            merged["overrides"] = existing_file(self.yaml, ("quantization", "overrides"), suffixes=(".json",))
        return merged

    def _test(self, precisions: list[str], inputs) -> dict | None:
        test = self.data.get("test")
        if test is None:
            return None
        data = existing_file(self.yaml, ("test", "data"), suffixes=(".npz",))
        check_npz_has(self.yaml, ("test", "data"), data, _fed_inputs(inputs), "input")
        if test.get("labels") is not None:
            check_npz_has(self.yaml, ("test", "labels"), data, [test["labels"]], "labels")
        per_precision = self._precision_thresholds(test.get("precision_thresholds") or {})
        layers = {p: [self.configs.precisions[p]["thresholds"], test.get("thresholds") or {}, per_precision.get(p, {})]
                  for p in precisions}
        thresholds = {p: _limits(layers[p]) for p in precisions}
        backend_thresholds, backend_samples = {}, {}
        for backend, settings in self.configs.backend_tests():  # test.<backend>_<setting>: its own, over the above
            if "thresholds" in settings:
                key = f"{backend}_thresholds"
                default = self.configs.backend_test_default(backend, "thresholds") or {}
                given = self._precision_thresholds(test.get(key) or {}, key)
                backend_thresholds[backend] = {p: _limits(layers[p] + [default.get(p) or {}, given.get(p, {})])
                                               for p in precisions}
            if "samples" in settings and test.get(f"{backend}_samples") is not None:
                backend_samples[backend] = int(test[f"{backend}_samples"])
        samples = test.get("samples")
        return {"data": data, "labels": test.get("labels"), "samples": None if samples is None else int(samples),
                "thresholds": thresholds, "backend_thresholds": backend_thresholds, "backend_samples": backend_samples}

    def _precision_thresholds(self, given: dict, key: str = "precision_thresholds") -> dict:
        """Canonical precision -> limits. Entries for precisions not built are kept quiet, so a precision
        can be dropped from the list for a while without deleting its thresholds."""
        result = {}
        for name, limits in given.items():
            at = ("test", key, name)
            try:
                precision = self.configs.canonical_precision(name)
            except UnknownName as err:
                raise self.yaml.error(at, str(err)) from None
            if precision in result:
                raise self.yaml.error(at, f"thresholds for {precision} are given twice")
            result[precision] = limits or {}
        return result


def _limits(layers: list[dict]) -> dict:
    """Threshold layers merged, later over earlier; a null removes a limit."""
    merged = {k: v for layer in layers for k, v in layer.items()}
    return {k: merged[k] for k in THRESHOLD_KEYS if merged.get(k) is not None}


def _as_list(value) -> list:
    """Keys that take one string or a list: None -> [], 'x' -> ['x']."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _fed_inputs(inputs: dict) -> list[str]:
    """Inputs that data files must provide: those not pinned to a constant `value`."""
    return [name for name, entry in inputs.items() if entry["value"] is None]


def _nested_shape(value) -> list[int] | None:
    """The shape of a nested list of numbers; None when ragged."""
    if not isinstance(value, list):
        return []
    shapes = [_nested_shape(item) for item in value]
    if any(s is None or s != shapes[0] for s in shapes):
        return None
    return [len(value), *(shapes[0] if shapes else [])]


def _show(value) -> str:
    return f"{value[0]}@{value[1]}" if isinstance(value, tuple) else str(value)
