"""The table printed at the end of a build: one row per (model, precision, slot) of the zoo.

    model       precision  target        size       status   sqnr_db  rel_err  top1  accuracy  agreement
    digits_cnn  fp32       cpu           165.7 KiB  passed   132.2    3.6e-07  1     98.25%    -
    digits_cnn  w8a8       htp@x-elite   92.0 KiB   passed   39.5     0.015    1     96.67%    npu 42.1 dB 1 LSB
    digits_cnn  w8a8       cpu           -          skipped  precision not available yet

sqnr_db, rel_err, top1 (agreement with the float reference) and accuracy (against the labels) are
the worst over the model's outputs; agreement (a backend that agrees_with another: the htp, with the
npu) that backend's agreement with the build on the same samples: the lowest SQNR of it against the
build and the largest difference in output codes.

`rows` are plain dicts, so the SCons tool decides what each row's status is and this module only
reads test.json files and lays the table out.
"""

import json
from pathlib import Path

COLUMNS = ("model", "precision", "target", "size", "status", "sqnr_db", "rel_err", "top1", "accuracy", "agreement")


def read_test(path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def key_metrics(test: dict) -> dict:
    """The worst value over the outputs: lowest SQNR, top-1 agreement and accuracy; highest relative error."""
    outputs = list(test.get("outputs", {}).values())

    def worst(key, pick):
        values = [m[key] for m in outputs if isinstance(m.get(key), (int, float))]
        return pick(values) if values else None

    other = test.get("agreement", {})
    agree = list(other.get("outputs", {}).values())
    sqnr = min((m["sqnr_db"] for m in agree if "sqnr_db" in m), default=None)
    lsb = max((m["max_lsb"] for m in agree if "max_lsb" in m), default=None)
    agreement = None if sqnr is None else \
        f"{other.get('backend', '?')} {sqnr:.1f} dB" + ("" if lsb is None else f" {lsb} LSB")
    return {"sqnr_db": worst("sqnr_db", min), "rel_err": worst("rel_err", max), "top1": worst("top1", min),
            "accuracy": worst("top1_accuracy", min), "agreement": agreement}


def human_size(path) -> str:
    """The size of a file, or of several together (a context of several files)."""
    try:
        size = sum(Path(p).stat().st_size for p in (path if isinstance(path, list) else [path]))
    except OSError:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return "-"


def format_table(rows: list[dict]) -> str:
    """rows: {model, precision, target, size, status, [sqnr_db, rel_err, top1 | note]}."""
    cells = [list(COLUMNS)]
    for row in rows:
        line = [str(row.get(c, "")) for c in COLUMNS[:5]]
        if row.get("note"):
            line.append(row["note"])
        else:
            line += [_number(row.get("sqnr_db"), ".1f"), _number(row.get("rel_err"), ".2g"),
                     _number(row.get("top1"), ".4g"), _number(row.get("accuracy"), ".2%"),
                     _number(row.get("agreement"), "")]
        cells.append(line)
    full = [r for r in cells if len(r) == len(COLUMNS)]
    widths = [max(len(r[i]) for r in (full if i >= 5 else cells)) for i in range(len(COLUMNS))]
    lines = []
    for r in cells:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip())
    return "\n".join(lines)


def _number(value, fmt) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return format(value, fmt)
