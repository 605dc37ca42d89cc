"""env.QnnModel / env.QnnZoo / env.QnnZooRelease: a spec file -> every target it implies.

For one spec: load and check it (a bad spec stops the build before anything runs, with the spec
layer's one-line `file:line: key: message`), write its step configs (only files whose content
changes), then declare, for each available precision, convert -> model-lib, and for each available
(precision, slot) with a test section, a test against the model's reference:

    out/<model>/reference.config.json, reference.npz          one per model (onnxruntime, float)
    out/<model>/<precision>/convert.config.json                 (from the spec layer)
    out/<model>/<precision>/{model.cpp, model.bin, model.json, libmodel.so}
    out/<model>/<precision>/<target>/{model.dll | libmodel.so}   per other target the spec names
    out/<model>/<precision>/<slot>/{model.ctx, model.ctx.json}   the context binary for the slot's backend
    out/<model>/<precision>/<slot>/{test.config.json, test.json}  run from model.ctx
    out/<model>/<precision>/model.qdq.onnx                       when a slot's backend reads it (the htp)
    out/<model>/<precision>/htp@<soc>/{model.htp.onnx, .bin, .json, test.json}  Qualcomm's context, its test
    out/runtime/<host target>/{libqnnb.so, qnn-net-run, runtime.key, include/qnnb.h[, lib<blas>.so]}
    out/runtime/<other target>/{qnnb.dll | libqnnb.so, qnn-net-run[.exe], runtime.key, include/qnnb.h}
    out/release/{release.config.json, <zoo>-<version>.tar.gz}

Unavailable precisions (configs/precisions.yaml `available: false`) and backends (configs/backends)
are skipped with one note line per model; slots on another target are built (model library,
runtime, runner) but their tests are skipped: they run on that machine. Aliases: `<model>`, `test`, `runtime`,
`release`.
"""

import json
import os
import sys
from pathlib import Path

import SCons.Node
import SCons.Script

from ..atomic import write_text
from ..backends import CONTEXT_INPUTS, get_backend
from ..errors import QnnBuildError
from ..spec import load_spec, load_zoo, resolve, write_step_configs
from ..spec.resolve import canonical_json
from . import progress, stamps

# Per build (one SCons process): what has been declared, keyed by the output folder.
_MODELS: dict[str, dict] = {}      # out dir -> {model name: declared model}
_RUNTIMES: dict[str, list] = {}    # out dir -> runtime target nodes
_RELEASED: set = set()             # out dirs whose release is declared


def qnn_model(env, spec, configs=None):
    """Declare every target of one spec. Returns the model's alias node (a list of one node)."""
    try:
        loaded = load_spec(_path(env, spec), configs)
        return _declare(env, loaded)
    except QnnBuildError as e:
        stop(e)


def qnn_zoo(env, specs, configs=None, release=True):
    """Declare every spec (checked together first: nothing is written unless all are valid) and the
    zoo's release. Returns the list of model alias nodes: a good Default()."""
    paths = sorted((_path(env, s) for s in env.Flatten([specs])), key=str)
    try:
        loaded = load_zoo(paths, configs)
        for spec in loaded:
            _check_unique(env, spec)
        aliases = [node for spec in loaded for node in _declare(env, spec)]
        if release and loaded:
            qnn_zoo_release(env)
            qnn_zoo_report(env)
        return aliases
    except QnnBuildError as e:
        stop(e)


def qnn_zoo_release(env, target=None):
    """Declare the release archive of every model declared so far (call it after the last QnnModel)."""
    out = env.Dir("$QNNB_OUTDIR")
    models = _MODELS.get(out.abspath, {})
    if not models:
        raise SCons.Errors.UserError("QnnZooRelease: no models declared yet (call QnnModel or QnnZoo first)")
    if out.abspath in _RELEASED:
        raise SCons.Errors.UserError("QnnZooRelease: the release of this zoo is already declared")
    _RELEASED.add(out.abspath)
    first = next(iter(models.values()))
    zoo, version = first["zoo"], first["version"]
    root = env.Dir("#").abspath
    runtime = _runtime(env)
    config = {
        "zoo": zoo,
        "zoo_version": version,
        "runtime": {"target": first["host"], "libraries": [_rel(n, root) for n in [*runtime[:2], *runtime[4:]]],
                    "header": _rel(runtime[3], root)},
        "cross_runtimes": _cross_runtimes(env, root),
        "tool_versions": _rel(env.File(str(stamps.ensure(env)["all"])), root),
        "models": [m["release"] for _, m in sorted(models.items())],
        "skipped": [note for _, m in sorted(models.items()) for note in m["skipped"]],
    }
    config_path = Path(out.abspath, "release", "release.config.json")
    write_text(config_path, canonical_json(config))
    inputs = [env.File(str(config_path)), *runtime[:2], runtime[3], *runtime[4:],
              env.File(str(stamps.ensure(env)["all"]))]
    for other in list(_RUNTIMES[out.abspath].values())[1:]:
        inputs += other[:2]
    for model in models.values():
        inputs += model["release_inputs"]
    target = target or out.Dir("release").File(f"{zoo}-{version}.tar.gz")
    node = env.QnnRelease(target, inputs, QNNB_MODEL=zoo)
    env.Alias("release", node)
    env.Clean(node, out.Dir("release"))
    return node


