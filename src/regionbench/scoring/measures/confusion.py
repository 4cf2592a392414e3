"""Label maps scored from one confusion matrix, flat and at each level of the hierarchy
(docs/scoring.md, "Semantic").

C[t, p] counts the pixels of true class t predicted as p, over the pixels neither side ignores:

- pixel accuracy = tr C / Σ C; the accuracy of class k = C_kk / Σ_j C_kj, their mean over the
  classes present in the truth;
- IoU_k = C_kk / (Σ_j C_kj + Σ_j C_jk - C_kk); mIoU over the classes present in the truth or
  the prediction; frequency-weighted IoU = Σ_k (Σ_j C_kj / Σ C) IoU_k;
- at hierarchy level d every label is replaced by its ancestor at depth d (a label shallower
  than d stays itself), so a ``dog`` predicted on a ``cat`` is right at ``animal``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy


def confusion(truth: np.ndarray, predicted: np.ndarray, classes: int, ignore: np.ndarray) -> np.ndarray:
    """C over the pixels ``ignore`` leaves: rows the true class (< ``classes``), columns the
    predicted one, and a last column for pixels with no prediction (``predicted`` = ``classes``)."""
    keep = ~ignore
    joint = truth[keep].astype(np.int64) * (classes + 1) + predicted[keep].astype(np.int64)
    return np.bincount(joint, minlength=classes * (classes + 1)).reshape(classes, classes + 1)


def measures(matrix: np.ndarray, names: Sequence[str]) -> dict:
    """Pixel accuracy, mean class accuracy, mIoU, frequency-weighted IoU and per-class IoU of a
    confusion matrix whose rows and first columns are ``names`` (``confusion``: its last column
    counts the pixels without a prediction, which are wrong). mIoU is the mean over the classes
    in the truth or the prediction (mmseg's and cityscapesScripts' rule: a class the truth lacks
    but the run predicts counts as IoU 0); ``miou_truth_classes`` the mean over the truth's alone,
    and ``predicted_not_in_truth`` names the classes where the two part."""
    c = matrix.astype(np.float64)
    k = c.shape[0]
    total = c.sum()
    true, predicted, hit = c.sum(axis=1), c[:, :k].sum(axis=0), np.diag(c[:, :k])
    union = true + predicted - hit
    present = union > 0
    iou = np.divide(hit, union, out=np.zeros_like(hit), where=present)
    accuracy = np.divide(hit, true, out=np.zeros_like(hit), where=true > 0)
    return {
        "pixels": int(total),
        "pixel_accuracy": float(hit.sum() / total) if total else 0.0,
        "mean_class_accuracy": float(accuracy[true > 0].mean()) if (true > 0).any() else 0.0,
        "miou": float(iou[present].mean()) if present.any() else 0.0,
        "fwiou": float((true / total * iou).sum()) if total else 0.0,
        "miou_truth_classes": float(iou[true > 0].mean()) if (true > 0).any() else 0.0,
        "per_class_iou": {names[int(j)]: float(iou[j]) for j in np.flatnonzero(present)},
        "predicted_not_in_truth": [names[int(j)] for j in np.flatnonzero(present & (true == 0))],
    }


def sparse_confusion(matrix: np.ndarray, names: Sequence[str]) -> dict[str, Any]:
    """A confusion matrix (``confusion``: rows the true class, columns the predicted one, a last
    column for no prediction) as the report keeps it: the classes in a row or a column that is
    not empty (``labels``, "(none)" last where the run abstained) and each nonzero cell as
    [true, predicted, pixels], indices into ``labels``, row by row."""
    k = matrix.shape[0]
    used = np.flatnonzero(matrix.sum(axis=1) + matrix[:, :k].sum(axis=0))
    columns = np.append(used, k) if matrix[:, k].any() else used
    part = matrix[np.ix_(used, columns)]
    labels = [names[int(j)] for j in used] + (["(none)"] if len(columns) > len(used) else [])
    rows, cols = np.nonzero(part)
    return {"labels": labels, "cells": [[int(t), int(p), int(part[t, p])] for t, p in zip(rows, cols, strict=True)]}


def at_level(tree: Hierarchy, labels: Sequence[str], depth: int) -> list[str]:
    """Each label's ancestor at ``depth`` (itself when it is not deeper)."""
    out = []
    for label in labels:
        path = tree.path(label) if label in tree.nodes else [label]
        out.append(path[depth] if len(path) > depth else label)
    return out


def hierarchical(matrix: np.ndarray, labels: Sequence[str], tree: Hierarchy) -> dict[str, dict]:
    """``measures`` at every depth of ``tree`` from 1 to above the deepest label's, the classes
    (``labels``: the matrix's rows) merged into their ancestors: sums of the flat matrix's rows
    and columns, not a second pass over the pixels."""
    deepest = max((tree.depth(label) for label in labels if label in tree.nodes), default=0)
    out = {}
    for depth in range(1, deepest):
        merged = at_level(tree, labels, depth)
        names = sorted(set(merged))
        index = np.array([names.index(m) for m in merged])
        columns = np.append(index, len(names))  # the no-prediction column stays last
        folded = np.zeros((len(names), len(names) + 1), dtype=np.int64)
        np.add.at(folded, (index[:, None], columns[None, :]), matrix)
        out[str(depth)] = {k: v for k, v in measures(folded, names).items() if k != "per_class_iou"}
    return out


def label_codes(labels: Mapping[int, str]) -> tuple[list[str], dict[int, int]]:
    """Class names in id order and label id -> class index."""
    ids = sorted(labels)
    return [labels[i] for i in ids], {i: k for k, i in enumerate(ids)}
