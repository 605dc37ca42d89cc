"""MANIFEST.json of a release: what is in the archive and how it was made.

    {"format_version": 1, "zoo", "version",
     "tools": {the build's tool-versions.json},
     "runtimes": {target: {"isa", "features", "dispatch", "dispatch_paths"}}, what each lib/<target>/
                  runtime assumes of the CPU (isa: "x86-64-v3", features), the features of the paths
                  it takes at run time where the CPU has them (dispatch: ["avx512f", ...]) and the
                  runtime sources those paths are in (dispatch_paths: ["npu/block_x86.cpp", ...])
     "files": {archive path: {"sha256", "size"}},          every file but MANIFEST.json itself
     "models": {name: {"spec": {"path", "sha256"}, "source": {"path", "sha256"},
                       "builds": {"<precision>/<target>": {"library", "model_json",
                                  "tests": {backend: {"passed", "samples", "outputs", "thresholds"}}}}}},
     "skipped": ["digits_cnn fp16: precision not available yet", ...]}

Paths are relative: archive paths to the archive's top folder, spec and source paths to the
project root. Nothing in it depends on where the checkout lives or when it was built.
"""

import hashlib
import json

FORMAT_VERSION = 1


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_manifest(zoo: str, version: str, tools: dict, files: dict[str, bytes], models: dict,
                   skipped: list[str], runtimes: dict | None = None) -> dict:
    return {
        "format_version": FORMAT_VERSION,
        "zoo": zoo,
        "version": version,
        "tools": tools,
        "runtimes": dict(sorted((runtimes or {}).items())),
        "files": {path: {"sha256": sha256(data), "size": len(data)} for path, data in sorted(files.items())},
        "models": models,
        "skipped": list(skipped),
    }


def test_summary(test_json: dict) -> dict:
    """The part of a test.json a manifest keeps."""
    return {key: test_json.get(key) for key in ("passed", "samples", "outputs", "thresholds")}


def dumps(manifest: dict) -> str:
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"
