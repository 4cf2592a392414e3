"""``watershed``: the watershed of the image's gradient, from markers at a sweep of spacings.

Source: L. Vincent, P. Soille, "Watersheds in Digital Spaces", IEEE TPAMI 13(6), 1991;
scikit-image's ``watershed`` of the Sobel gradient of the smoothed grey image, flooded from a
regular grid of markers (compact watershed, compactness 0.001, so the basins stay whole). A
wider spacing gives fewer basins: the sweep, fine to coarse, is the hierarchy the benchmarks take.
"""

from __future__ import annotations

import numpy as np

KIND = "segmentation"
SWEEP = (12, 20, 32, 48, 72)  # pixels between markers, fine to coarse
COST = 2.3  # CPU-s a megapixel for the whole sweep (benchmarks/baselines.py, 640x480)


def predict(image: np.ndarray) -> np.ndarray:
    """The segmentations of ``image`` (H x W x 3, uint8) at each spacing of ``SWEEP``: S x H x W."""
    from skimage.color import rgb2gray
    from skimage.filters import gaussian, sobel
    from skimage.segmentation import watershed

    gradient = sobel(gaussian(rgb2gray(image), sigma=1))
    height, width = gradient.shape
    out = []
    for step in SWEEP:
        markers = np.zeros((height, width), dtype=np.int32)
        rows, cols = np.arange(step // 2, height, step), np.arange(step // 2, width, step)
        markers[np.ix_(rows, cols)] = np.arange(1, rows.size * cols.size + 1).reshape(rows.size, cols.size)
        out.append(watershed(gradient, markers, compactness=0.001) - 1)
    return np.stack(out)
