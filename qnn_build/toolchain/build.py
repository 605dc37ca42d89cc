"""Compilers and the three things they build: the runtime library, the native runner and model
libraries, each for one target (configs/targets/, targets.py; docs/targets.md).

The runtime (qnn_build/runtime sources) builds once per content and target: objects, the library
and the runner live in a cache directory keyed by a hash of the sources, the flags and the
compiler's version, so every command line and test shares one build; processes wanting one that
is being built (test workers, parallel steps) wait for it under a file lock. A model library is
model.cpp plus model.bin embedded with an assembler `.incbin` (no giant C array), linked against
nothing.
The host builds with g++ (or $CXX); other targets with zig's clang (the `ziglang` wheel), whose
cache lives under the same cache directory.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from pathlib import Path

from ..errors import QnnBuildError
from ..log import log
from .targets import Target, get_target

RUNTIME_DIR = Path(__file__).parents[1] / "runtime"
INCLUDE_DIR = RUNTIME_DIR / "include"
RUNTIME_LIB = "libqnnb.so"
RUNTIME_SUBDIRS = ("core", "cpu", "npu")
RUNNER_DIR = RUNTIME_DIR / "runner"

# Every target takes its ISA flags from configs/targets/; the host (g++) adds HOST_FLAGS, cross
# targets CROSS_FLAGS. -ffp-contract=off: no fused multiply-add the source did not write, so every
# width and path rounds alike. -fno-trapping-math: no float operation traps (we never unmask
# exceptions), so GCC may if-convert a select before arithmetic; without it a loop like
# `x < lo ? lo : x` then exp's polynomial vectorised only with AVX-512's masks, not on AVX2
# (x86-64-v3). It changes no value (clang assumes it by default).
CXX_STD = "-std=c++17"
HOST_FLAGS = ["-fopenmp", "-fvisibility=hidden", "-ffp-contract=off", "-fno-trapping-math"]
MODEL_FLAGS = ["-O1", "-fPIC", "-fvisibility=hidden"]
# No OpenMP with zig: parallel.h splits work over std::thread instead (the same split).
CROSS_FLAGS = ["-fvisibility=hidden", "-ffp-contract=off", "-fno-trapping-math", "-pthread"]


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


def compiler_command(target: Target) -> list[str]:
    """The command that compiles and links C++ for `target`."""
    if target.compiler != "zig":
        return [cxx() if target.is_host else target.compiler]
    return [sys.executable, "-m", "ziglang", "c++", "-target", target.triple]


@lru_cache(maxsize=None)
def target_compiler_version(target: Target) -> str:
    if target.compiler != "zig":
        return compiler_version(None if target.is_host else target.compiler)
    try:
        import ziglang  # noqa: F401  (only its presence: it runs as `python -m ziglang`)
    except ImportError:
        raise ToolchainError(f"target {target.name} needs the zig cross compiler, which is not installed "
                             f"(pip install ziglang)") from None
    r = subprocess.run([sys.executable, "-m", "ziglang", "version"], capture_output=True, text=True)
    if r.returncode != 0:
        raise ToolchainError(f"target {target.name}: the zig cross compiler does not run "
                             f"({(r.stderr or r.stdout).strip()[:200]}); reinstall it (pip install ziglang)")
    return f"zig {r.stdout.strip()} {target.triple}"


def compiler_env(target: Target) -> dict | None:
    """zig keeps its caches (libc++ built once per target, ~1 minute) inside our cache directory."""
    if target.compiler != "zig":
        return None
    zig_cache = str(cache_root() / "zig")
    return {**os.environ, "ZIG_GLOBAL_CACHE_DIR": zig_cache, "ZIG_LOCAL_CACHE_DIR": zig_cache}


def runtime_flags(target: Target) -> list[str]:
    """The runtime's compile flags, with the target's name and ISA (qnnb_runtime_target/_isa)."""
    flags = [*target.cxxflags, *(HOST_FLAGS if target.is_host else CROSS_FLAGS)]
    names = [f'-DQNNB_TARGET_NAME="{target.name}"', f'-DQNNB_TARGET_ISA="{target.isa}"']
    if target.context_target:
        names.append(f'-DQNNB_CTX_TARGET="{target.context_target}"')
    return flags + names


def model_flags(target: Target) -> list[str]:
    """A cross target's model library takes the runtime's -mcpu: zig builds libc++ once per (target,
    cpu), so the same -mcpu reuses the runtime's build instead of compiling a second one."""
    if target.is_host:
        return list(MODEL_FLAGS)
    return ["-O1", *(f for f in target.cxxflags if f == "-fPIC" or f.startswith("-mcpu=")), "-fvisibility=hidden"]


