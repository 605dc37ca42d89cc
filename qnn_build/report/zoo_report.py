"""`qnn-build report` (`scons report`): the zoo as one HTML page a team opens, out/report/index.html.

Per model, precision and backend slot (cpu, npu, htp@x-elite): SQNR, top-1 accuracy and the
agreement with the backend its tests compare with (the htp's: the npu), from the build's test.json;
the size of what the context was finalized from (libmodel.so, model.qdq.onnx) and of the context
binary (all its files: the htp's three); the init time (loading the context binary) and the latency
(mean and p90 over the test samples, at most as many as its test used, the context run as net-run
runs it, at profiling level detailed), with
plots of SQNR and latency by precision and backend (inline SVG, report/svg.py). Each row links to
its profile page (per-op and per-node tables, the Chrome trace / Perfetto JSON) and, for a quantized
build, its accuracy-debug page (SQNR along the graph, the layer where the error jumps).

The timings make the page differ from run to run: it is a report, not a release input.
"""

import json
import time
from html import escape
from pathlib import Path

from ..atomic import write_text
from ..backends import get_backend
from ..data.npz import open_npz, sample, sample_count
from ..errors import QnnBuildError
from ..runtime.profile import Recorder
from .accuracy_debug import accuracy_debug, write_report
from .profile_view import chrome_trace, format_profile
from .summary import human_size, key_metrics, read_test
from .svg import bar_chart


def _profile(context, backend: str, runtime, data_path, samples: int) -> dict:
    """Load the context binary and run up to `samples` test samples, timing every node."""
    with get_backend(backend).load(context=context, runtime=runtime) as session:
        data = open_npz(data_path, "test data")
        count = sample_count(data, [i.name for i in session.inputs], samples, data_path)
        recorder = Recorder(session, "detailed")
        recorder.start()
        for k in range(count):
            feeds = {i.name: sample(data, i.name, k, i.shape, data_path) for i in session.inputs}
            t0 = time.perf_counter()
            session.run(feeds)
            recorder.record((time.perf_counter() - t0) * 1e6)
        return recorder.profile()


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{escape(title)}</title><style>{STYLE}"
            f"</style></head><body><h1>{escape(title)}</h1>{body}</body></html>\n")


def _build_rows(model: dict, runtime, out_dir: Path, samples: int) -> list[dict]:
    rows = []
    for build in model["builds"]:
        precision = build["precision"]
        for slot, context in sorted(build["contexts"].items()):  # slot: backend, or backend@place (htp@x-elite)
            files = context if isinstance(context, list) else [context]  # a context of several files: the htp's
            backend = get_backend(slot.partition("@")[0])
            source = {"model-lib": build["library"], "qdq-onnx": build.get("qdq"),
                      "source-onnx": model["source"]}[backend.context_input(precision)]
            row = {"model": model["name"], "precision": precision, "backend": slot,
                   "source": f"{human_size(source)} {Path(source).name}" if source else "-",
                   "context_size": human_size(files)}
            test = read_test(build["tests"].get(slot, "")) or {}
            row.update({k: v for k, v in key_metrics(test).items()
                        if k in ("sqnr_db", "accuracy", "top1", "agreement")})
            row["passed"] = test.get("passed")
            page_dir = out_dir / model["name"] / f"{precision}-{slot}"
            # as many samples as its test used: a slow backend's few (the htp's, in emulation)
            cap = test.get("samples") or backend.test_settings().get("samples")
            try:
                profile = _profile(files[0], backend.name, runtime, model["test_data"], min(samples, cap or samples))
                profile["_path"] = f"{model['name']} {precision} {slot}"
                write_text(page_dir / "profile.json", json.dumps(profile, indent=1, sort_keys=True) + "\n",
                           only_if_changed=False)
                write_text(page_dir / "trace.json", json.dumps(chrome_trace(profile)) + "\n", only_if_changed=False)
                write_text(page_dir / "profile.html", _page(
                    f"profile: {model['name']} {precision} on {slot}",
                    f"<p><a href=\"trace.json\">trace.json</a> (open in ui.perfetto.dev) · "
                    f"<a href=\"profile.json\">profile.json</a></p><pre>{escape(format_profile(profile, 40))}</pre>"),
                    only_if_changed=False)
                init = sum(v for k, v in profile.items() if k.endswith("_us") and k != "execute_us"
                           and isinstance(v, (int, float)))
                row.update({"init_us": round(init, 1), "latency_us": profile["execute_stats"]["mean"],
                            "latency_p90_us": profile["execute_stats"]["p90"], "profile": f"{page_dir.name}/profile.html"})
            except QnnBuildError as e:
                row["note"] = f"profile: {e}"
            # accuracy-debug re-runs our runtime's model library, keeping every tensor: backends that finalize it
            if precision not in ("fp32",) and backend.context_input(precision) == "model-lib":
                try:
                    report = accuracy_debug(model["source"], model["test_data"], model=build["library"],
                                            backend=backend.name, input_values=model.get("input_values"),
                                            samples=samples)
                    write_report(report, page_dir / "debug")
                    row.update({"first_jump": report["first_jump"], "debug": f"{page_dir.name}/debug/index.html"})
                except QnnBuildError as e:
                    row["note"] = (row.get("note", "") + f" accuracy-debug: {e}").strip()
            rows.append(row)
    return rows