def qnn_zoo_report(env, target=None):
    """Declare out/report/index.html (`scons report`, not built by default): every tested build's
    figures, plots and per-build profile and accuracy-debug pages (report/zoo_report.py)."""
    out = env.Dir("$QNNB_OUTDIR")
    models = _MODELS.get(out.abspath, {})
    reported = [m["report"] for _, m in sorted(models.items()) if m["report"]["test_data"]]
    if not reported:
        return None
    first = next(iter(models.values()))
    root = env.Dir("#").abspath
    runtime = _runtime(env)
    config = {"zoo": first["zoo"], "zoo_version": first["version"], "runtime": _rel(runtime[0], root),
              "models": [{k: v for k, v in m.items() if k != "inputs"} for m in reported]}
    config_path = Path(out.abspath, "report", "report.config.json")
    write_text(config_path, canonical_json(config))
    inputs = [env.File(str(config_path)), runtime[0], *(n for m in reported for n in m["inputs"])]
    node = env.QnnReport(target or out.Dir("report").File("index.html"), inputs, QNNB_MODEL=first["zoo"])
    env.AlwaysBuild(node)  # its latencies are measured each time it is asked for
    env.Alias("report", node)  # `scons -c` removes out/report with the runtime (_runtime)
    return node


def _declare(env, spec):
    _check_unique(env, spec)
    model = _Model(env, spec)
    for precision in spec.precisions:
        model.precision(precision)
    return model.finish()


