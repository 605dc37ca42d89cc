"""The builders: one per `qnn-build` step, each running the command line (never Python in-process),
so SCons, ninja and a person at a shell run the same thing.

    builder        target (emitter names the outputs)            sources, in this order
    QnnRuntime     DIR -> DIR/libqnnb.so, DIR/qnn-net-run,         (default: the runtime's C++ sources)
                   DIR/runtime.key, DIR/include/qnnb.h
                   (+ DIR/lib<blas>.so with an OpenBLAS GEMM;
                   $QNNB_TARGET: that target's runtime library
                   and runner instead)
    QnnConvert     DIR -> DIR/model.cpp, model.bin, model.json    convert.config.json, model.onnx[, calibration,
                   (+ model.encodings.json unless fp32,          overrides]
                   + model.qdq.onnx with $QNNB_QDQ)
    QnnModelLib    libmodel.so (model.dll, ... for $QNNB_TARGET) model.cpp, model.bin[, model_lib config]
    QnnReference   reference.npz                                 reference.config.json, model.onnx, test data
    QnnContext     model.ctx -> model.ctx, model.ctx.json            libmodel.so, libqnnb.so
    QnnTest        test.json                                     test.config.json, model.ctx, reference.npz,
                                                                 libqnnb.so, test data
    QnnRelease     ZOO-VERSION.tar.gz                            release.config.json, everything it packs
    QnnReport      report/index.html (+ the pages beside it)     report.config.json, every context and test

Every emitter also adds the step's tool-version stamp (stamps.py) as a source. What changes an
output is in the action's signature: the command line with its options, and the content of every
source. The Python interpreter's path is left out of it ($( $)): which versions it runs is in the
stamps, and leaving it out lets a shared CacheDir serve checkouts with different virtualenvs.
"""

import SCons.Action
import SCons.Builder
import SCons.Node.FS

from ..backends import get_backend
from ..spec.configs import package_configs
from ..toolchain import get_target, openblas, runner_sources, runtime_headers, runtime_sources
from . import ninja, progress, stamps

STEP = "$( $QNNB_PYTHON $) -m qnn_build"

# name -> (construction variable of the command, its command line, its short text)
COMMANDS = {
    "runtime": ("QNNB_RUNTIMECOM", f"{STEP} runtime -q $_QNNB_CROSS -o ${{TARGET.dir}}", "runtime $QNNB_TARGET"),
    "convert": ("QNNB_CONVERTCOM", f"{STEP} convert -q --config ${{SOURCES[0]}} -o ${{TARGET.dir}}",
                "convert $QNNB_MODEL $QNNB_PRECISION"),
    "model-lib": ("QNNB_MODELLIBCOM",
                  f"{STEP} model-lib -q --cpp ${{SOURCES[0]}} --bin ${{SOURCES[1]}} $_QNNB_CROSS -o $TARGET",
                  "model-lib $QNNB_MODEL $QNNB_PRECISION$_QNNB_AT_TARGET"),
    "context-binary": ("QNNB_CONTEXTCOM",
                       (f"{STEP} context-binary -q --model ${{SOURCES[0]}} --runtime ${{SOURCES[1]}} "
                        "--backend $QNNB_BACKEND $_QNNB_PRECISION $_QNNB_CROSS -o ${TARGETS[0]}"),
                       "context-binary $QNNB_MODEL $QNNB_PRECISION $QNNB_SLOT"),
    "reference": ("QNNB_REFERENCECOM", f"{STEP} reference -q --config ${{SOURCES[0]}} -o $TARGET",
                  "reference $QNNB_MODEL"),
    "test": ("QNNB_TESTCOM",
             (f"{STEP} test -q --config ${{SOURCES[0]}} --retrieve-context ${{SOURCES[1]}} --reference ${{SOURCES[2]}} "
              "--runtime ${SOURCES[3]} --backend $QNNB_BACKEND $_QNNB_TEST_META $_QNNB_AGREE -o $TARGET"),
             "test $QNNB_MODEL $QNNB_PRECISION $QNNB_SLOT"),
    "release": ("QNNB_RELEASECOM", f"{STEP} release -q --config ${{SOURCES[0]}} -o $TARGET",
                "release ${TARGET.file}"),
    "report": ("QNNB_REPORTCOM", f"{STEP} report -q --config ${{SOURCES[0]}} -o $TARGET", "report ${TARGET}"),
}


def comstr_var(step: str) -> str:
    return COMMANDS[step][0] + "STR"


def _action(step: str):
    var = COMMANDS[step][0]
    return SCons.Action.Action(f"${var}", f"${var}STR")


def _with_stamp(step: str):
    """Emitter part shared by every builder: the step's tool-version stamp is one of its sources."""

    def emit(target, source, env):
        stamp = env.File(str(stamps.ensure(env)[step]))
        source = list(source) + ([stamp] if stamp not in source else [])
        progress.STEP_TARGETS.add(target[0])
        # ninja (SCons' ninja tool): the same one-line text, and a rule that re-stats outputs.
        target[0].attributes.ninja_build_callback = ninja.describe_with(comstr_var(step), target, source)
        ninja.setup(env, [var for var, _, _ in COMMANDS.values()])
        return target, source

    return emit


