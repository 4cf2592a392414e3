"""Generated trees laid out as BSDS500 is distributed (``regionbench.io.bsds500``): images by
split, a groundTruth cell of human segmentations per image (a grid of blocks, some merged: each
human merges differently and draws finer)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import scipy.io
from PIL import Image

from regionbench.synthetic import Options
from regionbench.synthetic.plans import get_profile

LAYOUT = "bsds500"
H, W = 30, 40  # the tests' size; generated collections use BSDS500's 481 x 321


def human(rng: np.random.Generator, cells: int, shape: tuple[int, int] = (H, W)) -> np.ndarray:
    """A segmentation from 1: a grid of ``cells`` x ``cells`` blocks, a few merged at random."""
    height, width = shape
    labels = np.arange(1, cells * cells + 1).reshape(cells, cells)
    labels[rng.random(labels.shape) < 0.3] = 1
    grid = np.kron(labels, np.ones((height // cells + 1, width // cells + 1), dtype=int))[:height, :width]
    _, compact = np.unique(grid, return_inverse=True)
    return (compact.reshape(height, width) + 1).astype(np.uint16)


def write_tree(
    root: Path, images: dict[str, list[int]], humans: int = 3, seed: int = 0, shape: tuple[int, int] = (H, W)
) -> Path:
    """``images``: split -> image ids; each image has ``humans`` segmentations (the last image of
    each split one fewer: humans vary per image in BSDS500) at ``shape`` (height, width).
    Returns the tree's ``BSDS500`` folder."""
    height, width = shape
    rng = np.random.default_rng(seed)
    data = root / "BSDS500" / "data"
    for split, ids in images.items():
        (data / "images" / split).mkdir(parents=True)
        (data / "groundTruth" / split).mkdir(parents=True)
        for n, image_id in enumerate(ids):
            pixels = rng.integers(0, 255, (height, width, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(data / "images" / split / f"{image_id}.jpg")
            count = humans - (n == len(ids) - 1)
            cell = np.empty((1, count), dtype=object)
            for k in range(count):
                segmentation = human(rng, 2 + k, shape)
                cell[0, k] = {"Segmentation": segmentation, "Boundaries": np.zeros(shape, dtype=bool)}
            scipy.io.savemat(data / "groundTruth" / split / f"{image_id}.mat", {"groundTruth": cell})
    return root / "BSDS500"


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """The profile's images at BSDS500's size, split as BSDS500 is (200 train, 100 val, 200 test
    of 500), ``options.annotators`` humans (yields the tree, its segments)."""
    n = get_profile(profile).n_images
    cut = [round(n * 0.4), round(n * 0.6)]
    ids = {"train": list(range(1, cut[0] + 1)), "val": list(range(cut[0] + 1, cut[1] + 1))}
    ids["test"] = list(range(cut[1] + 1, n + 1))
    root = write_tree(Path(out), {s: i for s, i in ids.items() if i}, options.annotators, options.seed, (321, 481))
    segments = sum(
        len(np.unique(c["Segmentation"][0, 0]))
        for path in sorted(root.glob("data/groundTruth/*/*.mat"))
        for c in scipy.io.loadmat(path)["groundTruth"][0]
    )
    yield root.relative_to(out).as_posix(), segments


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: as many as asked: each traces every scene."""
    return requested