class _Model:
    """The targets of one spec, declared precision by precision, slot by slot."""

    def __init__(self, env, spec):
        self.env, self.spec, self.name = env, spec, spec.name
        self.root = env.Dir("#").abspath
        self.out = env.Dir("$QNNB_OUTDIR")
        self.resolved = resolve(spec, self.root)
        write_step_configs(self.resolved, self.out.abspath)
        self.host = spec.configs.host_target
        self.dir = self.out.Dir(self.name)
        self.runtime = _runtime(env, self.host)
        self.source = env.File(str(spec.source))
        self.test_data = env.File(str(spec.test["data"])) if spec.test else None
        self.alias = env.Alias(self.name)
        self.reference = None
        self.skipped, self.rows, self.tests, self.libs, self.builds = [], [], [], [], []
        self.release_inputs = [env.File(str(spec.path)), self.source]
        self.report_inputs = [self.source] + ([self.test_data] if self.test_data else [])

    def precision(self, precision: str) -> None:
        """convert -> model-lib for each target, then per available slot a context binary (finalized
        from the host's library) and, on the host, a test."""
        info = self.spec.configs.precisions[precision]
        if not info.get("available", True):
            self._skip(precision, None, "precision not available yet")
            return
        folder = self.dir.Dir(precision)
        inputs = [folder.File("convert.config.json"), self.source]
        if info["kind"] == "quantized":
            inputs.append(self.env.File(str(self.spec.calibration)))
            if self.spec.quantization.get("overrides"):
                inputs.append(self.env.File(str(self.spec.quantization["overrides"])))
        qdq = "1" if self.resolved.convert[precision].get("qdq") else ""
        converted = self.env.QnnConvert(folder, inputs, QNNB_MODEL=self.name, QNNB_PRECISION=precision, QNNB_QDQ=qdq)
        cross = {target: self._cross_lib(precision, target, converted)
                 for target in self.resolved.model_lib if target != self.host}
        lib = self.env.QnnModelLib(folder.File("libmodel.so"), [converted[0], converted[1],
                                   self.dir.Dir("model_lib").File(f"{self.host}.config.json")],
                                   QNNB_MODEL=self.name, QNNB_PRECISION=precision)
        self.libs += lib
        self.release_inputs += [lib[0], converted[2]]
        build = {"precision": precision, "target": self.host, "library": _rel(lib[0], self.root),
                 "model_json": _rel(converted[2], self.root), "tests": {}, "contexts": {},
                 "shared_lib": self.spec.configs.targets[self.host]["shared_lib"].format(name=self.name)}
        self.converted = converted
        if qdq:
            build["qdq"] = _rel(converted[-1], self.root)
            self.release_inputs.append(converted[-1])
        for slot, where in self.resolved.slots.items():
            unsupported = self.spec.configs.unsupported_reason(precision, where["backend"]) or \
                self.spec.skip_reason(precision, slot)
            if unsupported:
                self._skip(precision, slot, unsupported)
            elif not where["available"]:
                self._skip(precision, slot, f"backend {where['backend']} not available yet")
            elif not get_backend(where["backend"]).placement(where["target"]).runs_here:
                self._cross_context(precision, slot, where, lib, cross[where["target"]])
            else:
                self._test(precision, slot, where, converted, lib, build)
        self.builds.append(build)

    def _cross_lib(self, precision, target, converted) -> None:
        """model-lib for another target: out/<model>/<precision>/<target>/<model.dll|libmodel.so>,
        with that target's runtime and runner declared once per build (docs/targets.md)."""
        shared_lib = self.spec.configs.targets[target]["shared_lib"]
        folder = self.dir.Dir(precision).Dir(target)
        config = self.dir.Dir("model_lib").File(f"{target}.config.json")
        lib = self.env.QnnModelLib(folder.File(shared_lib.format(name="model")), [converted[0], converted[1], config],
                                   QNNB_MODEL=self.name, QNNB_PRECISION=precision, QNNB_TARGET=target)
        self.libs += lib + _runtime(self.env, target)
        self.release_inputs += [lib[0], converted[2]]
        build = {"precision": precision, "target": target, "library": _rel(lib[0], self.root),
                 "model_json": _rel(converted[2], self.root), "tests": {}, "contexts": {},
                 "shared_lib": shared_lib.format(name=self.name)}
        self.builds.append(build)
        self.rows.append({"model": self.name, "precision": precision, "target": target, "library": lib[0].abspath,
                          "test": None, "steps": [("model-lib", str(lib[0]))],
                          "nodes": [self.alias[0], lib[0], *_runtime(self.env, target)]})
        return build

    def _cross_context(self, precision, slot, where, host_lib, build) -> None:
        """The context binary of a slot on another target: finalized here from the host's library
        (as qnn-context-binary-generator does), loadable only there. Its tests run on that machine."""
        source = self._context_source(where["backend"], precision, host_lib)
        ctx = self.env.QnnContext(self.dir.Dir(precision).Dir(slot).File("model.ctx"), [source, self.runtime[0]],
                                  QNNB_MODEL=self.name, QNNB_PRECISION=precision, QNNB_SLOT=slot,
                                  QNNB_BACKEND=where["backend"], QNNB_TARGET=where["target"])
        self.libs += ctx[:1]
        build["contexts"][where["backend"]] = _rel(ctx[0], self.root)
        self.release_inputs.append(ctx[0])
        self._skip(precision, slot, f"built for {where['target']}; its tests run on that machine", ctx[:1])

    def _context_source(self, backend, precision, lib):
        """The artifact the backend's context step reads (Backend.context_input)."""
        built = {"model-lib": lib[0], "source-onnx": self.source}
        if self.resolved.convert[precision].get("qdq"):
            built["qdq-onnx"] = self.converted[-1]
        wanted = get_backend(backend).context_input(precision)
        if wanted not in built:
            raise QnnBuildError(f"{self.spec.where('targets')}: the {backend} backend's context step reads "
                                f"{CONTEXT_INPUTS[wanted]}, which this build does not make")
        return built[wanted]

    def _test(self, precision, slot, where, converted, lib, build) -> None:
        folder = self.dir.Dir(precision).Dir(slot)
        source = self._context_source(where["backend"], precision, lib)
        ctx = self.env.QnnContext(folder.File(self._context_name(where["backend"])), [source, self.runtime[0]],
                                  QNNB_MODEL=self.name, QNNB_PRECISION=precision, QNNB_SLOT=slot,
                                  QNNB_BACKEND=where["backend"], QNNB_TARGET=where["target"])
        self.libs += ctx[:1]
        native = source is lib[0]  # our runtime's context: one file (its sidecar stays in out/)
        build["contexts"][slot if not native else where["backend"]] = \
            _rel(ctx[0], self.root) if native else [_rel(f, self.root) for f in ctx]
        self.release_inputs += ctx[:1] if native else ctx
        # every file of the context, and what it was finalized from
        self.report_inputs += [*ctx, lib[0]] + ([] if native else [source])
        steps = [("runtime", str(self.runtime[0])), ("convert", str(converted[0])), ("model-lib", str(lib[0])),
                 ("context-binary", str(ctx[0]))]
        test = None
        if (precision, slot) in self.resolved.test:
            self.reference = self.reference or _reference(self.env, self.spec, self.dir, self.source,
                                                          self.test_data, self.root)
            other = self._agreement_context(where["backend"], precision)
            test = self.env.QnnTest(folder.File("test.json"), [folder.File("test.config.json"), ctx[0],
                                    self.reference[0], self.runtime[0], self.test_data, *ctx[1:], *other],
                                    QNNB_MODEL=self.name, QNNB_PRECISION=precision, QNNB_SLOT=slot,
                                    QNNB_BACKEND=where["backend"], QNNB_TARGET=where["target"],
                                    QNNB_AGREE=_rel(other[0], self.root) if other else "")
            if _last_result_failed(test[0]):
                self.env.AlwaysBuild(test)
            self.tests += test
            self.report_inputs.append(test[0])
            build["tests"][slot if not native else where["backend"]] = _rel(test[0], self.root)
            self.release_inputs.append(test[0])
            steps += [("reference", str(self.reference[0])), ("test", str(test[0]))]
        self.rows.append({"model": self.name, "precision": precision, "target": slot,
                          "library": lib[0].abspath if native else [f.abspath for f in ctx],
                          "test": test[0].abspath if test else None, "steps": steps,
                          "nodes": [self.alias[0], lib[0], ctx[0]] + ([test[0]] if test else [])})

    def _context_name(self, backend) -> str:
        """The first file the backend's context step writes, as it names it (model.ctx, model.htp.onnx)."""
        return get_backend(backend).context_name

    def _agreement_context(self, backend, precision) -> list:
        """The context this backend's tests compare with (its yaml's agree_with: the htp's, the npu's),
        when the spec builds that backend on the host at this precision."""
        other = get_backend(backend).agrees_with()
        where = self.resolved.slots.get(other) if other else None
        if where is None or not where["available"] or self.spec.configs.unsupported_reason(precision, other) \
                or self.spec.skip_reason(precision, other):
            return []
        return [self.dir.Dir(precision).Dir(other).File(self._context_name(other))]

    def _skip(self, precision, slot, why, built=()) -> None:
        """A slot (or, without one, a whole precision) not tested here; `built`: what it still builds."""
        self.skipped.append((precision if slot is None else f"{precision} on {slot}", why))
        for each in [slot] if slot else self.resolved.slots:
            self.rows.append({"model": self.name, "precision": precision, "target": each, "skipped": why,
                              "steps": [], "nodes": [self.alias[0], *built]})

    def finish(self):
        env, spec = self.env, self.spec
        env.Alias(self.name, self.libs + self.tests)
        env.Alias("test", self.tests)  # declared even when empty: `scons test` always means something
        env.Clean(self.alias, self.dir)
        progress.ROWS.extend(self.rows)
        if self.skipped:
            print(f"note: {self.name}: skipped {', '.join(f'{what} ({why})' for what, why in self.skipped)}")
        # ninja: a spec or configs/ edit reruns scons, which rewrites the step configs it changes.
        for path in [spec.path, *sorted(Path(spec.configs.dir).rglob("*.yaml"))]:
            SCons.Node.SConscriptNodes.add(env.File(str(path)))
        _MODELS.setdefault(self.out.abspath, {})[self.name] = {
            "zoo": spec.configs.zoo["name"], "version": spec.configs.zoo["version"], "host": self.host,
            "where": spec.where("name"), "skipped": [f"{self.name} {what}: {why}" for what, why in self.skipped],
            "release": {"name": self.name, "spec": _rel(env.File(str(spec.path)), self.root),
                        "source": _rel(self.source, self.root), "builds": self.builds},
            "release_inputs": self.release_inputs,
            "report": {"name": self.name, "source": _rel(self.source, self.root),
                       "test_data": _rel(self.test_data, self.root) if self.test_data else None,
                       "input_values": {n: e["value"] for n, e in spec.inputs.items() if e["value"] is not None},
                       "builds": [b for b in self.builds if b["contexts"] and b["target"] == self.host],
                       "inputs": self.report_inputs},
        }
        return self.alias


