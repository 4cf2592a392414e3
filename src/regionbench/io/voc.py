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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import numpy as np

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.io.labelmaps import ImageRuns, Listed, export_annotator, masks_by_value, read_map, shard_run
from regionbench.io.layouts import (
    About,
    Exports,
    ImageRecord,
    NamesCategories,
    Reading,
    ReleaseTables,
    TreeVocabulary,
    image_credits,
    image_files,
)
from regionbench.io.shards import Ledger, image_row, region_row, shard_report

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
# Where a VOC Annotations XML credits its photograph (VOC2007's <source> and <owner>): the
# Flickr photo's id, kept as the page it names, and its owner's name.
FLICKR_PAGE = "https://www.flickr.com/photo.gne?id={}"
FLICKR_ID = re.compile(r"https://www\.flickr\.com/photo\.gne\?id=(\d+)")
UNION = "trainval"  # a list of the others' names, not a split of its own
Found = list[tuple[dict[str, Any], np.ndarray]]  # regions rows with their masks


def palette() -> list[int]:
    """VOC's colour map (the development kit's ``labelcolormap``): index bits spread over RGB."""
    colours = []
    for index in range(256):
        r = g = b = 0
        c = index
        for j in range(8):
            r |= ((c >> 0) & 1) << (7 - j)
            g |= ((c >> 1) & 1) << (7 - j)
            b |= ((c >> 2) & 1) << (7 - j)
            c >>= 3
        colours += [r, g, b]
    return colours


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
    """Every item of the tree, sorted: the class maps' names, every name a split list gives and
    every image (one VOC annotates for detection only is counted, as a reject)."""
    found = {p.stem for p in class_folder(folder).glob("*.png")} | {
        p.stem for p in (folder / "JPEGImages").glob("*.jpg")
    }
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


def credit_of(path: Path) -> dict[str, str | None]:
    """The images table's ``original_url`` and ``attribution`` of an image from its Annotations
    XML: the Flickr page of ``<source><flickrid>`` and ``<owner><name>``; None where the file
    (VOC2008 and later leave them out) or the element is absent."""
    found: dict[str, str | None] = {"original_url": None, "attribution": None}
    try:
        root = ET.parse(path).getroot() if path.is_file() else None
    except ET.ParseError:
        root = None
    if root is not None:
        flickr = (root.findtext("source/flickrid") or "").strip()
        found["original_url"] = FLICKR_PAGE.format(flickr) if flickr.isdigit() else None
        found["attribution"] = (root.findtext("owner/name") or "").strip() or None
    return found


class Reader:
    """One run of VOC images being read (``io.layouts.ShardReader``)."""

    annotators = (ANNOTATOR,)

    def __init__(self, root: Path, shard: str, names: Sequence[str], reading: Reading) -> None:
        self.root, self.shard, self.names, self.reading = Path(root), shard, names, reading
        self.folder = base(self.root)
        self.ledger = Ledger(self.root)
        self.split_of: dict[str, str] = {}
        self.lists_of: dict[str, list[str]] = {}  # name -> the split lists naming it (trainval aside)
        self.listed: set[str] = set()  # every name a split list gives, trainval's too
        for split, listed in split_lists(self.folder).items():
            self.listed.update(listed)
            if not listed and shard == "00":  # said once, by the first shard
                self.ledger.quirks["empty_split_list"] += 1
            if split != UNION:
                for name in dict.fromkeys(listed):
                    self.split_of.setdefault(name, split)
                    self.lists_of.setdefault(name, []).append(split)
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
            if len(lists := self.lists_of.get(name, [])) > 1:
                named = " and ".join(f"ImageSets/Segmentation/{s}.txt" for s in lists)
                reason = f"listed in {named}: an image is in one split (trainval aside); remove it from all but one"
                self.ledger.reject(self._rel(jpeg), name, "image", reason)
                continue
            if not class_map.is_file() and name not in self.listed and jpeg.is_file():
                reason = (
                    f"no segmentation map: VOC annotates this image for detection only ({self._rel(class_map)} is "
                    "missing and no ImageSets/Segmentation list names it)"
                )
                self.ledger.reject(self._rel(jpeg), name, "image", reason)
                continue
            if not jpeg.is_file():
                listed = "a split list names it" if not class_map.is_file() else "its label map has no image"
                self.ledger.reject(self._rel(jpeg), name, "image", f"{listed} but {self._rel(jpeg)} is missing")
                continue
            try:
                image = self.reading.read_image(self.root, jpeg, ("JPEG",), ("RGB", "L"))
                shape = (image.height, image.width)
                class_values = read_map(class_map, MAP_MODES, shape)
                instances = read_map(objects / f"{name}.png", MAP_MODES, shape) if objects.is_dir() else None
            except ValueError as exc:
                self.ledger.reject(self._rel(jpeg), name, "image", str(exc))
                continue
            self.counts["images"][1] += 1
            row = image_row(int(found[1] + found[2]), self.shard, self._rel(jpeg), image, self.split_of.get(name))
            row |= credit_of(self.folder / "Annotations" / f"{name}.xml")
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
        xml = self.folder / "Annotations" / f"{name}.xml"
        described = flags_of(xml)
        if described is None and xml.exists():  # its flags unknown (null), said
            self.ledger.quirks["annotation_xml_unreadable"] += 1
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
        for value, mask in masks_by_value(np.where(background & (classes >= len(CLASSES)), classes, 0), skip=(0,)):
            # pixels of a class VOC does not have and no instance: a region the map cannot mean
            reason = f"class index {value} ({int(mask.sum())} px) is outside VOC's table (0-20, 255 void)"
            self._keep(
                self._rel(class_folder(self.folder) / f"{name}.png"), f"{name}/class-{value}", reason, None, regions
            )
            background &= ~mask
        if background.any():
            strays = background & (classes != 0)
            if strays.any():  # object pixels the instance map gives no instance: kept, and said
                self.ledger.quirks["class_pixels_without_an_instance"] += 1
            mask = background & (classes == 0)
            if mask.any():
                self._keep(source, f"{name}/background", None, self._region(image_id, 0, mask, regions), regions)
        return regions

    def report(self) -> dict[str, Any]:
        """Images and regions: seen, accepted, rejected (``Layout`` contract)."""
        return shard_report(self.shard, self.counts, self.ledger)


