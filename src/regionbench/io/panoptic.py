"""Panoptic segmentations in the COCO panoptic format, as COCO, Cityscapes (``createPanopticImgs``)
and ADE20K (detectron2's ``prepare_ade20k_pan_seg``) publish them.

A tree holds, per split, a JSON file ``<prefix>panoptic_<split>.json`` (``images``; ``annotations``
with ``image_id``, ``file_name`` and ``segments_info`` {id, category_id, iscrowd, bbox, area};
``categories`` {id, name, supercategory, isthing, color}) and beside it a folder of the same name
holding one RGB PNG per image, a pixel's segment id = R + 256 G + 256^2 B (0: VOID). The files
sit in ``annotations/`` (COCO), ``gtFine/`` (Cityscapes), the root or ``ADEChallengeData2016/``
(ADE20K); several annotators each have their own in ``annotations/<annotator>/``. The images are
found by their ``file_name`` in ``images/<split>/``, ``<split>/``, ``images/``,
``leftImg8bit/<split>/<city>/`` or ADE20K's ``images/{training,validation}/``.

Every segment is a region: things keep their instance (``annotation_id`` is the segment id),
stuff is one segment per class and image as the format has it, crowds keep ``iscrowd``, and the
source's ``area`` and ``bbox`` are kept beside the measured ones. VOID pixels are the annotator's
ignore mask. The categories are the default vocabulary (each under its supercategory), their
``isthing`` kept as ``source_categories.has_instances``. An image's id is the number its file
name carries, else the first 63 bits of the sha256 of its file name (``io.shards.image_id_of``);
each file's own id is ``coverage.source_image_id`` where it is a number.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy
from regionbench.io.coco import attribution
from regionbench.io.coco.categories import hierarchy_of
from regionbench.io.coco.ingest import category_label, mapped_label
from regionbench.io.coco.split import is_panoptic_file
from regionbench.io.labelmaps import ImageRuns, Listed, masks_by_value, shard_run
from regionbench.io.layouts import (
    About,
    Exports,
    ImageRecord,
    KeepsSourceFiles,
    NamesCategories,
    Reading,
    ReleaseTables,
    TreeVocabulary,
)
from regionbench.io.shards import IngestError, Ledger, image_id_of, image_row, region_row, shard_report

ANNOTATOR = "panoptic"  # the annotator of a tree whose files are not in annotations/<annotator>/
VOID = 0
PREFIXES = ("", "cityscapes_", "ade20k_")  # panoptic_<split>.json as COCO, Cityscapes and ADE20K name it
CONTAINERS = ("annotations", "gtFine", "ADEChallengeData2016", ".")
ADE_SPLITS = {"train": "training", "val": "validation"}


def rgb_to_id(pixels: np.ndarray) -> np.ndarray:
    """Segment ids of an RGB panoptic PNG's pixels: R + 256 G + 256^2 B (panopticapi's ``rgb2id``)."""
    ids: np.ndarray = pixels[..., 2].astype(np.uint32)  # in place from here: no 32-bit copy of all three planes
    ids <<= 8
    ids |= pixels[..., 1]
    ids <<= 8
    ids |= pixels[..., 0]
    return ids


def id_to_rgb(ids: np.ndarray) -> np.ndarray:
    """The RGB pixels of segment ids (``rgb_to_id`` inverted; ids below 2^24)."""
    ids = ids.astype(np.uint32)
    return np.stack([ids & 255, (ids >> 8) & 255, (ids >> 16) & 255], axis=-1).astype(np.uint8)


@dataclass(frozen=True)
class Source:
    """One panoptic JSON file of a tree: whose (``annotator``), the ``split`` its name gives, and
    the file and its PNG folder (paths relative to the root)."""

    annotator: str
    split: str
    json: str
    folder: str


def sources(root: Path) -> list[Source]:
    """The tree's panoptic files (module docstring), by annotator and split."""
    root = Path(root)
    found = []
    for container in CONTAINERS:
        folder = root / container
        if not folder.is_dir():
            continue
        nested = [(p.name, p) for p in folder.iterdir() if container == "annotations" and p.is_dir()]
        for who, where in [(ANNOTATOR, folder), *nested]:
            for path in sorted(where.glob("*panoptic_*.json")):
                prefix, _, split = path.stem.rpartition("panoptic_")
                if prefix in PREFIXES and split and is_panoptic_file(path):
                    relative = path.relative_to(root).as_posix()
                    found.append(Source(who, split, relative, relative[: -len(".json")]))
    return sorted(set(found), key=lambda s: (s.annotator, s.split, s.json))


