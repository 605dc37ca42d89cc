"""bench/output_kinds.py: a ranked list of detections measured whatever the rank of its rows (the
matched SQNR, recall and precision), ids by their agreement with the float model's, and
bench_quant.py's verdict on the default by these measures."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import bench_quant  # noqa: E402
from output_kinds import Detections, Ids, Values, id_agreement, kinds_of, score_detections  # noqa: E402

# As yolo26n_isbn's output0: rows x1, y1, x2, y2, score, class, highest score first.
KIND = Detections(box="out[0:4]", score="out[4]", cls="out[5]", threshold=0.3)


def ranked_rows(rng, samples=4, rows=30, detected=6) -> np.ndarray:
    """[samples, 1, rows, 6]: `detected` boxes above the threshold, the rest a tail of near-nothing."""
    xy = rng.uniform(0, 400, (samples, rows, 2))
    wh = rng.uniform(20, 80, (samples, rows, 2))
    score = np.concatenate([rng.uniform(0.4, 0.9, (samples, detected)),
                            rng.uniform(0.0, 0.01, (samples, rows - detected))], axis=1)
    cls = rng.integers(0, 3, (samples, rows))
    out = np.concatenate([xy, xy + wh, score[..., None], cls[..., None]], axis=2)
    order = np.argsort(-score, axis=1)
    return np.take_along_axis(out, order[..., None], axis=1)[:, None].astype(np.float32)


def test_a_permuted_copy_is_exact():
    """The same detections in another order (near-ties that TopK ranks otherwise): inf dB and every
    detection found, where the plain SQNR of the tensor counts whole rows as error."""
    ref = ranked_rows(np.random.default_rng(0))
    perm = np.random.default_rng(1).permutation(ref.shape[2])
    out = ref[:, :, perm]
    d = score_detections(KIND, {"out": ref}, {"out": out})
    assert d.sqnr == float("inf")
    assert d.recall == d.precision == 1.0
    assert bench_quant.sqnr_db(ref, out) < 10


def test_a_moved_box_lowers_the_sqnr_and_a_lost_one_the_recall():
    ref = ranked_rows(np.random.default_rng(2))
    nudged = ref.copy()
    nudged[:, 0, 0, :4] += 3.0                      # the top box of every sample, 3 px off: the same detection
    d = score_detections(KIND, {"out": ref}, {"out": nudged})
    assert 20 < d.sqnr < float("inf")
    assert d.recall == d.precision == 1.0
    moved = ref.copy()
    moved[:, 0, 0, [0, 2]] += 200.0                 # 200 px: no longer the same object (IoU 0)
    far = score_detections(KIND, {"out": ref}, {"out": moved})
    assert far.sqnr < d.sqnr
    assert far.recall < 1.0 and far.precision < 1.0


def test_a_detection_below_the_threshold_in_one_model_is_matched_not_dropped():
    """A row scored 0.31 in float and 0.29 quantized is the same box: its error is its score's
    difference, not the whole row."""
    ref = ranked_rows(np.random.default_rng(3), samples=1)
    ref[0, 0, 5, 4] = 0.31
    out = ref.copy()
    out[0, 0, 5, 4] = 0.29
    d = score_detections(KIND, {"out": ref}, {"out": out})
    err, _ = d.per_sample
    assert np.isclose(err[0], 0.02 ** 2, rtol=1e-3)
    assert d.recall < 1.0 and d.precision == 1.0   # the app sees one detection fewer


def test_another_class_is_another_detection():
    ref = ranked_rows(np.random.default_rng(4))
    relabelled = ref.copy()
    relabelled[:, 0, 0, 5] += 1
    d = score_detections(KIND, {"out": ref}, {"out": relabelled})
    assert d.recall < 1.0 and d.sqnr < float("inf")


def test_id_agreement():
    ref = np.arange(64, dtype=np.uint8).reshape(2, 1, 32) % 15
    out = ref.copy()
    assert id_agreement(ref, out) == 1.0
    out[0, 0, :8] = (out[0, 0, :8] + 1) % 15
    assert id_agreement(ref, out) == 1 - 8 / 64


def test_undeclared_outputs_go_by_their_dtype():
    ref = [np.zeros((2, 1, 4), np.float32), np.zeros((2, 1, 4), np.int64), np.zeros((2, 1, 4), bool)]
    assert kinds_of((), ["a", "b", "c"], ref) == [Values("a"), Ids("b"), Ids("c")]
    det = Detections(box="a", score="d", cls="b", flags="c", threshold=0.1)
    assert kinds_of((det,), ["a", "b", "c", "d"], ref + [ref[0]]) == [det]


def test_the_default_verdict_counts_id_agreement_not_id_sqnr():
    """tashkeel's shape: logits (values) and predictions (ids). A peer whose ids are closer in SQNR
    terms but agree less is behind; the verdict names the measure."""
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((16, 1, 8, 5)).astype(np.float32)
    ref = [logits, np.argmax(logits, -1).astype(np.uint8)]
    kinds = [Values("logits"), Ids("predictions")]
    info = {"name": "m", "measures": kinds}

    def row(label, tool, noise, flips):
        out = logits + noise * rng.standard_normal(logits.shape).astype(np.float32)
        ids = ref[1].copy()
        ids.reshape(-1)[:flips] = (ids.reshape(-1)[:flips] + 1) % 5
        s = bench_quant.Setting(label, tool, "w8a8")
        return bench_quant.measure(s, [out, ids], ref, None, 1.0, kinds, ["logits", "predictions"], n_quantized=3)

    results = [row("ours w8a8 auto", "ours", 0.01, 0), row("ours w8a8 minmax", "ours", 0.02, 0),
               row("ort w8a8 MinMax", "ort", 0.02, 2), row("ort w8a8 Percentile", "ort", 0.03, 0)]
    assert results[0].sqnr[1] is None and results[0].score == results[0].sqnr[0]
    header, rows = bench_quant.default_rows([(info, results)])
    assert rows[0][header.index(">= both")] == "yes"
    assert rows[0][-1] == "SQNR of logits; ids agreement of predictions"
    assert "; predictions +0.00 % (0.00)" in rows[0][header.index("default - best peer (σ)")]
    results[0] = row("ours w8a8 auto", "ours", 0.01, 1)
    _, rows = bench_quant.default_rows([(info, results)])
    assert rows[0][header.index(">= both")].startswith("NO (")
    lead = rows[0][header.index("default - best peer (σ)")]
    assert "predictions -0.78 % (0.77), within noise" in lead   # 1 of 128 ids, in 1 of the 16 samples


def test_a_second_box_of_a_found_object_pairs_with_it():
    """A detector without NMS: the quantized model passes the threshold with one more box of an object
    both find (compared with that object's box: a small error), where a box of no object the float
    model found is compared with nothing."""
    ref = ranked_rows(np.random.default_rng(6), samples=1)
    second, stray = ref.copy(), ref.copy()
    second[0, 0, 10] = ref[0, 0, 0] + [2, 2, 2, 2, 0, 0]        # 2 px from the top box, its class
    second[0, 0, 10, 4] = 0.35                                     # a tail row that now passes 0.3
    stray[0, 0, 10] = [500, 500, 560, 560, 0.35, ref[0, 0, 0, 5]]
    near = score_detections(KIND, {"out": ref}, {"out": second})
    far = score_detections(KIND, {"out": ref}, {"out": stray})
    assert near.precision == 1.0 and far.precision < 1.0
    assert far.sqnr + 10 < near.sqnr < float("inf")
