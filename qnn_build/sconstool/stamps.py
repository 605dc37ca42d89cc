"""Tool-version stamps: what each step's output depends on besides its files.

A step must rerun when the tools that make its output change: a qnn-build upgrade or an edit of the
converter's Python code, a new onnx, onnxruntime, numpy or C++ compiler. SCons cannot see those, so
the build writes them to small JSON files (only when they change) and makes each step depend on the
one that describes it:

    out/tool-versions/convert.json     qnn-build, sha256 of the converter's Python sources, onnx, numpy,
                                       OpenBLAS's environment (OPENBLAS_*: its kernels' rounding; so test)
    out/tool-versions/model-lib.json   qnn-build, sha256 of toolchain/ and qnnb.h, the C++ compiler
    out/tool-versions/context-binary.json  sha256 of the ctypes binding and the context step, numpy; and
                                       what the backends declare they run (their yaml's `runs`: the
                                       htp's package, onnx, onnxruntime and onnxruntime-qnn, QNN itself)
                                       (the runtime library is a source of the step)
    out/tool-versions/runtime.json     sha256 of toolchain/, the compiler, the machine (its flags come
                                       from configs/targets/, and the C++ sources themselves are sources
                                       of the runtime step)
    out/tool-versions/reference.json   sha256 of the reference code, onnx, onnxruntime, numpy
    out/tool-versions/test.json        sha256 of the test code and the ctypes binding, numpy
    out/tool-versions/release.json     sha256 of the release code
    out/tool-versions.json             all of the above in one file (it goes into the release manifest)

An onnxruntime upgrade so reruns the references and nothing else (and the tests only if a reference
changed); a compiler upgrade rebuilds the runtime and the model libraries, not the conversions.
"""

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from .. import __version__
from ..atomic import write_text
from ..spec.configs import package_configs

PACKAGE = Path(__file__).resolve().parents[1]

# The package's files each step runs, relative to the package (a folder: every *.py below it).
# convert: everything but what it never imports, so a new converter module is covered by default.
COMMON = ["__init__.py", "__main__.py", "cli.py", "options.py", "errors.py", "atomic.py", "log.py",
          "data/__init__.py", "data/json_file.py"]  # cli.py reads --config files with it
# What a backend runs beyond the shared code, as its configs/backends/<name>.yaml declares (`runs`):
# its own package of qnn_build (the htp's: htp/) and the Python distributions it loads.
_RUNS = [info.get("runs", {}) for info in package_configs().backends.values()]
OWN_PACKAGES = [r["package"] for r in _RUNS if "package" in r]
OWN_DISTRIBUTIONS = list(dict.fromkeys(d for r in _RUNS for d in r.get("distributions", [])))
NOT_CONVERTER = ("sconstool", "report", *OWN_PACKAGES)
# What loading and running a model on a backend imports (and no converter module: backends/npu.py);
# with the encodings of quant/ (the htp quantizes the graph's inputs with them).
BACKENDS = ["backends", "runtime", "toolchain", "spec", "data", *OWN_PACKAGES, "quant"]
SOURCES = {
    "convert": None,
    "model-lib": COMMON + ["toolchain", "spec", "runtime/include/qnnb.h"],
    "context-binary": COMMON + BACKENDS,
    "runtime": COMMON + ["toolchain", "spec"],
    "reference": COMMON + ["data", "report/__init__.py", "report/reference.py"],
    "test": COMMON + BACKENDS + ["report/__init__.py", "report/metrics.py", "report/testrun.py"],
    "release": COMMON + ["report/__init__.py", "report/release.py", "report/manifest.py",
                "toolchain", "spec"],  # toolchain/targets.py loads the package (its __init__ imports build)
    "report": COMMON + BACKENDS + ["report"],
}
PACKAGES = {
    "convert": ["onnx", "numpy"],
    "model-lib": ["ziglang"],  # the cross targets' compiler
    "context-binary": ["numpy", *OWN_DISTRIBUTIONS],  # the htp's: onnxruntime and Qualcomm's QNN
    "runtime": ["scipy-openblas32", "ziglang"],
    "reference": ["onnx", "onnxruntime", "numpy"],
    "test": ["numpy", *OWN_DISTRIBUTIONS],
    "release": [],
    "report": list(dict.fromkeys(["onnx", "onnxruntime", "numpy", *OWN_DISTRIBUTIONS])),  # every backend's contexts run
}
COMPILED = ("model-lib", "runtime")
# Steps whose numbers come from the cpu backend's float GEMM (calibration, test figures): OpenBLAS's
# environment chooses its kernels, so it is one of their inputs.
FLOAT_KERNELS = ("convert", "test")
STEPS = tuple(SOURCES)


