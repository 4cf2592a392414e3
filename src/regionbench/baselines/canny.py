"""``canny``: Canny's edges over a sweep of hysteresis thresholds, as one soft boundary map.

Source: J. Canny, "A Computational Approach to Edge Detection", IEEE TPAMI 8(6), 1986;
scikit-image's ``canny`` of the grey image (Gaussian sigma 2), its thresholds quantiles of the
gradient magnitude (high ``q``, low ``q - 0.05``). A pixel's soft value is the share of the sweep
that marks it an edge, so the benchmark's thresholds of the soft map walk the sweep. The sweep
reaches the strongest 0.1% of the gradient, so the precision-recall curve, and its AP, reach its
high-precision end, and starts at the median, so the curve reaches recall 0.94: on 50 of
BSDS500's real test images a sweep from 0.80 gave F 0.590 / 0.621 and AP 0.419 (recall up to
0.78), this one F 0.590 / 0.613 and AP 0.477 (docs/baselines.md).
"""

from __future__ import annotations

import numpy as np

KIND = "edges"
SWEEP = tuple(round(0.50 + 0.499 * k / 24, 4) for k in range(25))  # the high threshold's quantile, 0.50 to 0.999
COST = 1.7  # CPU-s a megapixel for the whole sweep (benchmarks/baselines.py, 640x480)


def predict(image: np.ndarray) -> np.ndarray:
    """The soft boundary map of ``image`` (H x W x 3, uint8): H x W in [0, 1]."""
    from skimage.color import rgb2gray
    from skimage.feature import canny

    grey = rgb2gray(image)
    votes = np.zeros(grey.shape, dtype=np.float64)
    for q in SWEEP:
        votes += canny(grey, sigma=2, low_threshold=q - 0.05, high_threshold=q, use_quantiles=True)
    return votes / len(SWEEP)
