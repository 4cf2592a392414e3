"""``quickshift``: Quick shift mode seeking over a sweep of its distance, at a quarter of the size.

Source: A. Vedaldi, S. Soatto, "Quick Shift and Kernel Methods for Mode Seeking", ECCV 2008;
scikit-image's ``quickshift`` (CIELAB and position, ratio 0.5, kernel size 4; its random
tie-breaking seeded) of the image reduced to a quarter of its width and height (scikit-image's
``rescale``, anti-aliased), each pixel then given its reduced pixel's segment. A larger
``max_dist`` joins more pixels to a mode: the sweep, fine to coarse, is the hierarchy the
benchmarks take. Each pixel's parent (its nearest denser pixel) does not depend on ``max_dist``,
which only cuts the links longer than itself, so the tree is grown once and cut at every
distance of the sweep.

Why reduced: quick shift's modes are its density's local maxima within three kernel widths. At
full size a kernel of 3 leaves BSDS500's images in fragments (covering 0.10 on the benchmark's
five images) at 1.2 CPU-s an image of 640x480, and a kernel wide enough to join them costs
several seconds. Reduced, a kernel of 4 spans 16 pixels of the image: covering 0.47 there, in
0.07 CPU-s an image.
"""

from __future__ import annotations

import numpy as np

KIND = "segmentation"
SWEEP = (4.0, 8.0, 12.0, 20.0, 36.0)  # max_dist, fine to coarse
COST = 0.5  # CPU-s a megapixel for the whole sweep (benchmarks/baselines.py, 640x480)
FACTOR = 4  # the image reduced this many times in width and height
KERNEL = 4.0


def reduced(image: np.ndarray) -> np.ndarray:
    """``image`` (H x W x 3, uint8) at a ``FACTOR``-th of its size, anti-aliased, as uint8."""
    from skimage.transform import rescale

    small = rescale(image, 1 / FACTOR, channel_axis=-1, anti_aliasing=True)
    return np.round(small * 255).astype(np.uint8)


def expanded(labels: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The reduced ``labels`` at the full ``shape``: each pixel takes its reduced pixel's
    (row r of H falls in reduced row r * h // H)."""
    rows = np.arange(shape[0]) * labels.shape[0] // shape[0]
    cols = np.arange(shape[1]) * labels.shape[1] // shape[1]
    return labels[np.ix_(rows, cols)]


def predict(image: np.ndarray) -> np.ndarray:
    """The segmentations of ``image`` (H x W x 3, uint8) at each distance of ``SWEEP``: S x H x W,
    each pixel labelled by the flat index of its mode in the reduced image."""
    from skimage.segmentation import quickshift

    small = reduced(image)
    _, parent, distance = quickshift(
        small, ratio=0.5, kernel_size=KERNEL, max_dist=max(SWEEP), return_tree=True, rng=0, convert2lab=True
    )
    parent, distance = np.asarray(parent).ravel(), np.asarray(distance).ravel()
    own = np.arange(parent.size)
    return np.stack(
        [expanded(_roots(np.where(distance > d, own, parent)).reshape(small.shape[:2]), image.shape) for d in SWEEP]
    )


def _roots(parent: np.ndarray) -> np.ndarray:
    """Each node's root in a forest given by its ``parent`` (a root its own), by pointer jumping."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return parent
        parent = grand
