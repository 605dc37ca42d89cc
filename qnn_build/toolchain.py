"""Compilers and the two things they build: the runtime library and model libraries.

The runtime (qnn_build/runtime sources) builds once per content: objects and the library live in a
cache directory keyed by a hash of the sources, the flags and the compiler's version, so every
command line and test shares one build. A model library is model.cpp plus model.bin embedded with
an assembler `.incbin` (no giant C array), linked against nothing.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from .atomic import remove_quietly
from .errors import QnnBuildError

RUNTIME_DIR = Path(__file__).parent / "runtime"
INCLUDE_DIR = RUNTIME_DIR / "include"
RUNTIME_LIB = "libqnnb.so"
RUNTIME_SUBDIRS = ("core", "cpu", "npu")

# The host target. Cross targets come from configs/targets/ later.
CXX_STD = "-std=c++17"
RUNTIME_FLAGS = ["-O3", "-march=native", "-fPIC", "-fopenmp", "-fvisibility=hidden", "-ffp-contract=off"]
MODEL_FLAGS = ["-O1", "-fPIC", "-fvisibility=hidden"]


class ToolchainError(QnnBuildError):
    pass


def cxx() -> str:
    return os.environ.get("CXX", "g++")


@lru_cache(maxsize=None)
def compiler_version(compiler: str | None = None) -> str:
    compiler = compiler or cxx()
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise ToolchainError(f"C++ compiler '{compiler}' not found (set CXX or install g++)") from None
    return out.splitlines()[0].strip()


def openblas():
    """(include dir, library dir, library name) of the scipy-openblas32 wheel."""
    try:
        import scipy_openblas32 as ob
    except ImportError:
        raise ToolchainError("scipy-openblas32 is not installed (pip install scipy-openblas32)") from None
    return Path(ob.get_include_dir()), Path(ob.get_lib_dir()), ob.get_library()


def runtime_sources() -> list[Path]:
    files = []
    for sub in RUNTIME_SUBDIRS:
        files += sorted((RUNTIME_DIR / sub).glob("*.cpp"))
    return files


def runtime_headers() -> list[Path]:
    files = sorted(INCLUDE_DIR.glob("*.h"))
    for sub in RUNTIME_SUBDIRS:
        files += sorted((RUNTIME_DIR / sub).glob("*.h"))
    return files


def cache_root() -> Path:
    root = os.environ.get("QNNB_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "qnn-build"


def runtime_key(flags=None) -> str:
    h = hashlib.sha256()
    h.update(compiler_version().encode())
    h.update(" ".join(flags or RUNTIME_FLAGS).encode())
    for f in runtime_sources() + runtime_headers():
        h.update(f.relative_to(RUNTIME_DIR).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:20]


def build_runtime(out_dir=None, flags=None, jobs=None) -> Path:
    """Build (or find already built) the runtime library; returns its path.

    With `out_dir`, the library and the OpenBLAS it needs are placed there (for the SCons build and
    releases); otherwise in the content-keyed cache."""
    flags = list(flags or RUNTIME_FLAGS)
    key = runtime_key(flags)
    target_dir = Path(out_dir) if out_dir else cache_root() / "runtime" / key
    lib = target_dir / RUNTIME_LIB
    stamp = target_dir / "runtime.key"
    if lib.is_file() and stamp.is_file() and stamp.read_text().strip() == key:
        return lib
    ob_inc, ob_dir, ob_name = openblas()
    obj_dir = cache_root() / "obj" / key
    obj_dir.mkdir(parents=True, exist_ok=True)
    sources = runtime_sources()

    def compile_one(src: Path) -> Path:
        obj = obj_dir / (src.parent.name + "_" + src.stem + ".o")
        if not obj.is_file():
            tmp = obj.with_suffix(f".{os.getpid()}.tmp.o")
            _run([cxx(), CXX_STD, *flags, f"-I{INCLUDE_DIR}", f"-I{ob_inc}", "-c", str(src), "-o", str(tmp)],
                 f"compiling {src.name}")
            os.replace(tmp, obj)
        return obj

    with ThreadPoolExecutor(jobs or os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, sources))
    target_dir.mkdir(parents=True, exist_ok=True)
    _install_copy(ob_dir / f"lib{ob_name}.so", target_dir)
    tmp_lib = target_dir / f".{RUNTIME_LIB}.{os.getpid()}.tmp"
    _run([cxx(), "-shared", *flags, *map(str, objects), f"-L{target_dir}", f"-l{ob_name}",
          "-Wl,-rpath,$ORIGIN", "-Wl,--no-undefined", "-o", str(tmp_lib)], "linking the runtime")
    os.replace(tmp_lib, lib)
    stamp.write_text(key + "\n")
    return lib


def _install_copy(src: Path, target_dir: Path) -> None:
    """Copy a shared library beside ours without ever rewriting a file another process may have
    mapped: a temporary copy renamed into place, and nothing at all when it is already there."""
    dst = target_dir / src.name
    if dst.is_file() and dst.stat().st_size == src.stat().st_size and dst.read_bytes() == src.read_bytes():
        return
    tmp = target_dir / f".{src.name}.{os.getpid()}.tmp"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def build_model_lib(cpp, bin_path, out, flags=None) -> Path:
    """Compile model.cpp with model.bin embedded into a shared library at `out`."""
    cpp, bin_path, out = Path(cpp).resolve(), Path(bin_path).resolve(), Path(out)
    for p in (cpp, bin_path):
        if not p.is_file():
            raise ToolchainError(f"{p.name}: no such file ({p.parent})")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.parent / f".{out.name}.{os.getpid()}.tmp"
    with tempfile.TemporaryDirectory(prefix="qnnb-model-lib-") as tmp:
        # Fixed relative names inside the temp dir keep the object files free of varying paths.
        shutil.copyfile(cpp, Path(tmp) / "model.cpp")
        (Path(tmp) / "model_bin.S").write_text(_incbin_asm(bin_path))
        try:
            _run([cxx(), CXX_STD, *(flags or MODEL_FLAGS), f"-I{INCLUDE_DIR}", "-shared", "model.cpp", "model_bin.S",
                  "-Wl,--build-id=sha1", "-s", "-o", str(tmp_out.resolve())], f"compiling {cpp.name}", cwd=tmp)
            os.replace(tmp_out, out)
        finally:
            remove_quietly(tmp_out)
    return out


def _incbin_asm(bin_path: Path) -> str:
    path = str(bin_path).replace("\\", "\\\\").replace('"', '\\"')
    return f"""\
    .section .rodata
    .balign 64
    .globl qnnb_model_bin
    .type qnnb_model_bin, @object
qnnb_model_bin:
    .incbin "{path}"
    .size qnnb_model_bin, . - qnnb_model_bin
    .section .note.GNU-stack,"",@progbits
"""


def _run(cmd, what, cwd=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    except OSError as e:
        raise ToolchainError(f"{what}: cannot run {cmd[0]}: {e.strerror}") from None
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()
        first_error = next((line for line in detail if "error" in line), detail[0] if detail else "")
        if os.environ.get("QNNB_VERBOSE"):
            sys.stderr.write(r.stderr)
        raise ToolchainError(f"{what} failed: {first_error}")
    return r
