"""Pascal VOC 2012 segmentation as distributed: ``[VOCdevkit/][VOC2012/]`` holding
``JPEGImages/<name>.jpg``, ``SegmentationClass/<name>.png`` (class index per pixel, VOC's 21
classes, 255 = void), ``SegmentationObject/<name>.png`` (instance index per pixel, 0 none,
255 void), ``ImageSets/Segmentation/*.txt`` (the split lists) and ``Annotations/<name>.xml``.

One annotator, ``voc``. Each instance is a region of the class its pixels carry in the class
map; the background pixels are one region labelled ``background`` (class 0, which VOC scores
as a class); void is neither: it is the image's ignore mask. The XML's ``difficult``,
``truncated`` and ``occluded`` of the k-th object are instance k's. The SBD ("aug") variant
ships class maps only (``SegmentationClassAug/`` or ``SegmentationClass/`` without
``SegmentationObject/``): a region per class then. An image's id is its name's digits
(``2007_000032`` is 2007000032); its split the list naming it (``trainval`` is their union).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.io import images as images_io
from regionbench.io.labelmaps import masks_by_value, read_map, runs_state, shard_names, shard_runs
from regionbench.io.layouts import About, ImageRecord, NamesCategories, Reading, TreeVocabulary
from regionbench.io.shards import Ledger, image_row, region_row

ANNOTATOR = "voc"
CLASSES = (
    "background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor",
)  # fmt: skip
# The VOC development kit's four groups of its classes, the hierarchy's parents.
GROUPS = {
    "person": ("person",),
    "animal": ("bird", "cat", "cow", "dog", "horse", "sheep"),
    "vehicle": ("aeroplane", "bicycle", "boat", "bus", "car", "motorbike", "train"),
    "indoor": ("bottle", "chair", "diningtable", "pottedplant", "sofa", "tvmonitor"),
}
VOID = 255
MAP_MODES = ("P", "L")  # VOC's palette PNGs; SBD's conversions are 8-bit grey
NAME = re.compile(r"(\d{4})_(\d{6})")
CLASS_FOLDERS = ("SegmentationClass", "SegmentationClassAug")
FLAGS = ("difficult", "truncated", "occluded")
UNION = "trainval"  # a list of the others' names, not a split of its own
Found = list[tuple[dict[str, Any], np.ndarray]]  # regions rows with their masks


def base(root: Path) -> Path:
    """The folder holding ``JPEGImages/``: the root, its ``VOC2012/`` or ``VOCdevkit/VOC2012/``."""
    root = Path(root)
    for folder in (root, root / "VOC2012", root / "VOCdevkit" / "VOC2012"):
        if (folder / "JPEGImages").is_dir():
            return folder
    return root


def class_folder(folder: Path) -> Path:
    """The class maps' folder: ``SegmentationClass/``, else SBD's ``SegmentationClassAug/``."""
    return next((folder / n for n in CLASS_FOLDERS if (folder / n).is_dir()), folder / CLASS_FOLDERS[0])


def split_lists(folder: Path) -> dict[str, list[str]]:
    """Split name -> the names its ``ImageSets/Segmentation/<split>.txt`` lists, in file order."""
    lists = {}
    for path in sorted((folder / "ImageSets" / "Segmentation").glob("*.txt")):
        names = [
            line.split()[0] for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.split()
        ]
        lists[path.stem] = names
    return lists


def names_of(folder: Path) -> list[str]:
    """Every item of the tree, sorted: the class maps' names and every name a split list gives."""
    found = {p.stem for p in class_folder(folder).glob("*.png")}
    for names in split_lists(folder).values():
        found.update(names)
    return sorted(found)


def flags_of(path: Path) -> list[tuple[str, dict[str, bool]]] | None:
    """(class name, flags) of each ``<object>`` of an Annotations XML, in file order; None
    when the file is missing or not XML."""
    if not path.is_file():
        return None
    try:
        objects = ET.parse(path).getroot().findall("object")
    except ET.ParseError:
        return None
    out = []
    for obj in objects:
        flags = {}
        for flag in FLAGS:
            text = (obj.findtext(flag) or "").strip()
            if text in ("0", "1"):
                flags[flag] = text == "1"
        out.append(((obj.findtext("name") or "").strip(), flags))
    return out


