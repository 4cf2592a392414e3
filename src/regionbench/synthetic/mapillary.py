"""Generated trees in Mapillary Vistas' layout (``regionbench.io.mapillary``): ``config.json``
naming a few of its classes (cars and people with instances), JPEGs, 8-bit palette class maps
and 16-bit instance maps (class x 256 + instance) under ``training/`` and ``validation/``,
``void--unlabeled`` between some regions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from regionbench.synthetic import Options
from regionbench.synthetic.classmap import write_maps
from regionbench.synthetic.plans import get_profile

LAYOUT = "mapillary"
OWN_CATEGORIES = True  # the format's classes, not the library vocabulary's labels
SIZE = (400, 300)
NAMES = (
    "construction--flat--road", "construction--flat--sidewalk", "construction--structure--building",
    "nature--sky", "nature--vegetation", "object--vehicle--car", "human--person", "void--unlabeled",
)  # fmt: skip
THINGS = ("object--vehicle--car", "human--person")  # the classes with instances


def write_tree(out: str | Path, images: int, seed: int = 0, size: tuple[int, int] = SIZE) -> Iterator[tuple[str, int]]:
    """``images`` images (a third in validation) under ``out`` and its config.json; yields (image, regions)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    labels = [
        {"name": n, "readable": n.split("--")[-1].replace("-", " ").capitalize(), "evaluate": n != NAMES[-1]}
        | ({"instances": True} if n in THINGS else {})
        for n in NAMES
    ]
    (root / "config.json").write_text(json.dumps({"labels": labels}, indent=2) + "\n", encoding="utf-8")
    void = len(NAMES) - 1

    def place(k: int) -> tuple[str, str]:
        split, key = ("validation" if k % 3 == 2 else "training"), f"{k * 7919 % 10**6:06d}-key{k}"
        return f"{split}/images/{key}.jpg", f"{split}/labels/{key}.png"

    things = [NAMES.index(n) for n in THINGS]
    for image, regions in write_maps(root, images, seed, size, list(range(void)), void, place):
        split = image.split("/")[0]
        png = root / split / "labels" / f"{Path(image).stem}.png"
        classes = np.asarray(Image.open(png)).astype(np.int64)
        # each connected run of a thing class's rows is an instance of its own
        instances = classes * 256
        for thing in things:
            rows = np.flatnonzero((classes == thing).any(axis=1))
            runs = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if rows.size else []
            for n, run in enumerate(runs, start=1):
                band = np.zeros_like(classes, dtype=bool)
                band[run] = True
                instances[band & (classes == thing)] = thing * 256 + n
        (root / split / "instances").mkdir(parents=True, exist_ok=True)
        Image.fromarray(instances.astype(np.uint16)).save(root / split / "instances" / png.name)
        values = Image.fromarray(classes.astype(np.uint8), mode="P")
        values.putpalette([c for k in range(256) for c in ((k * 61) % 256, (k * 17) % 256, (k * 97) % 256)])
        values.save(png)
        yield image, regions


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` with the profile's number of images."""
    return write_tree(out, get_profile(profile).n_images, options.seed)


def annotators(requested: int) -> int:
    """One annotator: the format holds one."""
    return 1
