"""CamVid as SegNet distributes it: ``[CamVid/]{train,val,test}/<name>.png`` and
``{train,val,test}annot/<name>.png`` (8-bit, SegNet's 11 classes 0-10 and 11 void).

One annotator, ``camvid``; a region per class present in an image (the format has no
instances), void the ignore mask; the split the folder. ``regionbench export --format camvid``
writes a release back in these folders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from regionbench.io.classmap import Class, TableMaps, paired
from regionbench.io.labelmaps import Item, safe_label
from regionbench.io.layouts import About

SPLITS = ("train", "val", "test")
# SegNet's CamVid classes, by their value (its tutorial's class table), under CamVid's groups
NAMES = (
    ("Sky", "sky"), ("Building", "structure"), ("Pole", "object"), ("Road", "ground"), ("Pavement", "ground"),
    ("Tree", "nature"), ("SignSymbol", "object"), ("Fence", "structure"), ("Car", "vehicle"),
    ("Pedestrian", "person"), ("Bicyclist", "person"),
)  # fmt: skip
VOID = 11
CLASSES = {k: Class(k, name, safe_label(name), group, False, None) for k, (name, group) in enumerate(NAMES)} | {
    VOID: Class(VOID, "Unlabelled", "unlabelled", None, True, None)
}


def base(root: Path) -> Path:
    """The folder holding the split folders: the root or its ``CamVid/``."""
    return Path(root) / "CamVid" if (Path(root) / "CamVid" / "trainannot").is_dir() else Path(root)


class CamVidLayout(TableMaps):
    """CamVid as SegNet distributes it (module docstring)."""

    name = "camvid"
    unknown = "is none of SegNet's CamVid classes (0-10, 11 void); the map is not CamVid's as SegNet distributes it: write it with those values, or lay the tree out as a class-map folder (layout: classmap) whose own table names it"
    annotator = "camvid"
    expects = "{train,val,test}/*.png with {train,val,test}annot/*.png (SegNet's CamVid)"
    about = About(
        summary="from CamVid as SegNet distributes it: a region per class present in an image (SegNet's 11 "
        "classes), void each image's ignore mask",
        tag="camvid",
        keyword="CamVid",
        name="CamVid, the Cambridge-driving Labeled Video Database (SegNet's 11 classes)",
        creators="expert-generated",
        original="http://mi.eng.cam.ac.uk/research/projects/VideoRec/CamVid/",
        citation=(
            "@article{brostow2009semantic, title={Semantic object classes in video: A high-definition ground truth "
            "database}, author={Brostow, Gabriel J. and Fauqueur, Julien and Cipolla, Roberto}, journal={Pattern "
            "Recognition Letters}, volume={30}, number={2}, pages={88--97}, year={2009}}"
        ),
        fields={"regions.category_id": "SegNet's class value (0 sky ... 10 bicyclist)", "images.split": "the folder"},
    )

    def detect(self, root: Path) -> bool:
        folder = base(root)
        return any((folder / s).is_dir() and (folder / f"{s}annot").is_dir() for s in SPLITS)

    def classes(self, root: Path) -> dict[int, Class]:
        return CLASSES

    def items(self, root: Path) -> list[Item]:
        prefix = base(root).relative_to(Path(root))
        return paired(Path(root), [(s, prefix / s, prefix / f"{s}annot") for s in SPLITS], self.annotator, (".png",))

    def map_target(self, row: dict[str, Any]) -> Path:
        return Path("CamVid") / f"{row['split'] or 'train'}annot" / f"{Path(row['path']).stem}.png"

    def image_target(self, row: dict[str, Any]) -> Path:
        return Path("CamVid") / (row["split"] or "train") / Path(row["path"]).name


LAYOUT = CamVidLayout()
