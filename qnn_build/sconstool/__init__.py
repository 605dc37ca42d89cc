"""The qnn_build SCons tool: builders for every `qnn-build` step and env.QnnModel('models/x.yaml').

    import qnn_build.sconstool                       # makes the tool name 'qnn_build' known to SCons
    env = Environment(tools=["default", "qnn_build"])   # or: env.Tool("qnn_build")
    env.Default(env.QnnZoo(Glob("models/*.yaml")))

How SCons finds it: SCons looks a tool name up in the toolpath (which includes site_scons/site_tools)
and then in its own SCons.Tool package; it never imports an arbitrary module. A toolpath entry
named `qnn_build` cannot work for an installed package: SCons registers a toolpath tool in
sys.modules under its plain name, which would replace the qnn_build package itself. So importing
this module adds its `site_tools` folder to SCons.Tool's search path, and the plain name then
resolves to SCons.Tool.qnn_build, a two-line module that calls generate()/exists() below.

Methods: env.QnnModel(spec), env.QnnZoo(specs), env.QnnZooRelease(), env.QnnShard('K/N') (shard.py),
env.QnnCluster(address) (cluster.py).
Builders: QnnRuntime, QnnConvert, QnnModelLib, QnnReference, QnnTest, QnnRelease (see builders.py).
Variables (set only when the user has not): QNNB_PYTHON (the interpreter that runs qnn-build; default
this one), QNNB_OUTDIR ('#out'), QNNB_*COM and QNNB_*COMSTR (commands and their one-line text).
Option: --verbose prints the full command lines.
"""

import atexit
import optparse
import os
import sys
from pathlib import Path

SITE_TOOLS = str(Path(__file__).parent / "site_tools")

# Passed from the caller's environment to the steps (SCons runs commands with a minimal ENV).
# OpenBLAS's own settings pick its kernels, whose float rounding calibration sees: a step must run
# with the caller's, so that scons and the same command typed by hand write the same encodings.
PROPAGATED_ENV = ("PYTHONPATH", "QNNB_CACHE_DIR", "HOME", "CXX", "ONNX_HOME", "TMPDIR",
                  "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

_state = {"options": False, "atexit": False}


def _register_tool_name() -> None:
    try:
        import SCons.Tool
    except ImportError:  # not running inside SCons: nothing to register
        return
    if SITE_TOOLS not in SCons.Tool.__path__:
        SCons.Tool.__path__.append(SITE_TOOLS)


_register_tool_name()


def generate(env) -> None:
    from SCons.Script import GetOption

    from . import builders, cluster, progress, shard, zoo

    _add_options()
    env.SetDefault(QNNB_PYTHON=sys.executable, **builders.DEFAULTS)
    if not GetOption("qnnb_verbose"):
        env.SetDefault(**builders.COMSTRS)
    for name, builder in builders.BUILDERS.items():
        if name not in env["BUILDERS"]:
            env["BUILDERS"][name] = builder
    for var in PROPAGATED_ENV:
        if var in os.environ and var not in env["ENV"]:
            env["ENV"][var] = os.environ[var]
    env.SetDefault(PRINT_CMD_LINE_FUNC=progress.print_cmd_line)
    env.AddMethod(zoo.qnn_model, "QnnModel")
    env.AddMethod(zoo.qnn_zoo, "QnnZoo")
    env.AddMethod(zoo.qnn_zoo_release, "QnnZooRelease")
    env.AddMethod(shard.shard_targets, "QnnShard")
    env.AddMethod(cluster.use_cluster, "QnnCluster")
    env.AddMethod(zoo.qnn_zoo_report, "QnnZooReport")
    if not _state["atexit"]:
        _state["atexit"] = True
        atexit.register(progress.print_summary)


def exists(env) -> bool:
    return True


def _add_options() -> None:
    if _state["options"]:
        return
    _state["options"] = True
    from SCons.Script import AddOption

    try:
        AddOption("--verbose", dest="qnnb_verbose", action="store_true", default=False,
                  help="qnn_build: print the full qnn-build command lines instead of '[k/N] step model'")
    except optparse.OptionConflictError:  # the SConstruct defines --verbose itself
        AddOption("--qnnb-verbose", dest="qnnb_verbose", action="store_true", default=False,
                  help="qnn_build: print the full qnn-build command lines")


__all__ = ["SITE_TOOLS", "exists", "generate"]
