"""Generated trees in the generic class-map layout (``regionbench.io.classmap``): JPEGs and PNGs
under ``images/<split>/``, 8-bit class maps under ``labels/<split>/`` with a void value (255)
between some regions, and a ``classes.csv`` naming the classes under two parents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from regionbench.synthetic import Options, photos
from regionbench.synthetic.plans import get_profile
from regionbench.synthetic.rendering import blob

LAYOUT = "classmap"
OWN_CATEGORIES = True  # the format's classes, not the library vocabulary's labels
SIZE = (320, 240)
# id, name, parent: ids with gaps, as collections number their classes
CLASSES = ((1, "road", "ground"), (2, "grass", "ground"), (5, "sky", ""), (7, "car", "vehicle"),
           (8, "bus", "vehicle"), (12, "tree", ""))  # fmt: skip
VOID = 255


def scene(k: int, size: tuple[int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One image's pixels and class map: sky over ground, blobs of the other classes, a void rim."""
    rng = np.random.default_rng([seed, k])
    width, height = size
    ids = [c[0] for c in CLASSES]
    values = np.where(np.arange(height)[:, None] < height * rng.uniform(0.3, 0.5), 5, ids[int(rng.integers(0, 2))])
    values = values.repeat(width, 1).astype(np.uint8)
    for _ in range(int(rng.integers(1, 4))):
        cx, cy = rng.uniform(0.2, 0.8) * width, rng.uniform(0.4, 0.8) * height
        values[blob((height, width), cx, cy, 0.1 * width, 0.08 * height, rng)] = ids[int(rng.integers(3, len(ids)))]
    values[: int(rng.integers(0, height // 20 + 1))] = VOID
    colours = rng.integers(30, 225, size=(256, 3))
    pixels = colours[values].astype(np.float32) + rng.normal(0, 10, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8), values


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """Write ``images`` images under ``out`` (a third in val, every fourth a PNG); yields (image, regions)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{i},{name},{parent},0\n" for i, name, parent in CLASSES)
    (root / "classes.csv").write_text(f"id,name,parent,ignore\n{rows}{VOID},void,,1\n", encoding="utf-8")
    for k in range(images):
        split = "val" if k % 3 == 2 else "train"
        name = f"frame_{k + 1:05d}"
        pixels, values = scene(k, size, seed)
        for kind in ("images", "labels"):
            (root / kind / split).mkdir(parents=True, exist_ok=True)
        suffix = ".png" if k % 4 == 3 else ".jpg"
        if suffix == ".png":
            Image.fromarray(pixels).save(root / "images" / split / f"{name}.png")
        else:
            (root / "images" / split / f"{name}.jpg").write_bytes(photos.jpeg(pixels, k))
        Image.fromarray(values, mode="L").save(root / "labels" / split / f"{name}.png")
        yield f"images/{split}/{name}{suffix}", len(set(np.unique(values).tolist()) - {VOID})


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: one (the format holds one)."""
    return 1
