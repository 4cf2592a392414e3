"""Ingest of the SAIAPR TC-12 layout (docs/inputs.md), one folder shard at a time.

``ingest_folder`` turns ``<root>/NN`` into three tables: accepted images, accepted regions and
rejects. Nothing is dropped silently: every image file, every image a label row names, every
region key (from label rows or mask files), every malformed row and every caption ends either
accepted or in the rejects table with a reason, and the shard report counts both sides.
Quirks of the official files that are not errors (string-ordered rows, trailing blank lines,
ontology-path spelling, grayscale JPEGs, whole-image regions) are counted in the report.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from regionbench import tables
from regionbench.io import images as images_io
from regionbench.io.matlab import read_mat
from regionbench.io.saiapr import text
from regionbench.io.saiapr.ontology import majority_parent
from regionbench.io.saiapr.writer import MASK_VARIABLE
from regionbench.io.shards import IngestError, Shard, files_state, region_row, reject_row

ANNOTATOR = "saiapr"
MASK_NAME = re.compile(r"(\d+)_(\d+)\.mat")


@dataclass
class _Ledger:
    """What happened to every raw item of a shard."""

    root: Path
    rejects: list[dict] = field(default_factory=list)
    quirks: Counter = field(default_factory=Counter)
    parent_counts: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    interior: set[str] = field(default_factory=set)  # nodes seen above another node in a path

    def reject(self, source: Path | str, key: str, item: str, reason: str) -> None:
        src = source.relative_to(self.root).as_posix() if isinstance(source, Path) else source
        self.rejects.append(reject_row(self.root, src, key, item, reason))

    def rejected(self, item: str) -> int:
        return sum(1 for r in self.rejects if r["item"] == item)


def _read_label_rows(path: Path, ledger: _Ledger) -> tuple[dict[tuple[int, int], tuple[int, int]], set]:
    """Label rows as key -> (label id, line number), and the keys whose rows disagree.

    Malformed and duplicate rows go to rejects; a region whose rows disagree on the label is
    rejected whole."""
    rows: dict[tuple[int, int], tuple[int, int]] = {}
    conflicting: set[tuple[int, int]] = set()
    if not path.is_file():
        return rows, conflicting
    lines = _official_lines(path, ledger)
    order = []
    for n, line in enumerate(lines, start=1):
        parts = line.split()
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
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


def _official_lines(path: Path, ledger: _Ledger) -> list[str]:
    """Lines of an official text file; trailing blank lines are dropped and counted as a quirk."""
    lines, trailing = text.official_lines(path)
    if trailing:
        ledger.quirks["trailing_blank_lines"] += trailing
    return lines


def _read_ontology(path: Path, ledger: _Ledger) -> dict[tuple[int, int], str]:
    """Normalised ontology path per region key (``entity->humans->group-of-persons``)."""
    paths: dict[tuple[int, int], str] = {}
    if not path.is_file():
        return paths
    for row in text.ontology_rows(_official_lines(path, ledger)):
        if row is None:
            ledger.quirks["malformed_ontology_rows"] += 1
            continue
        image_id, region_id, entry = row
        for q in entry.quirks:
            ledger.quirks[f"ontology_{q}"] += 1
        for parent, child in itertools.pairwise(entry.nodes):
            ledger.parent_counts[child].update([parent])
        ledger.interior.update(entry.nodes[:-1])
        paths[(image_id, region_id)] = "->".join(entry.nodes)
    return paths


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
    if seg.shape != (height, width):
        raise ValueError(f"mask shape {seg.shape[0]}x{seg.shape[1]} differs from image {height}x{width}")
    if not np.isin(seg, (0, -1)).all():
        bad = np.unique(seg[~np.isin(seg, (0, -1))])[:3]
        raise ValueError(f"mask values must be 0 (inside) or -1 (outside); found {bad.tolist()}")
    mask = seg == 0
    if not mask.any():
        raise ValueError("empty mask (no pixel is 0)")
    return mask


def folder_files(root: str | Path, folder: str) -> list[Path]:
    """Every file ingest reads for folder ``folder``: the folder's own tree and its captions."""
    root = Path(root)
    trees = (root / folder, root / "annotations_complete_eng" / folder)
    return sorted(p for tree in trees for p in tree.rglob("*") if p.is_file() or p.is_symlink())


