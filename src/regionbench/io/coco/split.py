"""A COCO tree split into shard pieces: each annotator's instances file is read once, streamed,
and every shard's ingest reads only its own piece.

A tree has one of two shapes (``shape``): an annotation tool's export (``images/`` and one
instances file per annotator, ``annotations/<annotator>.json``), or a collection as COCO and
LVIS distribute it (split folders ``train2017/``, ``val2017/`` and one file per split,
``annotations/instances_<split>.json``, ``annotations/lvis_v1_<split>.json``: each file a split
of one annotator's readings, ``coco`` or ``lvis``). An image's name is its path below the image
base (``images/`` or the tree itself).

Shards are runs of ``size`` image files in sorted order, so planning needs the
listing alone (``Plan``); a name an annotator lists without a file belongs to the shard whose run
its sort position falls in. ``split`` reads each file with ijson's C parser, one list at a time
(``images`` and ``categories`` whole, ``annotations`` an item at a time): memory follows the
images and the annotations of the pieces being buffered, not the file (a parsed 448 MB file
holds about 3 GB of Python objects). It applies every check that needs the whole file (an image
id listed twice, an annotation id used twice, a category id naming two categories), counting each
item in the shard that owns it, and writes per shard:

- ``<shard>/annotations.parquet``: the annotations that passed them, each as its JSON text;
- ``<shard>/shard.json``: the shard's names, whether each is on disk and which other names give
  the same image id, which annotators list each, every file's categories, the ledger of what
  the file-wide checks rejected and, in the first shard, the annotator files that say what an
  earlier one says (``alike_files``).

A piece whose bytes are unchanged is not written again, so a build reruns only the shards whose
pieces changed. Strict JSON only: a file with ``NaN`` or ``Infinity`` (Python's ``json.dump``
writes them by default) is refused with one line that says so.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import os
import re
import shutil
import tempfile
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import urlsplit

import ijson
import pyarrow as pa
import pyarrow.parquet as pq

from regionbench.core import errors
from regionbench.io.shards import IngestError, Ledger, default_shard_size, image_id_of, shard_names

# Default shards: eight on small collections, so a machine of up to eight cores ingests on every
# core; at most 1,000 images each on large ones. The count depends on the collection alone, never
# on the machine, so the release (its ingest report names the shards) is the same everywhere.
INDEX = "index.json"
ANNOTATIONS = "annotations.parquet"
SHARD = "shard.json"
PIECES = (ANNOTATIONS, SHARD)
ANNOTATION_ROWS = pa.schema(
    [("annotator", pa.string()), ("name", pa.string()), ("annotation_id", pa.int64()), ("annotation", pa.string())]
)
BUFFER_CHARS = 32_000_000  # annotation text held before it is written to the pieces
CHUNK = 1 << 20


# The files of a tree as COCO and LVIS distribute it: <prefix><split>.json -> (annotator, images
# named by their coco_url). LVIS v1's images are COCO 2017's, in COCO's folders.
DISTRIBUTED = {"instances_": ("coco", False), "lvis_v1_": ("lvis", True)}
COCO_FOLDERS = ("train2017", "val2017")


@dataclass(frozen=True)
class Source:
    """An instances file: whose readings it holds (``annotator``), where (``path``; ``shown``, its
    path in the tree) and how its images are named below the image base: ``folder`` + their
    ``file_name`` (an export: ""; COCO's own files: their split's folder, ``val2017/``), or
    (``by_url``, LVIS's) the path of their ``coco_url``; ``split``, the split of the collection
    the file holds when its name says (``instances_val2017.json``: ``val2017``), else None."""

    annotator: str
    path: Path
    shown: str
    folder: str = ""
    split: str | None = None
    by_url: bool = False

    def name_of(self, entry: dict[Any, Any]) -> str | None:
        """The name of an ``images`` entry's file below the image base, or None without one."""
        if self.by_url:
            url = entry.get("coco_url")
            path = urlsplit(url).path.lstrip("/") if isinstance(url, str) else ""
            return path or None
        name = entry.get("file_name")
        return self.folder + name if isinstance(name, str) and name else None


@dataclass(frozen=True)
class Shape:
    """How a tree holds its images and files: the image base (``images/``, or "" for the tree
    itself), the folders below it that hold images (None: all of it), the instances files, and
    the other files of ``annotations/`` (captions, keypoints), left alone."""

    base: str
    folders: tuple[str, ...] | None
    sources: tuple[Source, ...]
    left_alone: tuple[str, ...] = ()

    @property
    def distributed(self) -> bool:
        """Whether the tree is a collection as COCO or LVIS distribute it (not an export)."""
        return self.folders is not None


def is_panoptic_file(path: Path) -> bool:
    """Whether ``path`` is a COCO panoptic JSON (``io.panoptic``): named ``*panoptic_<split>.json``
    with its PNG folder beside it."""
    return path.suffix == ".json" and "panoptic_" in path.stem and path.with_suffix("").is_dir()


def json_files(root: str | Path) -> list[Path]:
    """The ``annotations/*.json`` files of a tree, the suffix in any case (``.JSON`` too), but
    panoptic files (``is_panoptic_file``: the ``coco-panoptic`` layout's)."""
    folder = Path(root, "annotations")
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.iterdir() if p.suffix.lower() == ".json" and not p.is_dir() and not is_panoptic_file(p)
    )