class Reader:
    """One run of VOC images being read (``io.layouts.ShardReader``)."""

    annotators = (ANNOTATOR,)

    def __init__(self, root: Path, shard: str, names: Sequence[str], reading: Reading) -> None:
        self.root, self.shard, self.names, self.reading = Path(root), shard, names, reading
        self.folder = base(self.root)
        self.ledger = Ledger(self.root)
        self.split_of: dict[str, str] = {}
        for split, listed in split_lists(self.folder).items():
            if split != UNION:
                for name in listed:
                    self.split_of.setdefault(name, split)  # lists read in name order: train before val
        self.counts = {"images": [0, 0], ANNOTATOR: [0, 0]}  # seen, accepted

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def records(self) -> Iterator[ImageRecord]:
        classes = class_folder(self.folder)
        objects = self.folder / "SegmentationObject"
        for name in self.names:
            self.counts["images"][0] += 1
            jpeg, class_map = self.folder / "JPEGImages" / f"{name}.jpg", classes / f"{name}.png"
            found = NAME.fullmatch(name)
            if found is None:
                self.ledger.reject(
                    self._rel(class_map), name, "image", "not named YYYY_NNNNNN, as VOC names its images"
                )
                continue
            if not jpeg.is_file():
                listed = "a split list names it" if not class_map.is_file() else "its label map has no image"
                self.ledger.reject(self._rel(jpeg), name, "image", f"{listed} but {self._rel(jpeg)} is missing")
                continue
            try:
                image = images_io.read_image(jpeg, self.reading.max_image_pixels, ("JPEG",), ("RGB", "L"))
                shape = (image.height, image.width)
                class_values = read_map(class_map, MAP_MODES, shape)
                instances = read_map(objects / f"{name}.png", MAP_MODES, shape) if objects.is_dir() else None
            except ValueError as exc:
                self.ledger.reject(self._rel(jpeg), name, "image", str(exc))
                continue
            self.counts["images"][1] += 1
            row = image_row(int(found[1] + found[2]), self.shard, self._rel(jpeg), image, self.split_of.get(name))
            void = class_values == VOID
            if instances is not None:
                void |= instances == VOID
                regions = self._instances(name, row["image_id"], class_values, instances, void)
            else:
                regions = self._classes(name, row["image_id"], class_values, void)
            yield ImageRecord(f"{name}.jpg", image, row, regions, (ANNOTATOR,), ignore={ANNOTATOR: void})

    def _region(
        self, image_id: int, value: int, mask: np.ndarray, regions: Found, **source: Any
    ) -> tuple[dict[str, Any], np.ndarray] | None:
        """A region of class ``value`` (None, rejected, when the vocabulary lacks the class)."""
        label = CLASSES[value]
        if label not in self.reading.words:
            return None
        row = region_row(
            image_id, ANNOTATOR, len(regions) + 1, self.reading.words[label], label, mask, category_id=value, **source
        )
        return row, mask

    def _keep(
        self, source: str, key: str, reason: str | None, made: tuple[dict[str, Any], np.ndarray] | None, regions: Found
    ) -> None:
        """Count one region seen: kept in ``regions``, or rejected with ``reason``."""
        self.counts[ANNOTATOR][0] += 1
        if reason is None and made is None:
            reason = "its class is not a vocabulary label; leave vocabulary_dir unset to take VOC's classes"
        if reason is not None or made is None:
            self.ledger.reject(source, key, "region", reason or "", ANNOTATOR)
            return
        self.counts[ANNOTATOR][1] += 1
        regions.append(made)

    def _classes(self, name: str, image_id: int, values: np.ndarray, void: np.ndarray) -> Found:
        """A region per class of the map (the SBD variant)."""
        regions: Found = []
        source = self._rel(class_folder(self.folder) / f"{name}.png")
        for value, mask in masks_by_value(values, skip=(VOID,)):
            known = value < len(CLASSES)
            reason = None if known else f"class index {value} is outside VOC's table (0-20, 255 void)"
            made = self._region(image_id, value, mask, regions) if known else None
            self._keep(source, f"{name}/class-{value}", reason, made, regions)
        return regions

    def _instances(
        self, name: str, image_id: int, classes: np.ndarray, instances: np.ndarray, void: np.ndarray
    ) -> Found:
        """A region per instance, its class from the class map and its flags from the XML, then
        the background's pixels as one region."""
        regions: Found = []
        source = self._rel(self.folder / "SegmentationObject" / f"{name}.png")
        described = flags_of(self.folder / "Annotations" / f"{name}.xml")
        for index, drawn in masks_by_value(instances, skip=(0, VOID)):
            mask = drawn & ~void  # a pixel void in either map is no region's
            under = np.unique(classes[mask])
            reason, made = None, None
            if under.size != 1:
                reason = (
                    f"instance {index} covers classes {', '.join(map(str, under.tolist()))} in the class map, not one"
                    if under.size
                    else f"instance {index} has no pixel outside void"
                )
            elif not 0 < int(under[0]) < len(CLASSES):
                reason = f"instance {index} has class index {int(under[0])}, outside VOC's objects (1-20)"
            else:
                value = int(under[0])
                flags = None
                if described is not None and index <= len(described):
                    xml_name, xml_flags = described[index - 1]
                    if xml_name == CLASSES[value]:
                        flags = xml_flags
                    else:
                        self.ledger.quirks["xml_object_is_another_class"] += 1
                made = self._region(image_id, value, mask, regions, annotation_id=index, flags=flags)
            self._keep(source, f"{name}/instance-{index}", reason, made, regions)
        background = (instances == 0) & ~void
        if background.any():
            strays = background & (classes != 0)
            if strays.any():  # object pixels the instance map gives no instance: kept, and said
                self.ledger.quirks["class_pixels_without_an_instance"] += 1
            mask = background & (classes == 0)
            if mask.any():
                self._keep(source, f"{name}/background", None, self._region(image_id, 0, mask, regions), regions)
        return regions

    def report(self) -> dict[str, Any]:
        """Images and regions: seen, accepted, rejected (``Layout`` protocol)."""
        (seen, accepted), (r_seen, r_accepted) = self.counts["images"], self.counts[ANNOTATOR]
        regions = {"seen": r_seen, "accepted": r_accepted, "rejected": self.ledger.rejected("region", ANNOTATOR)}
        return {
            "folder": self.shard,
            "images": {"seen": seen, "accepted": accepted, "rejected": self.ledger.rejected("image")},
            "annotators": {ANNOTATOR: dict(regions)},
            "regions": regions,
        }


