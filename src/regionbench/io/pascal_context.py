"""PASCAL-Context as segmentation toolkits convert it (mmseg's ``pascal_context.py``):
``[VOCdevkit/]VOC2010/JPEGImages/<name>.jpg``, ``SegmentationClassContext/<name>.png`` (8-bit: 0
background, 1-59 the 59 classes) and ``ImageSets/SegmentationContext/{train,val}.txt``.

One annotator, ``context``; a region per class present in an image; 0 (background: the
benchmark's 59 classes score none of it) the ignore mask; the split the list naming the
image. Only the images a map or a list names are the collection's (VOC2010's other JPEGs are not
PASCAL-Context's). ``regionbench export --format pascal-context`` writes a release back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from regionbench.io.classmap import Class, TableMaps, paired
from regionbench.io.labelmaps import Item, safe_label
from regionbench.io.layouts import About, ReleaseTables
from regionbench.io.shards import image_id_of

NAMES = (
    "aeroplane",
    "bag",
    "bed",
    "bedclothes",
    "bench",
    "bicycle",
    "bird",
    "boat",
    "book",
    "bottle",
    "building",
    "bus",
    "cabinet",
    "car",
    "cat",
    "ceiling",
    "chair",
    "cloth",
    "computer",
    "cow",
    "cup",
    "curtain",
    "dog",
    "door",
    "fence",
    "floor",
    "flower",
    "food",
    "grass",
    "ground",
    "horse",
    "keyboard",
    "light",
    "motorbike",
    "mountain",
    "mouse",
    "person",
    "plate",
    "platform",
    "pottedplant",
    "road",
    "rock",
    "sheep",
    "shelves",
    "sidewalk",
    "sign",
    "sky",
    "snow",
    "sofa",
    "table",
    "track",
    "train",
    "tree",
    "truck",
    "tvmonitor",
    "wall",
    "water",
    "window",
    "wood",
)  # fmt: skip  (values 1-59, in the toolkits' order)
BACKGROUND = 0
CLASSES = {k + 1: Class(k + 1, name, safe_label(name), None, False, None) for k, name in enumerate(NAMES)} | {
    BACKGROUND: Class(BACKGROUND, "background", "background", None, True, None)
}
MAPS, LISTS = "SegmentationClassContext", "ImageSets/SegmentationContext"


def base(root: Path) -> Path:
    """The folder holding ``JPEGImages/``: the root, its ``VOC2010/`` or ``VOCdevkit/VOC2010/``."""
    for folder in (Path(root), Path(root) / "VOC2010", Path(root) / "VOCdevkit" / "VOC2010"):
        if (folder / MAPS).is_dir():
            return folder
    return Path(root)


def lists(folder: Path) -> dict[str, str]:
    """Image name -> the split whose list names it first (train before val)."""
    found: dict[str, str] = {}
    for path in sorted((folder / LISTS).glob("*.txt")):
        for line in path.read_text(encoding="utf-8", errors="replace").split():
            found.setdefault(line, path.stem)
    return found


class PascalContextLayout(TableMaps):
    """PASCAL-Context, 59 classes (module docstring)."""

    name = "pascal-context"
    unknown = "is none of PASCAL-Context's 59 classes (1-59, 0 background); the map is not SegmentationClassContext's: write it with those values, or lay the tree out as a class-map folder (layout: classmap) whose own table names it"
    annotator = "context"
    expects = "VOC2010/JPEGImages/ with SegmentationClassContext/ and ImageSets/SegmentationContext/ (PASCAL-Context)"
    about = About(
        summary="from PASCAL-Context's class maps (59 classes): a region per class present in an image, background "
        "each image's ignore mask",
        tag="pascal-context",
        keyword="PASCAL-Context",
        name="PASCAL-Context (59 classes)",
        creators="expert-generated",
        original="https://cs.stanford.edu/~roozbeh/pascal-context/",
        citation=(
            "@inproceedings{mottaghi2014role, title={The Role of Context for Object Detection and Semantic "
            "Segmentation in the Wild}, author={Mottaghi, Roozbeh and Chen, Xianjie and Liu, Xiaobai and Cho, "
            "Nam-Gyu and Lee, Seong-Whan and Fidler, Sanja and Urtasun, Raquel and Yuille, Alan}, booktitle={CVPR}, "
            "year={2014}}"
        ),
        fields={"regions.category_id": "the class value (1-59)", "images.split": "the SegmentationContext list"},
    )

    def detect(self, root: Path) -> bool:
        folder = base(root)
        return (folder / "JPEGImages").is_dir() and (folder / MAPS).is_dir()

    def classes(self, root: Path) -> dict[int, Class]:
        return CLASSES

    def items(self, root: Path) -> list[Item]:
        folder = base(root)
        prefix = folder.relative_to(Path(root))
        split_of = lists(folder)
        found = paired(Path(root), [(None, prefix / "JPEGImages", prefix / MAPS)], self.annotator)
        seen = {i.name for i in found}
        # a name a split list gives whose image and map are both missing: a reject, as VOC's
        missing = [Item(n, None, {}, s, image_id_of(f"{n}.jpg")) for n, s in sorted(split_of.items()) if n not in seen]
        return sorted(
            [
                *(Item(i.name, i.image, i.maps, split_of.get(i.name), i.image_id, i.copy_of)
                  for i in found if i.maps or i.name in split_of),
                *missing,
            ],
            key=lambda i: i.name,
        )  # fmt: skip

    def map_target(self, row: dict[str, Any]) -> Path:
        return Path("VOC2010") / MAPS / f"{Path(row['path']).stem}.png"

    def image_target(self, row: dict[str, Any]) -> Path:
        return Path("VOC2010") / "JPEGImages" / Path(row["path"]).name

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The maps and images (``TableMaps.export``), and the split lists from ``images.split``."""
        lines = super().export(release, out, images, annotator)
        splits: dict[str, list[str]] = {}
        for row in release.arrow("images", ["path", "split"]).to_pylist():
            if row["split"]:
                splits.setdefault(str(row["split"]), []).append(Path(row["path"]).stem)
        (Path(out) / "VOC2010" / LISTS).mkdir(parents=True, exist_ok=True)
        for split, names in sorted(splits.items()):
            text = "".join(f"{n}\n" for n in sorted(names))
            (Path(out) / "VOC2010" / LISTS / f"{split}.txt").write_text(text, encoding="utf-8")
        return lines


LAYOUT = PascalContextLayout()
