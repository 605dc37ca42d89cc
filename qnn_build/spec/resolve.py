"""resolve: a Spec -> one small config dict per build step, and writing them as files.

Each step's config holds only what that step reads, so a spec edit changes only the config files
(and so rebuilds only the steps) it affects: editing calibration touches the quantized convert
configs, not the float ones; editing test thresholds touches only test configs.
Paths are relative to the project root, so checkouts at different paths write identical bytes.

Layout under out_dir (slot = backend on the host target, else backend@target):
  <model>/release.config.json
  <model>/model_lib/<target>.config.json
  <model>/<precision>/convert.config.json
  <model>/<precision>/<slot>/test.config.json
"""

import json
import os
from pathlib import Path

from ..atomic import write_text
from ..options import QUANTIZATION, parse_precision

from .model import ResolvedSpec, Spec


def resolve(spec: Spec, root) -> ResolvedSpec:
    root = Path(root).absolute()
    configs = spec.configs
    slots = {}
    for backend, target in spec.targets:
        slots[spec.slot(backend, target)] = {
            "backend": backend, "target": target, "available": configs.backends[backend]["available"]}
    machines = [configs.machine_of(backend, where) for backend, where in spec.targets]
    test = {}
    if spec.test is not None:
        for precision in spec.precisions:
            for slot, where in slots.items():
                if configs.unsupported_reason(precision, where["backend"]) or spec.skip_reason(precision, slot):
                    continue  # e.g. fp32 on the npu: the build notes it and moves on
                test[(precision, slot)] = _sorted({
                    "data": _relative(spec.test["data"], root),
                    "labels": spec.test["labels"],
                    "samples": _samples(spec, where["backend"]),
                    "thresholds": _thresholds(spec, where["backend"])[precision],
                })
    return ResolvedSpec(
        name=spec.name,
        convert={p: _sorted(_convert_config(spec, p, root)) for p in spec.precisions},
        # The host's library is always built: every context binary, for any target, is finalized
        # from it on this machine.
        model_lib={target: _sorted({"target": configs.targets[target]})
                   for target in dict.fromkeys([configs.host_target, *machines]) if target is not None},
        test=test,
        release=_sorted({"zoo": configs.zoo["name"], "version": configs.zoo["version"]}),
        slots=slots,
    )


def _thresholds(spec: Spec, backend: str) -> dict:
    """precision -> limits on a backend: its own (test.<backend>_thresholds, htp_thresholds, over its
    yaml's defaults) over the rest, when it declares them."""
    return spec.test["backend_thresholds"].get(backend, spec.test["thresholds"])


def _samples(spec: Spec, backend: str) -> int | None:
    """The test's sample cap on a backend: the spec's, and on a slow one (test.samples in its yaml;
    test.<backend>_samples in the spec) at most that."""
    default = spec.configs.backend_test_default(backend, "samples")
    if default is None:
        return spec.test["samples"]
    cap = spec.test["backend_samples"].get(backend) or default
    return cap if spec.test["samples"] is None else min(cap, spec.test["samples"])


def _convert_config(spec: Spec, precision: str, root: Path) -> dict:
    config = {
        "source": _relative(spec.source, root),
        "input_dims": {name: entry["shape"] for name, entry in spec.inputs.items()},
        "input_values": {name: entry["value"] for name, entry in spec.inputs.items() if entry["value"] is not None},
        "out_nodes": spec.outputs,
        "precision": precision,
    }
    if any(spec.configs.backends[backend].get("context_input") == "qdq-onnx" for backend, _ in spec.targets):
        config["qdq"] = True  # model.qdq.onnx, which a context step reads (the htp's)
    if parse_precision(precision).is_quantized:  # float configs stay free of calibration, so its edits skip them
        config["calibration"] = _relative(spec.calibration, root)
        config.update(_quantization_options(spec, precision, root))
    return config


def _quantization_options(spec: Spec, precision: str, root: Path) -> dict:
    """The spec's `quantization` as `qnn-build convert` options (options.py QUANTIZATION), only those
    that matter to this precision (e.g. block_size only for 4-bit weights). The bitwidths come with
    `precision`."""
    q, prec = spec.quantization, parse_precision(precision)
    options = {o.name: o.from_spec(q[o.spec_key]) for o in QUANTIZATION if o.relevant is None or o.relevant(q, prec)}
    return {name: _relative(v, root) if isinstance(v, Path) else v for name, v in options.items()}


def _relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(Path(path).absolute(), root)).as_posix()


def _sorted(value):
    """Dicts with sorted keys, all the way down: the in-memory form matches the written form."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def config_files(resolved: ResolvedSpec) -> dict[str, dict]:
    """Relative file path (posix) -> config, for every step config of one spec."""
    model = resolved.name
    files = {f"{model}/release.config.json": resolved.release}
    for target, config in resolved.model_lib.items():
        files[f"{model}/model_lib/{target}.config.json"] = config
    for precision, config in resolved.convert.items():
        files[f"{model}/{precision}/convert.config.json"] = config
    for (precision, slot), config in resolved.test.items():
        files[f"{model}/{precision}/{slot}/test.config.json"] = config
    return files


def canonical_json(config: dict) -> str:
    return json.dumps(config, sort_keys=True, indent=1) + "\n"


def write_step_configs(resolved: ResolvedSpec, out_dir) -> list[Path]:
    """Write every step config under `out_dir`; unchanged files are left untouched. Returns all paths."""
    paths = []
    for relative, config in config_files(resolved).items():
        path = Path(out_dir, relative)
        write_text(path, canonical_json(config))
        paths.append(path)
    return paths
