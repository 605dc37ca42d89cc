"""The release step: pack the zoo into one reproducible .tar.gz.

Layout inside the archive (top folder `<zoo>-<version>/`):

    MANIFEST.json                                   sha256 of every file, specs, sources, tools, metrics
    include/qnnb.h                                  the C API
    lib/<target>/libqnnb.so, lib<openblas>.so       the runtime library and the BLAS it links
    lib/<target>/qnn-net-run                        the native runner (docs/targets.md)
    lib/<other target>/qnnb.dll, qnn-net-run.exe    every other target the specs name
    models/<model>/<precision>/<target>/lib<model>.so   the model library (name from the target config)
    models/<model>/<precision>/<target>/model.json
    models/<model>/<precision>/<target>/model-<backend>.ctx   the context binary for a backend
    models/<model>/<precision>/<target>/<slot>/...             a context of several files, all of them
                                                    (the htp's: model.htp.{onnx,bin,json}, docs/htp.md)
    models/<model>/<precision>/<target>/test-<slot>.json
    models/<model>/<precision>/<target>/model.qdq.onnx         the QDQ ONNX export, when built

Reproducible: entries sorted, every mtime 0, uid/gid 0, no user or group names, modes 0644 (0755 for
libraries and folders), the gzip header has mtime 0 and no file name. The release config holds only
paths relative to the project root, so checkouts at different paths pack identical bytes.
"""

import gzip
import io
import json
import tarfile
from pathlib import Path, PurePosixPath

from ..atomic import write_bytes
from ..errors import QnnBuildError
from .manifest import build_manifest, dumps, sha256, test_summary
from ..toolchain.targets import get_target

EXECUTABLE_SUFFIXES = (".so", ".dll", ".dylib", ".exe", "/qnn-net-run")


def release(config: dict, output) -> dict:
    """Write the archive at `output`; returns the manifest."""
    top = f"{config['zoo']}-{config['zoo_version']}"
    files: dict[str, bytes] = {}
    runtime = config["runtime"]
    files["include/qnnb.h"] = _read(runtime["header"])
    runtimes = {}
    for each in [runtime, *config.get("cross_runtimes", [])]:
        for lib in each["libraries"]:
            files[f"lib/{each['target']}/{PurePosixPath(lib).name}"] = _read(lib)
        target = get_target(each["target"])
        runtimes[target.name] = {"isa": target.isa, "features": list(target.features), "dispatch": list(target.dispatch),
                                 "dispatch_paths": list(target.dispatch_paths)}
    models = {}
    for model in config["models"]:
        builds = {}
        for build in model["builds"]:
            folder = f"models/{model['name']}/{build['precision']}/{build['target']}"
            files[f"{folder}/{build['shared_lib']}"] = _read(build["library"])
            files[f"{folder}/model.json"] = _read(build["model_json"])
            tests = {}
            for backend, path in sorted(build["tests"].items()):
                data = _read(path)
                result = _json(data, path)
                if not result.get("passed"):
                    raise QnnBuildError(f"{path}: the test did not pass; a release holds passing builds only")
                files[f"{folder}/test-{backend}.json"] = data
                tests[backend] = test_summary(result)
            contexts = {}
            for slot, path in sorted(build.get("contexts", {}).items()):
                if isinstance(path, list):  # every file of the context, beside each other as made
                    contexts[slot] = [f"{folder}/{slot}/{PurePosixPath(p).name}" for p in path]
                    files.update({name: _read(p) for name, p in zip(contexts[slot], path)})
                else:
                    contexts[slot] = f"{folder}/model-{slot}.ctx"
                    files[contexts[slot]] = _read(path)
            entry = {"library": f"{folder}/{build['shared_lib']}", "model_json": f"{folder}/model.json",
                     "tests": tests, "contexts": contexts}
            if build.get("qdq"):
                entry["qdq"] = f"{folder}/model.qdq.onnx"
                files[entry["qdq"]] = _read(build["qdq"])
            builds[f"{build['precision']}/{build['target']}"] = entry
        models[model["name"]] = {
            "spec": {"path": model["spec"], "sha256": sha256(_read(model["spec"]))},
            "source": {"path": model["source"], "sha256": sha256(_read(model["source"]))},
            "builds": builds,
        }
    tools = _json(_read(config["tool_versions"]), config["tool_versions"])
    manifest = build_manifest(config["zoo"], config["zoo_version"], tools, files, models, config.get("skipped", []),
                              runtimes)
    files["MANIFEST.json"] = dumps(manifest).encode()
    write_bytes(output, pack(top, files))
    return manifest


def pack(top: str, files: dict[str, bytes]) -> bytes:
    """A deterministic .tar.gz of `files` (archive path -> bytes) under the folder `top`."""
    names = {f"{top}/{path}" for path in files}
    folders = {str(parent) for name in names for parent in PurePosixPath(name).parents if str(parent) != "."}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(folders | names):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if name in folders:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            data = files[name[len(top) + 1:]]
            info.size = len(data)
            info.mode = 0o755 if name.endswith(EXECUTABLE_SUFFIXES) else 0o644
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def _read(path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise QnnBuildError(f"{path}: not found (build it before the release)") from None


def _json(data: bytes, path):
    try:
        return json.loads(data)
    except json.JSONDecodeError as e:
        raise QnnBuildError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
