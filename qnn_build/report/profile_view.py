"""`qnn-build profile-viewer`: a profile.json (runtime/profile.py; docs/formats.md) read the way
qnn-profile-viewer reads QNN's: the init and execute times, then the time per op type and per node,
largest first; two profiles side by side (same model on two backends or precisions, or before and
after a change); and the Chrome trace / Perfetto JSON of it (chrome://tracing, ui.perfetto.dev)."""

import json
from pathlib import Path

from ..errors import QnnBuildError

INIT_KEYS = ("load_us", "compose_us", "finalize_us", "retrieve_us")


def load_profile(path) -> dict:
    path = Path(path)
    if path.is_dir():
        path = path / "profile.json"  # net-run's output folder
    try:
        profile = json.loads(path.read_text())
    except FileNotFoundError:
        raise QnnBuildError(f"{path}: profile not found (net-run --profiling-level basic|detailed writes it)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise QnnBuildError(f"{path}: not a profile.json ({e})") from None
    if not isinstance(profile, dict) or "execute_us" not in profile:
        raise QnnBuildError(f"{path}: not a profile.json (no execute_us)")
    profile["_path"] = str(path)
    return profile


def node_means(profile: dict) -> dict[str, dict]:
    """Node name -> {op, mean_us} (a detailed profile; empty for basic). The htp's nodes are QNN's
    events: no op type, and their mean in emulated cycles (node_unit)."""
    return {n["name"]: {"op": n.get("op", "-") + (f"+{n['fused']}" if n.get("fused") else ""),
                        "mean_us": n["stats"]["mean"],
                        "outputs": n.get("outputs", [])}
            for n in profile.get("nodes", []) if n.get("stats")}


def node_unit(profile: dict) -> str:
    """What the nodes' times count: microseconds, or the htp's emulated cycles."""
    return "cycles" if any("cycles" in n for n in profile.get("nodes", [])) else "us"


def op_table(profile: dict) -> list[dict]:
    """Per op type: nodes, mean time per inference summed over its nodes, share of all nodes' time."""
    ops: dict[str, dict] = {}
    for node in node_means(profile).values():
        row = ops.setdefault(node["op"], {"op": node["op"], "nodes": 0, "mean_us": 0.0})
        row["nodes"] += 1
        row["mean_us"] += node["mean_us"]
    total = sum(r["mean_us"] for r in ops.values()) or 1.0
    rows = sorted(ops.values(), key=lambda r: -r["mean_us"])
    for r in rows:
        r["mean_us"], r["share"] = round(r["mean_us"], 3), round(r["mean_us"] / total, 4)
    return rows


def _header(profile: dict) -> list[str]:
    s = profile.get("execute_stats", {})
    init = ", ".join(f"{k[:-3]} {profile[k]:.1f} us" for k in INIT_KEYS if k in profile)
    lines = [f"{profile['_path']}: {profile.get('backend', '?')}, {profile.get('num_inferences', 0)} inference(s), "
             f"profiling level {profile.get('profiling_level', '?')}"]
    if init:
        lines.append(f"  init     {init}")
    if s:
        lines.append(f"  execute  mean {s['mean']:.1f} us, p50 {s['p50']:.1f}, p90 {s['p90']:.1f}, "
                     f"min {s['min']:.1f}, max {s['max']:.1f}")
    return lines


def format_profile(profile: dict, top: int = 20) -> str:
    lines = _header(profile)
    nodes = node_means(profile)
    if not nodes:
        lines.append("  (no per-node times: run net-run with --profiling-level detailed)")
        return "\n".join(lines)
    total = sum(n["mean_us"] for n in nodes.values())
    mean = f"mean {node_unit(profile)}"
    lines += ["", f"  {'op':<24}{'nodes':>6}{mean:>12}{'share':>8}"]
    for r in op_table(profile):
        lines.append(f"  {r['op']:<24}{r['nodes']:>6}{r['mean_us']:>12.3f}{r['share']:>8.1%}")
    lines += ["", f"  {'node':<40}{'op':<20}{mean:>12}{'share':>8}  output"]
    ranked = sorted(nodes.items(), key=lambda kv: -kv[1]["mean_us"])
    for name, n in ranked[:top]:
        shape = "x".join(map(str, n["outputs"][0])) if n["outputs"] else ""
        lines.append(f"  {name[:39]:<40}{n['op'][:19]:<20}{n['mean_us']:>12.3f}{n['mean_us'] / (total or 1):>8.1%}  "
                     f"{shape}")
    if len(ranked) > top:
        lines.append(f"  ... {len(ranked) - top} more node(s) (--top N)")
    return "\n".join(lines)


def compare(a: dict, b: dict) -> dict:
    """Execute and per-node mean times of two profiles, and b's time over a's."""
    ea, eb = a.get("execute_stats", {}).get("mean"), b.get("execute_stats", {}).get("mean")
    na, nb = node_means(a), node_means(b)
    rows = [{"node": name, "op": na[name]["op"], "a_us": na[name]["mean_us"], "b_us": nb[name]["mean_us"],
             "ratio": round(nb[name]["mean_us"] / na[name]["mean_us"], 3) if na[name]["mean_us"] else None}
            for name in na if name in nb]
    rows.sort(key=lambda r: -abs(r["b_us"] - r["a_us"]))
    return {"a": a["_path"], "b": b["_path"], "execute_mean_us": [ea, eb],
            "execute_ratio": round(eb / ea, 3) if ea and eb else None, "nodes": rows,
            "only_in_a": sorted(set(na) - set(nb)), "only_in_b": sorted(set(nb) - set(na))}


def format_compare(c: dict, top: int = 20) -> str:
    ea, eb = c["execute_mean_us"]
    lines = [f"a: {c['a']}", f"b: {c['b']}",
             f"  execute mean  a {ea:.1f} us, b {eb:.1f} us" + (f", b/a {c['execute_ratio']:.3f}" if c["execute_ratio"]
                                                              else "")]
    if c["nodes"]:
        lines += ["", f"  {'node':<40}{'op':<20}{'a us':>10}{'b us':>10}{'b/a':>8}"]
        for r in c["nodes"][:top]:
            ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
            lines.append(f"  {r['node'][:39]:<40}{r['op'][:19]:<20}{r['a_us']:>10.3f}{r['b_us']:>10.3f}{ratio:>8}")
        if len(c["nodes"]) > top:
            lines.append(f"  ... {len(c['nodes']) - top} more node(s) in both (--top N)")
    for side in ("a", "b"):
        if c[f"only_in_{side}"]:
            lines.append(f"  only in {side}: {', '.join(c[f'only_in_{side}'][:10])}"
                         + (" ..." if len(c[f"only_in_{side}"]) > 10 else ""))
    return "\n".join(lines)


def chrome_trace(profile: dict) -> dict:
    """The Trace Event Format (JSON object form) that chrome://tracing and ui.perfetto.dev open: the
    init steps, then each inference as one slice with its nodes as slices inside it, back to back
    (the runtime runs them one at a time; the small gaps between them are not recorded)."""
    events, t = [], 0.0
    meta = {"pid": 1, "tid": 1}
    for key in INIT_KEYS:
        if key in profile:
            events.append({"name": key[:-3], "cat": "init", "ph": "X", "ts": round(t, 3), "dur": profile[key], **meta})
            t += profile[key]
    nodes = profile.get("nodes", [])
    for k, execute in enumerate(profile["execute_us"]):
        events.append({"name": f"execute {k}", "cat": "execute", "ph": "X", "ts": round(t, 3), "dur": execute, **meta})
        start = t
        for node in nodes:
            if k < len(node.get("time_us", [])):
                dur = node["time_us"][k]
                events.append({"name": node["name"], "cat": node["op"], "ph": "X", "ts": round(start, 3),
                               "dur": dur, "pid": 1, "tid": 2,
                               "args": {"op": node["op"], "outputs": node.get("outputs", []),
                                        **({"fused": node["fused"]} if node.get("fused") else {})}})
                start += dur
        t += execute
    names = [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}
             for tid, name in ((1, "graph"), (2, "nodes"))]
    process = {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": f"qnn-build {profile.get('backend', '')}"}}
    return {"traceEvents": [process, *names, *events], "displayTimeUnit": "ns",
            "otherData": {"backend": profile.get("backend"), "profiling_level": profile.get("profiling_level")}}