def _cell(value, fmt=None) -> str:
    if value is None:
        return "-"
    return format(value, fmt) if fmt and isinstance(value, (int, float)) else escape(str(value))


def _model_section(name: str, rows: list[dict]) -> str:
    precisions = list(dict.fromkeys(r["precision"] for r in rows))
    backends = list(dict.fromkeys(r["backend"] for r in rows))

    def series(key):
        return {b: [next((r.get(key) for r in rows if r["precision"] == p and r["backend"] == b), None)
                    for p in precisions] for b in backends}
    charts = (bar_chart(precisions, series("sqnr_db"), "SQNR (dB)", f"{name}: SQNR by precision and backend") +
              bar_chart(precisions, series("latency_us"), "latency (us)", f"{name}: latency by precision and backend"))
    head = "".join(f"<th>{h}</th>" for h in ("precision", "backend", "SQNR dB", "top-1 acc", "agreement",
                                            "finalized from", "context", "init us", "latency us", "p90 us", "test",
                                            "pages"))
    body = []
    for r in rows:
        links = " ".join(f'<a href="{name}/{r[k]}">{label}</a>' for k, label in (("profile", "profile"),
                                                                                   ("debug", "accuracy")) if r.get(k))
        status = {True: "passed", False: "FAILED", None: "-"}[r.get("passed")]
        body.append(f"<tr><td>{r['precision']}</td><td>{r['backend']}</td><td>{_cell(r.get('sqnr_db'), '.1f')}</td>"
                    f"<td>{_cell(r.get('accuracy'), '.2%')}</td><td>{_cell(r.get('agreement'))}</td>"
                    f"<td>{escape(r['source'])}</td><td>{r['context_size']}</td>"
                    f"<td>{_cell(r.get('init_us'), '.0f')}</td><td>{_cell(r.get('latency_us'), '.1f')}</td>"
                    f"<td>{_cell(r.get('latency_p90_us'), '.1f')}</td><td>{status}</td><td>{links}"
                    f"{' ' + escape(r['note']) if r.get('note') else ''}</td></tr>")
    return (f'<section id="{escape(name)}"><h2>{escape(name)}</h2><div class="charts">{charts}</div>'
            f"<table><tr>{head}</tr>{''.join(body)}</table></section>")


def build_report(config: dict, output, samples: int = 8) -> dict:
    """Write `output` (index.html) and the pages beside it; returns {"rows": [...]}."""
    output = Path(output)
    out_dir = output.parent
    rows = []
    for model in config["models"]:
        rows += _build_rows(model, config.get("runtime"), out_dir, samples)
    if not rows:
        raise QnnBuildError("report: no build to report (the zoo has no tested context binaries yet)")
    names = list(dict.fromkeys(r["model"] for r in rows))
    title = f"{config.get('zoo', 'zoo')} {config.get('zoo_version', '')}".strip()
    toc = " · ".join(f'<a href="#{escape(n)}">{escape(n)}</a>' for n in names)
    body = (f"<p>{len(rows)} builds of {len(names)} models. SQNR and top-1 accuracy from each build's test "
            f"(against the float source on onnxruntime); agreement: the backend a build's tests compare "
            f"with (the htp's: the npu) on the same samples, its SQNR against the build and the largest difference "
            f"in output codes; context: every file of the "
            f"context binary; init: loading it; latency: the mean and p90 of {samples} test samples (at most a slow "
            f"backend's test samples), one thread, on this machine (the htp's: Qualcomm's HTP emulation, not a "
            f"device). {toc}</p>" +
            "".join(_model_section(n, [r for r in rows if r["model"] == n]) for n in names))
    write_text(out_dir / "report.json", json.dumps({"rows": rows}, indent=1) + "\n", only_if_changed=False)
    write_text(output, _page(f"{title}: report", body), only_if_changed=False)
    return {"rows": rows}


STYLE = ("body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:13px;"
         "margin:8px 0 24px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}"
         "td:first-child,td:nth-child(2),td:last-child{text-align:left}h1{font-size:22px}h2{font-size:18px;"
         "margin-top:28px}.charts svg{margin-right:12px}pre{font-size:12px}")

