"""Ingest of the SAIAPR TC-12 layout (docs/inputs.md), one folder shard at a time.

``FolderReader`` reads ``<root>/NN`` into accepted images with their regions, and rejects. Nothing is dropped silently: every image file, every image a label row names, every
region key (from label rows or mask files), every malformed row and every caption ends either
accepted or in the rejects table with a reason, and the shard report counts both sides.
Quirks of the official files that are not errors (string-ordered rows, trailing blank lines,
ontology-path spelling, grayscale JPEGs, whole-image regions) are counted in the report.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core import numbers, tables
from regionbench.io import images as images_io
from regionbench.io.layouts import ImageRecord, Reading
from regionbench.io.matlab import read_mat
from regionbench.io.saiapr import text
from regionbench.io.saiapr.writer import MASK_VARIABLE
from regionbench.io.shards import IngestError, Ledger, image_row, region_row, trees_state

ANNOTATOR = "saiapr"
IMAGE_NAME = re.compile(r"([0-9]{1,18})\.jpg", re.IGNORECASE)
MASK_NAME = re.compile(r"([0-9]{1,18})_([0-9]{1,18})\.mat")
CAPTION_NAME = re.compile(r"([0-9]{1,18})\.eng")
IMAGE_FORMATS, IMAGE_MODES = ("JPEG",), ("RGB", "L")  # the collection's 8-bit colour and gray JPEGs


@dataclass
class _Ledger(Ledger):
    """A shard's ledger and what its ontology rows say of the hierarchy."""

    parent_counts: dict[str, Counter[Any]] = field(default_factory=lambda: defaultdict(Counter))
    interior: set[str] = field(default_factory=set)  # nodes seen above another node in a path


def _key_name(key: int | tuple[int, ...]) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _files_by_key(
    entries: list[Path], pattern: re.Pattern[str], item: str, spelling: str, ledger: _Ledger
) -> tuple[dict[Any, Any], set[Any]]:
    """The files of ``entries`` by their canonical key (the integers of ``pattern``'s groups),
    and every key a file claims. A file whose name does not match, a folder, a link out of the
    tree, and every file of a key that several files claim (``0984.jpg`` beside ``984.jpg``) is
    a reject of ``item`` with its reason; ``spelling`` shows the expected name."""
    claims: dict[Any, Any] = {}
    usable: set[Path] = set()
    for path in entries:
        m = pattern.fullmatch(path.name)
        if m is None:
            ledger.reject(path, path.name, item, f"not named {spelling} (ASCII digits)")
            continue
        key = int(m.group(1)) if pattern.groups == 1 else tuple(int(g) for g in m.groups())
        claims.setdefault(key, []).append(path)
        if path.is_dir():
            reason = f"a folder, not a file named {spelling}; move or rename it"
        elif not path.exists():
            reason = "a dangling link (it points to nothing); copy the file in"
        elif not images_io.inside(ledger.root, path):
            reason = "path escapes the collection root (symlink); copy the file in"
        else:
            usable.add(path)
            continue
        ledger.reject(path, _key_name(key), item, reason)
    out = {}
    for key, paths in sorted(claims.items()):
        if len(paths) > 1:
            names = " and ".join(p.name for p in paths)
            for path in (p for p in paths if p in usable):
                ledger.reject(path, _key_name(key), item, f"{names} both name {item} {_key_name(key)}; keep one")
        elif paths[0] in usable:
            out[key] = paths[0]
    return out, set(claims)


def image_files(root: Path) -> list[tuple[str, str]]:
    """(folder, name) of every entry of every folder shard's ``images/`` (folders named by ASCII
    digits), sorted. Listed as strings: each shard asks for the whole tree's names, and path
    objects cost several times the listing."""
    found = []
    try:
        folders = [entry.name for entry in os.scandir(root) if numbers.is_id(entry.name) and entry.is_dir()]
    except OSError:
        return []
    for folder in folders:
        try:
            found += [(folder, name) for name in os.listdir(os.path.join(root, folder, "images"))]
        except OSError:  # no images/ folder (or unreadable): nothing listed, as a glob lists nothing
            continue
    return sorted(found)


def _elsewhere(root: Path, folder: str) -> dict[int, str]:
    """Image id -> the first file naming it in another folder shard of the tree (names only)."""
    found: dict[int, str] = {}
    for other, name in image_files(root):
        if other != folder and (m := IMAGE_NAME.fullmatch(name)):
            found.setdefault(int(m.group(1)), f"{other}/images/{name}")
    return found