def folder_state(root: str | Path, folder: str) -> str:
    """sha256 over the relative path, size and modification time of every file of a folder shard.

    The workflow passes it to the shard's jobs as a parameter: a file added, removed, replaced
    or touched changes it, and Snakemake reruns the shard. Listing the shard's ~2,500 files as
    job inputs instead would make the scheduler stat all of them again at every step.
    """
    return files_state(Path(root), folder_files(root, folder))


def ingest_folder(root: str | Path, folder: str, *, max_image_pixels: int = 40_000_000, strict: bool = False) -> Shard:
    """Read one folder shard ``<root>/<folder>`` of a SAIAPR tree into stage tables."""
    root = Path(root)
    base = root / folder
    if not base.is_dir():
        raise IngestError(f"{base}: folder shard missing; check raw_dir and the folder list")
    words = text.read_wordlist(root / "wlist.txt")
    ledger = _Ledger(root)
    rows, conflicted = _read_label_rows(base / "labels.txt", ledger)
    ontology = _read_ontology(base / "ontology_path.txt", ledger)

    # Images: every file in images/ and every image a label row names.
    image_entries = sorted((base / "images").glob("*"))
    files: dict[int, Path] = {}
    for path in image_entries:
        if path.suffix.lower() != ".jpg" or not path.stem.isdigit():
            ledger.reject(path, path.name, "image", "not an '<image_id>.jpg' file")
        elif not images_io.inside(root, path):
            ledger.reject(path, path.stem, "image", "path escapes the collection root (symlink); copy the file in")
        else:
            files[int(path.stem)] = path
    named = {int(p.stem) for p in image_entries if p.stem.isdigit()}
    images: dict[int, dict] = {}
    for image_id in sorted(files):
        path = files[image_id]
        try:
            width, height, mode, digest = images_io.read_image(path, max_image_pixels)
        except ValueError as exc:
            ledger.reject(path, str(image_id), "image", str(exc))
            continue
        if mode in ("L", "1", "I;16"):
            ledger.quirks["grayscale_images"] += 1
        images[image_id] = {
            "image_id": image_id, "folder": folder, "path": path.relative_to(root).as_posix(),
            "width": width, "height": height, "mode": mode, "sha256": digest,
            **{f"caption_{f.lower()}": None for f in text.CAPTION_FIELDS}, "caption_encoding": None,
        }  # fmt: skip
    for image_id in sorted({k[0] for k in rows} - named):
        ledger.reject(
            base / "images" / f"{image_id}.jpg",
            str(image_id),
            "image",
            "labels.txt names this image but its file is missing",
        )

    _attach_captions(root, folder, images, ledger)

    # Regions: every key from a label row or a mask file.
    mask_entries = sorted((base / "segmentation_masks").glob("*"))
    mask_files: dict[tuple[int, int], Path] = {}
    escaped_masks: set[tuple[int, int]] = set()
    for path in mask_entries:
        m = MASK_NAME.fullmatch(path.name)
        if m is None:
            ledger.reject(path, path.name, "region", "not an '<image_id>_<region_id>.mat' mask file")
        elif not images_io.inside(root, path):
            escaped_masks.add((int(m.group(1)), int(m.group(2))))
            ledger.reject(path, path.stem, "region", "path escapes the collection root (symlink); copy the file in")
        else:
            mask_files[(int(m.group(1)), int(m.group(2)))] = path
    regions = []
    for key in sorted(set(rows) | set(mask_files) | conflicted):
        image_id, region_id = key
        name = f"{image_id}/{region_id}"
        path = mask_files.get(key, base / "segmentation_masks" / f"{image_id}_{region_id}.mat")
        if key in conflicted or key in escaped_masks:
            continue  # already rejected above
        if key not in rows:
            ledger.reject(path, name, "region", "mask without a row in labels.txt; add the row or remove the file")
            continue
        label_id, line = rows[key]
        if key not in mask_files:
            ledger.reject(path, name, "region", f"labels.txt line {line} has no mask file")
            continue
        if label_id not in words:
            ledger.reject(
                path, name, "region", f"unknown label id {label_id} (labels.txt line {line}); add it to wlist.txt"
            )
            continue
        if image_id not in images:
            ledger.reject(path, name, "region", "its image was rejected or is missing")
            continue
        img = images[image_id]
        try:
            mask = _read_mask(path, img["height"], img["width"])
        except ValueError as exc:
            ledger.reject(path, name, "region", str(exc))
            continue
        if mask.all():
            ledger.quirks["whole_image_regions"] += 1
        regions.append(region_row(image_id, ANNOTATOR, region_id, label_id, words[label_id], mask, ontology.get(key)))

    internal = sorted({r["label"] for r in regions} & ledger.interior)
    if internal:
        ledger.quirks["internal_node_labels"] = len(internal)
    rejects = tables.from_rows(ledger.rejects, tables.REJECTS, tables.KEYS["rejects"])
    if strict and ledger.rejects:
        raise IngestError("\n".join(f"{r['source']}: {r['key']}: {r['reason']}" for r in ledger.rejects))
    report = {
        "folder": folder,
        "images": {"seen": len(image_entries) + len({k[0] for k in rows} - named),
                   "accepted": len(images), "rejected": ledger.rejected("image")},
        "regions": {"seen": len(mask_entries) + len((set(rows) | conflicted) - set(mask_files) - escaped_masks),
                    "accepted": len(regions), "rejected": ledger.rejected("region")},
        "label_rows_rejected": ledger.rejected("label-row"),
        "captions_rejected": ledger.rejected("caption"),
        "quirks": dict(sorted(ledger.quirks.items())),
        "parents": {child: dict(sorted(p.items())) for child, p in sorted(ledger.parent_counts.items())},
        "internal_node_labels": internal,
    }  # fmt: skip
    return Shard(
        images=tables.from_rows(list(images.values()), tables.IMAGES, tables.KEYS["images"]),
        regions=tables.from_rows(regions, tables.REGIONS, tables.KEYS["regions"]),
        rejects=rejects,
        report=report,
    )


