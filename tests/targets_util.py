"""Shared by tests/test_targets_*.py: zoo models converted once per test session, input lists, and
running a target's native qnn-net-run (under its emulator: qemu-aarch64, wine) or the Python net-run.

Every xdist worker of a session shares one conversion of each (model, precision), its model
libraries and the host's outputs, made by whichever worker wants them first (a file lock per model);
each test gets its own copy to write outputs into (the zoo_folder fixture, tests/conftest.py). So
no target file needs a module-scoped folder, which would tie all its tests to one worker."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from qnn_build.spec import load_spec
from qnn_build.toolchain import build_model_lib, build_runtime, get_target, host_target
from qnn_build.toolchain.build import exclusive

ROOT = Path(__file__).resolve().parent.parent
ZOO = sorted(p.stem for p in (ROOT / "models").glob("*.yaml"))
SAMPLES = 2
_ORIGIN: dict[Path, Path] = {}  # a test's copy -> the session's conversion it was copied from


def zoo_model(name: str, precision: str, out: Path, cache: Path) -> Path:
    """models/<name>.yaml converted at `precision` into out/<name>/<precision>/ (model.cpp, model.bin,
    model.json) plus an input list of SAMPLES test samples with paths relative to that folder:
    converted once per session in `cache` (tests/conftest.py, zoo_cache), copied to `out`."""
    folder = out / name / precision
    if folder in _ORIGIN:
        return folder
    shared = cache / name / precision
    with exclusive(_lock(shared)):
        if not (shared / "list.txt").is_file():
            _convert(name, precision, shared)
        # What the converter wrote; model libraries and host outputs come by model_lib, host_results.
        shutil.copytree(shared, folder, ignore=lambda d, names: [] if d != str(shared) else
                        [n for n in names if n.startswith("host-") or (shared / n).is_dir() and n != "raw"])
    _ORIGIN[folder] = shared
    return folder


def _lock(shared: Path) -> Path:
    shared.parent.mkdir(parents=True, exist_ok=True)
    return shared.parent / f".{shared.name}.lock"


def _convert(name: str, precision: str, folder: Path) -> None:
    from qnn_build.cli import main
    spec = load_spec(ROOT / "models" / f"{name}.yaml")
    args = ["convert", str(spec.source), "-o", str(folder), "--precision", precision, "-q"]
    for input_name, info in spec.inputs.items():
        args += ["--input-dim", input_name, ",".join(map(str, info["shape"]))]
    if spec.calibration and precision != "fp32":
        # --fast: these tests are about targets and runners, not about the quantizer's choices
        args += ["--calibration", str(spec.calibration), "--fast"]
    assert main(args) == 0
    data = np.load(spec.test["data"])
    lines = []
    for k in range(SAMPLES):
        entries = []
        for input_name, info in spec.inputs.items():
            raw = Path("raw") / str(k) / f"{input_name}.raw"
            (folder / raw).parent.mkdir(parents=True, exist_ok=True)
            data[input_name][k].astype("<f4").reshape(info["shape"]).tofile(folder / raw)
            entries.append(f"{input_name}:={raw.as_posix()}")
        lines.append(" ".join(entries))
    (folder / "list.txt").write_text("\n".join(lines) + "\n")  # last: its presence means complete


def model_lib(folder: Path, target_name: str) -> Path:
    """The model library of `folder` (from zoo_model) for the target: built once per session."""
    target = get_target(target_name)
    lib = folder / target.name / target.model_lib_name()
    if not lib.is_file():
        shared = _ORIGIN[folder]
        with exclusive(_lock(shared)):
            built = _shared_lib(shared, target)
        lib.parent.mkdir(exist_ok=True)
        shutil.copy2(built, lib)
    return lib


def _shared_lib(shared: Path, target) -> Path:
    """The session conversion's model library for `target` (the caller holds its lock)."""
    lib = shared / target.name / target.model_lib_name()
    if not lib.is_file():
        build_model_lib(shared / "model.cpp", shared / "model.bin", lib, target=target)
    return lib


def host_results(folder: Path, backend: str) -> dict[str, bytes]:
    """What `qnn-build net-run` writes on this machine for the model library of `folder` (from
    zoo_model): the reference a target's outputs are compared with, run once per session."""
    shared = _ORIGIN[folder]
    out = shared / f"host-{backend}"
    with exclusive(_lock(shared)):
        if not (out / "done").is_file():
            shutil.rmtree(out, ignore_errors=True)  # a run interrupted before `done`
            run_python(_shared_lib(shared, host_target()), shared, out.name, backend)
            (out / "done").write_text("")
    return results(out)


def emulator(target_name: str) -> list[str]:
    """The command prefix running the target's programs here; [] on the host."""
    target = get_target(target_name)
    return list(target.emulator)


def wine_env() -> dict:
    cache = os.environ.get("QNNB_CACHE_DIR", str(ROOT / "out" / "cache"))
    prefix = Path(os.environ.get("WINEPREFIX", str(Path(cache) / "wine")))
    prefix.parent.mkdir(parents=True, exist_ok=True)  # wine makes the prefix, not the folders above it
    return {**os.environ, "WINEPREFIX": str(prefix), "WINEDEBUG": "-all"}


def has_emulator(target_name: str) -> bool:
    cmd = emulator(target_name)
    if not cmd:
        return True
    if shutil.which(cmd[0]) is None:
        return False
    return "-L" not in cmd or Path(cmd[cmd.index("-L") + 1], "lib").is_dir()


def run_native(target_name: str, lib: Path, folder: Path, out_dir: str, backend: str, *extra):
    """The target's qnn-net-run over folder/list.txt, run in `folder` (relative paths only, which
    read the same under wine). `lib` is a model library or, ending in .ctx, a context binary."""
    runner = build_runtime(target=target_name).parent / get_target(target_name).runner
    source = "--retrieve_context" if Path(lib).suffix == ".ctx" else "--model"
    cmd = [*emulator(target_name), str(runner), source, os.path.relpath(lib, folder), "--backend", backend,
           "--input_list", "list.txt", "--output_dir", out_dir, *extra]
    return subprocess.run(cmd, cwd=folder, capture_output=True, text=True, env=wine_env(), timeout=600)


def run_python(lib: Path, folder: Path, out_dir: str, backend: str) -> None:
    cwd = os.getcwd()
    os.chdir(folder)  # the list's relative paths, as the native runner reads them
    try:
        r = subprocess.run([sys.executable, "-m", "qnn_build", "net-run", "--model", str(lib), "--backend", backend,
                            "--input-list", "list.txt", "--output-dir", out_dir, "-q"], capture_output=True,
                           text=True)
    finally:
        os.chdir(cwd)
    assert r.returncode == 0, r.stderr


def results(out_dir: Path) -> dict[str, bytes]:
    """Result_K/<name>.raw -> bytes, for every output file."""
    return {p.relative_to(out_dir).as_posix(): p.read_bytes() for p in sorted(out_dir.glob("Result_*/*.raw"))}


def assert_close(ours: dict[str, bytes], host: dict[str, bytes], rtol: float) -> None:
    """Float outputs agree within rtol relative to each output's largest magnitude."""
    assert ours.keys() == host.keys()
    for key in host:
        a, b = np.frombuffer(ours[key], "<f4"), np.frombuffer(host[key], "<f4")
        scale = max(float(np.abs(b).max()), 1e-30)
        assert float(np.abs(a - b).max()) <= rtol * scale, f"{key}: {np.abs(a - b).max()} > {rtol} * {scale}"
