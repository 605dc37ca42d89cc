"""What a model's outputs are, and how bench_quant.py measures a quantized model's outputs by it.

- values (the default for float outputs): SQNR against the float model, 10*log10(sum ref^2 / sum err^2).
- ids (the default for integer and bool outputs: class ids, argmax choices, flags): the share of them
  equal to the float model's. Their SQNR is not reported: it counts how far apart two ids are, which
  means nothing.
- detections: rows of box + score (+ class) ranked by score, as a TopK in the graph leaves them (the
  rows past the app's score threshold are no detections). Their plain SQNR compares row k with row k,
  so one near-tie that ranks two boxes otherwise moves whole rows and the SQNR drops although the
  detections are the same. Measured instead: the SQNR over matched rows (match_rows), and recall and
  precision of the detections at IoU >= 0.5 and the same class.
"""

import re
from dataclasses import dataclass

import numpy as np

MATCH_IOU = 0.5


@dataclass(frozen=True)
class Values:
    output: str


@dataclass(frozen=True)
class Ids:
    output: str


@dataclass(frozen=True)
class Detections:
    """Where a row's parts are: "name" (the whole output: boxes [.., rows, 4], scores [.., rows]) or
    "name[i]" / "name[i:j]" (columns of an output [.., rows, columns]). Boxes are corners (x1, y1,
    x2, y2). A row is a detection when its score is above `threshold` (the app's). `flags`: an output
    that only says which rows are detections (score > threshold), measured with them."""
    box: str
    score: str
    threshold: float
    cls: str | None = None
    flags: str | None = None

    @property
    def outputs(self) -> list[str]:
        parts = [self.box, self.score, self.cls, self.flags]
        return list(dict.fromkeys(_column(p)[0] for p in parts if p))

    @property
    def name(self) -> str:
        return "+".join(o for o in self.outputs if o != self.flags)

    def rows(self, arrays: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(boxes [samples, rows, 4], scores [samples, rows], classes [samples, rows]) of outputs
        stacked over the test samples; classes all 0 without a class part."""
        box = _pick(arrays, self.box).reshape(len(arrays[_column(self.box)[0]]), -1, 4)
        score = _pick(arrays, self.score).reshape(len(box), -1)
        cls = _pick(arrays, self.cls).reshape(len(box), -1) if self.cls else np.zeros(score.shape)
        return box.astype(np.float64), score.astype(np.float64), np.rint(cls).astype(np.int64)

    def describe(self) -> str:
        return f"detections of {self.name} (score > {self.threshold:g})"


def _column(spec: str) -> tuple[str, slice | int | None]:
    m = re.fullmatch(r"(.+?)(?:\[(\d+)(?::(\d+))?\])?", spec)
    name, lo, hi = m.groups()
    return name, None if lo is None else int(lo) if hi is None else slice(int(lo), int(hi))


def _pick(arrays: dict, spec: str) -> np.ndarray:
    name, col = _column(spec)
    return arrays[name] if col is None else arrays[name][..., col]


def kinds_of(declared, names: list[str], ref: list[np.ndarray]) -> list:
    """The measures of a model: those its entry declares, then each output no measure covers, by its
    dtype (integers and bools are ids, the rest values), in the model's output order."""
    out = list(declared)
    covered = {o for k in out for o in (k.outputs if isinstance(k, Detections) else [k.output])}
    for name, r in zip(names, ref):
        if name not in covered:
            out.append(Ids(name) if r.dtype.kind in "biu" else Values(name))
    return out


# --- detections ------------------------------------------------------------------------------------------

def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of boxes a [n, 4] and b [m, 4] (corners): [n, m]; 1 for two equal
    boxes of no area, which no overlap can tell apart."""
    lo, hi = np.maximum(a[:, None, :2], b[None, :, :2]), np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=2)
    area = lambda x: np.prod(np.clip(x[:, 2:] - x[:, :2], 0, None), axis=1)  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    same = np.all(a[:, None] == b[None, :], axis=2)
    return np.where(union > 0, inter / np.where(union > 0, union, 1), same.astype(np.float64))


def match_rows(ref: tuple, out: tuple, threshold: float) -> list[tuple[int | None, int | None]]:
    """Pairs (reference row, quantized row) that cover every detection of either. Two rows can pair
    when they have the same class and IoU >= 0.5. First one to one, the nearest (squared difference
    of box and score) first, at least one of the two a detection: a greedy match (scipy's linear
    assignment is no dependency of the project; greedy by distance finds the same pairs wherever the
    rows of one object are closer to each other than to another object's). Then a detection left
    over pairs with the nearest row of the other side it can pair with: a detector without NMS
    gives an object several boxes, and the quantized model may pass the threshold with another
    number of them. A detection with no such row pairs with nothing (None)."""
    (rb, rs, rc), (ob, os_, oc) = ref, out
    can = (iou(rb, ob) >= MATCH_IOU) & (rc[:, None] == oc[None, :])
    r_rows, o_rows = np.column_stack([rb, rs]), np.column_stack([ob, os_])
    cost = np.sum((r_rows[:, None, :] - o_rows[None, :, :]) ** 2, axis=2)
    i, j = np.nonzero(can & ((rs > threshold)[:, None] | (os_ > threshold)[None, :]))
    used_r, used_o, pairs = set(), set(), []
    for k in np.argsort(cost[i, j], kind="stable"):
        if i[k] not in used_r and j[k] not in used_o:
            used_r.add(i[k])
            used_o.add(j[k])
            pairs.append((int(i[k]), int(j[k])))
    for k in np.nonzero(rs > threshold)[0]:
        if k not in used_r:
            near = np.nonzero(can[k])[0]
            pairs.append((int(k), int(near[np.argmin(cost[k, near])]) if len(near) else None))
    for k in np.nonzero(os_ > threshold)[0]:
        if k not in used_o:
            near = np.nonzero(can[:, k])[0]
            pairs.append((int(near[np.argmin(cost[near, k])]) if len(near) else None, int(k)))
    return pairs


def detection_errors(ref: tuple, out: tuple, threshold: float) -> tuple[float, float]:
    """(squared error, squared reference) of one sample's detections over the pairs of match_rows
    (box and score; the class is the pairing's); a detection paired with nothing is compared with
    zeros (all its row is error). Rows that are no detection in either are left out: the app never
    sees them."""
    r_rows, o_rows = np.column_stack([ref[0], ref[1]]), np.column_stack([out[0], out[1]])
    zero = np.zeros(r_rows.shape[1])
    err = sig = 0.0
    for i, j in match_rows(ref, out, threshold):
        r, o = r_rows[i] if i is not None else zero, o_rows[j] if j is not None else zero
        err += float(np.sum((r - o) ** 2))
        sig += float(np.sum(r ** 2))
    return err, sig


def found(ref: tuple, out: tuple, threshold: float) -> tuple[int, int]:
    """(detections of `ref` that `out` also has, at IoU >= 0.5 and the same class; of how many), as
    tests/test_third_party_ops.py counts them."""
    want, got = ref[1] > threshold, out[1] > threshold
    if not want.any() or not got.any():
        return 0, int(want.sum())
    overlap = iou(ref[0][want], out[0][got]) >= MATCH_IOU
    same = ref[2][want][:, None] == out[2][got][None, :]
    return int(np.sum(np.any(overlap & same, axis=1))), int(want.sum())


@dataclass
class DetectionScore:
    per_sample: tuple[np.ndarray, np.ndarray]   # (squared error, squared reference) of each test sample
    recall: float | None                        # None: the float model detects nothing
    precision: float | None                     # None: the quantized model detects nothing

    @property
    def sqnr(self) -> float:
        err, sig = (float(np.sum(x)) for x in self.per_sample)
        return float("inf") if err == 0 else 10 * np.log10(max(sig, 1e-300) / err)


def score_detections(kind: Detections, ref: dict, out: dict) -> DetectionScore:
    """ref, out: {output: [samples, ...]} of the float and the quantized model."""
    r_all, o_all = kind.rows(ref), kind.rows(out)
    errs, sigs, counts = [], [], np.zeros(4, int)  # found of ref's, ref's; confirmed of out's, out's
    for n in range(len(r_all[0])):
        r, o = tuple(x[n] for x in r_all), tuple(x[n] for x in o_all)
        e, s = detection_errors(r, o, kind.threshold)
        errs.append(e)
        sigs.append(s)
        counts += (*found(r, o, kind.threshold), *found(o, r, kind.threshold))
    share = lambda a, b: a / b if b else None  # noqa: E731
    return DetectionScore((np.array(errs), np.array(sigs)), share(counts[0], counts[1]), share(counts[2], counts[3]))


def id_agreement(ref: np.ndarray, out: np.ndarray) -> float:
    """The share of ids equal to the float model's."""
    return float(np.mean(out.reshape(ref.shape) == ref))
