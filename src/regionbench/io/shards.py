"""What the ingest of every raw layout returns for one shard, and how it fails."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import shapely

from regionbench.core import geometry, hashes, tables
from regionbench.core.errors import InputError

if TYPE_CHECKING:  # a type only: reading images needs Pillow, a build dependency
    from regionbench.io.images import DecodedImage

# Larger images are rejected as decompression bombs (the config's ingest.max_image_pixels default).
MAX_IMAGE_PIXELS = 40_000_000


# Shards of the layouts cut into runs of images (COCO, the label maps) when the config sets no size.
DEFAULT_SHARDS = 8
MIN_SHARD_SIZE = 100  # a job's start (a Python process, its imports: 0.8 s CPU) costs more than fewer images
MAX_SHARD_SIZE = 1000


def default_shard_size(images: int) -> int:
    """Images per shard when the config sets none: floor(images / ``DEFAULT_SHARDS``), between
    ``MIN_SHARD_SIZE`` and ``MAX_SHARD_SIZE``: a small collection is one shard or a few (ten
    images were ten jobs, 9 s of CPU in process starts), one of up to ``DEFAULT_SHARDS`` x
    ``MAX_SHARD_SIZE`` images at least ``DEFAULT_SHARDS`` shards from 800 images on."""
    return max(MIN_SHARD_SIZE, min(MAX_SHARD_SIZE, images // DEFAULT_SHARDS))


def shard_names(count: int) -> list[str]:
    """The workflow's names of ``count`` shards: 00, 01, ..."""
    return [f"{k:02d}" for k in range(count)]


class IngestError(InputError):
    """Input that stops a strict (or impossible) ingest; one line per problem."""


def image_id_of(file_name: str) -> int:
    """The image id of a file name: its stem when all ASCII digits, else the first 63 bits of
    sha256(file name)."""
    stem = Path(file_name).stem
    if stem.isascii() and stem.isdigit() and len(stem) <= 18:
        return int(stem)
    # surrogatepass: a name that is not UTF-8 on disk still has an id (ingest rejects its image)
    return int.from_bytes(hashlib.sha256(file_name.encode("utf-8", "surrogatepass")).digest()[:8], "big") >> 1


@dataclass
class Shard:
    """One shard's accepted images and regions, its rejects, a report that counts both sides,
    the features and relations measured on the decoded pixels (``regionbench.pipeline.shard_measures``), and
    which annotators covered each accepted image (``tables.COVERAGE``)."""

    images: pa.Table
    regions: pa.Table
    rejects: pa.Table
    report: dict[Any, Any]
    features: pa.Table
    relations: pa.Table
    coverage: pa.Table


@dataclass
class Ledger:
    """What happened to the raw items of a shard: the rejects with their reasons, how many items
    of each kind were seen and rejected (per annotator; "" for items of no annotator), and the
    oddities accepted as they are (``quirks``)."""

    root: Path
    rejects: list[dict[Any, Any]] = field(default_factory=list)
    seen: Counter[Any] = field(default_factory=Counter)  # (annotator, item) and (annotator, item_rejected)
    quirks: Counter[Any] = field(default_factory=Counter)
    quirk_files: dict[str, set[str]] = field(default_factory=dict)  # kind -> the files it was seen in

    def quirk(self, kind: str, source: Path | str) -> None:
        """Count a quirk that may be the user's mistake, and keep the file it was seen in (the
        build's last lines name the first: kept, but not without a word)."""
        self.quirks[kind] += 1
        src = source.relative_to(self.root).as_posix() if isinstance(source, Path) else source
        self.quirk_files.setdefault(kind, set()).add(src)

    def reject(self, source: Path | str, key: str, item: str, reason: str, annotator: str = "") -> None:
        """Reject one ``item`` (image, region, label-row ...) named ``key`` in ``source`` (a path
        under the root, or text) with a ``reason`` that says what to fix."""
        src = source.relative_to(self.root).as_posix() if isinstance(source, Path) else source
        self.rejects.append(reject_row(self.root, src, key, item, reason))
        self.seen[(annotator, f"{item}_rejected")] += 1

    def rejected(self, item: str, annotator: str = "") -> int:
        return self.seen[(annotator, f"{item}_rejected")]

    def fail_if_strict(self, strict: bool) -> None:
        """In strict mode any reject stops the shard: an IngestError with one line per reject."""
        if strict and self.rejects:
            raise IngestError("\n".join(f"{r['source']}: {r['key']}: {r['reason']}" for r in self.rejects))


