"""LVIS's federated evaluation (Gupta et al., CVPR 2019), as its ``lvis`` package's ``LVISEval``
scores a run (the engine's ``lvis_style``): an image's file states which categories were
verified absent (``neg_category_ids``) and which are present but not annotated exhaustively
(``not_exhaustive_category_ids``);

- a detection of a category the image neither annotates nor verified absent is dropped: nobody
  checked, so it is neither right nor wrong;
- a detection of a non-exhaustive category that takes no instance is ignored;
- an image keeps its ``LVIS_MAX_DETS`` best detections over all categories (``capped``), before
  those rules; the figures are AP at that count (``LVIS_STATS``), APr/APc/APf the mean AP of the
  rare, common and frequent categories (``frequency``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

LVIS = "lvis"  # the instances task's method that scores by these rules
LVIS_MAX_DETS = 300
FREQUENCIES = ("r", "c", "f")


def lvis_stats(most: int) -> tuple[str, ...]:
    """LVISEval's 13 figures, named as it names them, at ``most`` detections an image."""
    return (
        "AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf",
        f"AR@{most}", f"ARs@{most}", f"ARm@{most}", f"ARl@{most}",
    )  # fmt: skip


def capped(detections: Sequence[dict], most: int) -> list[dict]:
    """Each image's ``most`` best detections over all its categories, as LVIS's results loader
    keeps them (``LVISResults.limit_dets_per_image``): by score, ties in file order."""
    by_image: dict[int, list[dict]] = defaultdict(list)
    for d in detections:
        by_image[d["image_id"]].append(d)
    out: list[dict] = []
    for items in by_image.values():
        out += items if len(items) <= most else sorted(items, key=lambda d: -d["score"])[:most]
    return out


def lvis_summary(
    precision: np.ndarray, recall: np.ndarray, groups: Sequence[Sequence[int]], most: int
) -> dict[str, float]:
    """LVISEval's ``summarize`` of accumulated ``precision`` and ``recall`` (one ``max_dets``,
    ``most``): the mean of the entries that are not -1 (-1 where none), all areas or one, IoU
    .50:.95, .50 or .75; APr/APc/APf over the category indices ``groups`` (rare, common,
    frequent)."""

    def mean(values: np.ndarray) -> float:
        values = values[values > -1]
        return float(values.mean()) if values.size else -1.0

    ap = [mean(precision[:, :, :, 0, -1]), mean(precision[:1, :, :, 0, -1]), mean(precision[5:6, :, :, 0, -1])]
    ap += [mean(precision[:, :, :, a, -1]) for a in (1, 2, 3)]
    ap += [mean(precision[:, :, list(g), 0, -1]) for g in groups]
    ar = [mean(recall[:, :, a, -1]) for a in (0, 1, 2, 3)]
    return dict(zip(lvis_stats(most), ap + ar, strict=True))


def frequency_groups(categories: Sequence[dict]) -> list[list[int]]:
    """The indices (in id order) of the rare, common and frequent ``categories`` (their
    ``frequency``), as LVISEval groups them."""
    ordered = sorted(categories, key=lambda c: c["id"])
    return [[k for k, c in enumerate(ordered) if c.get("frequency") == f] for f in FREQUENCIES]


def federated(truth: dict, detections: Sequence[dict]) -> list[dict]:
    """The ``detections`` LVIS scores (Gupta et al., CVPR 2019): those of a category the image's
    truth holds or lists as verified absent (``neg_category_ids``); the others are left out, as
    LVISEval leaves them out (what covers no pixel is left out before, in ``evaluate``)."""
    checked: dict[int, set[int]] = {e["id"]: set(e.get("neg_category_ids", ())) for e in truth["images"]}
    for a in truth["annotations"]:
        checked[a["image_id"]].add(a["category_id"])
    return [d for d in detections if d["category_id"] in checked[d["image_id"]]]
