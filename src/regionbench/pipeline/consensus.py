"""The derived annotator ``consensus``: what a majority of the annotators of an image agree on
(docs/agreement.md, "Consensus").

Per image, the annotators' regions are clustered by one-to-one matching (``agreement.match``,
IoU >= ``min_iou``): the first annotator's regions (name order) seed the clusters, and each
further annotator's regions are matched to the clusters' current majority masks; an unmatched
region starts a cluster of its own. A cluster drawn by a majority of the annotators who covered
the image (more than half of them, the quorum) becomes a consensus region: its mask holds the pixels inside more than half of the
cluster's masks (``method="majority"``) or the pixels whose STAPLE truth probability is at least
one half (``method="staple"``), and its label is the cluster's most frequent label, and a tie takes the tied
labels' deepest common ancestor (a tie whose only common ancestor is the root is rejected).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline import agreement

ANNOTATOR = tables.CONSENSUS
METHODS = ("majority", "staple")
Region = tuple[str, np.ndarray]


def majority_mask(masks: Sequence[np.ndarray]) -> np.ndarray:
    """Pixels inside more than half of ``masks``."""
    return np.sum(masks, axis=0) * 2 > len(masks)


def staple_mask(masks: Sequence[np.ndarray]) -> np.ndarray:
    """Pixels whose STAPLE truth probability is at least 1/2.

    STAPLE (Warfield, Zou and Wells, IEEE TMI 23(7), 2004) estimates each annotator's sensitivity
    and specificity by expectation-maximisation and weighs their votes by them, so a careless
    annotator counts less than a careful one; SimpleITK's ``STAPLEImageFilter`` runs it, with
    the prior taken from the masks' mean area. Identical masks are their own truth (STAPLE's
    specificity is undefined when no pixel is background), and so is any input that leaves
    the estimate undefined: the majority mask is taken then.
    """
    import SimpleITK as sitk  # build dependency: only a build derives a consensus

    first = masks[0]
    if all(np.array_equal(first, m) for m in masks[1:]):
        return first.astype(bool)
    staple = sitk.STAPLEImageFilter()
    staple.SetForegroundValue(1)
    staple.SetNumberOfThreads(1)  # one thread: the EM sums in one order, the same bytes every run
    truth = sitk.GetArrayFromImage(staple.Execute([sitk.GetImageFromArray(m.astype(np.uint8)) for m in masks]))
    if not np.isfinite(truth).all():
        return majority_mask(masks)
    return truth >= 0.5


def deepest_common_ancestor(labels: Sequence[str], hierarchy: Hierarchy) -> str:
    """The deepest node that is ``labels``' ancestor or one of them, for every one of them."""
    chains = [[label, *hierarchy.ancestors(label)] for label in labels]
    shared = set(chains[0]).intersection(*chains[1:])
    return max(shared, key=lambda node: (hierarchy.depth(node), node))


@dataclass(frozen=True)
class ConsensusSettings:
    """The ``agreement`` settings that make the consensus: regions of two annotators match at
    IoU >= ``min_iou``; ``method`` (one of ``METHODS``) combines a cluster's masks."""

    min_iou: float = agreement.MIN_IOU
    method: str = "majority"

    @classmethod
    def from_config(cls, agreement: Mapping) -> ConsensusSettings:
        """From the ``agreement`` settings of a validated build configuration."""
        return cls(agreement["min_iou"], agreement["consensus"])


def consensus(
    readings: Mapping[str, Sequence[Region]],
    hierarchy: Hierarchy,
    min_iou: float = ConsensusSettings.min_iou,
    method: str = ConsensusSettings.method,
) -> tuple[list[Region], list[str]]:
    """Consensus regions of one image from each annotator's regions, and one reason per cluster
    drawn by a majority that could not become a region (label tie at the root, empty mask).

    ``readings`` maps every annotator who covered the image to its (label, mask) regions, an
    empty list for one who covered it and drew nothing: the quorum is more than half of them,
    and an annotator absent from the image has no vote. ``method`` is one of ``METHODS`` and picks
    how a cluster's masks become one (module docstring).
    """
    if method not in METHODS:
        raise InputError(f"consensus method {method!r} is not one of {', '.join(METHODS)}")
    combine = staple_mask if method == "staple" else majority_mask
    names = sorted(readings)
    clusters: list[list[Region]] = []
    for name in names:
        regions = list(readings[name])
        current = [majority_mask([m for _, m in cluster]) for cluster in clusters]
        pairs = agreement.match(current, [m for _, m in regions], min_iou) if current and regions else []
        taken = set()
        for i, j, _ in pairs:
            clusters[i].append(regions[j])
            taken.add(j)
        clusters += [[region] for j, region in enumerate(regions) if j not in taken]
    out, problems = [], []
    for cluster in clusters:
        if len(cluster) < agreement.quorum(len(names)):
            continue  # not drawn by a majority of those who covered the image
        mask = combine([m for _, m in cluster])
        votes = Counter(label for label, _ in cluster).most_common()
        tied = sorted(label for label, n in votes if n == votes[0][1])
        label = tied[0] if len(tied) == 1 else deepest_common_ancestor(tied, hierarchy)
        if label == hierarchy.root:
            problems.append(f"labels {', '.join(tied)} tie and share no ancestor below {hierarchy.root}")
        elif not mask.any():
            problems.append("the majority of the cluster's masks share no pixel")
        else:
            out.append((label, mask))
    return out, problems