def openblas():
    """(include dir, library dir, library name) of the scipy-openblas32 wheel."""
    try:
        import scipy_openblas32 as ob
    except ImportError:
        raise ToolchainError("scipy-openblas32 is not installed (pip install scipy-openblas32)") from None
    return Path(ob.get_include_dir()), Path(ob.get_lib_dir()), ob.get_library()


def runtime_sources(target: Target | None = None) -> list[Path]:
    """The runtime's sources: core, cpu, npu and the GEMM the target names (gemm/<name>.cpp)."""
    files = []
    for sub in RUNTIME_SUBDIRS:
        files += sorted((RUNTIME_DIR / sub).glob("*.cpp"))
    return files + [RUNTIME_DIR / "gemm" / f"{(target or get_target(None)).gemm}.cpp"]


def runtime_headers() -> list[Path]:
    files = sorted(INCLUDE_DIR.glob("*.h")) + sorted((RUNTIME_DIR / "third_party").rglob("*.h"))
    for sub in (*RUNTIME_SUBDIRS, "gemm"):
        files += sorted((RUNTIME_DIR / sub).glob("*.h")) + sorted((RUNTIME_DIR / sub).glob("*.inc"))
    return files


def runner_sources() -> list[Path]:
    return sorted(RUNNER_DIR.glob("*.cpp")) + sorted(RUNNER_DIR.glob("*.h"))