def _check_listed(name: str, data: Any) -> None:
    if not isinstance(data, dict) or not all(isinstance(data.get(k), list) for k in ("images", "annotations")):
        raise IngestError(f"{name}: not a COCO panoptic file (no images and annotations lists); export it again")
    if not isinstance(data.get("categories", []), list):
        raise IngestError(f"{name}: categories is not a list; export it again")


class _NotJsonNumber(Exception):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a JSON file."""


def _no_constant(name: str) -> Any:
    raise _NotJsonNumber(name)


@cache
def _read(path: str, state: str) -> dict[str, Any]:
    """A panoptic JSON file (``state``: its fingerprint, so an edit reads it again); an
    IngestError names a file that is not one."""
    try:
        data = json.loads(Path(path).read_bytes(), parse_constant=_no_constant)
    except _NotJsonNumber as exc:  # NaN, Infinity: Python's JSON reads them, JSON has no such numbers
        raise IngestError(
            f"{path}: {exc} is not a JSON number (no finite value); write the file with allow_nan=False, or null"
        ) from None
    except (OSError, ValueError) as exc:
        raise IngestError(f"{path}: not a readable JSON file ({' '.join(str(exc).split())}); export it again") from None
    _check_listed(path, data)
    return dict(data)


def read_source(root: Path, source: Source) -> dict[str, Any]:
    """``_read`` of a source's file as it is now."""
    path = Path(root) / source.json
    stat = path.stat()
    return _read(str(path), f"{stat.st_size}:{stat.st_mtime_ns}")


