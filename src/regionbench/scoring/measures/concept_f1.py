"""Concepts scored as SA-Co scores them (SAM 3, 2025): cgF1, the product of a positive micro F1
over the instances and the Matthews correlation of whether an (image, noun phrase) pair holds the
concept at all (docs/scoring.md, "Concepts").

The unit is a pair: an image and a noun phrase, with its truth (the instances an annotator drew,
crowd regions left out) and the run's detections of it, those scored under ``SCORE`` left out.
Per pair, detections and instances are matched one to one by the greatest total IoU (the
Hungarian method), and at each IoU threshold of ``THRESHOLDS`` a match at or over it is a true
positive; the rest of the detections are false positives, the rest of the instances false
negatives. At the image level a pair is a true positive (truth and detections), a false positive
(detections only), a false negative (truth only) or a true negative (neither).

- precision, recall and F1 over all pairs' counts, ``tp / (tp + fp + 1e-4)`` and so on;
- positive micro F1 (``pmF1``): the same with only the false positives of pairs that hold truth
  and detections, so a negative phrase's detections cost only the image level;
- positive macro F1: the mean local F1 of the pairs with detections and truth (a pair with truth
  and no detection adds 0 and is not counted);
- IL precision, recall, F1, FPR and ``IL_MCC``, with 1e-6 in their denominators;
- ``cgF1 = pmF1 x IL_MCC``, at each threshold.

The small constants are the reference's (``sam3/eval/cgf1_eval.py``), so the figures equal it.
Against several annotators (the oracle), each pair keeps the annotator whose local F1, averaged
over the thresholds, is highest (the first on a tie); a pair where an annotator has neither truth
nor detections is perfect for it, and taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

THRESHOLDS = np.linspace(0.5, 0.95, 10)  # pycocotools' iouThrs
SCORE = 0.5  # detections scored under it are left out
KINDS = ("TP", "FP", "FN", "TN")  # a pair at the image level


@dataclass(frozen=True)
class Pair:
    """One (image, phrase) pair scored against one truth: its image-level ``kind``, and, unless
    it is a true negative, its true positives, false positives, false negatives and local F1 at
    each threshold; ``detections`` those scored."""

    kind: str
    tp: np.ndarray | None = None
    fp: np.ndarray | None = None
    fn: np.ndarray | None = None
    local_f1: np.ndarray | None = None
    detections: int = 0


def matched(ious: np.ndarray) -> np.ndarray:
    """The IoU of each match of a one-to-one matching of detections (rows) and instances
    (columns) with the greatest total IoU (``scipy.optimize.linear_sum_assignment``)."""
    from scipy.optimize import linear_sum_assignment  # the build extra: concepts need it

    rows, columns = linear_sum_assignment(-ious)
    found: np.ndarray = ious[rows, columns]
    return found


def pair(ious: np.ndarray) -> Pair:
    """A pair's figures from the IoU of its scored detections (rows) with its instances
    (columns), crowd regions left out."""
    detections, instances = ious.shape
    if not detections and not instances:
        return Pair("TN")
    if not detections:
        zeros = np.zeros(len(THRESHOLDS), dtype=np.int64)
        return Pair("FN", zeros, zeros, np.full(len(THRESHOLDS), instances, dtype=np.int64), zeros.astype(float))
    scores = matched(ious) if instances else np.zeros(0)
    tp = np.array([(scores >= t).sum() for t in THRESHOLDS], dtype=np.int64)
    fp, fn = detections - tp, instances - tp
    precision, recall = tp / (tp + fp + 1e-4), tp / (tp + fn + 1e-4)
    f1 = 2 * precision * recall / (precision + recall + 1e-4)
    return Pair("TP" if instances else "FP", tp, fp, fn, f1, detections)


def oracle(each: Sequence[Pair]) -> Pair:
    """The pair against several annotators (``each``, in their order): the first, replaced by a
    later one whose mean local F1 is higher, or by one against whom it is a true negative."""
    best = each[0]
    for current in each[1:]:
        if best.local_f1 is not None and current.local_f1 is not None:
            if current.local_f1.mean() > best.local_f1.mean():
                best = current
        elif current.local_f1 is None:
            best = current
    return best


T = len(THRESHOLDS)
# A pair's tallies, the sums a run's figures are made of (``tallies``): per threshold its true
# positives, false positives, false negatives, false positives counted by pmF1 and local F1 (that
# of a pair holding truth), then whether it counts in the positive macro F1, then its kind.
WIDTH = 5 * T + 1 + len(KINDS)


def tallies(p: Pair) -> np.ndarray:
    """Pair ``p``'s row of the sums its run's figures are made of (``WIDTH``): additive, so a
    set of pairs' figures are those of their rows' sum (``from_tallies``), and a resample of
    images sums its pairs' rows as often as it draws them."""
    row = np.zeros(WIDTH)
    row[5 * T + 1 + KINDS.index(p.kind)] = 1
    if p.tp is None or p.fp is None or p.fn is None or p.local_f1 is None:
        return row
    row[0:T], row[T : 2 * T], row[2 * T : 3 * T] = p.tp, p.fp, p.fn
    if p.kind in ("TP", "FN"):  # the pairs that hold truth: their false positives, their F1s
        row[3 * T : 4 * T], row[4 * T : 5 * T] = p.fp, p.local_f1
        row[5 * T] = p.detections > 0
    return row