def _reference(env, spec, model_dir, source, test_data, root):
    config = {
        "source": _rel(source, root),
        "input_dims": {n: e["shape"] for n, e in spec.inputs.items()},
        "input_values": {n: e["value"] for n, e in spec.inputs.items() if e["value"] is not None},
        "out_nodes": spec.outputs,
        "data": _rel(test_data, root),
        "samples": spec.test["samples"],
    }
    config_file = model_dir.File("reference.config.json")
    write_text(config_file.abspath, canonical_json(config))
    return env.QnnReference(model_dir.File("reference.npz"), [config_file, source, test_data], QNNB_MODEL=spec.name)


def _runtime(env, target=None):
    """The runtime of this build for `target` (default: the host), declared once each: [its runtime
    library, its qnn-net-run, runtime.key, qnnb.h], then lib<blas>.so when its GEMM is OpenBLAS's."""
    out = env.Dir("$QNNB_OUTDIR")
    if out.abspath not in _RUNTIMES:
        _RUNTIMES[out.abspath] = {}
    runtimes = _RUNTIMES[out.abspath]
    target = target or next(iter(runtimes), None) or "x86_64-linux"  # the first declared is the host's
    if target in runtimes:
        return runtimes[target]
    nodes = env.QnnRuntime(target=out.Dir("runtime").Dir(target), source=[], QNNB_TARGET=target)
    env.Alias("runtime", nodes)
    runtimes[target] = nodes
    if len(runtimes) == 1:
        env.Clean(nodes, [out.Dir("runtime"), out.Dir("tool-versions"), out.File("tool-versions.json"),
                          out.Dir("release"), out.Dir("report")])
        # ninja reruns scons (which rewrites configs and stamps) when one of these changes.
        spec_files = [p for p in Path(__file__).parents[1].glob("spec/*") if p.is_file()]  # not __pycache__
        tool_sources = sorted(Path(__file__).parent.glob("*.py")) + sorted(spec_files)
        for path in stamps.regenerate_inputs(dict(env["ENV"])) + [str(p) for p in tool_sources]:
            SCons.Node.SConscriptNodes.add(env.File(path))
    return nodes


