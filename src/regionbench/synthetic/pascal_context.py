"""Generated trees in PASCAL-Context's converted layout (``regionbench.io.pascal_context``):
JPEGs, 8-bit class maps (0 background between regions) and the train and val lists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from regionbench.io.pascal_context import BACKGROUND, LISTS, MAPS, NAMES
from regionbench.synthetic import Options
from regionbench.synthetic.classmap import write_maps
from regionbench.synthetic.plans import get_profile

LAYOUT = "pascal-context"
OWN_CATEGORIES = True  # the format's classes, not the library vocabulary's labels
SIZE = (500, 375)  # a VOC image (width, height)


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """``images`` images (a third in val) under ``out/VOC2010`` with their lists; yields (image, regions)."""
    root = Path(out)
    names = {k: f"2010_{k + 1:06d}" for k in range(images)}
    (root / "VOC2010" / LISTS).mkdir(parents=True, exist_ok=True)
    for split in ("train", "val"):
        listed = [n for k, n in names.items() if (k % 3 == 2) == (split == "val")]
        (root / "VOC2010" / LISTS / f"{split}.txt").write_text("".join(f"{n}\n" for n in listed), encoding="utf-8")

    def place(k: int) -> tuple[str, str]:
        return f"VOC2010/JPEGImages/{names[k]}.jpg", f"VOC2010/{MAPS}/{names[k]}.png"

    ids = [
        1,
        11,
        16,
        26,
        29,
        37,
        41,
        47,
        53,
        56,
    ]  # aeroplane, building, chair, floor, grass, person, road, sky, tree, wall
    assert all(1 <= i <= len(NAMES) for i in ids)
    return write_maps(root, images, seed, size, ids, BACKGROUND, place)


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """One annotator: the format holds one."""
    return 1