def check_ledger(where: str, counts: dict[str, dict[str, int]]) -> None:
    """Every raw item seen was accepted or rejected: ``counts`` maps a kind of item to its
    ``seen``, ``accepted`` and ``rejected``; a kind that does not add up fails the job, because
    an item was lost (a bug, whatever the input)."""
    for kind, c in counts.items():
        if c["seen"] != c["accepted"] + c["rejected"]:
            raise IngestError(
                f"{where}: {c['seen']} {kind} seen but {c['accepted']} accepted and {c['rejected']} rejected; "
                "an item was lost: this is a bug in regionbench, please report it"
            )


def shard_report(folder: str, counts: dict[str, list[int]], ledger: Ledger) -> dict[str, Any]:
    """A reader's report of one shard (``io.layouts.ShardReader``): ``counts`` holds [seen,
    accepted] of ``"images"`` and of each annotator's regions; the rejected ones are the
    ``ledger``'s. Regions are also summed over the annotators."""
    seen, accepted = counts["images"]
    per = {
        a: {"seen": s, "accepted": n, "rejected": ledger.rejected("region", a)}
        for a, (s, n) in counts.items()
        if a != "images"
    }
    return {
        "folder": folder,
        "images": {"seen": seen, "accepted": accepted, "rejected": ledger.rejected("image")},
        "annotators": per,
        "regions": {k: sum(v[k] for v in per.values()) for k in ("seen", "accepted", "rejected")},
    }


COMMON_REASONS = 3  # named when a build accepts nothing


def nothing_accepted(report: dict[Any, Any], rejects: Iterable[pa.Table], where: str) -> str | None:
    """One line when a merged ingest ``report`` accepted no region: the counts, the commonest
    reject reasons (their text says what to fix) and ``where`` the rejects are; None otherwise.
    Nothing after ingest can run on an empty collection, so the build stops here."""
    if report["regions"]["accepted"]:
        return None
    reasons: Counter[Any] = Counter()
    for table in rejects:
        reasons.update(table.column("reason").to_pylist())
    common = "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common(COMMON_REASONS))
    images, regions = report["images"], report["regions"]
    return (
        f"ingest accepted no region: {images['seen']} images seen ({images['accepted']} accepted), "
        f"{regions['seen']} regions seen (all rejected)"
        + (f"; commonest reasons: {common}" if common else "; the raw tree holds no region at all")
        + f"; every reason is in {where}; fix the raw tree or the configuration and build again"
    )


