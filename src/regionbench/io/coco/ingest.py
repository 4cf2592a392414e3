"""Ingest of COCO instances files, one per annotator, over one shard of images.

Images are matched across annotators by ``file_name``; an image's id is the number its file
name carries (``25.jpg`` is 25) or, for other names, a stable 63-bit hash of the name, so ids do
not depend on the ids an annotation tool assigned. Shards are runs of ``shard_size`` file names
in sorted order (the workflow takes ``default_shard_size`` when the config sets none). A region is one annotation: ``annotator`` is the file's stem and ``region_id``
its rank by annotation id within the image. Segmentations may be polygons (several parts),
uncompressed RLE or compressed RLE; regions may overlap.

Nothing is dropped silently: every image file, every image an annotator lists and every
annotation ends accepted or in the rejects table with a reason, and the report counts both
sides per annotator (seen = accepted + rejected).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import shapely
from pycocotools import mask as coco_mask

from regionbench import geometry, tables
from regionbench.errors import parse_json
from regionbench.io import images as images_io
from regionbench.io.layouts import ImageRecord, Reading
from regionbench.io.shards import IngestError, Ledger, image_row, printable, region_row, trees_state

# Default shards: eight on small collections, so a machine of up to eight cores ingests on every
# core; at most 1,000 images each on large ones. The count depends on the collection alone, never
# on the machine, so the release (its ingest report names the shards) is the same everywhere.
DEFAULT_SHARDS = 8
MAX_SHARD_SIZE = 1000
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


def image_id_of(file_name: str) -> int:
    """The image id of a file name: its stem when all ASCII digits, else the first 63 bits of
    sha256(file name)."""
    stem = Path(file_name).stem
    if stem.isascii() and stem.isdigit() and len(stem) <= 18:
        return int(stem)
    return int.from_bytes(hashlib.sha256(file_name.encode("utf-8")).digest()[:8], "big") >> 1


def _instance_files(root: str | Path) -> list[Path]:
    """The ``annotations/*.json`` files of a tree, the suffix in any case (``.JSON`` too)."""
    folder = Path(root, "annotations")
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix.lower() == ".json" and not p.is_dir())


def annotators(root: str | Path) -> dict[str, Path]:
    """Annotator name (the file's stem) -> its instances file, in name order; raises IngestError
    when two files name one annotator (``a.json`` and ``a.JSON``)."""
    found: dict[str, Path] = {}
    for path in _instance_files(root):
        if not images_io.inside(Path(root), path):
            raise IngestError(f"{path}: links outside the raw tree; copy the file in")
        if path.stem in found:
            raise IngestError(f"{found[path.stem]} and {path.name} name one annotator {path.stem!r}; keep one")
        found[path.stem] = path
    return found


def read_annotators(root: str | Path) -> dict[str, dict]:
    """Every annotator's instances file (``annotators``), each read once and parsed; raises
    IngestError for a name that cannot be an annotator's, or a file that is a byte copy of
    another (the same readings twice would count as two annotators agreeing perfectly)."""
    files: dict[str, dict] = {}
    digests: dict[str, Path] = {}
    for annotator, path in annotators(root).items():
        if not ANNOTATOR_NAME.fullmatch(annotator):
            raise IngestError(f"{path}: annotator names are letters, digits, '_', '.', '-'; rename the file")
        if annotator == tables.CONSENSUS:
            raise IngestError(
                f"{path}: the annotator name {annotator!r} is reserved for the derived consensus; rename the file"
            )
        raw = path.read_bytes()
        if (digest := hashlib.sha256(raw).hexdigest()) in digests:
            raise IngestError(
                f"{path}: a byte copy of {digests[digest].name}; an annotator counts once, remove the copy"
            )
        digests[digest] = path
        files[annotator] = read_instances(path, raw)
    return files


def read_instances(path: Path, raw: bytes | None = None) -> dict:
    """A COCO instances file (its bytes ``raw`` when already read) as a dict with ``images``,
    ``annotations`` and ``categories`` lists (``categories`` may be absent: a segmentation
    without categories); raises IngestError with one line when the file is not one."""
    try:
        data = parse_json((path.read_bytes() if raw is None else raw).decode("utf-8"))
    except UnicodeDecodeError:
        raise IngestError(f"{path}: not UTF-8 text; export COCO instances from the tool again") from None
    except ValueError as exc:
        raise IngestError(f"{path}: {exc}; export COCO instances from the tool again") from None
    if isinstance(data, dict):
        data.setdefault("categories", [])
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k), list) for k in ("images", "annotations", "categories")
    ):
        raise IngestError(f"{path}: a COCO instances file needs the lists images, annotations and categories")
    return data


def uncategorised(annotation: dict) -> bool:
    """Whether an annotation is a segment without a category (no ``category_id``, or null): a
    segmentation benchmark's region, labelled ``SEGMENT``."""
    return annotation.get("category_id") is None


def _image_files(root: Path) -> list[str]:
    """Every file under ``images/``, subfolders included, as its path below ``images/`` (the
    ``file_name`` an annotator lists it by); linked folders are not followed."""
    base = root / "images"
    found = []
    for folder, dirs, files in os.walk(base):
        dirs.sort()
        rel = Path(folder).relative_to(base)
        found += [(rel / f).as_posix() for f in files]
        found += [(rel / d).as_posix() for d in dirs if (Path(folder) / d).is_symlink()]  # rejected by name
    return sorted(found)


def _all_names(root: Path, files: Mapping[str, dict]) -> list[str]:
    """Every file name: in images/ or listed by an annotator."""
    names = set(_image_files(root))
    for data in files.values():
        names |= {
            im.get("file_name")
            for im in data["images"]
            if isinstance(im, dict) and isinstance(im.get("file_name"), str)
        }
    return sorted(names)


def default_shard_size(images: int) -> int:
    """Images per shard when the config sets none: floor(images / ``DEFAULT_SHARDS``), between 1
    and ``MAX_SHARD_SIZE``, so a collection of n images has at least min(n, ``DEFAULT_SHARDS``)
    shards up to ``DEFAULT_SHARDS`` x ``MAX_SHARD_SIZE`` images."""
    return max(1, min(MAX_SHARD_SIZE, images // DEFAULT_SHARDS))


def tree_state(root: str | Path) -> str:
    """sha256 over the relative path, size and modification time of every image and annotation
    file: the workflow passes it to the ingest jobs, so any change reruns them."""
    return trees_state(root, ("images", "annotations"))


COUNTS = ("seen", "accepted", "rejected")


def _segmentation_rle(segmentation: object, height: int, width: int, quirks: Counter) -> dict:
    """The annotation's segmentation as one compressed RLE; raises ValueError with a reason.

    A self-intersecting polygon part (a bow tie, a tool's doubled-back vertex) is taken as
    pycocotools draws it, the reference every COCO tool scores with, and counted in ``quirks``."""
    if isinstance(segmentation, list):
        if not segmentation or not all(isinstance(p, list) for p in segmentation):
            raise ValueError("polygon segmentation must be a list of [x1, y1, x2, y2, ...] lists")
        for part in segmentation:
            if len(part) < 6 or len(part) % 2 or not all(isinstance(v, int | float) and np.isfinite(v) for v in part):
                raise ValueError("degenerate polygon: a part needs at least three finite (x, y) points")
            xy = np.asarray(part, dtype=np.float64).reshape(-1, 2)
            if (xy < 0).any() or (xy[:, 0] > width).any() or (xy[:, 1] > height).any():
                raise ValueError(f"polygon outside the image ({width}x{height})")
            if len(np.unique(xy, axis=0)) < 3 or np.linalg.matrix_rank(xy - xy[0]) < 2:
                raise ValueError("degenerate polygon: its points lie on one line")
            if not shapely.Polygon(xy).is_valid:
                quirks["self_intersecting_polygons"] += 1
        return coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
    if isinstance(segmentation, dict) and "counts" in segmentation and "size" in segmentation:
        size = segmentation["size"]
        if not isinstance(size, list) or size != [height, width]:
            raise ValueError(f"RLE size {size!r} differs from the image's [{height}, {width}]")
        counts = segmentation["counts"]
        if isinstance(counts, list):  # uncompressed
            if not all(isinstance(c, int) and c >= 0 for c in counts) or sum(counts) != height * width:
                raise ValueError(f"uncompressed RLE counts must be non-negative and sum to {height * width}")
            return coco_mask.frPyObjects(segmentation, height, width)
        if isinstance(counts, str):
            try:
                covered = int(geometry.rle_runs(counts).sum())
            except ValueError as exc:
                raise ValueError(f"undecodable RLE ({exc})") from None
            if covered != height * width:  # pycocotools would draw arbitrary pixels
                raise ValueError(f"compressed RLE counts cover {covered} pixels, not the image's {height}x{width}")
            return {"size": [height, width], "counts": counts.encode("ascii")}
    raise ValueError("segmentation is neither polygons nor an RLE with counts and size")


def is_id(value: object) -> bool:
    """Whether ``value`` can be a COCO id: an integer (not a boolean, a list or a string)."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class _Annotator:
    """One annotator's file as a shard reads it: the images it lists in the shard, its categories
    by id (those whose id names one category), and its annotations of the shard's images."""

    listed: set[str]
    categories: dict[int, str]
    ambiguous: dict[int, list[str]]  # category id -> the names it is given
    per_image: dict[str, list[tuple[int, dict]]]


def _read_annotator(data: dict, annotator: str, ledger: Ledger, wanted: set[str], first: bool) -> _Annotator:
    """The ``images``, ``categories`` and ``annotations`` of one file for the shard of ``wanted``
    file names. Every images entry and every annotation is counted in the shard of its image
    (``first``: shard 0 for those no image owns) and ends listed or rejected with its reason."""
    source = f"annotations/{annotator}.json"

    def count(item: str, key: str, owner: str | None, problem: str | None) -> bool:
        """Count an item in the shard that owns it; reject it with ``problem``. True: counted, accepted."""
        if (owner in wanted) if owner is not None else first:
            ledger.seen[(annotator, item)] += 1
            if problem is None:
                return True
            ledger.reject(source, key, item, problem, annotator)
        return False

    names_of: dict[int, set[str]] = defaultdict(set)
    for c in data["categories"]:
        if isinstance(c, dict) and is_id(c.get("id")):
            names_of[c["id"]].add(c["name"] if isinstance(c.get("name"), str) else "")
    categories = {i: next(iter(n)) for i, n in names_of.items() if len(n) == 1}
    ambiguous = {i: sorted(n) for i, n in names_of.items() if len(n) > 1}

    entries: dict[int, list[str]] = defaultdict(list)
    for im in data["images"]:
        if isinstance(im, dict) and is_id(im.get("id")) and isinstance(im.get("file_name"), str) and im["file_name"]:
            entries[im["id"]].append(im["file_name"])
    listed: set[str] = set()
    for n, im in enumerate(data["images"]):
        name = im.get("file_name") if isinstance(im, dict) else None
        owner = name if isinstance(name, str) and name else None
        if not isinstance(im, dict):
            problem = "an images entry that is not a JSON object"
        elif owner is None:
            problem = f"file_name {name!r} is not a file name"
        elif not is_id(im.get("id")):
            problem = f"image id {im.get('id')!r} is not an integer"
        elif len(entries[im["id"]]) > 1:
            problem = f"image id {im['id']} is listed for {' and '.join(sorted(set(entries[im['id']])))}"
        else:
            problem = None
        if count(
            "image-entry", f"images[{n}]" if owner is None else owner, owner, problem and f"{problem}; fix the entry"
        ):
            listed.add(owner)
    by_coco_id = {i: names[0] for i, names in entries.items() if len(names) == 1}

    per_image: dict[str, list[tuple[int, dict]]] = defaultdict(list)
    seen_ids: set[int] = set()
    for n, ann in enumerate(data["annotations"]):
        image_id = ann.get("image_id") if isinstance(ann, dict) else None
        name = by_coco_id.get(image_id) if is_id(image_id) else None
        key = f"{name or image_id}/{ann.get('id', n) if isinstance(ann, dict) else n}"
        if not isinstance(ann, dict):
            problem = "an annotations entry that is not a JSON object"
        elif name is None and is_id(image_id) and len(entries.get(image_id, [])) > 1:
            problem = f"its image id {image_id} is listed for several files in this file"
        elif name is None:
            problem = f"annotation for unknown image id {image_id!r}"
        elif not is_id(ann.get("id")) or ann["id"] in seen_ids:
            problem = "annotation id missing or used twice in this file"
        elif not uncategorised(ann) and not is_id(ann.get("category_id")):
            problem = f"category id {ann.get('category_id')!r} is not an integer"
        elif not uncategorised(ann) and categories.get(ann["category_id"]) == "":
            problem = f"category {ann['category_id']} has no name (or one that is not text); name the category"
        elif ann.get("category_id") in ambiguous:
            names = ", ".join(ambiguous[ann["category_id"]])
            problem = f"category id {ann['category_id']} names several categories ({names}); give each its own id"
        else:
            problem = None
        if count("region", key, name, problem):
            seen_ids.add(ann["id"])
            per_image[name].append((ann["id"], ann))
        elif problem is None and name is not None:
            seen_ids.add(ann["id"])  # another shard's: its id is still taken
    return _Annotator(listed, categories, ambiguous, per_image)


def _decode(segmentation: object, height: int, width: int, quirks: Counter, area: object = None) -> np.ndarray:
    """The annotation's mask; raises ValueError with a reason. An RLE's ``area``, when given, is
    its pixel count (COCO's definition), so a different one means the counts are not the mask
    the tool meant."""
    rle = _segmentation_rle(segmentation, height, width, quirks)
    try:
        mask = coco_mask.decode(rle).astype(bool)
    except Exception as exc:  # pycocotools raises bare exceptions for corrupt counts
        raise ValueError(f"undecodable RLE ({exc})") from None
    if mask.shape != (height, width) or not mask.any():
        raise ValueError("empty mask")
    if isinstance(segmentation, dict) and isinstance(area, int | float) and abs(area - mask.sum()) > 0.5:
        raise ValueError(f"area {area} differs from the RLE mask's {int(mask.sum())} pixels")
    return mask


def _read_image(
    root: Path, name: str, same_id: dict[int, list[str]], on_disk: set[str], max_pixels: int, ledger: Ledger
) -> images_io.DecodedImage | None:
    """The decoded image file ``images/<name>``, or None with the file rejected and its reason."""
    path = root / "images" / name
    ledger.seen[("", "image")] += 1
    if len(clash := same_id[image_id_of(name)]) > 1:
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
            return images_io.read_image(path, max_pixels, expected, IMAGE_MODES)
        except ValueError as exc:
            reason = str(exc)
    ledger.reject(f"images/{name}", name, "image", reason)
    return None


class ShardReader:
    """One shard of a COCO tree being read (``io.layouts.ShardReader``): shard ``shard`` of the
    runs of ``reading.shard_size`` file names in sorted order.

    Each annotation's category maps to the vocabulary label of its name (``category_label``),
    or to ``reading.category_map[name]``, and needs an id in ``reading.words``. Every annotator
    file is read on construction, each image with its regions by ``records``.
    """

    def __init__(self, root: str | Path, shard: int, reading: Reading) -> None:
        self.root = root = Path(root)
        self.shard, self.folder = shard, f"{shard:02d}"
        self.reading = reading
        self.ledger = Ledger(root)
        files = read_annotators(root)
        if not files:
            raise IngestError(f"{root}/annotations: no <annotator>.json file; export COCO instances there")
        self.annotators = tuple(files)
        everyone = _all_names(root, files)
        size = reading.shard_size or default_shard_size(len(everyone))
        self.names = everyone[shard * size : (shard + 1) * size]
        # File names whose stems give one image id (0984.jpg, 984.jpg, 984.png): none can be the image.
        self.same_id: dict[int, list[str]] = {}
        for name in everyone:
            self.same_id.setdefault(image_id_of(name), []).append(name)
        self.on_disk = set(_image_files(root))
        # Each annotator's annotations of this shard's images, by image; rejects that need no
        # pixels. Items no image can own (an entry that is not an object, an unknown image id)
        # go to shard 0.
        wanted = set(self.names)
        self.read = {a: _read_annotator(data, a, self.ledger, wanted, shard == 0) for a, data in files.items()}
        self.covered: dict[str, list[str]] = defaultdict(list)  # file name -> annotators who list it
        for annotator, r in self.read.items():
            for name in sorted(r.listed):
                self.covered[name].append(annotator)
        self.accepted: Counter = Counter()  # annotator -> regions accepted
        self.images = 0

    def records(self) -> Iterator[ImageRecord]:
        """Each accepted image with every annotator's decoded regions, in file name order."""
        for name in self.names:
            image = _read_image(self.root, name, self.same_id, self.on_disk, self.reading.max_image_pixels, self.ledger)
            found = [found for annotator in self.read for found in self._regions(annotator, name, image)]
            if image is not None:
                self.images += 1
                row = image_row(image_id_of(name), self.folder, f"images/{name}", image)
                yield ImageRecord(name, image, row, found, tuple(self.covered[name]))

    def _regions(
        self, annotator: str, name: str, image: images_io.DecodedImage | None
    ) -> Iterator[tuple[dict, np.ndarray]]:
        """The accepted regions of one annotator's annotations of image ``name`` (None: the image
        was rejected), region ids by annotation id; each other annotation rejected."""
        words, category_map, ledger = self.reading.words, self.reading.category_map, self.ledger
        source = f"annotations/{annotator}.json"
        categories = self.read[annotator].categories
        annotations = sorted(self.read[annotator].per_image.get(name, []), key=lambda a: a[0])
        for region_id, (ann_id, ann) in enumerate(annotations, start=1):
            key = f"{name}/{ann_id}"
            category = SEGMENT if uncategorised(ann) else categories.get(ann.get("category_id"))
            label = category_map.get(category, category)
            if isinstance(label, str) and label not in words:
                label = category_label(label)
            if image is None:
                ledger.reject(source, key, "region", "its image was rejected or is missing", annotator)
                continue
            if category is None:
                ledger.reject(source, key, "region", f"unknown category id {ann.get('category_id')!r}", annotator)
                continue
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
                mask = _decode(ann.get("segmentation"), image.height, image.width, ledger.quirks, ann.get("area"))
            except ValueError as exc:
                ledger.reject(source, key, "region", str(exc), annotator)
                continue
            self.accepted[annotator] += 1
            yield region_row(
                image_id_of(name), annotator, region_id, words[label], label, mask,
                iscrowd=bool(crowd), annotation_id=ann_id, category_id=ann.get("category_id"),  # an integer, or None: checked on reading
            ), mask  # fmt: skip

    def report(self) -> dict:
        """Images, regions per annotator and each file's images entries: seen, accepted, rejected."""
        seen, ledger = self.ledger.seen, self.ledger
        report = {
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
        return report