def source_files(step: str) -> list[Path]:
    if SOURCES[step] is None:
        return [p for p in sorted(PACKAGE.rglob("*.py"))
                if p.relative_to(PACKAGE).parts[0] not in NOT_CONVERTER and "__pycache__" not in p.parts]
    files = []
    for entry in SOURCES[step]:
        path = PACKAGE / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return list(dict.fromkeys(files))  # a file named by COMMON and by a folder counts once


def sources_sha256(step: str) -> str:
    h = hashlib.sha256()
    for path in source_files(step):
        h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def compiler_info(env_vars: dict) -> dict:
    """The C++ compiler the steps will run (found with the steps' own environment) and its version."""
    compiler = env_vars.get("CXX", "g++")
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, env=env_vars, check=True)
        version = out.stdout.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        version = "not found"
    return {"compiler": compiler, "compiler_version": version}


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def step_stamps(env_vars: dict) -> dict[str, dict]:
    """step -> what its outputs depend on besides its files."""
    compiler = compiler_info(env_vars)
    stamps = {}
    for step in STEPS:
        stamp = {"qnn_build": __version__, "sources_sha256": sources_sha256(step)}
        for package in PACKAGES[step]:
            stamp[package] = _package_version(package)
        if step in FLOAT_KERNELS:
            stamp["openblas_env"] = {k: v for k, v in sorted(env_vars.items()) if k.startswith("OPENBLAS_")}
        if step in COMPILED:
            stamp["compiler"] = compiler["compiler"]
            stamp["compiler_version"] = compiler["compiler_version"]
        if step == "runtime":
            stamp["machine"] = platform.machine()
        stamps[step] = stamp
    return stamps


def summary(stamps: dict[str, dict]) -> dict:
    """One flat record for people and the release manifest."""
    record = {"qnn_build": __version__, "python": platform.python_version()}
    for step, stamp in stamps.items():
        for key, value in stamp.items():
            if key == "sources_sha256":
                record[f"{step}_sources_sha256"] = value
            elif key != "qnn_build":
                record[key] = value
    return record


def write_stamps(out_dir, env_vars: dict) -> dict[str, Path]:
    """Write every stamp (only files whose content changes). Returns step -> path, plus 'all'."""
    out_dir = Path(out_dir)
    stamps = step_stamps(env_vars)
    paths = {}
    for step, stamp in stamps.items():
        paths[step] = out_dir / "tool-versions" / f"{step}.json"
        write_text(paths[step], _dumps(stamp))
    paths["all"] = out_dir / "tool-versions.json"
    write_text(paths["all"], _dumps(summary(stamps)))
    return paths


def regenerate_inputs(env_vars: dict) -> list[str]:
    """Files whose change can change a stamp: for ninja, which only reruns scons when these change."""
    import shutil

    files = {str(p) for step in STEPS for p in source_files(step)}
    for package in sorted({p for names in PACKAGES.values() for p in names}):
        try:
            dist = metadata.distribution(package)
            files.update(str(dist.locate_file(f)) for f in dist.files or [] if f.name == "METADATA")
        except metadata.PackageNotFoundError:
            pass
    compiler = shutil.which(env_vars.get("CXX", "g++"), path=env_vars.get("PATH"))
    if compiler:
        files.add(str(Path(compiler).resolve()))
    return sorted(f for f in files if Path(f).exists())


def _dumps(value: dict) -> str:
    return json.dumps(value, indent=1, sort_keys=True) + "\n"


_WRITTEN: dict[str, dict[str, Path]] = {}


def ensure(env) -> dict[str, Path]:
    """Write the stamps under the environment's $QNNB_OUTDIR once per build; step -> path."""
    out_dir = env.Dir("$QNNB_OUTDIR").abspath
    if out_dir not in _WRITTEN:
        _WRITTEN[out_dir] = write_stamps(out_dir, dict(env["ENV"]))
    return _WRITTEN[out_dir]