def image_names_state(root: str | Path) -> str:
    """sha256 of the names of every folder shard's images: a shard reruns when an image that
    may share its id appears or goes in another folder."""
    names = [f"{folder}/images/{name}" for folder, name in image_files(Path(root))]
    return hashlib.sha256(os.fsencode("\n".join(names))).hexdigest()  # names need not be UTF-8


def _read_label_rows(path: Path, ledger: _Ledger) -> tuple[dict[tuple[int, int], tuple[int, int]], set[Any]]:
    """Label rows as key -> (label id, line number), and the keys whose rows disagree.

    Malformed and duplicate rows go to rejects; a region whose rows disagree on the label is
    rejected whole."""
    rows: dict[tuple[int, int], tuple[int, int]] = {}
    conflicting: set[tuple[int, int]] = set()
    if not _present(path, ledger):
        return rows, conflicting
    lines = _official_lines(path, ledger)
    order = []
    for n, line in enumerate(lines, start=1):
        parts = line.split()
        if len(parts) != 3 or not all(numbers.is_id(p) for p in parts):
            ledger.reject(
                f"{path.relative_to(ledger.root).as_posix()}:{n}",
                f"line {n}",
                "label-row",
                f"expected 'image_id<TAB>region_id<TAB>label_id', got {line.strip()[:60]!r}",
            )
            continue
        image_id, region_id, label_id = map(int, parts)
        key = (image_id, region_id)
        order.append(image_id)
        if key in rows:
            first_label, first_line = rows[key]
            reason = f"duplicate of line {first_line}"
            if first_label != label_id:
                conflicting.add(key)
                reason += f" with a different label ({first_label} vs {label_id})"
            ledger.reject(
                f"{path.relative_to(ledger.root).as_posix()}:{n}", f"{image_id}/{region_id}", "label-row", reason
            )
            continue
        rows[key] = (label_id, n)
    if order != sorted(order):
        ledger.quirks["rows_not_in_numeric_order"] += 1
    for key in sorted(conflicting):
        label_id, n = rows.pop(key)
        ledger.reject(
            f"{path.relative_to(ledger.root).as_posix()}:{n}",
            f"{key[0]}/{key[1]}",
            "region",
            "rows for this region disagree on the label; keep one row",
        )
    return rows, conflicting


def _present(path: Path, ledger: _Ledger) -> bool:
    """Whether the official text file ``path`` is there to read (absent: False); a folder or a
    dangling link in its place is a LayoutError naming it, never a file silently missing."""
    if path.is_file():
        return True
    if not path.exists() and not path.is_symlink():
        return False
    rel = path.relative_to(ledger.root).as_posix()
    kind = "a folder" if path.is_dir() else "a dangling link (it points to nothing)"
    raise text.LayoutError(f"{rel}: {kind}, not a file; put the file itself there")


def _official_lines(path: Path, ledger: _Ledger) -> list[str]:
    """Lines of an official text file; trailing blank lines are dropped and a byte order mark
    removed, each counted as a quirk. A file linked from outside the tree is not read."""
    if not images_io.inside(ledger.root, path):
        raise text.LayoutError(f"{path.relative_to(ledger.root)}: links outside the raw tree; copy the file in")
    lines, trailing, bom = text.official_lines(path)
    if trailing:
        ledger.quirks["trailing_blank_lines"] += trailing
    if bom:
        ledger.quirks["byte_order_marks_removed"] += 1
    return lines


