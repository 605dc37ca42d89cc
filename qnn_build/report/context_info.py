"""`qnn-build context-info`'s text: a context's description (Backend.describe_context) as lines of
`key  value`. It reads the fields every backend gives and prints a backend's own only when the
backend names them (context_rows), so it knows no backend."""


def _encoding_text(enc: dict | None) -> str:
    if enc is None:
        return "float"
    if enc.get("kind") == "fp16":
        return "fp16"
    kind = f"{'int' if enc['signed'] else 'uint'}{enc['bitwidth']}"
    if len(enc["scale"]) == 1:
        return f"{kind} scale {enc['scale'][0]:.6g} offset {enc['offset'][0]}"
    return f"{kind} per-channel (axis {enc.get('axis')}, {len(enc['scale'])} scales)"


def format_info(info: dict, rows: tuple[str, ...] = ()) -> str:
    """The description as the text `context-info` prints; rows: the backend's own fields to print
    (its context_rows), after the precision."""
    lines = [f"{info['file']}: {info['format']}, format {info['format_version']}, {info['file_bytes']} bytes"]

    def row(key, value):
        lines.append(f"  {key:<13}{value}")
    row("backend", f"{info['backend']}" + (f" (runtime {info['runtime_version']})" if info.get("runtime_version") else ""))
    row("target", info["target"])
    if info.get("precision") or "sidecar" in info:
        row("precision", info.get("precision") or "fp32")
    for key in rows:
        if info.get(key) is not None:
            row(key, info[key])
    row("checksum", f"{info['checksum']['stored']} {info['checksum']['state']}")
    if "nodes" in info:
        row("graph", f"{info['nodes']} nodes, {info['tensors']} tensors, {info['constants']} constants "
                     f"({info['constant_bytes']} bytes)")
        row("ops", ", ".join(f"{op} x{n}" for op, n in info["ops"].items()))
    if "memory_plan" in info:
        plan = info["memory_plan"]
        row("memory plan", ", ".join(f"{k.replace('_bytes', '')} {v} bytes" for k, v in plan.items()))
    for kind in ("inputs", "outputs"):
        lines.append(f"  {kind}")
        for t in info.get(kind, []):
            lines.append(f"    {t['name']}  {t['dtype']} {list(t['shape'])}  {_encoding_text(t.get('encoding'))}")
    return "\n".join(lines)
