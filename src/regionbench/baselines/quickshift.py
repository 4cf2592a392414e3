"""``quickshift``: Quick shift mode seeking over a sweep of its distance.

Source: A. Vedaldi, S. Soatto, "Quick Shift and Kernel Methods for Mode Seeking", ECCV 2008;
scikit-image's ``quickshift`` (CIELAB and position, ratio 0.5, kernel size 3; its random
tie-breaking seeded). A larger ``max_dist`` joins more pixels to a mode: the sweep, fine to
coarse, is the hierarchy the benchmarks take. Each pixel's parent (its nearest denser pixel) does
not depend on ``max_dist``, which only cuts the links longer than itself, so the tree is grown once
and cut at every distance of the sweep.
"""

from __future__ import annotations

import numpy as np

KIND = "segmentation"
SWEEP = (6.0, 10.0, 16.0, 24.0, 36.0)  # max_dist, fine to coarse
COST = 4.0  # CPU-s a megapixel for the whole sweep (benchmarks/baselines.py, 640x480)


def predict(image: np.ndarray) -> np.ndarray:
    """The segmentations of ``image`` (H x W x 3, uint8) at each distance of ``SWEEP``: S x H x W,
    each pixel labelled by the flat index of its mode."""
    from skimage.segmentation import quickshift

    _, parent, distance = quickshift(
        image, ratio=0.5, kernel_size=3, max_dist=max(SWEEP), return_tree=True, rng=0, convert2lab=True
    )
    parent, distance = np.asarray(parent).ravel(), np.asarray(distance).ravel()
    own = np.arange(parent.size)
    return np.stack([_roots(np.where(distance > d, own, parent)).reshape(image.shape[:2]) for d in SWEEP])


def _roots(parent: np.ndarray) -> np.ndarray:
    """Each node's root in a forest given by its ``parent`` (a root its own), by pointer jumping."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return parent
        parent = grand
