"""Generated trees in LIP's layout (``regionbench.io.lip``): JPEGs and 8-bit maps of its 20
classes (0 background), void (255) between some regions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from regionbench.io.lip import IMAGES, MAPS, NAMES, VOID
from regionbench.synthetic import Options
from regionbench.synthetic.classmap import write_maps
from regionbench.synthetic.plans import get_profile

LAYOUT = "lip"
OWN_CATEGORIES = True  # the format's classes, not the library vocabulary's labels
SIZE = (192, 256)  # a person, standing (width, height)


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """``images`` images (a third in val) under ``out``; yields (image, regions)."""

    def place(k: int) -> tuple[str, str]:
        split, name = ("val" if k % 3 == 2 else "train"), f"{k + 1:05d}_{(k * 7919) % 100000:05d}"
        return f"{IMAGES}/{split}_images/{name}.jpg", f"{MAPS}/{split}_segmentations/{name}.png"

    return write_maps(Path(out), images, seed, size, list(range(len(NAMES))), VOID, place)


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """One annotator: the format holds one."""
    return 1