def _cross_runtimes(env, root) -> list[dict]:
    """Every other target's runtime library and runner, for the release."""
    runtimes = list(_RUNTIMES.get(env.Dir("$QNNB_OUTDIR").abspath, {}).items())[1:]
    return [{"target": target, "libraries": [_rel(n, root) for n in nodes[:2]]} for target, nodes in runtimes]


def _last_result_failed(node) -> bool:
    """A test that missed a threshold wrote test.json and failed. SCons keeps no signature for it, but
    it keeps the one of the last passing run: were the inputs put back as they were then, SCons would
    take the failed test.json as up to date. So a test whose test.json says it failed always reruns."""
    try:
        return json.loads(Path(node.abspath).read_text()).get("passed") is False
    except (OSError, ValueError, AttributeError):
        return False


def _check_unique(env, spec) -> None:
    declared = _MODELS.get(env.Dir("$QNNB_OUTDIR").abspath, {})
    if spec.name in declared:
        how = "" if "name" in spec.yaml.data else " (from the file name)"
        raise spec.yaml.error(("name",), f"model name '{spec.name}'{how} is already used by "
                                         f"{declared[spec.name]['where']}; names must be unique")


def _path(env, spec) -> str:
    """A spec given as a string (relative to the calling SConscript) or a node -> its absolute path.
    Messages still show it relative to the working directory (the spec layer's display_path)."""
    node = spec if isinstance(spec, SCons.Node.Node) else env.File(str(spec))
    return node.abspath


def _rel(node, root) -> str:
    path = node.abspath if hasattr(node, "abspath") else str(node)
    return Path(os.path.relpath(path, root)).as_posix()


def stop(error) -> None:
    """A bad spec: its one line, and nothing runs."""
    progress.ROWS.clear()
    sys.stderr.write(f"scons: *** {error}\n")
    sys.stderr.flush()
    SCons.Script.Exit(2)