def cache_root() -> Path:
    root = os.environ.get("QNNB_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "qnn-build"


def runtime_key(flags=None, target: Target | None = None) -> str:
    target = target or get_target(None)
    h = hashlib.sha256()
    h.update(target_compiler_version(target).encode())
    h.update(" ".join(flags or runtime_flags(target)).encode())
    for f in runtime_sources(target) + runtime_headers() + runner_sources():
        h.update(f.relative_to(RUNTIME_DIR).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:20]


def _runtime_objects(target: Target, flags: list[str], jobs=None) -> list[Path]:
    """Compile the runtime's sources (shared by the library and the runner). Each object is keyed
    by its source, every header, the flags and the compiler: editing one kernel recompiles one file."""
    common = hashlib.sha256()
    common.update(target_compiler_version(target).encode() + b"\0" + " ".join(flags).encode() + b"\0")
    for f in runtime_headers():
        common.update(f.relative_to(RUNTIME_DIR).as_posix().encode() + b"\0" + f.read_bytes())
    obj_dir = cache_root() / "obj" / target.name
    obj_dir.mkdir(parents=True, exist_ok=True)
    includes = [f"-I{INCLUDE_DIR}"]
    if target.gemm == "openblas":
        includes.append(f"-I{openblas()[0]}")

    def compile_one(src: Path) -> Path:
        h = common.copy()
        h.update(src.read_bytes())
        obj = obj_dir / f"{src.parent.name}_{src.stem}-{h.hexdigest()[:16]}.o"
        if not obj.is_file():
            tmp = obj.with_suffix(f".{os.getpid()}.tmp.o")
            _run([*compiler_command(target), CXX_STD, *flags, *includes, "-c", str(src), "-o", str(tmp)],
                 f"compiling {src.name} for {target.name}", env=compiler_env(target))
            os.replace(tmp, obj)
        return obj

    # zig compiles its libc++ on first use, once per target: one source first, the rest in parallel.
    # Processes wanting the same objects (test workers, parallel builds) take turns: the second
    # finds them compiled instead of compiling each again beside the first.
    sources = runtime_sources(target)
    with exclusive(obj_dir / f".{common.hexdigest()[:16]}.lock"):
        first = [compile_one(sources[0])]
        with ThreadPoolExecutor(jobs or os.cpu_count() or 2) as pool:
            return first + list(pool.map(compile_one, sources[1:]))


@contextmanager
def exclusive(lock_file: Path):
    """Hold an exclusive lock on `lock_file` (created if missing); the system releases it if the
    holder dies, so an interrupted build never leaves the next one waiting."""
    with open(lock_file, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def runtime_objects(target: Target | str | None = None) -> dict[str, Path]:
    """{source, relative to qnn_build/runtime/: its object} of `target`'s runtime (default: the
    host), compiled if not cached: what a test inspects per source (tests/test_targets_portable.py)."""
    target = target if isinstance(target, Target) else get_target(target)
    objects = _runtime_objects(target, runtime_flags(target))
    return {src.relative_to(RUNTIME_DIR).as_posix(): obj for src, obj in zip(runtime_sources(target), objects)}


def _link_flags(target: Target, target_dir: Path) -> list[str]:
    """What the runtime library and the runner link with besides their objects."""
    strip = ["-s"] if not target.is_host else []  # zig's libc++ debug info would add 60 MB
    if target.os == "windows":
        return strip  # zig links libc++ in: only Windows' own DLLs are needed
    flags = ["-Wl,-rpath,$ORIGIN", "-ldl", "-pthread", *strip]
    if target.gemm == "openblas":
        flags = [f"-L{target_dir}", f"-l{openblas()[2]}", *flags]
    return flags


def build_runtime(out_dir=None, flags=None, jobs=None, target: Target | str | None = None) -> Path:
    """Build (or find already built) the runtime library for `target` (default: the host); returns
    its path. The native runner (qnn-net-run) is built beside it.

    With `out_dir`, the library, the runner and the OpenBLAS they need are placed there (for the
    SCons build and releases); otherwise in the content-keyed cache."""
    target = target if isinstance(target, Target) else get_target(target)
    flags = list(flags or runtime_flags(target))
    key = runtime_key(flags, target)
    target_dir = Path(out_dir) if out_dir else cache_root() / "runtime" / (key if target.is_host else
                                                                          f"{target.name}-{key}")
    lib = target_dir / (RUNTIME_LIB if target.is_host else target.runtime_lib)
    runner = target_dir / target.runner
    stamp = target_dir / "runtime.key"

    def built() -> bool:
        return lib.is_file() and runner.is_file() and stamp.is_file() and stamp.read_text().strip() == key

    if built():
        return lib
    # In the shared cache, one process builds and the others wanting the same runtime wait for it.
    cache_dir = None if out_dir else target_dir.parent
    if cache_dir:
        cache_dir.mkdir(parents=True, exist_ok=True)
    with exclusive(cache_dir / f".{target_dir.name}.lock") if cache_dir else nullcontext():
        if not built():
            _compile_and_link(target, flags, jobs, lib, runner)
            stamp.write_text(key + "\n")
    return lib


def _compile_and_link(target: Target, flags: list[str], jobs, lib: Path, runner: Path) -> None:
    target_dir = lib.parent
    started = time.monotonic()
    log.info(f"compiling the runtime library for {target.name} (once per runtime source change; "
             "1-3 minutes)...")
    objects = _runtime_objects(target, flags, jobs)
    target_dir.mkdir(parents=True, exist_ok=True)
    if target.gemm == "openblas":
        _, ob_dir, ob_name = openblas()
        _install_copy(ob_dir / f"lib{ob_name}.so", target_dir)
    link = [*compiler_command(target), *flags, *map(str, objects)]
    extra = _link_flags(target, target_dir)
    env = compiler_env(target)
    no_undefined = ["-Wl,--no-undefined"] if target.os == "linux" else []
    _link([*link, "-shared", *extra, *no_undefined], lib, f"linking the runtime for {target.name}", env)
    runner_objs = [str(s) for s in sorted(RUNNER_DIR.glob("*.cpp"))]
    _link([*compiler_command(target), CXX_STD, *flags, f"-I{INCLUDE_DIR}", *runner_objs, *map(str, objects),
           *extra], runner, f"linking qnn-net-run for {target.name}", env)
    log.info(f"runtime library for {target.name} built in {time.monotonic() - started:.0f} s: {lib}")


def build_runner(out_dir=None, target: Target | str | None = None) -> Path:
    """The native qnn-net-run for `target` (built with its runtime)."""
    target = target if isinstance(target, Target) else get_target(target)
    return build_runtime(out_dir, target=target).parent / target.runner


def _link(cmd: list[str], out: Path, what: str, env, cwd=None) -> None:
    """Link into a private folder beside `out`, then move just `out` into place: zig's Windows
    links also leave an import library there, which nothing needs."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".link-", dir=out.parent) as tmp:
        _run([*cmd, "-o", str(Path(tmp, out.name).resolve())], what, env=env, cwd=cwd)
        os.replace(Path(tmp, out.name), out)


def _install_copy(src: Path, target_dir: Path) -> None:
    """Copy a shared library beside ours without ever rewriting a file another process may have
    mapped: a temporary copy renamed into place, and nothing at all when it is already there."""
    dst = target_dir / src.name
    if dst.is_file() and dst.stat().st_size == src.stat().st_size and dst.read_bytes() == src.read_bytes():
        return
    tmp = target_dir / f".{src.name}.{os.getpid()}.tmp"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def build_model_lib(cpp, bin_path, out, flags=None, target: Target | str | None = None) -> Path:
    """Compile model.cpp with model.bin embedded into a shared library for `target` at `out`."""
    target = target if isinstance(target, Target) else get_target(target)
    cpp, bin_path, out = Path(cpp).resolve(), Path(bin_path).resolve(), Path(out)
    for p in (cpp, bin_path):
        if not p.is_file():
            raise ToolchainError(f"{p.name}: no such file ({p.parent})")
    target_compiler_version(target)  # a missing cross compiler says so before anything runs
    elf_only = ["-Wl,--build-id=sha1"] if target.os == "linux" else []
    with tempfile.TemporaryDirectory(prefix="qnnb-model-lib-") as tmp:
        # Fixed relative names inside the temp dir keep the object files free of varying paths.
        shutil.copyfile(cpp, Path(tmp) / "model.cpp")
        (Path(tmp) / "model_bin.S").write_text(_incbin_asm(bin_path, target))
        _link([*compiler_command(target), CXX_STD, *(flags or model_flags(target)), f"-I{INCLUDE_DIR}",
               "-shared", "model.cpp", "model_bin.S", *elf_only, "-s"], out,
              f"compiling {cpp.name} for {target.name}", compiler_env(target), cwd=tmp)
    return out


def _incbin_asm(bin_path: Path, target: Target) -> str:
    path = str(bin_path).replace("\\", "\\\\").replace('"', '\\"')
    if target.os == "windows":  # COFF: read-only data section, no ELF symbol types
        return f"""\
    .section .rdata,"dr"
    .balign 64
    .globl qnnb_model_bin
qnnb_model_bin:
    .incbin "{path}"
"""
    return f"""\
    .section .rodata
    .balign 64
    .globl qnnb_model_bin
    .type qnnb_model_bin, %object
qnnb_model_bin:
    .incbin "{path}"
    .size qnnb_model_bin, . - qnnb_model_bin
    .section .note.GNU-stack,"",%progbits
"""


def _run(cmd, what, cwd=None, env=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    except OSError as e:
        raise ToolchainError(f"{what}: cannot run {cmd[0]}: {e.strerror}") from None
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()
        first_error = next((line for line in detail if "error" in line), detail[0] if detail else "")
        if os.environ.get("QNNB_VERBOSE"):
            sys.stderr.write(r.stderr)
        raise ToolchainError(f"{what} failed: {first_error}")
    return r
