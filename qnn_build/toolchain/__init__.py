"""The machines we build for and the compilers that build for them.

    targets   one configs/targets/ file per machine (Target, get_target), and reading the machine a
              built ELF or PE file is for (docs/targets.md)
    build     compilers per target; the runtime library, the native runner and model libraries,
              built once per content into a cache

The names below are the package's surface: `from qnn_build.toolchain import build_model_lib`.
"""

from .build import (INCLUDE_DIR, RUNTIME_DIR, HOST_FLAGS, ToolchainError, build_model_lib, build_runner,
                    build_runtime, cache_root, openblas, runner_sources, runtime_flags, runtime_headers,
                    runtime_objects, runtime_sources)
from .targets import Target, TargetError, get_target, host_target

__all__ = ["HOST_FLAGS", "INCLUDE_DIR", "RUNTIME_DIR", "Target", "TargetError", "ToolchainError",
           "build_model_lib", "build_runner", "build_runtime", "cache_root", "get_target", "host_target",
           "openblas", "runner_sources", "runtime_flags", "runtime_headers", "runtime_objects",
           "runtime_sources"]