class VocLayout(NamesCategories):
    """Pascal VOC 2012 segmentation as distributed (module docstring)."""

    name = "voc"
    expects = "JPEGImages/ and SegmentationClass/ (VOCdevkit/VOC2012 or a folder holding it)"
    about = About(
        summary="from Pascal VOC 2012 segmentation files as distributed: an instance per object, the "
        "background one region, the void border each image's ignore mask",
        tag="pascal-voc",
        keyword="Pascal VOC",
        name="The PASCAL Visual Object Classes Challenge 2012 (VOC2012), segmentation",
        creators="expert-generated",
        original="http://host.robots.ox.ac.uk/pascal/VOC/voc2012/",
        citation=(
            "@article{everingham2010pascal, title={The Pascal Visual Object Classes (VOC) Challenge}, "
            "author={Everingham, Mark and Van Gool, Luc and Williams, Christopher K. I. and Winn, John and "
            "Zisserman, Andrew}, journal={International Journal of Computer Vision}, volume={88}, number={2}, "
            "pages={303--338}, year={2010}}"
        ),
        fields={
            "regions.category_id": "VOC's class index (0 background, 1 aeroplane ... 20 tvmonitor)",
            "regions.annotation_id": "the object's index in SegmentationObject (the k-th object of the XML)",
            "images.split": "the ImageSets/Segmentation list naming the image (train or val)",
        },
    )
    official_measures = ()

    def detect(self, root: Path) -> bool:
        folder = base(Path(root))
        return (folder / "JPEGImages").is_dir() and any((folder / n).is_dir() for n in CLASS_FOLDERS)

    def check(self, root: Path) -> None:
        """Nothing beyond ``detect``: each file's problems are the shard's to report."""

    def shards(self, root: Path, shard_size: int | None) -> list[str]:
        return shard_names(len(shard_runs(names_of(base(Path(root))), shard_size)))

    def planned_shards(self, images: int, folders: Sequence[str], shard_size: int | None) -> list[str]:
        return shard_names(len(shard_runs([""] * images, shard_size)))

    def _files(self, root: Path) -> Callable[[str], list[str]]:
        folder = base(Path(root))
        classes = class_folder(folder)

        def files(name: str) -> list[str]:
            paths = (
                folder / "JPEGImages" / f"{name}.jpg",
                classes / f"{name}.png",
                folder / "SegmentationObject" / f"{name}.png",
                folder / "Annotations" / f"{name}.xml",
            )
            return [p.relative_to(root).as_posix() for p in paths]

        return files

    def shard_states(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, str]:
        """Each run's image, maps and XML (``labelmaps.runs_state``)."""
        runs = shard_runs(names_of(base(Path(root))), shard_size)
        files = self._files(root)
        return {shard: runs_state(root, runs[int(shard)], files) for shard in shards if int(shard) < len(runs)}

    def inputs(self, root: Path) -> list[str]:
        lists = base(Path(root)) / "ImageSets" / "Segmentation"
        return [str(p) for p in sorted(lists.glob("*.txt"))]

    def annotators(self, root: Path) -> list[str]:
        return [ANNOTATOR]

    def official_features(self, root: Path) -> list[str]:
        return []

    def official_relations(self, root: Path) -> list[str]:
        return []

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> Reader:
        runs = shard_runs(names_of(base(Path(root))), reading.shard_size)
        return Reader(root, shard, runs[int(shard)] if int(shard) < len(runs) else [], reading)

    def synthetic_annotators(self, requested: int) -> int:
        return 1

    def category_files(self, root: Path) -> list[str]:
        return []  # VOC's classes are the format's, not the files'

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """VOC's 21 classes with their indices as ids, under the development kit's four groups."""
        write_vocabulary(Path(out), "Pascal VOC's classes under its development kit's groups.")
        return TreeVocabulary(hierarchy().labels, {"labels": len(CLASSES)}, {c: i for i, c in enumerate(CLASSES)})

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        group = {member: g for g, members in GROUPS.items() for member in members}
        return [
            {"annotator": ANNOTATOR, "category_id": i, "name": c, "supercategory": group.get(c),
             "label": c if c in reading.words else None}
            for i, c in enumerate(CLASSES)
        ]  # fmt: skip


def hierarchy() -> Hierarchy:
    """entity -> background and the four groups -> their classes."""
    nodes = {"entity": Node("entity", None), "background": Node("background", "entity")}
    for group, members in GROUPS.items():
        if group not in members:
            nodes[group] = Node(group, "entity")
        for member in members:
            nodes[member] = Node(member, group if member != group else "entity")
    return Hierarchy("entity", nodes)


def write_vocabulary(out: Path, comment: str) -> None:
    """``hierarchy.yaml`` and an empty ``category_names.tsv`` (the names are the labels)."""
    hierarchy().write_yaml(out / "hierarchy.yaml", comment)
    (out / "category_names.tsv").write_text("name\tlabel\n", encoding="utf-8")


LAYOUT = VocLayout()