class VocLayout(ImageRuns, NamesCategories, Exports):
    """Pascal VOC 2012 segmentation as distributed (module docstring)."""

    name = "voc"
    expects = "JPEGImages/ and SegmentationClass/ (VOCdevkit/VOC2012 or a folder holding it)"
    about = About(
        benchmark="voc",  # what scores its label maps (regionbench.scoring.protocols)
        baselines="labels",  # the learnt pixel classifier (regionbench.baselines)
        evaluation_splits=("val",),  # its test labels are the server's
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
        """VOC's folders, and no labelme ``class_names.txt``: a labelme export names its own classes."""
        folder = base(Path(root))
        if (folder / "class_names.txt").is_file():
            return False
        return (folder / "JPEGImages").is_dir() and any((folder / n).is_dir() for n in CLASS_FOLDERS)

    def check(self, root: Path) -> None:
        """Nothing beyond ``detect``: each file's problems are the shard's to report."""

    def listing(self, root: Path) -> list[Listed]:
        """Each item of ``names_of``: its image, class and object maps and XML."""
        folder = base(Path(root))
        classes = class_folder(folder)

        def relative(path: Path) -> str:
            return path.relative_to(root).as_posix()

        listed = []
        for name in names_of(folder):
            image = relative(folder / "JPEGImages" / f"{name}.jpg")
            maps = (classes / f"{name}.png", folder / "SegmentationObject" / f"{name}.png")
            xml = folder / "Annotations" / f"{name}.xml"
            listed.append(Listed(name, image, (image, *(relative(p) for p in (*maps, xml)))))
        return listed

    def inputs(self, root: Path) -> list[str]:
        lists = base(Path(root)) / "ImageSets" / "Segmentation"
        return [str(p) for p in sorted(lists.glob("*.txt"))]

    def annotators(self, root: Path) -> list[str]:
        return [ANNOTATOR]

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> Reader:
        return Reader(root, shard, shard_run(names_of(base(Path(root))), shard, reading.shard_size), reading)

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

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release as a VOC2012 tree (``export_release``)."""
        counts = export_release(release, Path(out), images, annotator)
        return [
            f"{out}: {counts['images']} images of {counts['annotator']}, {counts['instances']} instances"
            + ("" if images else "; JPEGImages/ is empty: copy the image files in, or pass --images ROOT")
        ]


def voc_name(image_id: int, path: str) -> str:
    """The VOC name of a release image: its file's when VOC-named, else its id as year_number
    (the id ingest gives the name back), else the id."""
    stem = Path(path).stem
    if NAME.fullmatch(stem):
        return stem
    return f"{image_id // 10**6:04d}_{image_id % 10**6:06d}" if image_id < 10**10 else str(image_id)


def export_release(release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> dict[str, Any]:
    """Write ``annotator``'s regions (default: ``voc``, else the only annotator) as VOC2012's
    class and object maps (palette PNGs: the label id, the instance index; 255 where the
    annotator's ignore mask or no region lies), Annotations XML (each instance's label and
    flags), ImageSets lists by ``images.split`` and, with ``images`` (the raw tree), the images
    checked against their sha256 (``layouts.image_files``). Raises InputError for a label id or
    an instance index that an 8-bit map cannot hold, or an annotator to choose."""
    from PIL import Image

    from regionbench.core.errors import InputError

    columns = ["image_id", "annotator", "region_id", "label_id", "label", "annotation_id", "mask", *FLAGS]
    regions = release.arrow("regions", columns).to_pylist()
    who = export_annotator({r["annotator"] for r in regions}, ANNOTATOR, annotator)
    mine = [r for r in regions if r["annotator"] == who and r["mask"] is not None]
    if too_big := sorted({r["label_id"] for r in mine if not 0 <= r["label_id"] < VOID}):
        raise InputError(f"label ids {too_big[:5]} do not fit VOC's 8-bit class maps (0-254); export as coco instead")
    ignored = {
        r["image_id"]: r["ignore_mask"]
        for r in release.arrow("coverage", ["image_id", "annotator", "ignore_mask"]).to_pylist()
        if r["annotator"] == who and r["ignore_mask"] is not None
    }
    rows = release.arrow("images", ["image_id", "path", "split", "width", "height"]).to_pylist()
    credits = image_credits(release)
    folder = out / "VOC2012"
    for kind in ("JPEGImages", "SegmentationClass", "SegmentationObject", "Annotations", "ImageSets/Segmentation"):
        (folder / kind).mkdir(parents=True)
    colours, instances = palette(), 0
    splits: dict[str, list[str]] = {}
    by_image: dict[int, list[dict[str, Any]]] = {}
    for r in mine:
        by_image.setdefault(r["image_id"], []).append(r)
    named = {}
    for row in sorted(rows, key=lambda r: r["image_id"]):
        name = named[row["image_id"]] = voc_name(row["image_id"], row["path"])
        found = sorted(by_image.get(row["image_id"], []), key=lambda r: r["region_id"])
        classes, objects, described = _maps(row, found, ignored.get(row["image_id"]))
        for kind, values in (("SegmentationClass", classes), ("SegmentationObject", objects)):
            picture = Image.fromarray(values, mode="P")
            picture.putpalette(colours)
            picture.save(folder / kind / f"{name}.png")
        xml = _annotation(name, dict(described), credits[row["image_id"]])
        (folder / "Annotations" / f"{name}.xml").write_text(xml, encoding="utf-8")
        instances += len(described)
        if row["split"] is not None:
            splits.setdefault(row["split"], []).append(name)
    for split, names in sorted(splits.items()):
        (folder / "ImageSets/Segmentation" / f"{split}.txt").write_text("".join(f"{n}\n" for n in sorted(names)))
    if images is not None:
        for image_id, content in image_files(release, Path(images), sorted(named)):
            (folder / "JPEGImages" / f"{named[image_id]}.jpg").write_bytes(content)
    return {"images": len(rows), "annotator": who, "instances": instances}


def _maps(
    row: dict[str, Any], found: list[dict[str, Any]], void: dict[str, Any] | None
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, dict[str, Any]]]]:
    """An image's class and object maps from its regions ``found`` (region order; the regions
    the source numbered keep their index, the others after them, background none), VOID where
    the ignore mask ``void`` lies; and each instance's (index, region)."""
    from regionbench.core import geometry
    from regionbench.core.errors import InputError

    shape = (row["height"], row["width"])
    classes, objects = np.full(shape, VOID, np.uint8), np.full(shape, VOID, np.uint8)
    described = []
    next_index = max((r["annotation_id"] for r in found if r["annotation_id"] is not None), default=0) + 1
    for r in found:
        index = r["annotation_id"]
        if index is None and r["label"] != "background":
            index, next_index = next_index, next_index + 1
        if index is not None and not 0 < index < VOID:
            raise InputError(f"image {row['image_id']}: instance {index} does not fit VOC's object maps (1-254)")
        mask = geometry.from_rle(r["mask"])
        classes[mask], objects[mask] = r["label_id"], index or 0
        if index is not None:
            described.append((index, r))
    if void is not None:
        hidden = geometry.from_rle(void)
        classes[hidden], objects[hidden] = VOID, VOID
    return classes, objects, described


def _annotation(name: str, at: dict[int, dict[str, Any]], credit: dict[str, Any]) -> str:
    """An image's Annotations XML: the k-th ``<object>`` is instance k (its label and flags); an
    index no region has (an object hidden by others, which the release cannot know) keeps its
    place with an empty name. Where the release credits the image (``credit``: its images row),
    ``<source>`` names its Flickr photo and ``<owner>`` its owner, as VOC2007 does."""
    objects_xml = "".join(
        "<object><name></name></object>"
        if k not in at
        else f"<object><name>{escape(at[k]['label'])}</name>"
        + "".join(f"<{f}>{int(at[k][f])}</{f}>" for f in FLAGS if at[k][f] is not None)
        + "</object>"
        for k in range(1, max(at, default=0) + 1)
    )
    flickr = FLICKR_ID.fullmatch(credit["original_url"] or "")
    source = f"<source><image>flickr</image><flickrid>{flickr[1]}</flickrid></source>" if flickr else ""
    owner = f"<owner><name>{escape(credit['attribution'])}</name></owner>" if credit["attribution"] else ""
    return f"<annotation><filename>{name}.jpg</filename>{source}{owner}{objects_xml}</annotation>\n"


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
