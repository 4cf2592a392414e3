"""The derived annotator ``consensus``: what a majority of the annotators of an image agree on
(docs/agreement.md, "Consensus").

Per image, the annotators' regions are clustered by one-to-one matching (``agreement.match``,
IoU >= ``min_iou``): the first annotator's regions (name order) seed the clusters, and each
further annotator's regions are matched to the clusters' current majority masks; an unmatched
region starts a cluster of its own. A cluster drawn by a majority of the annotators (more than
half) becomes a consensus region: its mask holds the pixels inside more than half of the
cluster's masks, its label is the cluster's most frequent label, and a tie takes the tied
labels' deepest common ancestor (a tie whose only common ancestor is the root is rejected).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from regionbench import agreement
from regionbench.hierarchy import Hierarchy

ANNOTATOR = "consensus"
Region = tuple[str, np.ndarray]


def majority_mask(masks: Sequence[np.ndarray]) -> np.ndarray:
    """Pixels inside more than half of ``masks``."""
    return np.sum(masks, axis=0) * 2 > len(masks)


def deepest_common_ancestor(labels: Sequence[str], hierarchy: Hierarchy) -> str:
    """The deepest node that is ``labels``' ancestor or one of them, for every one of them."""
    chains = [[label, *hierarchy.ancestors(label)] for label in labels]
    shared = set(chains[0]).intersection(*chains[1:])
    return max(shared, key=lambda node: (hierarchy.depth(node), node))


def consensus(
    readings: Mapping[str, Sequence[Region]], hierarchy: Hierarchy, min_iou: float = 0.5
) -> tuple[list[Region], list[str]]:
    """Consensus regions of one image from each annotator's regions, and one reason per cluster
    drawn by a majority that could not become a region (label tie at the root, empty mask)."""
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
        if 2 * len(cluster) <= len(names):
            continue  # not drawn by a majority
        mask = majority_mask([m for _, m in cluster])
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
