"""LIP (Look Into Person) human parsing as distributed: ``TrainVal_images/{train,val}_images/
<name>.jpg`` and ``TrainVal_parsing_annotations/{train,val}_segmentations/<name>.png`` (8-bit:
its 20 classes, 0 background; 255 void where present). The two folders may also lie in the root
itself.

One annotator, ``lip``; a region per class present in an image (no instances); background is a
class, as LIP's benchmark scores it; the split the folder. ``regionbench export --format lip``
writes a release back in these folders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from regionbench.io.classmap import Class, TableMaps, paired
from regionbench.io.labelmaps import Item, safe_label
from regionbench.io.layouts import About

SPLITS = ("train", "val")
# LIP's 20 classes by value, under the part of the body they dress
NAMES = (
    ("Background", None), ("Hat", "head"), ("Hair", "head"), ("Glove", "arms"), ("Sunglasses", "head"),
    ("UpperClothes", "torso"), ("Dress", "torso"), ("Coat", "torso"), ("Socks", "legs"), ("Pants", "legs"),
    ("Jumpsuits", "torso"), ("Scarf", "head"), ("Skirt", "legs"), ("Face", "head"), ("Left-arm", "arms"),
    ("Right-arm", "arms"), ("Left-leg", "legs"), ("Right-leg", "legs"), ("Left-shoe", "legs"),
    ("Right-shoe", "legs"),
)  # fmt: skip
VOID = 255
CLASSES = {k: Class(k, name, safe_label(name), group, False, None) for k, (name, group) in enumerate(NAMES)} | {
    VOID: Class(VOID, "void", "void", None, True, None)
}
IMAGES, MAPS = "TrainVal_images", "TrainVal_parsing_annotations"


def folders(root: Path) -> tuple[Path, Path]:
    """The images' and the maps' parent folders, relative to the root: LIP's two, or the root."""
    if (Path(root) / IMAGES).is_dir():
        return Path(IMAGES), Path(MAPS)
    return Path(), Path()


class LipLayout(TableMaps):
    """LIP human parsing (module docstring)."""

    name = "lip"
    unknown = "is none of LIP's 20 classes (0-19, 255 void); the map is not LIP's: write it with those values, or lay the tree out as a class-map folder (layout: classmap) whose own table names it"
    annotator = "lip"
    expects = "{train,val}_images/*.jpg with {train,val}_segmentations/*.png (LIP, under TrainVal_images/ and TrainVal_parsing_annotations/)"
    about = About(
        summary="from LIP (Look Into Person) human parsing files: a region per body part or garment present in an "
        "image (its 20 classes, background one)",
        tag="lip",
        keyword="LIP",
        name="LIP, Look Into Person: human parsing",
        creators="expert-generated",
        original="http://sysu-hcp.net/lip/",
        citation=(
            "@inproceedings{gong2017look, title={Look into Person: Self-supervised Structure-sensitive Learning and "
            "a New Benchmark for Human Parsing}, author={Gong, Ke and Liang, Xiaodan and Zhang, Dongyu and Shen, "
            "Xiaohui and Lin, Liang}, booktitle={CVPR}, year={2017}}"
        ),
        fields={
            "regions.category_id": "LIP's class value (0 background ... 19 right shoe)",
            "images.split": "the folder",
        },
    )

    def detect(self, root: Path) -> bool:
        images, maps = folders(root)
        return any(
            (Path(root) / images / f"{s}_images").is_dir() and (Path(root) / maps / f"{s}_segmentations").is_dir()
            for s in SPLITS
        )

    def classes(self, root: Path) -> dict[int, Class]:
        return CLASSES

    def items(self, root: Path) -> list[Item]:
        images, maps = folders(root)
        pairs = [(s, images / f"{s}_images", maps / f"{s}_segmentations") for s in SPLITS]
        return paired(Path(root), pairs, self.annotator)

    def map_target(self, row: dict[str, Any]) -> Path:
        return Path(MAPS) / f"{row['split'] or 'train'}_segmentations" / f"{Path(row['path']).stem}.png"

    def image_target(self, row: dict[str, Any]) -> Path:
        return Path(IMAGES) / f"{row['split'] or 'train'}_images" / Path(row["path"]).name


LAYOUT = LipLayout()