def category_table(root: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """Per annotator, its categories by id (entries without an integer id and a name left out)."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for source in sources(root):
        table = out.setdefault(source.annotator, {})
        for category in read_source(root, source).get("categories", []):
            if isinstance(category, dict) and _is_int(category.get("id")) and isinstance(category.get("name"), str):
                table.setdefault(int(category["id"]), category)
    return out


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def image_candidates(split: str, file_name: str) -> list[str]:
    """Where an image of ``split`` named ``file_name`` may be, relative to the root, in order."""
    city = file_name.split("_", 1)[0]
    ade = ADE_SPLITS.get(split, split)
    return [
        f"images/{split}/{file_name}", f"{split}/{file_name}", f"images/{file_name}",
        f"leftImg8bit/{split}/{city}/{file_name}", f"images/{ade}/{file_name}",
        f"ADEChallengeData2016/images/{ade}/{file_name}",
    ]  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """One image of the tree: ``name`` (its key: split/file name), its image file (relative to the
    root; None when not found), its split, and per annotator its file entry: the source's image
    id, size and annotation (None: the file lists the image without an annotation)."""

    name: str
    image: str | None
    split: str
    file_name: str
    annotations: dict[str, tuple[Any, dict[str, Any], dict[str, Any] | None]]

    @property
    def listed(self) -> Listed:
        pngs = [f"{self.folder_of(w)}/{a['file_name']}" for w, (_, _, a) in sorted(self.annotations.items()) if a]
        return Listed(self.name, self.image, tuple(p for p in (self.image, *pngs) if p is not None))

    def folder_of(self, who: str) -> str:
        return str(self.annotations[who][1]["_folder"])


@cache
def _entries(root: str, state: str) -> tuple[tuple[Entry, ...], tuple[tuple[str, str, str], ...]]:
    """Every image of the tree's panoptic files by split and file name, sorted, and what cannot
    be an image: (file, key, reason) of an annotation whose image the file does not list, or an
    entry without a file name."""
    base = Path(root)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    problems: list[tuple[str, str, str]] = []
    for source in sources(base):
        data = read_source(base, source)
        licences = attribution.licence_table(data.get("licenses"))
        by_id: dict[Any, dict[str, Any]] = {}
        for image in data["images"]:
            name = image.get("file_name") if isinstance(image, dict) else None
            if not isinstance(name, str) or not name or "/" in name:
                problems.append((source.json, str(image)[:60], "an image entry without a plain file_name"))
                continue
            by_id[_key(image.get("id"))] = image | {"_folder": source.folder, "_licenses": licences}
            entry = found.setdefault((source.split, name), {"annotations": {}})
            entry["annotations"][source.annotator] = (image.get("id"), by_id[_key(image.get("id"))], None)
        for annotation in data["annotations"]:
            image_id = annotation.get("image_id") if isinstance(annotation, dict) else None
            image = by_id.get(_key(image_id))
            if image is None or not isinstance(annotation.get("file_name"), str):
                problems.append((source.json, f"image_id {image_id}", "an annotation of no image the file lists"))
                continue
            found[(source.split, image["file_name"])]["annotations"][source.annotator] = (image_id, image, annotation)
    entries = []
    for (split, file_name), entry in sorted(found.items()):
        image = next((c for c in image_candidates(split, file_name) if (base / c).is_file()), None)
        entries.append(Entry(f"{split}/{file_name}", image, split, file_name, entry["annotations"]))
    return tuple(entries), tuple(problems)


def _key(image_id: object) -> str:
    return json.dumps(image_id)  # 1 and "1" are different ids


def entries(root: Path) -> tuple[tuple[Entry, ...], tuple[tuple[str, str, str], ...]]:
    """``_entries`` of the tree as it is now (its panoptic files and image folders fingerprinted)."""
    files = [Path(root) / s.json for s in sources(root)]
    state = "\n".join(f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)
    return _entries(str(root), state)


def read_png(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """The segment ids of a panoptic PNG of an image of ``shape``; ValueError with the reason."""
    from PIL import Image

    if not path.is_file():
        raise ValueError(f"{path.name} is missing")
    try:
        with Image.open(path) as im:
            if im.format != "PNG" or im.mode != "RGB":
                raise ValueError(f"{path.name} is a {im.format} in mode {im.mode}; a panoptic map is an RGB PNG")
            if (im.height, im.width) != tuple(shape):
                raise ValueError(f"{path.name} is {im.width}x{im.height}, its image {shape[1]}x{shape[0]}")
            pixels = np.asarray(im)
    except (OSError, SyntaxError) as exc:
        raise ValueError(f"{path.name} cannot be decoded ({' '.join(str(exc).split())})") from None
    return rgb_to_id(pixels)


FEW = 48  # listed segments up to which one comparison each beats sorting the pixels


def segment_masks(ids: np.ndarray, listed: Sequence[int], void: int) -> dict[int, np.ndarray]:
    """Each segment id's mask in a map of ids (VOID aside; ``void`` its VOID pixels): one
    comparison per ``listed`` id when they are few (a COCO image lists tens; cheaper than sorting
    the pixels, ``labelmaps.masks_by_value``), and the ids no segment lists from the pixels those
    leave; else ``masks_by_value``."""
    if len(listed) > FEW:
        return dict(masks_by_value(ids, skip=(VOID,)))
    masks, covered = {}, void
    for value in sorted(set(listed) - {VOID}):
        mask = ids == value
        if count := int(np.count_nonzero(mask)):
            masks[value], covered = mask, covered + count
    if covered < ids.size:  # pixels of ids no segment lists
        left = np.where(np.isin(ids, [VOID, *masks]), VOID, ids)
        masks |= dict(masks_by_value(left, skip=(VOID,)))
    return masks


class PanopticReader:
    """A shard of panoptic ``entries`` being read (``io.layouts.ShardReader``): per annotator a
    region per segment, VOID and the pixels of segments it cannot use the ignore mask."""

    def __init__(self, root: Path, shard: str, run: Sequence[Entry], reading: Reading, annotators: Sequence[str]):
        self.root, self.shard, self.run, self.reading = Path(root), shard, run, reading
        self.ledger = Ledger(self.root)
        self.annotators = tuple(annotators)
        self.categories = category_table(self.root)
        self.counts = {"images": [0, 0], **{a: [0, 0] for a in self.annotators}}  # seen, accepted

    def records(self) -> Iterator[ImageRecord]:
        if self.shard == "00":  # what cannot be an image, once per build
            for file, key, reason in entries(self.root)[1]:
                self.counts["images"][0] += 1
                self.ledger.reject(file, key, "image", reason)
        for entry in self.run:
            self.counts["images"][0] += 1
            record = self._record(entry)
            if record is not None:
                self.counts["images"][1] += 1
                yield record

    def _record(self, entry: Entry) -> ImageRecord | None:
        where = entry.image or next(iter(entry.annotations.values()))[1]["_folder"]
        if entry.image is None:
            looked = ", ".join(image_candidates(entry.split, entry.file_name)[:4])
            self.ledger.reject(where, entry.name, "image", f"no image file {entry.file_name} (looked in {looked}, ...)")
            return None
        if missing := [w for w, (_, _, a) in entry.annotations.items() if a is None]:
            self.ledger.reject(entry.image, entry.name, "image", f"no annotation of the image in {missing[0]}'s file")
            return None
        try:
            image = self.reading.read_image(self.root, self.root / entry.image)
            shape = (image.height, image.width)
            maps = {}
            for who, (_, listed, annotation) in sorted(entry.annotations.items()):
                assert annotation is not None  # checked above
                if (listed.get("height"), listed.get("width")) not in ((None, None), shape):
                    raise ValueError(
                        f"{who}'s file lists it as {listed.get('width')}x{listed.get('height')}, "
                        f"the image is {shape[1]}x{shape[0]}"
                    )
                maps[who] = read_png(self.root / listed["_folder"] / annotation["file_name"], shape)
        except ValueError as exc:
            self.ledger.reject(entry.image, entry.name, "image", str(exc))
            return None
        image_id = image_id_of(entry.file_name)
        row = image_row(image_id, self.shard, entry.image, image, entry.split)
        row |= attribution.read((listed, listed["_licenses"]) for _, listed, _ in (entry.annotations[w] for w in maps))
        found: list[tuple[dict[str, Any], np.ndarray | None]] = []
        ignore, source_ids, licences = {}, {}, {}
        for who, ids in maps.items():
            source_id, listed, annotation = entry.annotations[who]
            if _is_int(source_id):
                source_ids[who] = int(source_id)
            if _is_int(listed.get("license")):
                licences[who] = int(listed["license"])
            png = f"{listed['_folder']}/{annotation['file_name']}"  # type: ignore[index]
            ignore[who] = self._regions(entry, who, png, ids, annotation["segments_info"], image_id, found)  # type: ignore[index]
        return ImageRecord(
            entry.name, image, row, found, tuple(maps), source_ids=source_ids, ignore=ignore, source_licenses=licences
        )

    def _regions(
        self, entry: Entry, who: str, png: str, ids: np.ndarray, segments: object, image_id: int, found: list[Any]
    ) -> np.ndarray:
        """The annotator's regions of one image into ``found``; returns its ignore mask: VOID and
        the pixels of every segment it rejects."""
        listed = segments if isinstance(segments, list) else []
        counted = Counter(s.get("id") for s in listed if isinstance(s, dict))
        ignore: np.ndarray = ids == VOID
        masks = segment_masks(ids, [n for n in counted if isinstance(n, int)], int(np.count_nonzero(ignore)))
        categories = self.categories.get(who, {})
        region_id = 0
        for k, segment in enumerate(listed):
            self.counts[who][0] += 1
            number = segment.get("id") if isinstance(segment, dict) else None
            plain = _is_int(number) and counted[number] == 1
            key = f"{entry.name}/{who}/{number if plain else f'segments_info[{k}]'}"
            label, problem = None, _segment_problem(segment, counted, masks, categories)
            if problem is None:
                category = categories[segment["category_id"]]
                label = self._label(category)
                problem = (
                    None
                    if label
                    else f"category {category['name']!r} is not a vocabulary label; leave vocabulary_dir unset"
                )
            if problem is not None or label is None:
                self.ledger.reject(png, key, "region", str(problem), who)
                if isinstance(segment, dict) and segment.get("id") in masks:
                    ignore |= masks.pop(segment["id"])  # a rejected segment's pixels: scored as nobody's
                continue
            self.counts[who][1] += 1
            region_id += 1
            mask = masks.pop(segment["id"])
            found.append((region_row(
                image_id, who, region_id, self.reading.words[label], label, mask,
                iscrowd=segment.get("iscrowd") == 1, annotation_id=int(segment["id"]),
                category_id=int(segment["category_id"]), source_area=_number(segment.get("area")),
                source_bbox=_box(segment.get("bbox")),
            ), mask))  # fmt: skip
        stuff = Counter(r["category_id"] for r, _ in found if r["annotator"] == who and not _thing(categories, r))
        # The format has one segment a stuff class and image; a file with two keeps both, counted.
        if split := sum(n - 1 for n in stuff.values()):
            self.ledger.quirks["stuff_class_in_several_segments"] += split
        listed_ids = set(counted)
        for value, mask in masks.items():  # pixels of an id no segment lists
            if value not in listed_ids:
                self.counts[who][0] += 1
                reason = f"segment id {value} ({int(mask.sum())} px) is in the PNG but not in segments_info"
                self.ledger.reject(png, f"{entry.name}/{who}/{value}", "region", reason, who)
                ignore |= mask
        return ignore

    def _label(self, category: dict[str, Any]) -> str | None:
        label = mapped_label(category["name"], self.reading.words, self.reading.category_map)
        return label if label in self.reading.words else None

    def report(self) -> dict[str, Any]:
        """Images and regions per annotator: seen, accepted, rejected (``Layout`` contract)."""
        return shard_report(self.shard, self.counts, self.ledger)


def _segment_problem(
    segment: object, counted: Counter[Any], masks: dict[int, np.ndarray], categories: dict[int, dict[str, Any]]
) -> str | None:
    """Why a ``segments_info`` entry cannot be a region (None: it can)."""
    if not isinstance(segment, dict) or not _is_int(segment.get("id")) or not _is_int(segment.get("category_id")):
        return "a segments_info entry without an integer id and category_id"
    if counted[segment["id"]] > 1:
        return f"segment id {segment['id']} is listed {counted[segment['id']]} times in segments_info"
    if segment["id"] == VOID:
        return "segment id 0 is VOID in the format; number segments from 1"
    if segment["category_id"] not in categories:
        return f"category_id {segment['category_id']} is not in the file's categories"
    if segment["id"] not in masks:
        return f"segment id {segment['id']} has no pixels in the PNG"
    return None


def _thing(categories: dict[int, dict[str, Any]], row: dict[str, Any]) -> bool:
    """Whether a region's category is a thing (its ``isthing``; a category that does not say is one)."""
    return bool(categories.get(row["category_id"], {}).get("isthing", 1) == 1)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _box(value: object) -> list[float] | None:
    if isinstance(value, list) and len(value) == 4 and all(_number(v) is not None for v in value):
        return [float(v) for v in value]
    return None


class PanopticLayout(ImageRuns, NamesCategories, KeepsSourceFiles, Exports):
    """The COCO panoptic format (module docstring)."""

    name = "coco-panoptic"
    carries_credits = True  # its images entries and licenses table hold every image's licence and addresses
    expects = "annotations/panoptic_<split>.json with its PNG folder annotations/panoptic_<split>/, and the images"
    about = About(
        summary="from panoptic segmentations in the COCO panoptic format (a JSON of segments and an RGB PNG of "
        "segment ids per image): each segment a region, things an instance each, VOID each annotator's ignore mask",
        tag="coco-panoptic",
        keyword="panoptic segmentation",
        baselines="labels",  # the learnt pixel classifier, its things' components (regionbench.baselines)
        evaluation_splits=("val2017", "val", "validation"),  # COCO's, Cityscapes', ADE20K's
        fields={
            "regions.annotation_id": "the segment id in the panoptic PNG (R + 256 G + 256^2 B)",
            "regions.category_id": "the category id of the panoptic file",
            "regions.iscrowd": "the segment is a crowd (a group of things under one segment)",
            "regions.source_area": "the segment's area as segments_info gives it",
            "images.split": "the split the panoptic file's name gives (panoptic_<split>.json)",
            "source_categories.has_instances": "the category's isthing: a thing (instances) or stuff",
        },
    )
    official_measures = ()

    def detect(self, root: Path) -> bool:
        return bool(sources(Path(root)))

    def check(self, root: Path) -> None:
        """Each panoptic file must be a COCO panoptic JSON (``_read`` says what is wrong)."""
        for source in sources(Path(root)):
            read_source(Path(root), source)

    def listing(self, root: Path) -> list[Listed]:
        return [entry.listed for entry in entries(Path(root))[0]]

    def inputs(self, root: Path) -> list[str]:
        return [str(Path(root) / s.json) for s in sources(Path(root))]

    def annotators(self, root: Path) -> list[str]:
        return sorted({s.annotator for s in sources(Path(root))})

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> PanopticReader:
        run = shard_run(entries(Path(root))[0], shard, reading.shard_size)
        return PanopticReader(root, shard, run, reading, self.annotators(root))

    def category_files(self, root: Path) -> list[str]:
        return self.inputs(root)

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """Each category under its supercategory, under ``entity`` (as for COCO instances)."""
        seen: dict[str, Counter[str | None]] = {}
        renamed = {}
        for table in category_table(Path(root)).values():
            for category in table.values():
                parent = category.get("supercategory")
                parent = category_label(parent) if isinstance(parent, str) and parent else None
                label = category_label(category["name"])
                if not label:
                    raise IngestError(f"{root}: category name {category['name']!r} has no letter or digit; rename it")
                seen.setdefault(label, Counter())[parent] += 1
                for name in (category["name"], category.get("supercategory")):
                    if isinstance(name, str) and name and category_label(name) != name:
                        renamed[name] = category_label(name)
        if not seen:
            raise IngestError(f"{root}: no categories in any panoptic file")
        found = {label: min(c, key=lambda p: (-c[p], p or "")) for label, c in sorted(seen.items())}
        tree = hierarchy_of(found)
        Path(out).mkdir(parents=True, exist_ok=True)
        tree.write_yaml(Path(out) / "hierarchy.yaml", "The panoptic categories, each under its supercategory.")
        rows = "".join(f"{name}\t{label}\n" for name, label in sorted(renamed.items()))
        (Path(out) / "category_names.tsv").write_text("name\tlabel\n" + rows, encoding="utf-8")
        return TreeVocabulary(tree.labels, {"labels": len(found), "renamed": len(renamed)})

    def source_files(self, root: Path) -> list[dict[str, Any]]:
        """Each panoptic file with its ``info`` and ``licenses`` as given, for exports to write back."""
        return [
            {"annotator": source.annotator, "file": source.json, "split": source.split, "folder": source.folder}
            | {key: data.get(key) for key in ("info", "licenses")}
            for source in sources(root)
            for data in [read_source(root, source)]
        ]

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        """Each annotator's categories, ``isthing`` as ``has_instances``."""
        rows = []
        for who, table in category_table(Path(root)).items():
            for category_id, category in sorted(table.items()):
                label = mapped_label(category["name"], reading.words, reading.category_map)
                parent = category.get("supercategory")
                rows.append({
                    "annotator": who, "category_id": category_id, "name": category["name"],
                    "supercategory": parent if isinstance(parent, str) else None,
                    "label": label if label in reading.words else None,
                    "train_id": None, "has_instances": category.get("isthing") == 1, "ignore_in_eval": None,
                })  # fmt: skip
        return rows

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release as a COCO panoptic tree (``export_release``)."""
        counts = export_release(release, out, images, annotator)
        return [
            f"{out}: {counts['annotators']} annotators, {counts['images']} images, {counts['segments']} segments"
            + (
                f", {counts['overlapped']} pixels of overlapping regions kept by the later region"
                if counts["overlapped"]
                else ""
            )
            + ("" if images else "; images/ is empty: copy the image files in, or pass --images ROOT")
        ]


LAYOUT = PanopticLayout()


def _colour(category_id: int) -> list[int]:
    """A category's ``color`` where the release keeps none: spread over the RGB cube by its id."""
    return [(category_id * 97) % 256, (category_id * 53 + 80) % 256, (category_id * 211 + 160) % 256]


def _categories(who: str, source: list[dict[str, Any]], vocabulary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``who``'s categories as its file named them (``isthing`` from ``has_instances``), else one
    per vocabulary label (its id the label id, a thing)."""
    own = [r for r in source if r["annotator"] == who and r["label"] is not None]
    if own:
        return [
            {"id": r["category_id"], "name": r["name"], "supercategory": r["supercategory"] or "",
             "isthing": int(bool(r["has_instances"])), "color": _colour(r["category_id"]), "_label": r["label"]}
            for r in sorted(own, key=lambda r: r["category_id"])
        ]  # fmt: skip
    return [
        {"id": v["label_id"], "name": v["label"], "supercategory": v["parent"] or "", "isthing": 1,
         "color": _colour(v["label_id"]), "_label": v["label"]}
        for v in vocabulary
    ]  # fmt: skip


def _segment_ids(annotation_ids: list[int | None], region_ids: list[int]) -> list[int]:
    """An image's segment ids: the source's (``annotation_id``) when each region has one, unique,
    in 1 .. 2^24 - 1; else the region ids."""
    known = [i for i in annotation_ids if i is not None and 0 < i < 1 << 24]
    return known if len(set(known)) == len(annotation_ids) else region_ids


def export_release(
    release: ReleaseTables, out: str | Path, images: str | Path | None = None, annotator: str | None = None
) -> dict[str, int]:
    """Write ``release`` as a COCO panoptic tree under ``out`` (a new folder).

    Per annotator (every human, or ``annotator``; several: each in ``annotations/<annotator>/``)
    and split (the images' ``split``, ``all`` where none): ``panoptic_<split>.json`` and the
    folder of RGB PNGs beside it, each region a segment painted in region order (a later region
    keeps a pixel two regions hold), its id the source's segment id where the release keeps them,
    its ``area`` and ``bbox`` the source's where given, else measured; pixels of no region are
    VOID. An image's id is the number its annotator's file gave it, else its file's stem (as
    Cityscapes and ADE20K name theirs, without ``_leftImg8bit``). Categories are the source's (ids,
    names, supercategories, ``isthing``) where the release keeps them, else the vocabulary's labels. With ``images`` (the raw tree) the image files are
    copied into ``images/<split>/``, each checked against its sha256.

    Returns the number of annotators, images, segments and overlapped pixels written.
    """
    from PIL import Image

    from regionbench.core import geometry, tables
    from regionbench.core.errors import InputError
    from regionbench.io.coco.export import as_written
    from regionbench.io.layouts import image_credits, image_files

    out = Path(out)
    rows = {
        r["image_id"]: r for r in release.arrow("images", ["image_id", "path", "width", "height", "split"]).to_pylist()
    }
    licences, about = attribution.written(image_credits(release))
    boxes = ["source_bbox_x", "source_bbox_y", "source_bbox_w", "source_bbox_h"]
    columns = ["image_id", "annotator", "region_id", "label", "category_id", "annotation_id", "iscrowd", "mask",
               "area_px", "bbox_x", "bbox_y", "bbox_w", "bbox_h", "source_area", *boxes]  # fmt: skip
    regions = release.arrow("regions", columns).sort_by([("image_id", "ascending"), ("region_id", "ascending")])
    given = release.arrow("coverage").column_names
    kept = ["image_id", "annotator", "source_image_id", *(["source_license"] if "source_license" in given else [])]
    coverage = release.arrow("coverage", kept).to_pylist()
    files = {(f["annotator"], f["split"]): f for f in release.manifest.get("source_files") or []}
    found = sorted(set(regions["annotator"].to_pylist()) | {c["annotator"] for c in coverage})
    if annotator is not None and annotator not in found:
        raise InputError(
            f"{release.folder}: no annotator {annotator!r}; choose one of {', '.join(found)} with --annotator"
        )
    chosen = [annotator] if annotator else [a for a in found if a != tables.CONSENSUS] or found
    try:
        source = release.arrow("source_categories").to_pylist()
    except InputError:  # a release made before the table
        source = []
    vocabulary = release.arrow("vocabulary", ["label_id", "label", "parent"]).to_pylist()
    split_of = {i: r["split"] or "all" for i, r in rows.items()}
    names = {i: Path(r["path"]).name for i, r in rows.items()}
    if len({(split_of[i], n) for i, n in names.items()}) < len(names):
        raise InputError(f"{release.folder}: two images of one split share a file name; the format names images by it")
    by_image: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for region in regions.to_pylist():
        if region["mask"] is not None:
            by_image.setdefault((region["annotator"], region["image_id"]), []).append(region)
    segments = overlapped = 0
    for who in chosen:
        base = out / "annotations" / (who if len(chosen) > 1 else "")
        categories = _categories(who, source, vocabulary)
        own_ids = any(r["annotator"] == who and r["label"] is not None for r in source)
        category_of: dict[str, int] = {}
        for category in categories:
            category_of.setdefault(category["_label"], category["id"])
        covered = {c["image_id"]: c["source_image_id"] for c in coverage if c["annotator"] == who} or dict.fromkeys(
            rows
        )
        licence_of = {c["image_id"]: c.get("source_license") for c in coverage if c["annotator"] == who}
        where: dict[str, tuple[Path, Path]] = {}  # split -> its file and PNG folder: the source's, else named so
        documents: dict[str, dict[str, list[Any]]] = {}
        for image_id in sorted(covered):
            row, split = rows[image_id], split_of[image_id]
            stem = Path(names[image_id]).stem
            origin = files.get((who, split))
            if split not in documents:  # the file the source gave, with what it states of itself, else ours
                stated = {k: origin[k] for k in ("info", "licenses") if origin[k] is not None} if origin else {}
                documents[split] = {"images": [], "annotations": [], **({} if origin else {"licenses": licences})}
                documents[split] |= stated
                where[split] = (
                    (out / origin["file"], out / origin["folder"])
                    if origin
                    else (base / f"panoptic_{split}.json", base / f"panoptic_{split}")
                )
                where[split][1].mkdir(parents=True, exist_ok=True)
            document = documents[split]
            own = by_image.get((who, image_id), [])
            ids = np.zeros((row["height"], row["width"]), dtype=np.uint32)
            info = []
            numbers = _segment_ids([r["annotation_id"] for r in own], [r["region_id"] for r in own])
            for region, segment_id in zip(own, numbers, strict=True):
                mask = geometry.from_rle(region["mask"])
                overlapped += int(np.count_nonzero(ids[mask]))
                ids[mask] = segment_id
                box = [region[b] for b in boxes] if None not in (region[b] for b in boxes) else [
                    region["bbox_x"], region["bbox_y"], region["bbox_w"], region["bbox_h"]]  # fmt: skip
                info.append({
                    "id": segment_id, "iscrowd": int(region["iscrowd"]),
                    "category_id": region["category_id"] if region["category_id"] is not None and own_ids
                    else category_of[region["label"]],
                    "area": region["area_px"] if region["source_area"] is None else as_written(region["source_area"]),
                    "bbox": [as_written(v) for v in box],
                })  # fmt: skip
            segments += len(info)
            Image.fromarray(id_to_rgb(ids)).save(where[split][1] / f"{stem}.png")
            source_id = covered[image_id]
            number: int | str = int(source_id) if source_id is not None else stem.removesuffix("_leftImg8bit")
            # the licence id the source's entry gave, under the source's own table
            credit = attribution.as_given(about[image_id], licence_of.get(image_id)) if origin else about[image_id]
            document["images"].append({"id": number, "file_name": names[image_id], "width": row["width"],
                                       "height": row["height"]} | credit)  # fmt: skip
            document["annotations"].append({"image_id": number, "file_name": f"{stem}.png", "segments_info": info})
        listed = [{k: v for k, v in c.items() if k != "_label"} for c in categories]
        for split, document in documents.items():
            text = json.dumps(
                document | {"categories": listed}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            )
            where[split][0].parent.mkdir(parents=True, exist_ok=True)
            where[split][0].write_text(text + "\n", encoding="utf-8")
    if images is not None:
        for image_id, content in image_files(release, Path(images), sorted(rows)):
            target = out / "images" / split_of[image_id] / names[image_id]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    (out / "images").mkdir(parents=True, exist_ok=True)
    return {"annotators": len(chosen), "images": len(rows), "segments": segments, "overlapped": overlapped}
