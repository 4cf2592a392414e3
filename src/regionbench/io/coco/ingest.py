"""Ingest of COCO instances files, one per annotator, over one shard of images.

Images are matched across annotators by ``file_name``; an image's id is the number its file
name carries (``25.jpg`` is 25) or, for other names, a stable 63-bit hash of the name, so ids do
not depend on the ids an annotation tool assigned. Shards are runs of ``shard_size`` image files
in sorted order (``split.Plan``; the workflow takes ``default_shard_size`` when the config sets
none), and each shard reads only its piece of the annotator files (``split``). A region is one
annotation: ``annotator`` is the file's stem and ``region_id``
its rank by annotation id within the image. Segmentations may be polygons (several parts),
uncompressed RLE or compressed RLE; regions may overlap.

Nothing is dropped silently: every image file, every image an annotator lists and every
annotation ends accepted or in the rejects table with a reason, and the report counts both
sides per annotator (seen = accepted + rejected).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import shapely
from pycocotools import mask as coco_mask

from regionbench.core import geometry, numbers, tables
from regionbench.io import images as images_io
from regionbench.io.coco import attribution, split
from regionbench.io.coco.split import uncategorised
from regionbench.io.layouts import ImageRecord, Reading
from regionbench.io.shards import IngestError, Ledger, image_id_of, image_row, printable, region_row

ANNOTATOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
IMAGE_MODES = ("RGB", "L")  # 8-bit colour and gray
SEGMENT = "segment"  # the label of an annotation without a category


def category_label(name: str) -> str:
    """The vocabulary label a COCO category name maps to: case-folded, every run of characters
    other than letters, digits (any script), '_' and '.' turned into one '-', and '-' trimmed
    from both ends ("traffic light" -> "traffic-light", "Hair Drier" -> "hair-drier"). A name
    that is already a label keeps it; "" when nothing is left."""
    return re.sub(r"[^\w.]+", "-", name.casefold()).strip("-")


def sources(root: str | Path) -> tuple[split.Source, ...]:
    """The tree's instances files (``split.shape``); raises IngestError when two files of an export
    name one annotator (``a.json`` and ``a.JSON``) or a file links outside the tree."""
    found: dict[str, Path] = {}
    listed = split.shape(root).sources
    for source in listed:
        if not images_io.inside(Path(root), source.path):
            raise IngestError(f"{source.path}: links outside the raw tree; copy the file in")
        if source.split is None and source.annotator in found:
            raise IngestError(
                f"{found[source.annotator]} and {source.path.name} name one annotator {source.annotator!r}; keep one"
            )
        found[source.annotator] = source.path
    return listed


def annotators(root: str | Path) -> dict[str, list[Path]]:
    """Annotator name -> their instances files (one in an export, one per split in COCO's and
    LVIS's own trees), in name order (``sources``)."""
    found: dict[str, list[Path]] = {}
    for source in sources(root):
        found.setdefault(source.annotator, []).append(source.path)
    return dict(sorted(found.items()))


def check_sources(root: str | Path) -> tuple[split.Source, ...]:
    """Every instances file of the tree (``sources``); raises IngestError when there is none,
    for a name that cannot be an annotator's, or a file that is a byte copy of another (the same
    readings twice would count as two annotators agreeing perfectly)."""
    listed = sources(root)
    if not listed:
        raise IngestError(
            f"{root}/annotations: no <annotator>.json file (nor COCO's instances_<split>.json); "
            "export COCO instances there"
        )
    digests: dict[str, Path] = {}
    for source in listed:
        annotator, path = source.annotator, source.path
        if not ANNOTATOR_NAME.fullmatch(annotator):
            raise IngestError(f"{path}: annotator names are letters, digits, '_', '.', '-'; rename the file")
        if annotator == tables.CONSENSUS:
            raise IngestError(
                f"{path}: the annotator name {annotator!r} is reserved for the derived consensus; rename the file"
            )
        if (digest := split.file_digest(path)) in digests:
            raise IngestError(
                f"{path}: a byte copy of {digests[digest].name}; an annotator counts once, remove the copy"
            )
        digests[digest] = path
    return listed


COUNTS = ("seen", "accepted", "rejected")


def _coordinates(part: object) -> np.ndarray | None:
    """A polygon part ``[x1, y1, x2, y2, ...]`` as (n, 2) float64 points, or None unless it is a
    list of at least six numbers (JSON's: ints and floats), even in count, each finite as a
    float64 (a JSON integer of 400 digits is not)."""
    if not isinstance(part, list) or len(part) < 6 or len(part) % 2:
        return None
    if not all(isinstance(v, int | float) for v in part):
        return None
    try:
        xy = np.asarray(part, dtype=np.float64)
    except OverflowError:
        return None
    return xy.reshape(-1, 2) if np.isfinite(xy).all() else None


def _spans_a_plane(xy: np.ndarray) -> bool:
    """True when the points ``xy`` (n x 2) surely span a plane: the determinant of the Gram
    matrix of ``xy - xy[0]`` is above 1e-8 of its squared trace, so its smaller singular value
    is above 1e-4 of the larger, far above both ``matrix_rank``'s tolerance and the rounding of
    this sum. False means "look closer" (``matrix_rank``), not "degenerate": a fast path taken
    by all but nearly flat polygons, which gives matrix_rank's answer."""
    d = xy - xy[0]
    xx, yy, xy_ = float(d[:, 0] @ d[:, 0]), float(d[:, 1] @ d[:, 1]), float(d[:, 0] @ d[:, 1])
    return xx * yy - xy_ * xy_ > 1e-8 * (xx + yy) ** 2


def _segmentation_rle(segmentation: object, height: int, width: int, quirks: Counter[Any]) -> dict[Any, Any]:
    """The annotation's segmentation as one compressed RLE; raises ValueError with a reason.

    A self-intersecting polygon part (a bow tie, a tool's doubled-back vertex) is taken as
    pycocotools draws it, the reference every COCO tool scores with, and counted in ``quirks``."""
    if isinstance(segmentation, list):
        if not segmentation or not all(isinstance(p, list) for p in segmentation):
            raise ValueError("polygon segmentation must be a list of [x1, y1, x2, y2, ...] lists")
        for part in segmentation:
            xy = _coordinates(part)
            if xy is None:
                raise ValueError("degenerate polygon: a part needs at least three finite (x, y) points")
            if (xy < 0).any() or (xy[:, 0] > width).any() or (xy[:, 1] > height).any():
                raise ValueError(f"polygon outside the image ({width}x{height})")
            if not _spans_a_plane(xy) and (len(np.unique(xy, axis=0)) < 3 or np.linalg.matrix_rank(xy - xy[0]) < 2):
                raise ValueError("degenerate polygon: its points lie on one line")
            if not shapely.is_valid(shapely.polygons(xy)):
                quirks["self_intersecting_polygons"] += 1
        merged: dict[str, Any] = coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
        return merged
    if isinstance(segmentation, dict) and "counts" in segmentation and "size" in segmentation:
        size = segmentation["size"]
        if not isinstance(size, list) or size != [height, width]:
            raise ValueError(f"RLE size {size!r} differs from the image's [{height}, {width}]")
        counts = segmentation["counts"]
        if isinstance(counts, list):  # uncompressed
            if not all(isinstance(c, int) and c >= 0 for c in counts) or sum(counts) != height * width:
                raise ValueError(f"uncompressed RLE counts must be non-negative and sum to {height * width}")
            uncompressed: dict[str, Any] = coco_mask.frPyObjects(segmentation, height, width)
            return uncompressed
        if isinstance(counts, str):
            try:
                covered = int(geometry.rle_runs(counts).sum())
            except ValueError as exc:
                raise ValueError(f"undecodable RLE ({exc})") from None
            if covered != height * width:  # pycocotools would draw arbitrary pixels
                raise ValueError(f"compressed RLE counts cover {covered} pixels, not the image's {height}x{width}")
            return {"size": [height, width], "counts": counts.encode("ascii")}
    raise ValueError("segmentation is neither polygons nor an RLE with counts and size")


@dataclass
class _Annotator:
    """One annotator's file as a shard reads it (``split``'s piece): its categories by id (those
    whose id names one category), and its annotations of the shard's images, by image."""

    categories: dict[Any, str]  # by id: an annotation's category_id may be any JSON value
    per_image: dict[str, list[tuple[int, dict[Any, Any]]]]


def mapped_label(category: str, words: Mapping[str, int], category_map: Mapping[str, str]) -> str:
    """The label a category name maps to: its ``category_map`` entry, else the name, each taken
    as it stands when a vocabulary label (``words``) and through ``category_label`` otherwise."""
    label = category_map.get(category, category)
    return label if label in words else category_label(label)


def _decode(segmentation: object, height: int, width: int, quirks: Counter[Any]) -> np.ndarray:
    """The annotation's mask; raises ValueError with a reason."""
    rle = _segmentation_rle(segmentation, height, width, quirks)
    try:
        mask: np.ndarray = coco_mask.decode(rle).astype(bool)
    except Exception as exc:  # pycocotools raises bare exceptions for corrupt counts
        raise ValueError(f"undecodable RLE ({exc})") from None
    if mask.shape != (height, width) or not mask.any():
        raise ValueError("empty mask")
    return mask


def source_geometry(
    ann: dict[Any, Any], pixels: int, crowd: bool, quirks: Counter[Any]
) -> tuple[float | None, list[float] | None]:
    """The annotation's own ``area`` and ``bbox`` (kept as the file gives them, the build measures
    its own beside them), None where absent or not numbers (counted). COCO's area is not always
    the mask's pixel count (its crowd regions: 8 of the 11 in 80 val2017 images), so a
    difference is a quirk, not a reason to drop the annotation."""
    area = numbers.json_number(ann.get("area"))
    if "area" in ann and area is None:
        quirks["area_not_a_number"] += 1
    elif area is not None and abs(area - pixels) > 0.5 and isinstance(ann.get("segmentation"), dict):
        quirks["crowd_area_not_its_pixels" if crowd else "rle_area_not_its_pixels"] += 1
    raw = ann.get("bbox")
    box = [numbers.json_number(v) for v in raw] if isinstance(raw, list) and len(raw) == 4 else None
    if box is None or None in box:
        if "bbox" in ann:
            quirks["bbox_not_four_numbers"] += 1
        return area, None
    return area, [b for b in box if b is not None]


def _read_image(
    root: Path, base: str, name: str, same_id: dict[str, list[str]], on_disk: set[str], reading: Reading, ledger: Ledger
) -> images_io.DecodedImage | None:
    """The decoded image file ``<base><name>`` (``base``: ``images/``, or "" in COCO's own tree),
    or None with the file rejected and its reason (``same_id``: the names that give one image id
    with another, each with all of them)."""
    path = root / f"{base}{name}"
    ledger.seen[("", "image")] += 1
    if len(clash := same_id.get(name, [])) > 1:
        reason = f"{' and '.join(clash)} all give image id {image_id_of(name)}; rename all but one"
    elif name not in on_disk:
        reason = "an annotator lists this image but its file is missing"
    elif path.is_symlink() and not path.exists():
        reason = "a dangling link (it points to nothing); copy the file in"
    elif printable(name) != name:
        reason = "its file name is not UTF-8 text; rename the file"
    elif Path(name).suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
        reason = f"not an image file ({', '.join(IMAGE_SUFFIXES)})"
    elif not images_io.inside(root, path):
        reason = "path escapes the collection root (symlink); copy the file in"
    else:
        # As in the SAIAPR layout: 8-bit colour or gray, in the format its suffix names.
        expected = ("PNG",) if Path(name).suffix.lower() == ".png" else ("JPEG",)
        try:
            return reading.read_image(root, path, expected, IMAGE_MODES)
        except ValueError as exc:
            reason = str(exc)
    ledger.reject(f"{base}{name}", name, "image", reason)
    return None


INSTANCES = "instances_"  # COCO's instances files: instances_<split>.json


def split_of(name: str, annotators: Iterable[str] = ()) -> str | None:
    """COCO's split of an image: the folder its file name starts with (``val2017`` of
    ``val2017/000000000139.jpg``, as COCO's downloads unpack), else the split the files listing
    it are named for when they agree (``val2017`` of ``annotations/instances_val2017.json``, as
    COCO names them); None otherwise."""
    folder, _, rest = name.partition("/")
    if rest:
        return folder
    named = {a.removeprefix(INSTANCES) for a in annotators if a.startswith(INSTANCES) and len(a) > len(INSTANCES)}
    return named.pop() if len(named) == 1 else None


FEDERATED = ("neg_category_ids", "not_exhaustive_category_ids")  # LVIS's per-image category lists


def federated_lists(entry: Mapping[str, Any], quirks: Counter[Any]) -> dict[str, list[int]]:
    """What an ``images`` entry states of the image's categories beyond its annotations (LVIS's
    federated lists, ``FEDERATED``), each as sorted distinct category ids. A list that is not
    one of integer ids is left out and counted (quirk ``federated_list_not_ids``)."""
    out = {}
    for key in FEDERATED:
        if key not in entry:
            continue
        given = entry[key]
        if isinstance(given, list) and all(split.is_id(c) for c in given):
            out[key] = sorted(set(given))
        else:
            quirks["federated_list_not_ids"] += 1
    return out


class ShardReader:
    """One shard of a COCO tree being read (``io.layouts.ShardReader``): shard ``shard`` of the
    runs of ``reading.shard_size`` file names in sorted order.

    Each annotation's category maps to the vocabulary label of its name (``category_label``),
    or to ``reading.category_map[name]``, and needs an id in ``reading.words``. The shard's piece
    (``split``) is read from ``reading.pieces`` when the tree was split there, else the tree is
    split into a temporary folder first; each image with its regions by ``records``.
    """

    def __init__(self, root: str | Path, shard: int, reading: Reading) -> None:
        self.root = root = Path(root)
        self.shard, self.folder = shard, f"{shard:02d}"
        self.reading = reading
        self.ledger = Ledger(root)
        if reading.pieces is not None:
            record, rows = split.read_piece(Path(reading.pieces) / self.folder)
        else:
            with tempfile.TemporaryDirectory() as scratch:
                split.split(root, check_sources(root), scratch, reading.shard_size)
                record, rows = split.read_piece(Path(scratch) / self.folder)
        self.annotators = tuple(record["annotators"])
        # What the file-wide checks of the split rejected, and every item they counted here.
        self.ledger.rejects += record["rejects"]
        for annotator, item, n in record["seen"]:
            self.ledger.seen[(annotator, item)] += n
        names = record["names"]
        self.names = [n["name"] for n in names]
        self.on_disk = {n["name"] for n in names if n["on_disk"]}
        self.same_id = {n["name"]: n["same_id"] for n in names if n["same_id"]}
        self.covered = {n["name"]: n["listed_by"] for n in names}  # file name -> annotators who list it
        self.alike: list[str] = []
        if shard == 0:  # a file's own findings, counted once for the build: by its first shard
            self.ledger.quirks["category_id_listed_twice"] += sum(
                len(record["categories"][a].get("listed_twice", [])) for a in self.annotators
            )
            self.alike = record["alike"]
            self.ledger.quirks["annotator_files_alike"] += len(self.alike)
        self.entries = {n["name"]: n["entries"] for n in names}  # file name -> annotator -> images entry
        self.positions = {n["name"]: n.get("positions", {}) for n in names}  # -> annotator -> place in the files
        self.files = {n["name"]: n["files"] for n in names}  # file name -> annotator -> the file listing it
        self.splits = {n["name"]: n["split"] for n in names if n["split"]}  # as the file listing it names it
        self.base = split.shape(root).base
        self.left_alone: list[str] = record.get("left_alone", []) if shard == 0 else []
        per_image: dict[str, dict[str, list[tuple[int, dict[Any, Any]]]]] = {
            a: defaultdict(list) for a in self.annotators
        }
        for annotator, name, annotation_id, text in zip(*rows.to_pydict().values(), strict=True):
            per_image[annotator][name].append((annotation_id, json.loads(text)))
        self.read = {
            a: _Annotator({int(i): n for i, n in record["categories"][a]["names"].items()}, per_image[a])
            for a in self.annotators
        }
        self.licenses = {a: record["categories"][a].get("licenses", {}) for a in self.annotators}
        self.accepted: Counter[Any] = Counter()  # annotator -> regions accepted
        self.images = 0

    def records(self) -> Iterator[ImageRecord]:
        """Each accepted image with every annotator's decoded regions, in file name order."""
        for name in self.names:
            image = _read_image(self.root, self.base, name, self.same_id, self.on_disk, self.reading, self.ledger)
            lost = (
                ""
                if image is not None
                else f"its image was rejected ({self.base}{name}: {self.ledger.rejects[-1]['reason']})"
            )
            found = [found for annotator in self.read for found in self._regions(annotator, name, image, lost)]
            if image is not None:
                self.images += 1
                entries = self.entries.get(name, {})
                the_split = self.splits.get(name) or split_of(name, entries)
                row = image_row(image_id_of(name), self.folder, f"{self.base}{name}", image, the_split)
                source_ids = {a: entry["id"] for a, entry in entries.items()}
                # the file's size of the image is not the file's own: the image's pixels rule, said
                self.ledger.quirks["listed_size_differs_from_the_image"] += sum(
                    (e.get("height"), e.get("width")) != (image.height, image.width)
                    for e in entries.values()
                    if isinstance(e.get("height"), int) and isinstance(e.get("width"), int)
                )
                row |= attribution.read((entry, self.licenses[a]) for a, entry in sorted(entries.items()))
                federated = {a: federated_lists(entry, self.ledger.quirks) for a, entry in entries.items()}
                yield ImageRecord(
                    name, image, row, found, tuple(self.covered.get(name, ())), source_ids=source_ids,
                    source_positions=self.positions.get(name, {}), federated={a: lists for a, lists in federated.items() if lists},
                    source_licenses={a: e["license"] for a, e in entries.items() if split.is_id(e.get("license"))},
                )  # fmt: skip

    def _regions(
        self, annotator: str, name: str, image: images_io.DecodedImage | None, lost: str
    ) -> Iterator[tuple[dict[Any, Any], np.ndarray]]:
        """The accepted regions of one annotator's annotations of image ``name``, region ids by
        annotation id; each other annotation rejected (all of them with ``lost``, the image's
        reason, when the image was rejected: None)."""
        words, category_map, ledger = self.reading.words, self.reading.category_map, self.ledger
        source = self.files.get(name, {}).get(annotator, f"annotations/{annotator}.json")
        categories = self.read[annotator].categories
        annotations = sorted(self.read[annotator].per_image.get(name, []), key=lambda a: a[0])
        for region_id, (ann_id, ann) in enumerate(annotations, start=1):
            key = f"{name}/{ann_id}"
            category = SEGMENT if uncategorised(ann) else categories.get(ann.get("category_id"))
            if image is None:
                ledger.reject(source, key, "region", lost, annotator)
                continue
            if category is None:
                ledger.reject(source, key, "region", f"unknown category id {ann.get('category_id')!r}", annotator)
                continue
            label = mapped_label(category, words, category_map)
            if label not in words:
                ledger.reject(
                    source, key, "region",
                    f"category {category!r}" + (f" (label {label!r})" if label != category else "")
                    + " is not a vocabulary label; map it under category_map",
                    annotator,
                )  # fmt: skip
                continue
            crowd = ann.get("iscrowd", 0)
            if crowd not in (0, 1) or isinstance(crowd, float):
                ledger.reject(source, key, "region", f"iscrowd is {crowd!r}, not 0 or 1", annotator)
                continue
            try:
                mask = _decode(ann.get("segmentation"), image.height, image.width, ledger.quirks)
            except ValueError as exc:
                ledger.reject(source, key, "region", str(exc), annotator)
                continue
            area, box = source_geometry(ann, int(mask.sum()), bool(crowd), ledger.quirks)
            self.accepted[annotator] += 1
            yield region_row(
                image_id_of(name), annotator, region_id, words[label], label, mask,
                iscrowd=bool(crowd), annotation_id=ann_id, category_id=ann.get("category_id"),  # an integer, or None: checked on reading
                source_area=area, source_bbox=box,
            ), mask  # fmt: skip

    def report(self) -> dict[Any, Any]:
        """Images, regions per annotator and each file's images entries: seen, accepted, rejected."""
        seen, ledger = self.ledger.seen, self.ledger
        report: dict[str, Any] = {
            "folder": self.folder,
            "images": {"seen": seen[("", "image")], "accepted": self.images, "rejected": ledger.rejected("image")},
            "annotators": {
                a: {"seen": seen[(a, "region")], "accepted": self.accepted[a], "rejected": ledger.rejected("region", a)}
                for a in self.annotators
            },
            # Each file's images entries: listed (an image it covers) or rejected.
            "image_entries": {
                a: {
                    "seen": seen[(a, "image-entry")],
                    "accepted": seen[(a, "image-entry")] - ledger.rejected("image-entry", a),
                    "rejected": ledger.rejected("image-entry", a),
                }
                for a in self.annotators
            },
        }
        report["regions"] = {k: sum(v[k] for v in report["annotators"].values()) for k in COUNTS}
        if self.alike:
            report["alike_annotator_files"] = self.alike
        if self.left_alone:  # captions, keypoints: files of COCO's tree that hold no instances
            report["files_left_alone"] = self.left_alone
        return report
