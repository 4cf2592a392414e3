"""Generated trees in the Cityscapes layout (``regionbench.io.cityscapes``): street scenes of
sky, buildings and road with cars (instances), a group of people without instance ids and the
ego vehicle, as 16-bit instance maps and 8-bit label maps in gtFine, and coarse maps (objects
shrunk, their outlines left unlabelled) in gtCoarse for every other training image."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from regionbench.io.cityscapes import INSTANCE_BASE, LABELS
from regionbench.synthetic import Options
from regionbench.synthetic.plans import get_profile
from regionbench.synthetic.rendering import blob

LAYOUT = "cityscapes"
OWN_CATEGORIES = True  # the format\'s classes, not the library vocabulary\'s labels
SIZE = (2048, 1024)  # Cityscapes' one image size (width, height)
CITIES = {"train": ("aachen", "bremen"), "val": ("frankfurt",)}
IDS = {name: i for i, name, *_ in LABELS}


def scene(k: int, size: tuple[int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One image's pixels and instance map (Cityscapes' encoding)."""
    rng = np.random.default_rng([seed, k])
    width, height = size
    rows = np.arange(height)[:, None]
    ids = np.where(rows < height * rng.uniform(0.25, 0.4), IDS["sky"], IDS["building"]).repeat(width, 1)
    ids[rows[:, 0] >= height * rng.uniform(0.55, 0.65)] = IDS["road"]
    ids[rows[:, 0] >= height * 0.92] = IDS["ego vehicle"]
    ids[:, : max(1, width // 100)] = IDS["unlabeled"]
    values = ids.astype(np.int32)
    for n in range(1, int(rng.integers(1, 5)) + 1):
        cx, cy = rng.uniform(0.1, 0.9) * width, rng.uniform(0.6, 0.8) * height
        car = blob((height, width), cx, cy, rng.uniform(0.04, 0.1) * width, rng.uniform(0.04, 0.08) * height, rng)
        values[car & (values != IDS["unlabeled"])] = IDS["car"] * INSTANCE_BASE + n
    if rng.random() < 0.5:  # a crowd of people: the class id, no instance
        crowd = blob((height, width), rng.uniform(0.2, 0.8) * width, 0.55 * height, 0.05 * width, 0.06 * height, rng)
        values[crowd & (values < INSTANCE_BASE) & (values != IDS["unlabeled"])] = IDS["person"]
    colours = rng.integers(30, 225, size=(len(LABELS) + 1, 3))
    classes = np.where(values >= INSTANCE_BASE, values // INSTANCE_BASE, values)
    pixels = colours[classes].astype(np.float32) + rng.normal(0, 10, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8), values


def coarse(values: np.ndarray) -> np.ndarray:
    """A coarse annotator's map: every region shrunk, the pixels between them unlabelled."""
    out = np.zeros_like(values)
    for value in np.unique(values):
        if value:
            inside = ndimage.binary_erosion(values == value, iterations=3)
            out[inside] = value
    return out


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """Write ``images`` images under ``out`` (a third of them in val); yields (image, regions)."""
    root = Path(out)
    for k in range(images):
        split = "val" if k % 3 == 2 else "train"
        city = CITIES[split][k % len(CITIES[split])]
        name = f"{city}_{k // 100:06d}_{k % 100:06d}"
        pixels, values = scene(k, size, seed)
        maps = {"gtFine": values} | ({"gtCoarse": coarse(values)} if split == "train" and k % 2 == 0 else {})
        folder = root / "leftImg8bit" / split / city
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(folder / f"{name}_leftImg8bit.png")
        for kind, instance_ids in maps.items():
            target = root / kind / split / city
            target.mkdir(parents=True, exist_ok=True)
            Image.fromarray(instance_ids.astype(np.uint16)).save(target / f"{name}_{kind}_instanceIds.png")
            label_ids = np.where(instance_ids >= INSTANCE_BASE, instance_ids // INSTANCE_BASE, instance_ids)
            Image.fromarray(label_ids.astype(np.uint8)).save(target / f"{name}_{kind}_labelIds.png")
        yield f"leftImg8bit/{split}/{city}/{name}_leftImg8bit.png", sum(len(np.unique(v)) - 1 for v in maps.values())


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images at a quarter of Cityscapes' size."""
    return write_tree(out, get_profile(profile).n_images, options.seed, (SIZE[0] // 4, SIZE[1] // 4))


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: as many as asked, up to the layout's two (fine and coarse)."""
    return min(requested, 2)  # the fine and the coarse annotations
