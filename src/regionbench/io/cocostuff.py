"""COCO-Stuff 164k as distributed: ``images/{train2017,val2017}/<name>.jpg`` and its
stuffthingmaps, ``stuffthingmaps_trainval2017/{train2017,val2017}/<name>.png`` (or the same
folders under ``annotations/``): 8-bit, a pixel the COCO category id - 1 (0-181: the 80 things,
then the 91 stuff classes), 255 unlabelled.

One annotator, ``cocostuff``; a region per class present in an image (the maps have no
instances), unlabelled the ignore mask; the 171 classes the maps use (COCO-Stuff's labels.txt
less its 11 unused ids) under ``thing`` and ``stuff``; the split the folder.
``regionbench export --format cocostuff`` writes a release back as stuffthingmaps.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from regionbench.io.classmap import Class, TableMaps, paired
from regionbench.io.labelmaps import Item, safe_label
from regionbench.io.layouts import About

# COCO-Stuff's labels.txt: COCO category ids 1-182 (things 1-91, stuff 92-182); the 11 ids no
# map uses (street sign, hat, shoe, eye glasses, plate, mirror, window, desk, door, blender,
# hair brush) are left out. A map's value is the id - 1.
THINGS = {
    1: "person", 2: "bicycle", 3: "car", 4: "motorcycle", 5: "airplane", 6: "bus", 7: "train", 8: "truck",
    9: "boat", 10: "traffic light", 11: "fire hydrant", 13: "stop sign", 14: "parking meter", 15: "bench",
    16: "bird", 17: "cat", 18: "dog", 19: "horse", 20: "sheep", 21: "cow", 22: "elephant", 23: "bear",
    24: "zebra", 25: "giraffe", 27: "backpack", 28: "umbrella", 31: "handbag", 32: "tie", 33: "suitcase",
    34: "frisbee", 35: "skis", 36: "snowboard", 37: "sports ball", 38: "kite", 39: "baseball bat",
    40: "baseball glove", 41: "skateboard", 42: "surfboard", 43: "tennis racket", 44: "bottle", 46: "wine glass",
    47: "cup", 48: "fork", 49: "knife", 50: "spoon", 51: "bowl", 52: "banana", 53: "apple", 54: "sandwich",
    55: "orange", 56: "broccoli", 57: "carrot", 58: "hot dog", 59: "pizza", 60: "donut", 61: "cake", 62: "chair",
    63: "couch", 64: "potted plant", 65: "bed", 67: "dining table", 70: "toilet", 72: "tv", 73: "laptop",
    74: "mouse", 75: "remote", 76: "keyboard", 77: "cell phone", 78: "microwave", 79: "oven", 80: "toaster",
    81: "sink", 82: "refrigerator", 84: "book", 85: "clock", 86: "vase", 87: "scissors", 88: "teddy bear",
    89: "hair drier", 90: "toothbrush",
}  # fmt: skip
STUFF = [
    "banner",
    "blanket",
    "branch",
    "bridge",
    "building-other",
    "bush",
    "cabinet",
    "cage",
    "cardboard",
    "carpet",
    "ceiling-other",
    "ceiling-tile",
    "cloth",
    "clothes",
    "clouds",
    "counter",
    "cupboard",
    "curtain",
    "desk-stuff",
    "dirt",
    "door-stuff",
    "fence",
    "floor-marble",
    "floor-other",
    "floor-stone",
    "floor-tile",
    "floor-wood",
    "flower",
    "fog",
    "food-other",
    "fruit",
    "furniture-other",
    "grass",
    "gravel",
    "ground-other",
    "hill",
    "house",
    "leaves",
    "light",
    "mat",
    "metal",
    "mirror-stuff",
    "moss",
    "mountain",
    "mud",
    "napkin",
    "net",
    "paper",
    "pavement",
    "pillow",
    "plant-other",
    "plastic",
    "platform",
    "playingfield",
    "railing",
    "railroad",
    "river",
    "road",
    "rock",
    "roof",
    "rug",
    "salad",
    "sand",
    "sea",
    "shelf",
    "sky-other",
    "skyscraper",
    "snow",
    "solid-other",
    "stairs",
    "stone",
    "straw",
    "structural-other",
    "table",
    "tent",
    "textile-other",
    "towel",
    "tree",
    "vegetable",
    "wall-brick",
    "wall-concrete",
    "wall-other",
    "wall-panel",
    "wall-stone",
    "wall-tile",
    "wall-wood",
    "water-other",
    "waterdrops",
    "window-blind",
    "window-other",
    "wood",
]  # ids 92-182, in labels.txt's order
UNLABELLED = 255
CLASSES = (
    {i - 1: Class(i - 1, name, safe_label(name), "thing", False, None) for i, name in THINGS.items()}
    | {91 + k: Class(91 + k, name, safe_label(name), "stuff", False, None) for k, name in enumerate(STUFF)}
    | {UNLABELLED: Class(UNLABELLED, "unlabeled", "unlabeled", None, True, None)}
)
MAP_FOLDERS = ("stuffthingmaps_trainval2017", "annotations")
SPLIT = re.compile(r"(train|val|test)20\d\d")


def map_folder(root: Path) -> Path | None:
    """The folder of the stuffthingmaps' split folders (``train2017``...), relative to the root."""
    for name in MAP_FOLDERS:
        found = Path(root) / name
        if found.is_dir() and any(SPLIT.fullmatch(p.name) and any(p.glob("*.png")) for p in found.glob("*/")):
            return Path(name)
    return None


