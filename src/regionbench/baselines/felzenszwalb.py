"""``felzenszwalb``: Felzenszwalb and Huttenlocher's graph-based segmentation over a sweep of scales.

Source: P. F. Felzenszwalb, D. P. Huttenlocher, "Efficient Graph-Based Image Segmentation", IJCV
59(2), 2004; scikit-image's ``felzenszwalb`` (sigma 0.8, minimum size 20, as the paper's
examples). A larger scale ``k`` prefers larger segments: the sweep, fine to coarse, is the
hierarchy the region and boundary benchmarks take.
"""

from __future__ import annotations

import numpy as np

KIND = "segmentation"
SWEEP = (100.0, 300.0, 1000.0)  # the scale k, fine to coarse
COST = 4.3  # CPU-s a megapixel for the whole sweep (benchmarks/baselines.py, 640x480)


def predict(image: np.ndarray) -> np.ndarray:
    """The segmentations of ``image`` (H x W x 3, uint8) at each scale of ``SWEEP``: S x H x W."""
    from skimage.segmentation import felzenszwalb

    return np.stack([felzenszwalb(image, scale=k, sigma=0.8, min_size=20) for k in SWEEP])