def figures(pairs: Sequence[Pair]) -> dict[str, np.ndarray | float]:
    """The run's figures over its ``pairs``: per threshold (arrays) precision, recall, F1,
    positive micro precision and F1, positive macro F1 and cgF1; the image-level IL precision,
    recall, F1, FPR and MCC (numbers), and each kind's count."""
    total = np.sum([tallies(p) for p in pairs], axis=0) if pairs else np.zeros(WIDTH)
    found = from_tallies(total[None, :])
    return {name: values[0] if values.ndim == 2 else float(values[0]) for name, values in found.items()}


def from_tallies(total: np.ndarray) -> dict[str, np.ndarray]:
    """The figures of summed tallies, ``k`` sums at once (shape (k, ``WIDTH``)): per threshold
    figures of shape (k, T), image-level ones of shape (k,). NaN where the positive macro F1 has
    no pair to average, as the reference."""
    tp, fp, fn, positive_fp, local = (total[:, k * T : (k + 1) * T] for k in range(5))
    counted = total[:, 5 * T][:, None]
    il_tp, il_fp, il_fn, il_tn = (total[:, 5 * T + 1 + k] for k in range(len(KINDS)))
    precision, recall = tp / (tp + fp + 1e-4), tp / (tp + fn + 1e-4)
    positive = tp / (tp + positive_fp + 1e-4)
    micro = 2 * positive * recall / (positive + recall + 1e-4)
    il_recall = il_tp / (il_tp + il_fn + 1e-6)
    il_precision = il_tp / (il_tp + il_fp + 1e-6)
    product = (il_tp + il_fp) * (il_tp + il_fn) * (il_tn + il_fp) * (il_tn + il_fn)
    mcc = (il_tp * il_tn - il_fp * il_fn) / (product**0.5 + 1e-6)
    with np.errstate(divide="ignore", invalid="ignore"):  # no pair with truth and detections: NaN, as the reference
        macro = local / counted
    return {
        "precision": precision,
        "recall": recall,
        "F1": 2 * precision * recall / (precision + recall + 1e-4),
        "positive_micro_precision": positive,
        "pmF1": micro,
        "positive_macro_F1": macro,
        "cgF1": micro * mcc[:, None],
        "IL_precision": il_precision,
        "IL_recall": il_recall,
        "IL_F1": 2 * il_precision * il_recall / (il_precision + il_recall + 1e-6),
        "IL_FPR": il_fp / (il_fp + il_tn + 1e-6),
        "IL_MCC": mcc,
        **{f"IL_{k}": kind for k, kind in zip(KINDS, (il_tp, il_fp, il_fn, il_tn), strict=True)},
    }


def headline(total: np.ndarray) -> dict[str, np.ndarray]:
    """The headline figures of summed tallies (shape (k, ``WIDTH``)), each of shape (k,): cgF1,
    pmF1 over 0.50:0.95 and cgF1 at 0.5 and 0.75, as ``summary`` takes them, and IL_MCC."""
    found = from_tallies(total)
    return {
        "cgF1": found["cgF1"].mean(axis=1),
        "pmF1": found["pmF1"].mean(axis=1),
        "IL_MCC": found["IL_MCC"],
        "cgF1@0.5": found["cgF1"][:, 0],
        "cgF1@0.75": found["cgF1"][:, 5],
    }


def summary(found: dict[str, np.ndarray | float]) -> dict[str, float | None]:
    """The headline of ``figures``: each per-threshold figure's mean over the thresholds (its
    values over -1, as the reference's summary), and at IoU 0.5 and 0.75 (``name@0.5``); the
    image-level figures as they are. None where a mean has no value."""
    out: dict[str, float | None] = {}
    for suffix, chosen in (("", slice(None)), ("@0.5", slice(0, 1)), ("@0.75", slice(5, 6))):
        for name, values in found.items():
            if isinstance(values, np.ndarray):
                kept = values[chosen]
                kept = kept[kept > -1]
                out[f"{name}{suffix}"] = float(kept.mean()) if kept.size else None
    return out | {name: float(value) for name, value in found.items() if not isinstance(value, np.ndarray)}