def _read_ontology(path: Path, ledger: _Ledger) -> dict[tuple[int, int], str]:
    """Normalised ontology path per region key (``entity->humans->group-of-persons``). Rows that
    give one region different paths are all rejected, and the region has no path."""
    paths: dict[tuple[int, int], str] = {}
    first: dict[tuple[int, int], int] = {}  # key -> line of its first row
    conflicted: set[tuple[int, int]] = set()
    if not _present(path, ledger):
        return paths
    for n, row in enumerate(text.ontology_rows(lines := _official_lines(path, ledger)), start=1):
        if row is None:
            ledger.reject(
                f"{path.relative_to(ledger.root).as_posix()}:{n}",
                f"line {n}",
                "ontology-row",
                f"expected 'image_id<TAB>region_id<TAB>path' (ids in ASCII digits), got {lines[n - 1].strip()[:60]!r}",
            )
            continue
        image_id, region_id, entry = row
        key, spelled = (image_id, region_id), "->".join(entry.nodes)
        if key in first and (key in conflicted or paths[key] != spelled):
            where = f"{path.relative_to(ledger.root).as_posix()}:"
            reason = f"region {image_id}/{region_id} has rows with other paths (lines {first[key]}, {n}); keep one"
            for line in [n] if key in conflicted else [first[key], n]:
                ledger.reject(f"{where}{line}", f"line {line}", "ontology-row", reason)
            conflicted.add(key)
            continue
        first.setdefault(key, n)
        for q in entry.quirks:
            ledger.quirks[f"ontology_{q}"] += 1
        for parent, child in itertools.pairwise(entry.nodes):
            ledger.parent_counts[child].update([parent])
        ledger.interior.update(entry.nodes[:-1])
        paths[key] = spelled
    return {k: v for k, v in paths.items() if k not in conflicted}


def _read_mask(path: Path, height: int, width: int) -> np.ndarray:
    """Boolean region mask from a ``segimg_t`` MAT file; raises ValueError with a reason."""
    try:
        variables = read_mat(path)
    except Exception as exc:  # scipy raises many types for corrupt files
        raise ValueError(f"unreadable MAT file: {exc}") from None
    if MASK_VARIABLE not in variables:
        found = ", ".join(sorted(variables)) or "none"
        raise ValueError(f"no variable {MASK_VARIABLE!r} (found: {found})")
    seg = np.asarray(variables[MASK_VARIABLE])
    if not np.issubdtype(seg.dtype, np.number) or np.issubdtype(seg.dtype, np.complexfloating):
        raise ValueError(
            f"{MASK_VARIABLE} is not a real numeric matrix (it holds {seg.dtype.name}); save it as doubles 0 and -1"
        )
    if seg.shape != (height, width):
        shape = "x".join(map(str, seg.shape)) or "a scalar"
        raise ValueError(f"mask shape {shape} ({seg.ndim}-D) differs from the image's {height}x{width}")
    mask: np.ndarray = seg == 0
    inside = np.count_nonzero(mask)
    if inside + np.count_nonzero(seg == -1) != seg.size:  # two counts: a third of isin's passes
        bad = np.unique(seg[~np.isin(seg, (0, -1))])[:3]
        raise ValueError(f"mask values must be 0 (inside) or -1 (outside); found {bad.tolist()}")
    if not inside:
        raise ValueError("empty mask (no pixel is 0)")
    return mask


def folder_state(root: str | Path, folder: str) -> str:
    """Fingerprint (``io.shards.trees_state``) of every file ingest reads for folder shard
    ``folder``: the folder's own tree and its captions. A file added, removed, replaced or
    touched changes it, and the workflow reruns the shard."""
    return trees_state(root, (folder, f"annotations_complete_eng/{folder}"))


