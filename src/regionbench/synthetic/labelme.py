"""Generated trees as labelme2voc exports them (``regionbench.io.labelme``): JPEGs, palette PNG
class maps (255 where ``__ignore__`` lies), the ``.npy`` arrays labelme writes beside them and
``class_names.txt``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from regionbench.synthetic import Options
from regionbench.synthetic.classmap import write_maps
from regionbench.synthetic.plans import get_profile

LAYOUT = "labelme"
OWN_CATEGORIES = True  # the export's classes, not the library vocabulary's labels
SIZE = (320, 240)
NAMES = ("_background_", "crack", "spall", "rebar", "stain")  # an inspection project's classes
VOID = 255


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """``images`` images under ``out``; yields (image, regions)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    (root / "class_names.txt").write_text("".join(f"{n}\n" for n in ("__ignore__", *NAMES)), encoding="utf-8")

    def place(k: int) -> tuple[str, str]:
        return f"JPEGImages/{k + 1:04d}.jpg", f"SegmentationClassPNG/{k + 1:04d}.png"

    for image, regions in write_maps(root, images, seed, size, list(range(len(NAMES))), VOID, place):
        png = root / "SegmentationClassPNG" / f"{Path(image).stem}.png"
        values = np.asarray(Image.open(png))
        palette = Image.fromarray(values, mode="P")
        palette.putpalette([c for k in range(256) for c in ((k * 37) % 256, (k * 91) % 256, (k * 53) % 256)])
        palette.save(png)
        (root / "SegmentationClass").mkdir(exist_ok=True)
        np.save(root / "SegmentationClass" / f"{png.stem}.npy", np.where(values == VOID, -1, values).astype(np.int32))
        yield image, regions


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """One annotator: the export holds one."""
    return 1
