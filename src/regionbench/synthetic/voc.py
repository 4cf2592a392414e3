"""Generated trees in the Pascal VOC 2012 segmentation layout (``regionbench.io.voc``): JPEGs,
palette class and instance maps with VOC's void border, Annotations XML with the objects'
flags, and the ImageSets split lists (every third image in val)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
from PIL import Image
from scipy import ndimage

from regionbench.io.voc import CLASSES, VOID, palette
from regionbench.synthetic import Options, photos
from regionbench.synthetic.plans import get_profile
from regionbench.synthetic.rendering import blob

LAYOUT = "voc"
OWN_CATEGORIES = True  # the format\'s classes, not the library vocabulary\'s labels
SIZE = (500, 375)  # VOC's commonest image size (width, height)
BORDER = 2  # VOC's void border: pixels within this many of an object's outline


def name_of(k: int) -> str:
    """VOC's name of the k-th generated image: year_number."""
    return f"{2007 + k % 6}_{k:06d}"


def scene(
    k: int, size: tuple[int, int], seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, dict]]]:
    """One image: its pixels, class map, instance map (void drawn) and objects (class, flags)."""
    rng = np.random.default_rng([seed, k])
    width, height = size
    classes = np.zeros((height, width), np.uint8)
    instances = np.zeros((height, width), np.uint8)
    objects: list[tuple[int, dict]] = []
    for _ in range(int(rng.integers(1, 5))):
        value = int(rng.integers(1, len(CLASSES)))
        cx, cy = rng.uniform(0.2, 0.8) * width, rng.uniform(0.2, 0.8) * height
        mask = blob((height, width), cx, cy, rng.uniform(0.1, 0.25) * width, rng.uniform(0.1, 0.25) * height, rng)
        if mask.sum() < 50:
            continue
        classes[mask], instances[mask] = value, len(objects) + 1
        flags = {f: bool(rng.random() < 0.2) for f in ("difficult", "truncated", "occluded")}
        objects.append((value, flags))
    # the void border: every pixel within BORDER of a change of instance, as VOC draws it
    window = 2 * BORDER + 1
    void = ndimage.maximum_filter(instances, window) != ndimage.minimum_filter(instances, window)
    classes[void], instances[void] = VOID, VOID
    colours = rng.integers(30, 225, size=(len(CLASSES), 3))
    pixels = colours[np.where(classes == VOID, 0, classes)].astype(np.float32)
    pixels += rng.normal(0, 12, pixels.shape)
    return np.clip(pixels, 0, 255).astype(np.uint8), classes, instances, objects


OWNERS = ("Thom Zemanek", "Ana & Luís Marques")  # VOC2007's <owner> names, one with an ampersand


def xml(name: str, size: tuple[int, int], objects: list[tuple[int, dict]], k: int = 0) -> str:
    """An Annotations XML naming each object's class and flags, in instance order; the k-th
    image of three in two credits its photograph as VOC2007 does (its Flickr id, its owner)."""
    parts = [f"<annotation><filename>{name}.jpg</filename>"]
    if k % 3:
        parts.append(
            f"<source><database>The VOC2007 Database</database><image>flickr</image><flickrid>{194179466 + k}</flickrid></source>"
        )
        parts.append(f"<owner><flickrid>owner{k}</flickrid><name>{escape(OWNERS[k % 2])}</name></owner>")
    parts.append(f"<size><width>{size[0]}</width><height>{size[1]}</height><depth>3</depth></size>")
    for value, flags in objects:
        marks = "".join(f"<{f}>{int(v)}</{f}>" for f, v in flags.items())
        parts.append(f"<object><name>{CLASSES[value]}</name>{marks}</object>")
    return "".join(parts) + "</annotation>\n"


def write_tree(
    out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE, *, sbd: bool = False
) -> Iterator[tuple[str, int]]:
    """Write ``images`` images under ``out/VOCdevkit/VOC2012``; ``sbd``: class maps only (SBD's
    variant). Yields (file written, regions in it) per image."""
    folder = Path(out) / "VOCdevkit" / "VOC2012"
    kinds = ["JPEGImages", "SegmentationClass", "Annotations", "ImageSets/Segmentation"]
    for kind in kinds + ([] if sbd else ["SegmentationObject"]):
        (folder / kind).mkdir(parents=True, exist_ok=True)
    colours = palette()
    splits: dict[str, list[str]] = {"train": [], "val": []}
    for k in range(images):
        name = name_of(k)
        pixels, classes, instances, objects = scene(k, size, seed)
        (folder / "JPEGImages" / f"{name}.jpg").write_bytes(photos.jpeg(pixels, k))
        for kind, values in (("SegmentationClass", classes), ("SegmentationObject", instances)):
            if kind == "SegmentationObject" and sbd:
                continue
            image = Image.fromarray(values, mode="P")
            image.putpalette(colours)
            image.save(folder / kind / f"{name}.png")
        (folder / "Annotations" / f"{name}.xml").write_text(xml(name, size, objects, k), encoding="utf-8")
        splits["val" if k % 3 == 2 else "train"].append(name)
        regions = len({v for v in np.unique(classes).tolist() if v != VOID}) if sbd else len(objects) + 1
        yield f"JPEGImages/{name}.jpg", regions
    lists = folder / "ImageSets" / "Segmentation"
    for split, names in (*splits.items(), ("trainval", sorted(splits["train"] + splits["val"]))):
        (lists / f"{split}.txt").write_text("".join(f"{n}\n" for n in sorted(names)), encoding="utf-8")  # as VOC


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images at VOC's size (yields file, regions)."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: one annotator: the layout's files hold one."""
    return 1