def _attach_captions(root: Path, folder: str, images: dict[int, dict], ledger: _Ledger) -> None:
    captions = root / "annotations_complete_eng" / folder
    if not captions.is_dir():
        return
    for path in sorted(captions.glob("*.eng")):
        if not path.stem.isdigit() or int(path.stem) not in images:
            ledger.reject(path, path.stem, "caption", "caption of an image that is not in the collection")
            continue
        if not images_io.inside(root, path):
            ledger.reject(path, path.stem, "caption", "path escapes the collection root (symlink); copy the file in")
            continue
        try:
            fields, encoding = text.parse_caption(path.read_bytes())
        except ValueError as exc:
            ledger.reject(path, path.stem, "caption", str(exc))
            continue
        if encoding != "utf-8":
            ledger.quirks["captions_not_utf8"] += 1
        record = images[int(path.stem)]
        for name, value in fields.items():
            record[f"caption_{name}"] = value
        record["caption_encoding"] = encoding


def merge_reports(reports: list[dict]) -> dict:
    """Sum shard reports; a node seen under several parents becomes a reported conflict."""
    totals: dict = {"folders": sorted(r["folder"] for r in reports)}
    for part in ("images", "regions"):
        totals[part] = {k: sum(r[part][k] for r in reports) for k in ("seen", "accepted", "rejected")}
    for k in ("label_rows_rejected", "captions_rejected"):
        totals[k] = sum(r[k] for r in reports)
    quirks: Counter = Counter()
    parents: dict[str, Counter] = defaultdict(Counter)
    for r in reports:
        quirks.update(r["quirks"])
        for child, seen in r["parents"].items():
            parents.setdefault(child, Counter()).update(seen)
    internal = sorted({label for r in reports for label in r["internal_node_labels"]})
    quirks["internal_node_labels"] = len(internal)
    totals["internal_node_labels"] = internal
    totals["quirks"] = dict(sorted(quirks.items()))
    totals["parent_conflicts"] = [
        {"node": child, "parents": dict(sorted(p.items())), "chosen": majority_parent(p)}
        for child, p in sorted(parents.items())
        if len(p) > 1
    ]
    return totals