def _runtime_emitter(target, source, env):
    """[runtime library, runner, runtime.key, include/qnnb.h] of the target ($QNNB_TARGET, default the
    host), then the OpenBLAS library it links when its GEMM is OpenBLAS's."""
    folder = target[0]
    where = get_target(env.subst("$QNNB_TARGET"))
    library = where.runtime_lib if not where.is_host else "libqnnb.so"
    files = [folder.File(library), folder.File(where.runner), folder.File("runtime.key"),
             folder.Dir("include").File("qnnb.h")]
    if where.gemm == "openblas":
        files.append(folder.File(f"lib{openblas()[2]}.so"))
    if not source:
        source = [env.File(str(p)) for p in runtime_sources(where) + runtime_headers() + runner_sources()]
    return _with_stamp("runtime")(files, source, env)


def _cross(env):
    """`--target T` for a step built for a place other than the host: another machine target, or a
    backend's own place (the htp's SoC); nothing on the host (so host command lines, and their
    signatures, are what they always were)."""
    name = env.subst("$QNNB_TARGET")
    if name and name not in package_configs().targets:
        return ["--target", name]
    return [] if get_target(name).is_host else ["--target", name]


def _precision_flag(env):
    """`--precision P` when the step's precision is known: the library must have been converted at it."""
    precision = env.subst("$QNNB_PRECISION")
    return ["--precision", precision] if precision else []


def _at_target(env):
    cross = _cross(env)
    return f"@{cross[1]}" if cross else ""


def _convert_emitter(target, source, env):
    """model.cpp, model.bin, model.json; and model.encodings.json for any precision but fp32 (the
    precision comes from $QNNB_PRECISION, which QnnModel sets; unset means fp32); model.qdq.onnx
    when $QNNB_QDQ is set (its convert config says qdq: a backend's context step reads it)."""
    folder = target[0]
    files = [folder.File("model.cpp"), folder.File("model.bin"), folder.File("model.json")]
    if env.subst("$QNNB_PRECISION") not in ("", "fp32"):
        files.append(folder.File("model.encodings.json"))
    if env.subst("$QNNB_QDQ"):
        files.append(folder.File("model.qdq.onnx"))
    return _with_stamp("convert")(files, source, env)


def _context_emitter(target, source, env):
    """Every file the backend's context step writes (Backend.context_files): for cpu and npu,
    model.ctx and its sidecar model.ctx.json (the memory plan)."""
    files = get_backend(env.subst("$QNNB_BACKEND")).context_files(target[0].abspath)
    return _with_stamp("context-binary")([target[0], *(env.File(str(f)) for f in files[1:])], source, env)


def _agree_flag(env):
    """`--agree-with CTX`: the context of the backend this test compares with (configs: agree_with)."""
    other = env.subst("$QNNB_AGREE")
    return ["--agree-with", other] if other else []


def _test_meta(env):
    """--name/--precision/--target for test.json, only those that are set."""
    args = []
    for flag, var in (("--name", "QNNB_MODEL"), ("--precision", "QNNB_PRECISION"), ("--target", "QNNB_TARGET")):
        value = env.subst(f"${var}")
        if value:
            args += [flag, value]
    return args


BUILDERS = {
    "QnnRuntime": SCons.Builder.Builder(action=_action("runtime"), emitter=_runtime_emitter,
                                        target_factory=SCons.Node.FS.Dir, source_factory=SCons.Node.FS.File),
    "QnnConvert": SCons.Builder.Builder(action=_action("convert"), emitter=_convert_emitter,
                                        target_factory=SCons.Node.FS.Dir, source_factory=SCons.Node.FS.File),
    "QnnModelLib": SCons.Builder.Builder(action=_action("model-lib"), emitter=_with_stamp("model-lib"),
                                         source_factory=SCons.Node.FS.File),
    "QnnContext": SCons.Builder.Builder(action=_action("context-binary"), emitter=_context_emitter,
                                        source_factory=SCons.Node.FS.File),
    "QnnReference": SCons.Builder.Builder(action=_action("reference"), emitter=_with_stamp("reference"),
                                          source_factory=SCons.Node.FS.File),
    "QnnTest": SCons.Builder.Builder(action=_action("test"), emitter=_with_stamp("test"),
                                     source_factory=SCons.Node.FS.File),
    "QnnRelease": SCons.Builder.Builder(action=_action("release"), emitter=_with_stamp("release"),
                                        source_factory=SCons.Node.FS.File),
    "QnnReport": SCons.Builder.Builder(action=_action("report"), emitter=_with_stamp("report"),
                                       source_factory=SCons.Node.FS.File),
}

# Construction variables the tool sets when the user has not (env.SetDefault).
DEFAULTS = {
    "QNNB_OUTDIR": "#out",
    "QNNB_MODEL": "",
    "QNNB_PRECISION": "",
    "QNNB_SLOT": "",
    "QNNB_BACKEND": "cpu",
    "QNNB_TARGET": "",
    "QNNB_QDQ": "",
    "QNNB_AGREE": "",
    "_QNNB_AGREE": "${_qnnb_agree(__env__)}",
    "_qnnb_agree": _agree_flag,
    "_QNNB_TEST_META": "${_qnnb_test_meta(__env__)}",
    "_qnnb_test_meta": _test_meta,
    "_QNNB_CROSS": "${_qnnb_cross(__env__)}",
    "_qnnb_cross": _cross,
    "_QNNB_PRECISION": "${_qnnb_precision_flag(__env__)}",
    "_qnnb_precision_flag": _precision_flag,
    "_QNNB_AT_TARGET": "${_qnnb_at_target(__env__)}",
    "_qnnb_at_target": _at_target,
    **{var: command for var, command, _ in COMMANDS.values()},
}
COMSTRS = {var + "STR": text for var, _, text in COMMANDS.values()}