@dataclass
class _Regions:
    """A folder shard's region keys, each checked in turn: ``accept`` rejects a key with its
    reason, or reads its mask and keeps its ``regions`` row."""

    base: Path
    rows: dict[tuple[int, int], tuple[int, int]]  # key -> (label id, line of labels.txt)
    mask_files: dict[tuple[int, int], Path]
    words: dict[int, str]
    ontology: dict[tuple[int, int], str]
    ledger: _Ledger
    official: dict[tuple[int, int], np.ndarray] | None = None  # features.txt rows: a folder without masks
    ids: Mapping[str, int] | None = None  # the release's label ids (None: wlist.txt's)
    accepted: list[dict[Any, Any]] = field(default_factory=list)

    def accept(
        self, key: tuple[int, int], image: images_io.DecodedImage | None, lost: str = ""
    ) -> tuple[dict[Any, Any], np.ndarray | None] | None:
        """The row and mask of region ``key`` of ``image``, or None with the key rejected. Without
        an image (None) the region is rejected with ``lost``, the image's own reason. In a folder
        without ``segmentation_masks/`` (``official`` set) a region is its label and its official
        features, and has no mask."""
        image_id, region_id = key
        name = f"{image_id}/{region_id}"
        path = self.mask_files.get(key, self.base / "segmentation_masks" / f"{image_id}_{region_id}.mat")
        reason = None
        if image is None:  # first: whatever else the region lacks, it has no image to be part of
            reason = f"its image {lost}"
        elif key not in self.rows:
            reason = "mask without a row in labels.txt; add the row or remove the file"
        else:
            label_id, line = self.rows[key]
            if self.official is not None:
                if len(self.official.get(key, ())) != len(tables.FEATURE_NAMES):
                    reason = (
                        f"labels.txt line {line}: no mask (the folder has no segmentation_masks/) and no "
                        f"features.txt row of {len(tables.FEATURE_NAMES)} values; add either"
                    )
            elif key not in self.mask_files:
                reason = f"labels.txt line {line} has no mask file"
            elif label_id not in self.words:
                reason = f"unknown label id {label_id} (labels.txt line {line}); add it to wlist.txt"
            elif self.ids is not None and self.words[label_id] not in self.ids:
                reason = (
                    f"label {self.words[label_id]!r} (wlist.txt id {label_id}, labels.txt line {line}) is not a "
                    "vocabulary label; add it to the vocabulary folder or leave vocabulary_dir unset"
                )
        mask = None
        if reason is None and self.official is None and image is not None:
            try:
                mask = _read_mask(path, image.height, image.width)
            except ValueError as exc:
                reason = str(exc)
        if reason is not None:
            self.ledger.reject(path, name, "region", reason)
            return None
        if mask is not None and mask.all():
            self.ledger.quirks["whole_image_regions"] += 1
        # one id space per release: the vocabulary's id, wlist.txt's kept as the source's own
        label = self.words[label_id]
        release_id = label_id if self.ids is None else self.ids[label]
        row = region_row(
            image_id, ANNOTATOR, region_id, release_id, label, mask, self.ontology.get(key), category_id=label_id
        )
        self.accepted.append(row)
        return row, mask


