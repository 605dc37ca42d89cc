"""The test step: run a built model library on its backend over the test data, compare every output
with the float reference, check the thresholds and write test.json.

test.json is written whether the test passes or not (it is the result), then a miss raises
TestFailed, whose one-line message names model, precision, target, output, metric, value and limit.

test.json (small, flat, stable keys; no timings, so equal builds give equal bytes):
    {"format_version": 1, "model", "precision", "backend", "target", "samples",
     "outputs": {name: {"max_abs", "rel_err", "sqnr_db", "cosine"[, "top1", "top1_accuracy",
                        "reference_top1_accuracy"]}},
     "thresholds": {...}, "passed": bool, "failures": ["output logits: sqnr_db 41.2 is below ..."]
     [, "agreement": {"backend": "npu", "outputs": {name: {"sqnr_db", "max_lsb", "within_1_lsb"}}}]}
agreement (the htp's tests): the backend it agrees_with (the npu) on the same samples, against the build.
"""

import json

import numpy as np

from ..atomic import write_text
from ..backends import get_backend
from ..errors import QnnBuildError
from . import metrics
from ..data.npz import open_npz, sample, sample_count

FORMAT_VERSION = 1


class TestFailed(QnnBuildError):
    """The build ran but missed a threshold; test.json has been written."""

    __test__ = False  # not a pytest test class


def run_test(model_lib, reference, data_path, output, *, backend="cpu", runtime=None, labels=None,
             samples=None, thresholds=None, name="", precision="", target="", threads=1,
             context=None, placement=None, agree_with=None) -> dict:
    """placement: where the backend loads it (the htp's SoC; None: its own default). agree_with: a
    context binary of the backend this one's tests compare with (Backend.agrees_with: the htp's, the
    npu); its outputs on the same samples are compared with the build's (`agreement`: SQNR of it
    against the build, and their largest code difference in LSB)."""
    thresholds = dict(thresholds or {})
    _check_threshold_keys(thresholds)
    other = _agreeing_backend(backend) if agree_with else None  # refused before anything runs
    model = get_backend(backend).load(model_lib, context=context, threads=threads, runtime=runtime,
                                      precision=precision or None, placement=placement)
    target = target or model.target  # not given: where the session runs (an htp context: its SoC)
    data = open_npz(data_path, "test data")
    ref = open_npz(reference, "reference")
    count = sample_count(data, [i.name for i in model.inputs], samples, data_path)
    label_values = _labels(data, labels, count, data_path)
    produced = {o.name: [] for o in model.outputs}
    feeds = [{i.name: sample(data, i.name, k, i.shape, data_path) for i in model.inputs} for k in range(count)]
    for feed in feeds:
        for out_name, value in model.run(feed).items():
            produced[out_name].append(value)
    agreement = _agreement(model, produced, feeds, other, agree_with, runtime, threads) if agree_with else None
    outputs = {}
    for out_name, values in produced.items():
        if out_name not in ref.files:
            raise QnnBuildError(f"{reference}: no output '{out_name}' (it holds {', '.join(ref.files)}); "
                                "rebuild the reference")
        expected = ref[out_name]
        if len(expected) < count:
            raise QnnBuildError(f"{reference}: holds {len(expected)} samples of '{out_name}', the test uses "
                                f"{count}; rebuild the reference")
        expected = expected[:count]  # the same first samples (a slow backend's test caps them, the htp's)
        built = np.stack(values).reshape(expected.shape)
        outputs[out_name] = metrics.compare(built, expected, label_values)
    failures = metrics.check(outputs, thresholds)
    result = {
        "format_version": FORMAT_VERSION,
        "model": name,
        "precision": precision,
        "backend": backend,
        "target": target,
        "samples": count,
        "outputs": {n: {k: metrics.rounded(v) for k, v in m.items()} for n, m in outputs.items()},
        "thresholds": thresholds,
        "passed": not failures,
        "failures": [metrics.describe(f) for f in failures],
    }
    if agreement is not None:
        result["agreement"] = {"backend": other, "outputs": {n: {k: metrics.rounded(v) for k, v in m.items()}
                                                            for n, m in agreement.items()}}
    write_text(output, json.dumps(result, indent=1, sort_keys=True) + "\n")
    if failures:
        where = " ".join(part for part in (name, precision, f"{backend}@{target}" if target else backend) if part)
        more = f" (and {len(failures) - 1} more; see {output})" if len(failures) > 1 else ""
        raise TestFailed(f"{where}: {metrics.describe(failures[0])}{more}")
    return result


def _agreeing_backend(backend: str) -> str:
    """The backend whose context --agree-with gives: the one this backend's tests compare with."""
    other = get_backend(backend).agrees_with()
    if other is None:
        raise QnnBuildError(f"--agree-with: the {backend} backend's tests compare with no other backend "
                            f"(configs/backends/{backend}.yaml has no agree_with)")
    return other


def _agreement(model, produced, feeds, other, context, runtime, threads) -> dict:
    """The other backend's outputs (the npu's) on the same feeds against the build's (metrics.agreement),
    per output."""
    with get_backend(other).load(context=context, threads=threads, runtime=runtime) as session:
        theirs = [session.run(feed) for feed in feeds]
    return {name: metrics.agreement(np.stack([t[name] for t in theirs]), np.stack(values), model.encoding(name))
            for name, values in produced.items()}


def _labels(data, key, count, path):
    if key is None:
        return None
    if key not in data.files:
        raise QnnBuildError(f"{path}: no labels key '{key}' (keys: {', '.join(data.files)})")
    labels = np.asarray(data[key])
    if len(labels) < count:
        raise QnnBuildError(f"{path}: '{key}' holds {len(labels)} labels for {count} samples")
    return labels[:count]


def _check_threshold_keys(thresholds: dict) -> None:
    for key, value in thresholds.items():
        if key not in metrics.LIMITS:
            raise QnnBuildError(f"unknown threshold '{key}' (known: {', '.join(metrics.LIMITS)})")
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise QnnBuildError(f"threshold '{key}' must be a number, got {value!r}")
