"""Traces: one annotator's reading of a rendered scene. At disagreement d in [0, 1] an annotator
misses small regions, merges touching regions, splits large ones, moves boundaries by a pixel
or two and picks a neighbouring label in the hierarchy (parent, child or sibling:
``tree``/``trees``, ``man``/``person``), each with a probability that grows with d; at d = 0
every annotator traces the scene exactly."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from regionbench.core.hierarchy import Hierarchy
from regionbench.synthetic.plans import ImagePlan


def _neighbour_label(label: str, hierarchy: Hierarchy, words: set[str], rng: np.random.Generator) -> str:
    """A label next to ``label`` in the hierarchy (parent, child or sibling) that is a word."""
    parent = hierarchy.parent(label)
    siblings = [x for x in hierarchy.children.get(parent, []) if x != label] if parent else []
    near = [parent] if parent and hierarchy.depth(parent) > 1 else []
    near += hierarchy.children.get(label, []) + siblings
    near = sorted(x for x in near if x in words)
    return str(rng.choice(near)) if near else label


def trace(
    plan: ImagePlan,
    masks: list[np.ndarray],
    annotator: int,
    disagreement: float,
    seed: int,
    hierarchy: Hierarchy,
    words: set[str],
) -> list[tuple[str, np.ndarray]]:
    """Annotator ``annotator``'s regions (label, mask) of a rendered scene at ``disagreement`` d.

    Per region, each with probability proportional to d: dropped when it covers under 2 % of
    the image (0.8 d); merged into the next region when the two touch (0.3 d); split in two at
    its median column when it covers over 10 % (0.3 d); dilated or eroded by one pixel (d); given
    a neighbouring label (0.5 d). Masks never come out empty. Seeded by (seed, image, annotator).
    """
    if disagreement <= 0:
        return [(label, mask.copy()) for label, mask in zip(plan.labels, masks, strict=True)]
    rng = np.random.default_rng([seed, plan.image_id, 1_000 + annotator])
    d = float(disagreement)
    size = masks[0].size
    regions = [(label, mask.copy()) for label, mask in zip(plan.labels, masks, strict=True)]
    out: list[tuple[str, np.ndarray]] = []
    i = 0
    while i < len(regions):
        label, mask = regions[i]
        i += 1
        if mask.sum() < 0.02 * size and len(regions) > 1 and rng.random() < 0.8 * d:
            continue  # missed
        if i < len(regions) and rng.random() < 0.3 * d:
            other = regions[i][1]
            if (ndimage.binary_dilation(mask) & other).any():
                mask = mask | other  # merged with the region it touches
                i += 1
        if mask.sum() > 0.1 * size and rng.random() < 0.3 * d:
            cols = np.flatnonzero(mask.any(axis=0))
            cut = int(np.median(cols))
            left = mask.copy()
            left[:, cut:] = False
            if left.any() and (mask & ~left).any():
                out.append((label, left))
                mask = mask & ~left
        if rng.random() < d:
            moved = ndimage.binary_dilation(mask) if rng.random() < 0.5 else ndimage.binary_erosion(mask)
            mask = moved if moved.any() else mask
        if rng.random() < 0.5 * d:
            label = _neighbour_label(label, hierarchy, words, rng)
        out.append((label, mask))
    return out or [(plan.labels[0], masks[0].copy())]