def shape(root: str | Path) -> Shape:
    """The shape of the tree at ``root``: an export when it has ``images/`` or no file named as
    COCO and LVIS name theirs (every file of ``annotations/`` an annotator's), else the collection as COCO and LVIS distribute it
    (``DISTRIBUTED``: one annotator's file per split, each COCO file's images in its split's folder
    and LVIS's in ``COCO_FOLDERS``; the other files left alone)."""
    root = Path(root)
    files = json_files(root)
    prefixes = {p: next((k for k in DISTRIBUTED if p.stem.startswith(k) and len(p.stem) > len(k)), None) for p in files}
    if (root / "images").is_dir() or not any(prefixes.values()):
        return Shape("images/", None, tuple(Source(p.stem, p, f"annotations/{p.name}") for p in files))
    sources, left, folders = [], [], set()
    for path in files:
        prefix = prefixes[path]
        if prefix is None:
            left.append(f"annotations/{path.name}")
            continue
        annotator, by_url = DISTRIBUTED[prefix]
        split = path.stem.removeprefix(prefix)
        folder = "" if by_url else f"{split}/"
        sources.append(Source(annotator, path, f"annotations/{path.name}", folder, split, by_url))
        folders |= {f for f in COCO_FOLDERS if (root / f).is_dir()} if by_url else {split}
    return Shape("", tuple(sorted(f for f in folders if (root / f).is_dir())), tuple(sources), tuple(left))


def image_files(root: Path, the_shape: Shape | None = None) -> list[str]:
    """Every file below the tree's image base (``shape``: ``images/``, or COCO's split folders),
    subfolders included, as its name there (the ``file_name`` an annotator lists it by, its
    split's folder first in COCO's own tree), sorted; linked folders are listed, not followed."""
    found = []
    the_shape = the_shape or shape(root)
    for top in the_shape.folders if the_shape.folders is not None else ("",):
        base = os.path.join(os.fspath(root), the_shape.base, top)
        for folder, dirs, files in os.walk(base):
            dirs.sort()
            rel = os.path.relpath(folder, os.path.join(os.fspath(root), the_shape.base)).replace(os.sep, "/")
            prefix = "" if rel == "." else f"{rel}/"
            found += [prefix + f for f in files]
            found += [prefix + d for d in dirs if os.path.islink(os.path.join(folder, d))]  # rejected by name
    return sorted(found)


