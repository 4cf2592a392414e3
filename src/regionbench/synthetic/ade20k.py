"""Generated trees in ADE20K's scene-parsing layout (``regionbench.io.ade20k``): JPEGs, 8-bit
class maps with "other" (0) between some regions, and an objectInfo150.txt naming the first
twelve of the benchmark's classes as it names them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from regionbench.synthetic import Options, photos
from regionbench.synthetic.plans import get_profile
from regionbench.synthetic.rendering import blob

LAYOUT = "ade20k"
OWN_CATEGORIES = True  # the format\'s classes, not the library vocabulary\'s labels
SIZE = (683, 512)  # ADE20K's typical image size (width, height)
NAMES = (
    "wall", "building, edifice", "sky", "floor, flooring", "tree", "ceiling", "road, route", "bed",
    "windowpane, window", "grass", "cabinet", "sidewalk, pavement",
)  # fmt: skip


def scene(k: int, size: tuple[int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One image's pixels and class map: a split between two classes, then blobs of others."""
    rng = np.random.default_rng([seed, k])
    width, height = size
    top, bottom = rng.choice(len(NAMES), 2, replace=False) + 1
    values = np.where(np.arange(height)[:, None] < height * rng.uniform(0.3, 0.7), top, bottom)
    values = values.repeat(width, 1).astype(np.uint8)
    for _ in range(int(rng.integers(0, 4))):
        cx, cy = rng.uniform(0.2, 0.8) * width, rng.uniform(0.2, 0.8) * height
        spot = blob((height, width), cx, cy, 0.1 * width, 0.1 * height, rng)
        values[spot] = rng.integers(1, len(NAMES) + 1)
    values[:, : int(rng.integers(0, width // 20))] = 0  # "other": pixels of none of the classes
    colours = rng.integers(30, 225, size=(len(NAMES) + 1, 3))
    pixels = colours[values].astype(np.float32) + rng.normal(0, 10, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8), values


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """Write ``images`` images under ``out/ADEChallengeData2016`` (a third in validation); yields
    (image, regions)."""
    root = Path(out) / "ADEChallengeData2016"
    root.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{i}\t0.01\t100\t10\t{name}\n" for i, name in enumerate(NAMES, start=1))
    (root / "objectInfo150.txt").write_text(f"Idx\tRatio\tTrain\tVal\tName\n{rows}", encoding="utf-8")
    for k in range(images):
        split, prefix = ("validation", "val") if k % 3 == 2 else ("training", "train")
        name = f"ADE_{prefix}_{k + 1:08d}"
        pixels, values = scene(k, size, seed)
        for kind in ("images", "annotations"):
            (root / kind / split).mkdir(parents=True, exist_ok=True)
        (root / "images" / split / f"{name}.jpg").write_bytes(photos.jpeg(pixels, k))
        Image.fromarray(values, mode="L").save(root / "annotations" / split / f"{name}.png")
        yield f"images/{split}/{name}.jpg", len(set(np.unique(values).tolist()) - {0})


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images at ADE20K's typical size."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: one annotator: the layout's files hold one."""
    return 1
