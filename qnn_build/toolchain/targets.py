"""Build targets: the machines a model library, the runtime and the runner are built for.

Each target is one file under configs/targets/ (docs/targets.md): its compiler, flags, library
names and ISA. `Target.name` and `Target.isa` are what an artifact records about where it runs
(a context binary's target field); `binary_target()` reads it back from any built ELF or PE file,
so a library handed to the wrong machine is refused with the target it was built for.
"""

import struct
from dataclasses import dataclass
from functools import lru_cache

from ..errors import QnnBuildError
from ..spec.configs import package_configs


class TargetError(QnnBuildError):
    pass


@dataclass(frozen=True)
class Target:
    name: str                 # "aarch64-windows"
    triple: str               # the compiler's target ("aarch64-windows-gnu")
    os: str                   # linux | windows
    machine: str              # x86_64 | aarch64
    isa: str                  # "armv8.2-a+dotprod": the instruction set the code assumes
    features: tuple[str, ...]
    dispatch: tuple[str, ...]  # features of paths chosen at run time where the CPU has them
    dispatch_paths: tuple[str, ...]  # the runtime sources holding those paths (qnn_build/runtime/...)
    compiler: str             # g++ | zig
    cxxflags: tuple[str, ...]
    shared_lib: str           # "lib{name}.so" | "{name}.dll"
    runtime_lib: str          # libqnnb.so | qnnb.dll
    runner: str               # qnn-net-run | qnn-net-run.exe
    gemm: str                 # openblas | portable
    emulator: tuple[str, ...]  # command prefix that runs its programs here (tests); empty: none
    is_host: bool

    def model_lib_name(self, name: str = "model") -> str:
        return self.shared_lib.format(name=name)

    @property
    def context_target(self) -> str | None:
        """The target field of a context binary for this target ("aarch64-linux+neon+dotprod"):
        compiled into its runtime as QNNB_CTX_TARGET, written by the host's context-binary step.
        None for the host, whose runtime names its own compiled features."""
        if self.is_host:
            return None
        return "+".join([f"{self.machine}-{self.os}", *self.features])


@lru_cache(maxsize=None)
def all_targets() -> dict[str, Target]:
    configs = package_configs()
    out = {}
    for name, t in configs.targets.items():
        out[name] = Target(name=name, triple=t["triple"], os=t["os"], machine=t["machine"], isa=t["isa"],
                           features=tuple(t.get("features", [])), dispatch=tuple(t.get("dispatch", [])),
                           dispatch_paths=tuple(t.get("dispatch_paths", [])),
                           compiler=t["compiler"],
                           cxxflags=tuple(t["cxxflags"]), shared_lib=t["shared_lib"], runtime_lib=t["runtime_lib"],
                           runner=t["runner"], gemm=t["gemm"], emulator=tuple(t.get("emulator", [])),
                           is_host=name == configs.host_target)
    return out


def host_target() -> Target:
    return next(t for t in all_targets().values() if t.is_host)


def get_target(name: str | None) -> Target:
    """The target called `name` (None or "": the host); an unknown name lists the known ones."""
    if not name:
        return host_target()
    targets = all_targets()
    if name not in targets:
        raise TargetError(f"unknown target '{name}' (known: {', '.join(sorted(targets))}; see configs/targets/)")
    return targets[name]


# ELF e_machine and PE Machine codes of the machines we build for.
_ELF_MACHINES = {62: "x86_64", 183: "aarch64"}
_PE_MACHINES = {0x8664: "x86_64", 0xAA64: "aarch64"}


def binary_kind(path) -> tuple[str, str] | None:
    """(os, machine) of an ELF or PE file, from its header; None for anything else."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] == b"\x7fELF" and len(head) >= 20:
                endian = "<" if head[5] == 1 else ">"
                (machine,) = struct.unpack_from(endian + "H", head, 18)
                return "linux", _ELF_MACHINES.get(machine, f"ELF machine {machine}")
            if head[:2] == b"MZ" and len(head) >= 64:
                (pe_offset,) = struct.unpack_from("<I", head, 0x3C)
                f.seek(pe_offset)
                pe = f.read(6)
                if pe[:4] == b"PE\0\0":
                    (machine,) = struct.unpack_from("<H", pe, 4)
                    return "windows", _PE_MACHINES.get(machine, f"PE machine 0x{machine:04x}")
    except OSError:
        return None
    return None


def binary_target(path) -> str:
    """The name of the target a built file is for ('aarch64-windows'), or a description of it."""
    kind = binary_kind(path)
    if kind is None:
        return "no known target (not an ELF or PE file)"
    for t in all_targets().values():
        if (t.os, t.machine) == kind:
            return t.name
    return f"{kind[1]}-{kind[0]}"


def check_binary_for(path, target: Target, what: str = "model library") -> None:
    """Refuse a built file that is not for `target`, naming the target it was built for."""
    kind = binary_kind(path)
    if kind is None or kind == (target.os, target.machine):
        return  # not a binary we can read: loading it reports the problem
    raise TargetError(f"{path}: this {what} was built for {binary_target(path)}, not for {target.name}; "
                      f"run it on a {binary_target(path)} machine (its qnn-net-run) or rebuild it with "
                      f"--target {target.name}")
