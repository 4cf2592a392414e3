"""Generated trees in COCO-Stuff 164k's layout (``regionbench.io.cocostuff``): JPEGs under
``images/{train2017,val2017}`` and stuffthingmaps of a few thing and stuff classes (a map's value
the COCO id - 1), unlabelled (255) between some regions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from regionbench.io.cocostuff import MAP_FOLDERS, UNLABELLED
from regionbench.synthetic import Options
from regionbench.synthetic.classmap import write_maps
from regionbench.synthetic.plans import get_profile

LAYOUT = "cocostuff"
OWN_CATEGORIES = True  # the format's classes, not the library vocabulary's labels
SIZE = (640, 480)  # a COCO image (width, height)
USED = (
    0,
    2,
    17,
    61,
    105,
    123,
    148,
    156,
    168,
    181,
)  # person, car, dog, chair, clouds, grass, road, sky-other, tree, wood


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """``images`` images (a third in val2017) under ``out``; yields (image, regions)."""

    def place(k: int) -> tuple[str, str]:
        split, name = ("val2017" if k % 3 == 2 else "train2017"), f"{100000 + k * 37:012d}"
        return f"images/{split}/{name}.jpg", f"{MAP_FOLDERS[0]}/{split}/{name}.png"

    return write_maps(Path(out), images, seed, size, USED, UNLABELLED, place)


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """One annotator: the format holds one."""
    return 1
