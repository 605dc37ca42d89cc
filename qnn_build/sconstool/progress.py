"""What a build prints: `[k/N] convert digits_cnn fp32` per step, and a summary table at the end.

N is the number of qnn-build steps the requested targets need (all of them, up to date or not); k
counts the steps that actually run. With `--verbose` the line shows the full command instead of the
short COMSTR text. Other actions print as SCons prints them.
"""

import sys
import threading

import SCons.Node.Alias
import SCons.Script

from ..report.summary import format_table, human_size, key_metrics, read_test

# Filled by the builders' emitters and by the zoo expansion.
STEP_TARGETS: set = set()      # the first target node of every qnn-build step
ROWS: list = []                # one dict per (model, precision, slot): see zoo.py

_lock = threading.Lock()
_count = {"done": 0, "total": None}


def print_cmd_line(s, target, source, env) -> None:
    """PRINT_CMD_LINE_FUNC: number the qnn-build steps; pass everything else through."""
    with _lock:
        if target and target[0] in STEP_TARGETS and not s.startswith("Retrieved `"):
            if _count["total"] is None:
                _count["total"] = len(STEP_TARGETS & requested_nodes()) or len(STEP_TARGETS)
            _count["done"] += 1
            s = f"[{_count['done']}/{max(_count['total'], _count['done'])}] {s}"
        sys.stdout.write(s + "\n")
        sys.stdout.flush()


def requested_nodes() -> set:
    """Every node the command line's targets (or the defaults) reach through sources and Depends.
    A directory target (`scons .`) reaches everything: then every known step."""
    roots, everything = [], False
    fs = SCons.Node.FS.get_default_fs()
    for item in SCons.Script.BUILD_TARGETS:
        if isinstance(item, SCons.Node.Node):
            node = item
        else:
            node = SCons.Node.Alias.default_ans.lookup(str(item)) or fs.Entry(str(item))
        if isinstance(node, SCons.Node.FS.Dir) or (isinstance(node, SCons.Node.FS.Entry) and node.isdir()):
            everything = True
        roots.append(node)
    if everything or not roots:
        return set(STEP_TARGETS) | {row_node for row in ROWS for row_node in row["nodes"]}
    seen, stack = set(), list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(node.sources or ())
        stack.extend(node.depends or ())
    return seen


def print_summary() -> None:
    """The table at the end of a build (atexit), for the models the build touched."""
    options = ("clean", "help", "no_exec", "silent", "question")
    if not ROWS or any(_option(o) for o in options) or _regenerating_ninja():
        return
    try:
        wanted = requested_nodes()
    except Exception:  # noqa: BLE001 -- at exit, after a build that stopped early: no table, no traceback
        return
    failed = {str(f.node): f for f in SCons.Script.GetBuildFailures()}
    rows = [_row(row, failed) for row in ROWS if any(n in wanted for n in row["nodes"])]
    if rows:
        try:
            sys.stdout.write(format_table(rows) + "\n")
            sys.stdout.flush()
        except OSError:  # stdout closed early (`scons | head`)
            pass


def _row(row: dict, failed: dict) -> dict:
    out = {k: row[k] for k in ("model", "precision", "target")}
    if row.get("skipped"):
        return {**out, "size": "-", "status": "skipped", "note": row["skipped"]}
    out["size"] = human_size(row["library"]) if row.get("library") else "-"
    broken = next((step for step, path in row["steps"] if path in failed), None)
    if broken and broken != "test":
        return {**out, "status": f"{broken} failed", "note": "see the error above"}
    if row.get("test") is None:
        return {**out, "status": "built" if out["size"] != "-" else "not built", "note": "no test section"}
    test = read_test(row["test"])
    if test is None:
        return {**out, "status": "not run", "note": "-"}
    status = "passed" if test.get("passed") else "FAILED"
    return {**out, "status": status, **key_metrics(test)}


def _regenerating_ninja() -> bool:
    """ninja reran scons to rewrite build.ninja: nothing was built, so no table."""
    if "ninja" not in (_option("experimental") or ()):
        return False
    return bool(_option("disable_execute_ninja")) or \
        str(SCons.Script.ARGUMENTS.get("NINJA_DISABLE_AUTO_RUN", "")).lower() in ("1", "true")


def _option(name):
    try:
        return SCons.Script.GetOption(name)
    except AttributeError:
        return False
