"""Comparing a build's outputs with the float reference, and checking the spec's thresholds.

Every metric is computed over all test samples of one output at once (`a` the build, `b` the
reference, both [samples, *output shape]):

    max_abs  = max |a - b|
    rel_err  = max |a - b| / max |b|
    sqnr_db  = 10 log10(sum b^2 / sum (a - b)^2), capped at +-SQNR_CAP_DB (equal outputs give the cap)
    cosine   = <a, b> / (|a| |b|)
    top1     = fraction of samples whose argmax agrees (classifier outputs: [1, C] per sample, C > 1)

With labels, a classifier output also reports `top1_accuracy` (the build vs the labels) and
`reference_top1_accuracy` (the reference vs the labels); these are information, not limits.
"""

import math

import numpy as np

SQNR_CAP_DB = 200.0

# threshold key -> (kind, how a miss reads). "min": the metric must be >= the limit; "max": <=.
LIMITS = {
    "sqnr_db": "min",
    "cosine": "min",
    "top1": "min",
    "max_abs": "max",
    "rel_err": "max",
}


def is_classifier(shape) -> bool:
    """A classifier output holds one row of class scores per sample: [1, C] with C > 1."""
    return len(shape) == 2 and shape[0] == 1 and shape[1] > 1


def compare(a: np.ndarray, b: np.ndarray, labels: np.ndarray | None = None) -> dict:
    """Metrics of one output; `a` and `b` are [samples, *shape] and must have the same shape."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {list(a.shape)} vs reference {list(b.shape)}")
    diff = a - b
    max_abs = float(np.max(np.abs(diff))) if diff.size else 0.0
    max_ref = float(np.max(np.abs(b))) if b.size else 0.0
    metrics = {
        "max_abs": max_abs,
        "rel_err": _ratio(max_abs, max_ref),
        "sqnr_db": sqnr_db(a, b),
        "cosine": cosine(a, b),
    }
    if is_classifier(a.shape[1:]):
        pred, ref = a.reshape(len(a), -1).argmax(axis=1), b.reshape(len(b), -1).argmax(axis=1)
        metrics["top1"] = float(np.mean(pred == ref)) if len(a) else 1.0
        if labels is not None:
            labels = np.asarray(labels).reshape(-1)[: len(a)]
            metrics["top1_accuracy"] = float(np.mean(pred == labels))
            metrics["reference_top1_accuracy"] = float(np.mean(ref == labels))
    return metrics


def agreement(other: np.ndarray, built: np.ndarray, encoding=None) -> dict:
    """How close another backend's outputs (`other`, float) are to the build's (`built`, float), the
    same samples: `sqnr_db` of other against built, and with the build's output `encoding` (an
    integer output: quant.encoding.Encoding) `max_lsb`, the largest difference of their codes (2),
    and `within_1_lsb`, the share of output values whose codes differ by at most 1 (docs/npu.md
    "Against Qualcomm's HTP")."""
    out = {"sqnr_db": sqnr_db(other, built)}
    if encoding is not None:
        from ..quant.encoding import quantize
        lsb = np.abs(quantize(np.asarray(other, np.float32), encoding) - quantize(np.asarray(built, np.float32), encoding))
        out["max_lsb"] = int(lsb.max())
        out["within_1_lsb"] = float(np.mean(lsb <= 1))
    return out


def sqnr_db(a: np.ndarray, b: np.ndarray) -> float:
    signal = float(np.sum(np.square(b)))
    noise = float(np.sum(np.square(a - b)))
    if noise == 0.0:
        return SQNR_CAP_DB
    if signal == 0.0:
        return -SQNR_CAP_DB
    return float(min(SQNR_CAP_DB, max(-SQNR_CAP_DB, 10.0 * math.log10(signal / noise))))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a.reshape(-1), b.reshape(-1)) / (na * nb))


def _ratio(num: float, den: float) -> float:
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def check(outputs: dict[str, dict], thresholds: dict) -> list[dict]:
    """Every missed limit as {output, metric, value, threshold, kind}, in output then key order.

    `top1` applies to classifier outputs; a `top1` limit on a model without one is itself a miss
    (the spec should drop it with `top1: null`), so a limit is never silently ignored."""
    failures = []
    for key, kind in LIMITS.items():
        if key not in thresholds:
            continue
        limit = thresholds[key]
        applies = [name for name, m in outputs.items() if key in m]
        if key == "top1" and not applies:
            failures.append({"output": "*", "metric": key, "value": None, "threshold": limit, "kind": kind})
            continue
        for name in applies:
            value = outputs[name][key]
            missed = value < limit if kind == "min" else value > limit
            if missed or (isinstance(value, float) and math.isnan(value)):
                failures.append({"output": name, "metric": key, "value": value, "threshold": limit, "kind": kind})
    return failures


def describe(failure: dict) -> str:
    """'logits: sqnr_db 41.3 is below the minimum 60' (one failure, for messages and test.json)."""
    if failure["value"] is None:
        return (f"{failure['metric']}: no classifier output ([1, C]) to apply the limit "
                f"{failure['threshold']} to; set `{failure['metric']}: null` in the spec")
    word = "below the minimum" if failure["kind"] == "min" else "above the maximum"
    return (f"output {failure['output']}: {failure['metric']} {short(failure['value'])} is {word} "
            f"{short(failure['threshold'])}")


def short(value) -> str:
    """Numbers for people: 6 significant digits."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def rounded(value):
    """Metrics as stored in test.json: 6 significant digits, so the file reads well and is stable."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.6g}")
    if isinstance(value, float):
        return str(value)  # inf / nan are not JSON
    return value
