"""``slic``: SLIC superpixels over a sweep of their number.

Source: R. Achanta et al., "SLIC Superpixels Compared to State-of-the-Art Superpixel Methods",
IEEE TPAMI 34(11), 2012; scikit-image's ``slic`` (compactness 10 in CIELAB, the paper's, a
Gaussian of sigma 1 first). Fewer superpixels are coarser: the sweep, fine to coarse, is the
hierarchy the benchmarks take.
"""

from __future__ import annotations

import numpy as np

KIND = "segmentation"
SWEEP = (400, 200, 100, 50)  # superpixels asked for, fine to coarse
COST = 2.9  # CPU-s a megapixel for the whole sweep (benchmarks/baselines.py, 640x480)


def predict(image: np.ndarray) -> np.ndarray:
    """The segmentations of ``image`` (H x W x 3, uint8) at each count of ``SWEEP``: S x H x W."""
    from skimage.segmentation import slic

    return np.stack([slic(image, n_segments=n, compactness=10, sigma=1, start_label=0) for n in SWEEP])