def shard_count(images: int, size: int) -> int:
    """Runs of ``size`` over ``images`` images: at least one."""
    return max(1, -(-images // size))


@dataclass(frozen=True)
class Plan:
    """The shards of a tree: runs of ``size`` names of ``on_disk`` (sorted image files), and the
    tree's ``shape`` they were listed by."""

    on_disk: list[str]
    size: int
    shape: Shape = Shape("images/", None, ())  # an export's, without its files

    @property
    def count(self) -> int:
        return shard_count(len(self.on_disk), self.size)

    def names(self) -> list[str]:
        return shard_names(self.count)

    def shard_of(self, name: str) -> int:
        """The shard of a file name, on disk or not: its rank among the files on disk, by runs."""
        return min(self.count - 1, bisect.bisect_left(self.on_disk, name) // self.size)

    def run(self, shard: int) -> list[str]:
        """The names on disk of shard ``shard``."""
        return self.on_disk[shard * self.size : (shard + 1) * self.size]


def plan(root: str | Path, shard_size: int | None) -> Plan:
    """The shards of the tree at ``root`` with ``shard_size`` images each (None: the default)."""
    the_shape = shape(root)
    on_disk = image_files(Path(root), the_shape)
    return Plan(on_disk, shard_size or default_shard_size(len(on_disk)), the_shape)


def is_id(value: object) -> TypeGuard[int]:
    """Whether ``value`` can be a COCO id: an integer (not a boolean, a list or a string)."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class Piece:
    """What a shard gets from the files: its ledger (what the file-wide checks counted and
    rejected), listings and annotation rows."""

    ledger: Ledger
    listed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # name -> annotators
    entries: dict[str, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))  # name -> annotator -> entry
    files: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))  # name -> annotator -> file
    positions: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))  # name -> annotator -> n
    splits: dict[str, str] = field(default_factory=dict)  # name -> the split its file holds, where named
    rows: list[tuple[str, str, int, str]] = field(default_factory=list)


def _items(path: Path, prefix: str) -> Iterator[object]:
    """The values at ``prefix`` of the JSON file ``path``, streamed; one-line IngestErrors."""
    try:
        with path.open("rb") as f:
            yield from ijson.items(f, prefix, use_float=True)
    except ijson.JSONError as exc:
        again = "export COCO instances from the tool again"
        said = errors.streamed_json_problem(exc, again, "write the file with allow_nan=False, or null", again)
        raise IngestError(f"{path}: {said}") from None


# SA-Co/Gold's file names: gold_<subset>_merged_<annotator>_release_<split>.json
SACO_FILE = re.compile(r"gold_(?P<subset>.+)_merged_(?P<annotator>.+)_release_(?P<split>[A-Za-z0-9]+)")
PAIRS_LOOKED_AT = 100  # images entries read to tell a pairs file from an instances file


def holds_pairs(path: Path) -> bool:
    """Whether a COCO-shaped file's ``images`` are (image, noun phrase) pairs, as SA-Co's files
    are: named as SA-Co/Gold names them (``SACO_FILE``), or one of its first ``PAIRS_LOOKED_AT``
    images entries has a ``text_input``; the ``saco`` layout's, not an instances file. A file
    that is not JSON is an instances file's problem."""
    if SACO_FILE.fullmatch(path.stem):
        return True
    try:
        with path.open("rb") as f:
            entries = itertools.islice(ijson.items(f, "images.item", use_float=True), PAIRS_LOOKED_AT)
            return any(isinstance(entry, dict) and "text_input" in entry for entry in entries)
    except (ijson.JSONError, OSError, UnicodeDecodeError):
        return False


def top_level(path: Path, key: str) -> object:
    """The value of the top-level ``key`` (the last, when given twice, as ``json`` reads it), or None."""
    values = deque(_items(path, key), maxlen=1)
    return values[0] if values else None


def streamed_annotations(path: Path) -> Iterator[object]:
    """The items of a file's ``annotations`` list, one at a time."""
    return _items(path, "annotations.item")


def _annotations_are_a_list(path: Path) -> bool:
    """Whether the top-level object has an ``annotations`` list: events are read up to its start."""
    with path.open("rb") as f:  # read whole already (check_file): it parses
        for n, (prefix, event, _) in enumerate(ijson.parse(f)):
            if n == 0 and event != "start_map":
                return False
            if prefix == "annotations":
                return bool(event == "start_array")
    return False


def check_file(path: Path) -> tuple[list[Any], list[Any]]:
    """The ``images`` and ``categories`` lists of a COCO instances file (``categories`` may be
    absent: a segmentation without categories); raises IngestError with one line when the file
    is not one."""
    images, categories = top_level(path, "images"), top_level(path, "categories")
    categories = [] if categories is None else categories
    if not isinstance(images, list) or not isinstance(categories, list) or not _annotations_are_a_list(path):
        raise IngestError(f"{path}: a COCO instances file needs the lists images, annotations and categories")
    return images, categories


def licenses(path: Path) -> dict[str, dict[str, str | None]]:
    """The file's ``licenses`` table by id (``licence_table``)."""
    return licence_table(top_level(path, "licenses"))


def licence_table(listed: object) -> dict[str, dict[str, str | None]]:
    """A file's ``licenses`` value as a table by id (as text, for JSON): each licence's ``name``
    and ``url`` where they are text; entries without an integer id are left out."""
    found = {}
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, dict) and is_id(entry.get("id")):
            name, url = entry.get("name"), entry.get("url")
            found[str(entry["id"])] = {
                "name": name if isinstance(name, str) and name else None,
                "url": url if isinstance(url, str) and url else None,
            }
    return dict(sorted(found.items()))


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _categories(listed: list[Any]) -> tuple[dict[int, str], dict[int, list[str]], list[int]]:
    """Category id -> name for ids naming one category, id -> names for those naming several,
    and the ids listed more than once (under one name or several)."""
    names_of: dict[int, set[str]] = defaultdict(set)
    times: Counter[int] = Counter()
    for c in listed:
        if isinstance(c, dict) and is_id(c.get("id")):
            names_of[c["id"]].add(c["name"] if isinstance(c.get("name"), str) else "")
            times[c["id"]] += 1
    return (
        {i: next(iter(n)) for i, n in names_of.items() if len(n) == 1},
        {i: sorted(n) for i, n in names_of.items() if len(n) > 1},
        sorted(i for i, n in times.items() if n > 1),
    )


def uncategorised(annotation: dict[Any, Any]) -> bool:
    """Whether an annotation is a segment without a category (no ``category_id``, or null)."""
    return annotation.get("category_id") is None


def alike_files(contents: Mapping[str, str]) -> list[str]:
    """Each annotator file that says what an earlier one (in name order) says, its ``info``
    aside (``contents``: annotator -> digest of its images, categories and annotations),
    named with the first: one annotator's work under two names, which would count as two
    annotators who agree perfectly."""
    first: dict[str, str] = {}
    out = []
    for annotator in sorted(contents):
        earlier = first.setdefault(contents[annotator], annotator)
        if earlier != annotator:
            out.append(
                f"annotations/{annotator}.json says what annotations/{earlier}.json says (its info aside): "
                "one annotator twice? remove one of the files"
            )
    return out


def _image_entry_problem(im: Any, owner: str | None, entries: dict[int, list[str]], named_by: str) -> str | None:
    """What is wrong with an ``images`` entry (``owner`` its file name, from its ``named_by``
    field; ``entries`` every id's file names in the file), or None."""
    if not isinstance(im, dict):
        return "an images entry that is not a JSON object"
    if owner is None:
        return f"{named_by} {im.get(named_by)!r} is not a file name"
    if not is_id(im.get("id")):
        return f"image id {im.get('id')!r} is not an integer"
    if len(entries[im["id"]]) > 1:
        return f"image id {im['id']} is listed for {' and '.join(sorted(set(entries[im['id']])))}"
    return None


def _annotation_problem(
    ann: Any,
    name: str | None,
    image_listed_twice: bool,
    seen_ids: set[int],
    categories: dict[int, str],
    ambiguous: dict[int, list[str]],
) -> str | None:
    """What is wrong with an ``annotations`` entry (``name`` its image's file, None when its id
    names none), or None."""
    if not isinstance(ann, dict):
        return "an annotations entry that is not a JSON object"
    image_id = ann.get("image_id")
    if name is None and is_id(image_id) and image_listed_twice:
        return f"its image id {image_id} is listed for several files in this file"
    if name is None:
        return f"annotation for unknown image id {image_id!r}"
    if not is_id(ann.get("id")) or ann["id"] in seen_ids:
        return "annotation id missing or used twice in this file"
    if not uncategorised(ann) and not is_id(ann.get("category_id")):
        return f"category id {ann.get('category_id')!r} is not an integer"
    if not uncategorised(ann) and categories.get(ann["category_id"]) == "":
        return f"category {ann['category_id']} has no name (or one that is not text); name the category"
    if ann.get("category_id") in ambiguous:
        names = ", ".join(ambiguous[ann["category_id"]])
        return f"category id {ann['category_id']} names several categories ({names}); give each its own id"
    return None


class Splitter:
    """The pieces being made: one ledger and listing per shard, annotation rows buffered and
    written in parts to each shard's Parquet file under ``staging``."""

    def __init__(self, root: Path, the_plan: Plan, staging: Path) -> None:
        self.plan, self.staging = the_plan, staging
        self.pieces = [Piece(Ledger(root)) for _ in range(the_plan.count)]
        self.writers: dict[int, pq.ParquetWriter] = {}
        self.buffered = 0
        self.categories: dict[str, dict[Any, Any]] = {}
        self.contents: dict[str, Any] = {}  # annotator -> digest of its files, info aside
        self.listed: Counter[str] = Counter()  # annotator -> images entries read so far, over its files

    def count(self, source: Source, item: str, key: str, owner: str | None, problem: str | None) -> int:
        """Count an item of ``source`` in the shard that owns it (shard 0 for one no image owns)
        and reject it with ``problem``; returns the shard."""
        shard = self.plan.shard_of(owner) if owner is not None else 0
        ledger = self.pieces[shard].ledger
        ledger.seen[(source.annotator, item)] += 1
        if problem is not None:
            ledger.reject(source.shown, key, item, problem, source.annotator)
        return shard

    def _file_categories(self, source: Source, listed: list[Any]) -> tuple[dict[int, str], dict[int, list[str]]]:
        """A file's categories (id -> name, and the ids naming several), kept for its annotator;
        an annotator's split files must name one set of categories."""
        categories, ambiguous, repeated = _categories(listed)
        mine: dict[str, Any] = {
            "names": {str(i): n for i, n in sorted(categories.items())},
            "ambiguous": {str(i): n for i, n in sorted(ambiguous.items())},
            "listed_twice": repeated,
            "licenses": licenses(source.path),
        }
        earlier = self.categories.get(source.annotator)
        if earlier is None:
            self.categories[source.annotator] = mine
        elif (earlier["names"], earlier["ambiguous"]) != (mine["names"], mine["ambiguous"]):
            raise IngestError(
                f"{source.shown}: its categories differ from those of the annotator's other split files "
                f"({source.annotator}); give every split file the same categories"
            )
        else:
            earlier["licenses"] = dict(sorted({**mine["licenses"], **earlier["licenses"]}.items()))
        return categories, ambiguous

    def read(self, source: Source) -> None:
        """One instances file: its images entries, categories and annotations, in that order."""
        annotator, path = source.annotator, source.path
        images, listed_categories = check_file(path)
        categories, ambiguous = self._file_categories(source, listed_categories)
        # What the files say, their info aside: two annotator files alike are one annotator twice.
        content = self.contents.setdefault(annotator, hashlib.sha256())
        content.update(json.dumps([images, listed_categories], sort_keys=True).encode())
        entries: dict[int, list[str]] = defaultdict(list)
        for im in images:
            if isinstance(im, dict) and is_id(im.get("id")) and (name := source.name_of(im)):
                entries[im["id"]].append(name)
        for n, im in enumerate(images):
            owner = source.name_of(im) if isinstance(im, dict) else None
            problem = _image_entry_problem(im, owner, entries, "coco_url" if source.by_url else "file_name")
            key = f"images[{n}]" if owner is None else owner
            shard = self.count(source, "image-entry", key, owner, problem and f"{problem}; fix the entry")
            if problem is None and owner is not None:
                piece = self.pieces[shard]
                piece.listed[owner].append(annotator)
                piece.entries[owner][annotator] = im  # its id and licence, for the release
                piece.files[owner][annotator] = source.shown
                # where the annotator's files list it (files in name order): the order a tool
                # that walks the file meets the images in, which its ties follow (tidecv's)
                piece.positions[owner][annotator] = self.listed[annotator] + n
                if source.split is not None:
                    piece.splits[owner] = source.split
        self.listed[annotator] += len(images)
        by_coco_id = {i: names[0] for i, names in entries.items() if len(names) == 1}
        several = {i for i, names in entries.items() if len(names) > 1}
        del images, entries

        seen_ids: set[int] = set()
        for n, ann in enumerate(streamed_annotations(path)):
            # One dump per annotation: the file's digest and, when accepted, the shard's row.
            text = json.dumps(ann, sort_keys=True, separators=(",", ":"))
            content.update(text.encode())
            image_id = ann.get("image_id") if isinstance(ann, dict) else None
            name = by_coco_id.get(image_id) if is_id(image_id) else None
            key = f"{name or image_id}/{ann.get('id', n) if isinstance(ann, dict) else n}"
            twice = is_id(image_id) and image_id in several
            problem = _annotation_problem(ann, name, twice, seen_ids, categories, ambiguous)
            shard = self.count(source, "region", key, name, problem)
            if problem is None and isinstance(ann, dict) and name is not None:  # what the checks made sure of
                seen_ids.add(ann["id"])
                self.pieces[shard].rows.append((annotator, name, ann["id"], text))
                self.buffered += len(text)
                if self.buffered > BUFFER_CHARS:
                    self.flush()

    def flush(self) -> None:
        """Write every shard's buffered annotation rows as a part of its Parquet file."""
        for shard, piece in enumerate(self.pieces):
            if piece.rows or shard not in self.writers:
                columns: list[Sequence[Any]] = list(zip(*piece.rows, strict=True)) if piece.rows else [[], [], [], []]
                batch = pa.table(dict(zip(ANNOTATION_ROWS.names, columns, strict=True)), schema=ANNOTATION_ROWS)
                if shard not in self.writers:
                    folder = self.staging / self.plan.names()[shard]
                    folder.mkdir(parents=True, exist_ok=True)
                    self.writers[shard] = pq.ParquetWriter(folder / ANNOTATIONS, ANNOTATION_ROWS, compression="zstd")
                if piece.rows:
                    self.writers[shard].write_table(batch)
                piece.rows = []
        self.buffered = 0

    def finish(self, annotators: list[str], same_id: dict[str, list[str]], left_alone: Sequence[str]) -> None:
        """Close the Parquet files and write each shard's ``shard.json`` (the first with the
        files' findings as a whole: alike files, the files ``left_alone``)."""
        self.flush()
        for writer in self.writers.values():
            writer.close()
        on_disk = set(self.plan.on_disk)
        for shard, piece in enumerate(self.pieces):
            names = sorted(set(self.plan.run(shard)) | set(piece.listed))
            record = {
                "annotators": annotators,
                "categories": self.categories,
                "names": [
                    {
                        "name": name,
                        "on_disk": name in on_disk,
                        "listed_by": sorted(piece.listed.get(name, [])),
                        "entries": dict(sorted(piece.entries.get(name, {}).items())),
                        "files": dict(sorted(piece.files.get(name, {}).items())),
                        "positions": dict(sorted(piece.positions.get(name, {}).items())),
                        "split": piece.splits.get(name),
                        "same_id": same_id.get(name, []),
                    }
                    for name in names
                ],
                "rejects": piece.ledger.rejects,
                "seen": sorted([*key, n] for key, n in piece.ledger.seen.items()),
            }
            if shard == 0:  # the files' findings as a whole, for the first shard alone
                record["alike"] = alike_files({a: c.hexdigest() for a, c in self.contents.items()})
                record["left_alone"] = list(left_alone)
            # ASCII escapes: a file name that is not UTF-8 on disk (lone surrogates) survives the trip
            text = json.dumps(record, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
            (self.staging / self.plan.names()[shard] / SHARD).write_text(text + "\n", encoding="utf-8")


def split(
    root: str | Path,
    sources: Sequence[Source],
    out: str | Path,
    shard_size: int | None,
    splitter: Callable[[Path, Plan, Path], Splitter] | None = None,
) -> dict[Any, Any]:
    """Write the pieces of every shard of the tree at ``root`` to ``out/<shard>/`` (unchanged
    ones left as they are, those of shards that no longer exist removed) from its instances
    files ``sources`` (checked by the caller), each read by ``splitter`` (default ``Splitter``:
    COCO instances files; ``io.saco`` reads SA-Co's pairs files so); returns the index also
    written to ``out/index.json``: the shards, the annotators and each piece's sha256."""
    root, out = Path(root), Path(out)
    annotators = list(dict.fromkeys(source.annotator for source in sources))
    the_plan = plan(root, shard_size)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        reader = (splitter or Splitter)(root, the_plan, staging)
        for source in sources:
            reader.read(source)
        # File names whose stems give one image id (0984.jpg, 984.jpg, 984.png): none can be the image.
        everyone = set(the_plan.on_disk).union(*(p.listed for p in reader.pieces))
        by_id: dict[int, list[str]] = defaultdict(list)
        for name in sorted(everyone):
            by_id[image_id_of(name)].append(name)
        same_id = {name: names for names in by_id.values() if len(names) > 1 for name in names}
        reader.finish(annotators, same_id, the_plan.shape.left_alone)
        digests: dict[str, dict[str, str]] = {}
        for shard in the_plan.names():
            digests[shard] = {}
            for piece in PIECES:
                new, old = staging / shard / piece, out / shard / piece
                digests[shard][piece] = file_digest(new)
                if not old.is_file() or file_digest(old) != digests[shard][piece]:
                    old.parent.mkdir(exist_ok=True)
                    os.replace(new, old)
        for stale in out.iterdir():
            if stale.is_dir() and stale.name not in digests and not stale.name.startswith(".staging-"):
                shutil.rmtree(stale)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    index = {"annotators": annotators, "shard_size": the_plan.size, "pieces": digests}
    (out / INDEX).write_text(json.dumps(index, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return index


def read_piece(folder: str | Path) -> tuple[dict[Any, Any], pa.Table]:
    """A shard's piece: its ``shard.json`` record and its annotation rows."""
    folder = Path(folder)
    record = json.loads((folder / SHARD).read_text(encoding="utf-8"))
    return record, pq.read_table(folder / ANNOTATIONS, schema=ANNOTATION_ROWS)
