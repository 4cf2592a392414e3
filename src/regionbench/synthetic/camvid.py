"""Generated trees in CamVid's SegNet layout (``regionbench.io.camvid``): PNG frames and 8-bit
class maps of SegNet's 11 classes, void (11) between some regions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from regionbench.io.camvid import NAMES, VOID
from regionbench.synthetic import Options
from regionbench.synthetic.classmap import write_maps
from regionbench.synthetic.plans import get_profile

LAYOUT = "camvid"
OWN_CATEGORIES = True  # the format's classes, not the library vocabulary's labels
SIZE = (480, 360)  # SegNet's CamVid frames (width, height)


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """``images`` frames under ``out/CamVid`` (train, val and test in turn); yields (image, regions)."""

    def place(k: int) -> tuple[str, str]:
        split, name = ("train", "val", "test")[k % 3], f"0001TP_{k + 1:06d}"
        return f"CamVid/{split}/{name}.png", f"CamVid/{split}annot/{name}.png"

    return write_maps(Path(out), images, seed, size, list(range(len(NAMES))), VOID, place)


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """One annotator: the format holds one."""
    return 1
