"""A small tree laid out as BSDS500 is distributed: images by split, a groundTruth cell of human
segmentations per image."""

from pathlib import Path

import numpy as np
import scipy.io
from PIL import Image

H, W = 30, 40


def human(rng: np.random.Generator, cells: int) -> np.ndarray:
    """A segmentation from 1: a grid of ``cells`` x ``cells`` blocks, a few merged at random."""
    labels = np.arange(1, cells * cells + 1).reshape(cells, cells)
    labels[rng.random(labels.shape) < 0.3] = 1
    grid = np.kron(labels, np.ones((H // cells + 1, W // cells + 1), dtype=int))[:H, :W]
    _, compact = np.unique(grid, return_inverse=True)
    return (compact.reshape(H, W) + 1).astype(np.uint16)


def write_tree(root: Path, images: dict[str, list[int]], humans: int = 3, seed: int = 0) -> Path:
    """``images``: split -> image ids; each image has ``humans`` segmentations (the last image of
    each split one fewer: humans vary per image in BSDS500)."""
    rng = np.random.default_rng(seed)
    data = root / "BSDS500" / "data"
    for split, ids in images.items():
        (data / "images" / split).mkdir(parents=True)
        (data / "groundTruth" / split).mkdir(parents=True)
        for n, image_id in enumerate(ids):
            pixels = rng.integers(0, 255, (H, W, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(data / "images" / split / f"{image_id}.jpg")
            count = humans - (n == len(ids) - 1)
            cell = np.empty((1, count), dtype=object)
            for k in range(count):
                segmentation = human(rng, 2 + k)
                cell[0, k] = {"Segmentation": segmentation, "Boundaries": np.zeros((H, W), dtype=bool)}
            scipy.io.savemat(data / "groundTruth" / split / f"{image_id}.mat", {"groundTruth": cell})
    return root / "BSDS500"
