"""Generated trees in the generic class-map layout (``regionbench.io.classmap``): JPEGs and PNGs
under ``images/<split>/``, 8-bit class maps under ``labels/<split>/`` with a void value (255)
between some regions, and a ``classes.csv`` naming the classes under two parents."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
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


def scene(k: int, size: tuple[int, int], seed: int, ids: Sequence[int], void: int) -> tuple[np.ndarray, np.ndarray]:
    """One image's pixels and class map of the classes ``ids``: one over another, blobs of the
    others, a rim of ``void``."""
    rng = np.random.default_rng([seed, k])
    width, height = size
    top, bottom = (int(ids[int(i)]) for i in rng.choice(len(ids), 2, replace=False))
    values = np.where(np.arange(height)[:, None] < height * rng.uniform(0.3, 0.5), top, bottom)
    values = values.repeat(width, 1).astype(np.uint8)
    for _ in range(int(rng.integers(1, 4))):
        cx, cy = rng.uniform(0.2, 0.8) * width, rng.uniform(0.4, 0.8) * height
        values[blob((height, width), cx, cy, 0.1 * width, 0.08 * height, rng)] = ids[int(rng.integers(0, len(ids)))]
    values[: int(rng.integers(0, height // 20 + 1))] = void
    colours = rng.integers(30, 225, size=(256, 3))
    pixels = colours[values].astype(np.float32) + rng.normal(0, 10, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8), values


def write_maps(
    root: Path,
    images: int,
    seed: int,
    size: tuple[int, int],
    ids: Sequence[int],
    void: int,
    place: Callable[[int], tuple[str, str]],
) -> Iterator[tuple[str, int]]:
    """``images`` images and their class maps under ``root``, image ``k`` at ``place(k)`` (its
    image's and its map's paths: a ``.png`` image is written as PNG, else as JPEG); yields
    (image, regions)."""
    for k in range(images):
        pixels, values = scene(k, size, seed, ids, void)
        image, labels = (root / p for p in place(k))
        image.parent.mkdir(parents=True, exist_ok=True)
        labels.parent.mkdir(parents=True, exist_ok=True)
        if image.suffix == ".png":
            Image.fromarray(pixels).save(image)
        else:
            image.write_bytes(photos.jpeg(pixels, k))
        Image.fromarray(values, mode="L").save(labels)
        yield image.relative_to(root).as_posix(), len(set(np.unique(values).tolist()) - {void})


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """Write ``images`` images under ``out`` (a third in val, every fourth a PNG) and its
    classes.csv; yields (image, regions)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{i},{name},{parent},0\n" for i, name, parent in CLASSES)
    (root / "classes.csv").write_text(f"id,name,parent,ignore\n{rows}{VOID},void,,1\n", encoding="utf-8")

    def place(k: int) -> tuple[str, str]:
        split, name = ("val" if k % 3 == 2 else "train"), f"frame_{k + 1:05d}"
        return f"images/{split}/{name}{'.png' if k % 4 == 3 else '.jpg'}", f"labels/{split}/{name}.png"

    return write_maps(root, images, seed, size, [c[0] for c in CLASSES], VOID, place)


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: one (the format holds one)."""
    return 1