class FolderReader:
    """One folder shard ``<root>/<folder>`` of a SAIAPR tree being read
    (``io.layouts.ShardReader``): its text files are read on construction, its images one at a
    time by ``records``, its captions after them. ``ids`` (label -> the release's id) numbers the
    regions' labels; None: by ``wlist.txt``."""

    annotators = (ANNOTATOR,)

    def __init__(
        self,
        root: str | Path,
        folder: str,
        reading: Reading | None = None,
        ids: Mapping[str, int] | None = None,
    ) -> None:
        self.root, self.folder = Path(root), folder
        self.base = base = self.root / folder
        if not base.is_dir():
            raise IngestError(f"{base}: folder shard missing; check raw_dir and the folder list")
        self.reading = reading or Reading()
        words = text.read_wordlist(self.root / "wlist.txt")
        self.ledger = ledger = _Ledger(self.root)
        self.rows, conflicted = _read_label_rows(base / "labels.txt", ledger)
        ontology = _read_ontology(base / "ontology_path.txt", ledger)

        # Images: every file in images/ and every image a label row names, by canonical id.
        self.image_entries = sorted((base / "images").glob("*"))
        self.files, self.named = _files_by_key(self.image_entries, IMAGE_NAME, "image", "'<image_id>.jpg'", ledger)
        self.elsewhere = _elsewhere(self.root, folder)
        for image_id in sorted(set(self.files) & set(self.elsewhere)):
            path = self.files.pop(image_id)
            ledger.reject(path, str(image_id), "image", f"also in {self.elsewhere[image_id]}; keep one")
        # Without segmentation_masks/ the folder is released by its labels and official features.
        self.labels_only = bool(self.rows) and not (base / "segmentation_masks").is_dir()
        present = _present(base / "features.txt", ledger)
        self.official = text.read_features_txt(base / "features.txt") if present else {}
        self.mask_entries = sorted((base / "segmentation_masks").glob("*"))
        mask_files, self.claimed = _files_by_key(
            self.mask_entries, MASK_NAME, "region", "'<image_id>_<region_id>.mat'", ledger
        )
        # Every key from a label row or a mask file, but those already rejected: rows that
        # disagree, mask files unusable.
        self.conflicted = conflicted
        self.keys_of: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for key in sorted((set(self.rows) | set(mask_files)) - conflicted - (self.claimed - set(mask_files))):
            self.keys_of[key[0]].append(key)
        official = self.official if self.labels_only else None
        self.regions = _Regions(base, self.rows, mask_files, words, ontology, ledger, official, ids)
        self.images: dict[int, dict[Any, Any]] = {}

    def records(self) -> Iterator[ImageRecord]:
        """Each accepted image with its regions, read with its masks; then the rejects of what
        no image took (images named but missing, regions of rejected images) and the captions."""
        ledger = self.ledger
        for image_id in sorted(self.files):
            path = self.files[image_id]
            try:
                image = self.reading.read_image(self.root, path, IMAGE_FORMATS, IMAGE_MODES)
            except ValueError as exc:
                ledger.reject(path, str(image_id), "image", str(exc))
                continue
            row = image_row(image_id, self.folder, path.relative_to(self.root).as_posix(), image)
            if self.folder.isdigit() and image_id // 1000 != int(self.folder):  # NN holds NN000-NN999
                ledger.quirk("image_in_another_folder", path)
            self.images[image_id] = row
            read = [found for key in self.keys_of.pop(image_id, []) if (found := self.regions.accept(key, image))]
            known = {
                (ANNOTATOR, r["region_id"]): self.official[(image_id, r["region_id"])]
                for r, mask in read
                if mask is None
            }
            yield ImageRecord(row["path"], image, row, read, self.annotators, known)
        for image_id in sorted({k[0] for k in self.rows} - self.named):
            missing = self.base / "images" / f"{image_id}.jpg"
            ledger.reject(missing, str(image_id), "image", "labels.txt names this image but its file is missing")
        lost: dict[int, str] = {}  # image id -> why it is not in the release, the first reason given
        for r in ledger.rejects:
            if r["item"] == "image" and numbers.is_id(r["key"]):
                lost.setdefault(int(r["key"]), f"was rejected ({r['source']}: {r['reason']})")
        for image_id, keys in self.keys_of.items():  # regions of images rejected or missing
            for key in keys:
                self.regions.accept(key, None, lost.get(image_id, "was not read"))
        self.keys_of.clear()
        _attach_captions(self.root, self.folder, self.images, ledger, self.elsewhere)

    def report(self) -> dict[Any, Any]:
        """The shard's counts (images, regions: seen = accepted + rejected), its rejected text
        rows and ontology findings; once ``records`` is exhausted."""
        ledger = self.ledger
        internal = sorted({r["label"] for r in self.regions.accepted} & ledger.interior)
        if internal:
            ledger.quirks["internal_node_labels"] = len(internal)
        seen = {
            "image": len(self.image_entries) + len({k[0] for k in self.rows} - self.named),
            "region": len(self.mask_entries) + len((set(self.rows) | self.conflicted) - self.claimed),
        }
        accepted = {"image": len(self.images), "region": len(self.regions.accepted)}
        counts = {
            item: {"seen": seen[item], "accepted": accepted[item], "rejected": ledger.rejected(item)} for item in seen
        }
        return {
            "folder": self.folder,
            "images": counts["image"],
            "regions": counts["region"],
            "label_rows_rejected": ledger.rejected("label-row"),
            "ontology_rows_rejected": ledger.rejected("ontology-row"),
            "captions_rejected": ledger.rejected("caption"),
            "parents": {child: dict(sorted(p.items())) for child, p in sorted(ledger.parent_counts.items())},
            "internal_node_labels": internal,
            "labels_only_folders": [self.folder] if self.labels_only else [],
        }  # fmt: skip


def _attach_captions(
    root: Path, folder: str, images: dict[int, dict[Any, Any]], ledger: _Ledger, elsewhere: dict[int, str]
) -> None:
    """Each accepted image's caption from ``annotations_complete_eng/<folder>/``; a caption whose
    image is in another folder (``elsewhere``) or nowhere is rejected, saying which."""
    captions = root / "annotations_complete_eng" / folder
    if not captions.is_dir():
        return
    entries = sorted(captions.glob("*.eng"))
    files, _ = _files_by_key(entries, CAPTION_NAME, "caption", "'<image_id>.eng'", ledger)
    for image_id, path in sorted(files.items()):
        if image_id not in images:
            where = elsewhere.get(image_id)
            reason = (
                f"caption of image {image_id}, which is {where}: move the caption to its folder's captions"
                if where
                else "caption of an image that is not in the collection"
            )
            ledger.reject(path, str(image_id), "caption", reason)
            continue
        try:
            fields, encoding = text.parse_caption(path.read_bytes())
        except ValueError as exc:
            ledger.reject(path, path.stem, "caption", str(exc))
            continue
        if encoding != "utf-8":
            ledger.quirks["captions_not_utf8"] += 1
        record = images[image_id]
        for name, value in fields.items():
            record[f"caption_{name}"] = value
        record["caption_encoding"] = encoding