def printable(name: str) -> str:
    """A name from the file system as valid UTF-8 text: bytes that are not UTF-8 (which Python
    carries as lone surrogates, and Parquet and JSON refuse) become ``\\xNN`` escapes."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def image_quirks(image: DecodedImage, rows: Iterable[dict[Any, Any]]) -> Counter[Any]:
    """The oddities of one accepted image and its ``regions`` rows, counted the same way in
    every layout, never rejected: ``identical_masks`` (rows repeating the mask of an earlier row
    by the same annotator: a region traced twice, or copied under another label),
    ``exif_orientation_not_applied`` (pixels taken as stored, as the masks are drawn on them) and
    ``grayscale_images`` (one channel among colour photos, as SAIAPR, VOC and ADE20K ship some)."""
    seen: set[tuple[str, str]] = set()
    quirks: Counter[Any] = Counter()
    for row in rows:
        if row["mask"] is not None:
            key = (row["annotator"], row["mask"]["counts"])
            quirks["identical_masks"] += key in seen
            seen.add(key)
    quirks["exif_orientation_not_applied"] += image.orientation != 1
    quirks["grayscale_images"] += image.mode == "L"
    return +quirks  # only what was seen


def reject_row(root: Path, source: str, key: str, item: str, reason: str, stage: str = "ingest") -> dict[str, Any]:
    """A ``rejects`` row whose ``reason`` names paths relative to ``root``; every field
    ``printable``.

    The libraries that read raw files (Pillow, scipy) quote the absolute path in their messages;
    left in, the release would change with the place of the raw tree. Every spelling of the root
    (as given, absolute, resolved) is cut, longest first.
    """
    root = Path(root)
    for prefix in sorted({str(root), str(root.absolute()), str(root.resolve())}, key=len, reverse=True):
        if len(prefix) > 1:  # never "." or "/"
            reason = reason.replace(prefix + "/", "").replace(prefix, ".")
    return {
        "source": printable(source), "key": printable(key), "item": item, "stage": stage, "reason": printable(reason)
    }  # fmt: skip


def trees_state(root: str | Path, trees: Iterable[str]) -> str:
    """sha256 over the path relative to ``root``, size and modification time of every file and
    link under the folders ``trees`` (relative to ``root``; a linked folder is listed, not
    entered; a missing one holds nothing).

    The workflow passes it to a shard's jobs as a parameter: a file added, removed, replaced or
    touched changes it, and Snakemake reruns the shard. Listing thousands of files as job
    inputs instead would make the scheduler stat all of them again at every step. Every build,
    a no-op too, fingerprints every raw file (160,000 at paper scale): ``os.walk`` takes each
    entry's type from the directory listing and the paths stay strings, four times faster than
    ``Path.rglob`` with a stat per file.
    """
    root = os.fspath(root)
    found = []
    for tree in trees:
        for top, folders, names in os.walk(os.path.join(root, tree)):
            links = [name for name in folders if os.path.islink(os.path.join(top, name))]
            at = os.path.relpath(top, root).replace(os.sep, "/")
            found += [name if at == "." else f"{at}/{name}" for name in (*names, *links)]
    return files_state(root, sorted(found))


def files_state(root: str | Path, relatives: Iterable[str]) -> str:
    """sha256 over each path of ``relatives`` (relative to ``root``, in the order given), its
    size and its modification time: the files' fingerprint (``trees_state``; a COCO shard's
    images)."""
    root = os.fspath(root)
    digest = hashlib.sha256()
    for relative in relatives:
        stat = os.lstat(os.path.join(root, relative))
        digest.update(os.fsencode(relative) + f"\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def image_row(image_id: int, folder: str, path: str, image: DecodedImage, split: str | None = None) -> dict[Any, Any]:
    """A row of the stage table ``images`` for a decoded image file at ``path`` (relative to the
    raw root), in the collection's own ``split`` (None: it has none); its caption and licence
    columns empty; its perceptual hashes from the pixels already decoded (``core.hashes``)."""
    empty = {name: None for name in tables.IMAGES.names if name.startswith(("caption_", "license"))}
    phash, dhash = hashes.image_hashes(image.pixels)
    return {
        "image_id": image_id, "folder": folder, "path": path, "split": split,
        "width": image.width, "height": image.height, "mode": image.mode, "sha256": image.sha256,
        "phash": phash, "dhash": dhash, **empty,
    }  # fmt: skip


FLAGS = ("difficult", "truncated", "occluded")  # what a source may mark of an object


def region_row(
    image_id: int,
    annotator: str,
    region_id: int,
    label_id: int,
    label: str,
    mask: np.ndarray | None,
    ontology_path: str | None = None,
    *,
    iscrowd: bool = False,
    annotation_id: int | None = None,
    category_id: int | None = None,
    source_area: float | None = None,
    source_bbox: Sequence[float] | None = None,
    flags: dict[str, bool] | None = None,
    parent_region_id: int | None = None,
    part_level: int | None = None,
) -> dict[Any, Any]:
    """A row of the stage table ``regions``: the keys, label, box, RLE mask and exact polygon of
    ``mask`` (all null for a region known by its label only: ``mask`` None); ``iscrowd``,
    ``annotation_id``, ``category_id``, ``source_area`` and ``source_bbox`` (x, y, w, h) as a
    COCO file gives them, beside the box and area measured on the mask; ``flags`` the source's
    marks of the object (``FLAGS``: Pascal VOC's ``difficult``, ``truncated``, ``occluded``),
    None where it says nothing; ``parent_region_id`` and ``part_level`` place a part in the
    region it is a part of (ADE20K's part masks)."""
    box_fields = ("source_bbox_x", "source_bbox_y", "source_bbox_w", "source_bbox_h")
    row = {
        "image_id": image_id, "annotator": annotator, "region_id": region_id,
        "label_id": label_id, "label": label, "ontology_path": ontology_path,
        "iscrowd": iscrowd, "annotation_id": annotation_id, "category_id": category_id,
        "source_area": source_area,
        **dict(zip(box_fields, source_bbox if source_bbox is not None else (None,) * 4, strict=True)),
        **{flag: (flags or {}).get(flag) for flag in FLAGS},
        "parent_region_id": parent_region_id, "part_level": part_level,
    }  # fmt: skip
    if mask is None:
        return row | dict.fromkeys(("bbox_x", "bbox_y", "bbox_w", "bbox_h", "area_px", "mask", "geometry"))
    x, y, w, h = box = geometry.bbox(mask)
    return row | {
        "bbox_x": x, "bbox_y": y, "bbox_w": w, "bbox_h": h, "area_px": int(np.count_nonzero(mask)),
        "mask": geometry.rle(mask),
        "geometry": shapely.to_wkb(geometry.mask_to_polygon(mask, box)),
    }  # fmt: skip
