"""Generated trees in ADE20K's full layout (``regionbench.io.ade20k_full``): JPEGs with their
``_seg.png`` (class (R / 10) x 256 + G, instance B), ``_parts_1.png`` for images with parts and
the JSON naming each object's class, under ``images/ADE/<split>/<scene>/``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from regionbench.synthetic import Options, photos
from regionbench.synthetic.plans import get_profile
from regionbench.synthetic.rendering import blob

LAYOUT = "ade20k-full"
OWN_CATEGORIES = True  # the format\'s classes, not the library vocabulary\'s labels
SIZE = (683, 512)
# (class index, name): indices past 255 use the R channel, as ADE20K's 3,688 classes do
OBJECTS = {2978: "wall", 312: "floor, flooring", 1831: "person, individual", 776: "chair", 2420: "table"}
PARTS = {1831: (1207, "head"), 776: (1565, "leg"), 2420: (2423, "top")}


def encode(classes: np.ndarray, instances: np.ndarray) -> np.ndarray:
    """The RGB mask of per-pixel classes and instances (ADE20K's encoding)."""
    rgb = np.zeros((*classes.shape, 3), np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = (classes // 256) * 10, classes % 256, instances
    return rgb


def scene(k: int, size: tuple[int, int], seed: int) -> tuple[np.ndarray, list[np.ndarray], list[dict]]:
    """One image: pixels, its mask levels (objects, then parts when any) and the JSON objects."""
    rng = np.random.default_rng([seed, k])
    width, height = size
    classes = np.where(np.arange(height)[:, None] < height * 0.6, 2978, 312).repeat(width, 1)
    instances = np.where(classes == 2978, 1, 2)
    part_classes, part_instances = np.zeros_like(classes), np.zeros_like(classes)
    objects = [{"id": 1, "name": OBJECTS[2978], "name_ndx": 2978}, {"id": 2, "name": OBJECTS[312], "name_ndx": 312}]
    placed: list[tuple[int, int, float]] = []  # (object, its part's class, the object's centre row)
    for n in range(3, 3 + int(rng.integers(1, 4))):
        index = int(rng.choice([1831, 776, 2420]))
        cx, cy = rng.uniform(0.2, 0.8) * width, rng.uniform(0.4, 0.8) * height
        mask = blob((height, width), cx, cy, 0.1 * width, 0.15 * height, rng)
        classes[mask], instances[mask] = index, n
        objects.append({"id": n, "name": OBJECTS[index], "name_ndx": index})
        objects.append({"id": 100 + n, "name": PARTS[index][1], "name_ndx": PARTS[index][0]})
        placed.append((n, PARTS[index][0], cy))
    classes[:, : int(rng.integers(0, width // 25))] = 0  # unlabelled pixels
    instances[classes == 0] = 0
    for n, part_index, cy in placed:  # each object's visible upper piece is its part
        top = (instances == n) & (np.arange(height)[:, None] < cy - 0.05 * height)
        part_classes[top], part_instances[top] = part_index, n
    levels = [encode(classes, instances)]
    if part_classes.any():
        levels.append(encode(part_classes, part_instances))
    colours = rng.integers(30, 225, size=(4096, 3))
    pixels = colours[classes].astype(np.float32) + rng.normal(0, 10, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8), levels, objects


def distinct_colours(mask: np.ndarray) -> int:
    """The number of distinct RGB colours of ``mask`` (height x width x 3, 8 bits a channel): each
    packed in one integer, so that one flat ``unique`` counts them (a row-wise one sorts ~50x
    slower)."""
    packed = (mask[..., 0].astype(np.int32) << 16) | (mask[..., 1].astype(np.int32) << 8) | mask[..., 2]
    return len(np.unique(packed))


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """Write ``images`` images under ``out/ADE20K_2021_17_01`` (a third in validation); yields
    (image, regions)."""
    root = Path(out) / "ADE20K_2021_17_01" / "images" / "ADE"
    for k in range(images):
        split, prefix = ("validation", "val") if k % 3 == 2 else ("training", "train")
        folder = root / split / "home_or_hotel" / ("bedroom" if k % 2 else "living_room")
        folder.mkdir(parents=True, exist_ok=True)
        name = f"ADE_{prefix}_{k + 1:08d}"
        pixels, levels, objects = scene(k, size, seed)
        (folder / f"{name}.jpg").write_bytes(photos.jpeg(pixels, k))
        for level, mask in enumerate(levels):
            Image.fromarray(mask).save(folder / (f"{name}_seg.png" if level == 0 else f"{name}_parts_{level}.png"))
        (folder / f"{name}.json").write_text(json.dumps({"annotation": {"filename": f"{name}.jpg", "object": objects}}))
        regions = sum(distinct_colours(m) for m in levels)
        yield f"{folder.relative_to(out).as_posix()}/{name}.jpg", regions


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images at ADE20K's typical size."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: one annotator: the layout's files hold one."""
    return 1