class CocoStuffLayout(TableMaps):
    """COCO-Stuff 164k (module docstring)."""

    name = "cocostuff"
    unknown = "is none of COCO-Stuff's classes (labels.txt's ids less one: 0-181, 255 unlabelled); the map is not a stuffthingmap: write it with those values, or lay the tree out as a class-map folder (layout: classmap) whose own table names it"
    annotator = "cocostuff"
    expects = "images/{train2017,val2017}/*.jpg with stuffthingmaps_trainval2017/ (or annotations/) {train2017,val2017}/*.png (COCO-Stuff)"
    about = About(
        summary="from COCO-Stuff 164k's stuffthingmaps: a region per thing or stuff class present in an image (171 "
        "classes), unlabelled pixels each image's ignore mask",
        tag="coco-stuff",
        keyword="COCO-Stuff",
        name="COCO-Stuff 164k",
        creators="crowdsourced",
        original="https://github.com/nightrome/cocostuff",
        citation=(
            "@inproceedings{caesar2018cvpr, title={COCO-Stuff: Thing and stuff classes in context}, author={Caesar, "
            "Holger and Uijlings, Jasper and Ferrari, Vittorio}, booktitle={CVPR}, year={2018}}"
        ),
        fields={
            "regions.category_id": "the map's value: the COCO category id - 1 (0-181)",
            "images.split": "the folder",
        },
    )

    def detect(self, root: Path) -> bool:
        return (Path(root) / "images").is_dir() and map_folder(root) is not None

    def classes(self, root: Path) -> dict[int, Class]:
        return CLASSES

    def items(self, root: Path) -> list[Item]:
        maps = map_folder(root)
        if maps is None:
            return []
        splits = sorted(p.name for p in (Path(root) / maps).glob("*/") if SPLIT.fullmatch(p.name))
        return paired(Path(root), [(s, Path("images") / s, maps / s) for s in splits], self.annotator)

    def map_target(self, row: dict[str, Any]) -> Path:
        return Path(MAP_FOLDERS[0]) / (row["split"] or "train2017") / f"{Path(row['path']).stem}.png"

    def image_target(self, row: dict[str, Any]) -> Path:
        return Path("images") / (row["split"] or "train2017") / Path(row["path"]).name


LAYOUT = CocoStuffLayout()
