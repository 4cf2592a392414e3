"""The ranking measures of the label tasks on every bootstrap resample over images
(``measures.bootstrap``): each concept's non-interpolated and 11-point interpolated AP over the
images ranked by confidence, ties scored together (``label_sets.average_precision``), their means
over the concepts with a relevant image among the drawn ones and their geometric means
(ImageCLEF's MnAP, MiAP, GMnAP, GMiAP; the image task's mAP over labels).

Ties are scored together, so a concept's curve has a point per group of equal confidence and
the order within a group never matters: a resample only weighs each group by how many of its
images (relevant ones, and all) were drawn, which for a chunk of resamples is two sums of their
draw counts by group (``bootstrap.summed_by``). A group none of whose images is drawn adds a point equal to the one before
(or, first, one of precision 0): no maximum and no sum changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regionbench.scoring.measures import bootstrap
from regionbench.scoring.measures.label_sets import GMAP_EPSILON
from regionbench.scoring.measures.resampled_ap import chunks, within

LEVELS = np.linspace(0.0, 1.0, 11) - 1e-12  # the interpolated AP's recall levels, as it compares them
ROWS = 1_000_000  # resamples x groups held at once


@dataclass(frozen=True)
class Groups:
    """Each concept's images by confidence, highest first, in groups of equal confidence, one
    concept after another (``segment``: the group's concept): for every (image, concept), its
    ``image``, ``group`` and whether it is ``relevant`` to the concept."""

    image: np.ndarray
    group: np.ndarray
    relevant: np.ndarray
    segment: np.ndarray

    @classmethod
    def of(cls, relevant: np.ndarray, confidence: np.ndarray) -> Groups:
        """The groups of ``relevant`` and ``confidence`` (images x concepts)."""
        concepts = confidence.shape[1]
        order = np.argsort(-confidence, axis=0, kind="stable")
        ranked = np.take_along_axis(confidence, order, axis=0)
        starts = np.vstack([np.ones((1, concepts), dtype=bool), ranked[1:] != ranked[:-1]])  # a new group
        counts = starts.sum(axis=0)
        offsets = np.cumsum(counts) - counts
        group = np.cumsum(starts, axis=0) - 1 + offsets  # each (rank, concept)'s group, concept-major
        hit = relevant[order, np.arange(concepts)].T.ravel()
        return cls(order.T.ravel(), group.T.ravel(), hit, np.repeat(np.arange(concepts), counts))


def curves(groups: Groups, counts: np.ndarray) -> dict[str, np.ndarray]:
    """Each resample's (rows of draw ``counts``, rows x images) AP and interpolated AP of every
    concept (rows x concepts; NaN where it drew no relevant image)."""
    concepts = int(groups.segment[-1]) + 1 if len(groups.segment) else 0
    size = len(groups.segment)
    drawn = bootstrap.summed_by(counts, groups.image, groups.group, size)
    hit = bootstrap.summed_by(counts, groups.image[groups.relevant], groups.group[groups.relevant], size)
    seen, found = within(drawn, groups.segment), within(hit, groups.segment)
    ends = np.r_[np.flatnonzero(np.diff(groups.segment)), len(groups.segment) - 1]
    total = found[:, ends]  # rows x concepts: relevant images drawn
    with np.errstate(divide="ignore", invalid="ignore"):  # a concept none of whose relevant images is drawn
        precision = np.where(seen > 0, found / seen, 0.0)
        recall = found / total[:, groups.segment]
        share = np.nan_to_num(hit / total[:, groups.segment])  # recall gained by each group
    starts = np.r_[0, ends[:-1] + 1]
    ap = np.add.reduceat(share * precision, starts, axis=1)
    lift = 2.0 * (concepts - 1 - groups.segment)  # a running max from the end stops at each concept
    envelope = np.maximum.accumulate((precision + lift)[:, ::-1], axis=1)[:, ::-1] - lift
    reached = np.searchsorted(LEVELS, np.nan_to_num(recall).ravel(), side="right").reshape(recall.shape)
    gained = np.diff(reached, axis=1, prepend=0)
    gained[:, starts] = reached[:, starts]
    interpolated = np.add.reduceat(envelope * gained, starts, axis=1) / len(LEVELS)
    undefined = total == 0
    return {"ap": np.where(undefined, np.nan, ap), "iap": np.where(undefined, np.nan, interpolated)}


def resampled(
    relevant: np.ndarray, confidence: np.ndarray, resamples: int, seed: int, eps: float = GMAP_EPSILON
) -> dict[str, np.ndarray]:
    """ImageCLEF's ``mnap``, ``miap``, ``gmnap`` and ``gmiap`` (``label_sets.imageclef``) of
    ``relevant`` and ``confidence`` (images x concepts, the images in the run's order) on each
    resample: the means and geometric means over the concepts with a relevant image drawn (0
    where none)."""
    relevant, confidence = np.asarray(relevant, dtype=bool), np.asarray(confidence, dtype=np.float64)
    n = len(relevant)
    groups = Groups.of(relevant, confidence)
    out: dict[str, list[np.ndarray]] = {"mnap": [], "miap": [], "gmnap": [], "gmiap": []}
    rows = max(1, min(bootstrap.CHUNK, ROWS // max(1, len(groups.segment))))
    for _, counts in chunks(n, resamples, seed, rows):
        found = curves(groups, counts)
        for name, values in (("n", found["ap"]), ("i", found["iap"])):
            scored = ~np.isnan(values)
            count = scored.sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                mean = np.where(scored, values, 0.0).sum(axis=1) / count
                logs = np.where(scored, np.log(np.where(scored, values, 0.0) + eps), 0.0).sum(axis=1) / count
            out[f"m{name}ap"].append(np.where(count > 0, mean, 0.0))
            out[f"gm{name}ap"].append(np.where(count > 0, np.exp(logs) - eps, 0.0))
    return {name: np.concatenate(parts) for name, parts in out.items()}
