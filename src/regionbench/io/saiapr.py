"""Reading the SAIAPR TC-12 layout (SPEC §2.1), one folder shard at a time.

``ingest_folder`` turns ``<root>/NN`` into three tables: accepted images, accepted regions and
rejects. Nothing is dropped silently: every image file, every image a label row names, every
region key (from label rows or mask files), every malformed row and every caption ends either
accepted or in the rejects table with a reason, and the shard report counts both sides.
Quirks of the official files that are not errors (string-ordered rows, trailing blank lines,
ontology-path spelling, grayscale JPEGs, whole-image regions) are counted in the report.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import shutil
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import shapely
from PIL import Image

from regionbench import geometry, tables
from regionbench.io.matlab import read_mat

ANNOTATOR = "saiapr"
MASK_VARIABLE = "segimg_t"
CAPTION_FIELDS = ("TITLE", "DESCRIPTION", "NOTES", "LOCATION", "DATE")
MASK_NAME = re.compile(r"(\d+)_(\d+)\.mat")


class IngestError(ValueError):
    """Input that stops a strict (or impossible) ingest; one line per problem."""


@dataclass
class Shard:
    images: pa.Table
    regions: pa.Table
    rejects: pa.Table
    report: dict


@dataclass
class _Ledger:
    """What happened to every raw item of a shard."""

    root: Path
    rejects: list[dict] = field(default_factory=list)
    quirks: Counter = field(default_factory=Counter)
    parents: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    interior: set[str] = field(default_factory=set)  # nodes seen above another node in a path

    def reject(self, source: Path | str, key: str, item: str, reason: str) -> None:
        src = source.relative_to(self.root).as_posix() if isinstance(source, Path) else source
        self.rejects.append({"source": src, "key": key, "item": item, "stage": "ingest", "reason": reason})

    def rejected(self, item: str) -> int:
        return sum(1 for r in self.rejects if r["item"] == item)


def read_wordlist(path: Path) -> dict[int, str]:
    """``wlist.txt``: ``id<TAB>word`` per line; blank lines are skipped."""
    if not path.is_file():
        raise IngestError(f"{path}: word list missing; a SAIAPR root needs wlist.txt beside its folders")
    words = {}
    for n, line in enumerate(path.read_text(encoding="latin-1").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip().isdigit():
            raise IngestError(f"{path}:{n}: expected 'id<TAB>word', got {line!r}; fix the line")
        words[int(parts[0])] = parts[1].strip()
    return words


def normalise_ontology_path(raw: str) -> tuple[list[str], set[str]]:
    """Node names of an ``ontology_path.txt`` entry and the quirks its spelling shows.

    ``entity->->humans->_group-of-persons␠␠`` gives ``[entity, humans, group-of-persons]``
    with quirks ``doubled_arrow``, ``group_flag`` and ``trailing_space``.
    """
    quirks = set()
    if raw != raw.rstrip():
        quirks.add("trailing_space")
    parts = raw.strip().split("->")
    if any(p == "" for p in parts[1:-1]) or (len(parts) > 2 and parts[1] == ""):
        quirks.add("doubled_arrow")
    nodes = []
    for p in parts:
        if not p:
            continue
        if p.startswith("_"):
            quirks.add("group_flag")
        nodes.append(p.lstrip("_"))
    if nodes == ["entity"]:
        quirks.add("bare_entity_path")
    return nodes, quirks


def parse_caption(data: bytes) -> tuple[dict[str, str | None], str]:
    """Fields of an IAPR TC-12 ``.eng`` document and the encoding that decoded it.

    The official captions are cp1252; UTF-8 is accepted when the bytes are valid UTF-8, and
    latin-1 (which decodes any byte) is the last resort.
    """
    for encoding in ("utf-8", "cp1252", "latin-1"):
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    if "<DOC>" not in text or "</DOC>" not in text:
        raise ValueError("not an IAPR TC-12 document (no <DOC>...</DOC>)")
    fields: dict[str, str | None] = {}
    for tag in CAPTION_FIELDS:
        m = re.search(rf"<{tag}>(.*?)</{tag}>", text, flags=re.DOTALL)
        fields[tag.lower()] = m.group(1).strip() if m else None
    return fields, encoding


def _inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def _text_lines(path: Path, ledger: _Ledger) -> list[str]:
    """Lines of an official text file; trailing blank lines are dropped and counted as a quirk."""
    lines = path.read_text(encoding="latin-1").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
        ledger.quirks["trailing_blank_lines"] += 1
    return lines


def _read_label_rows(path: Path, ledger: _Ledger) -> tuple[dict[tuple[int, int], tuple[int, int]], set]:
    """Label rows as key -> (label id, line number), and the keys whose rows disagree.

    Malformed and duplicate rows go to rejects; a region whose rows disagree on the label is
    rejected whole."""
    rows: dict[tuple[int, int], tuple[int, int]] = {}
    conflicting: set[tuple[int, int]] = set()
    if not path.is_file():
        return rows, conflicting
    lines = _text_lines(path, ledger)
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


def _read_ontology(path: Path, ledger: _Ledger) -> dict[tuple[int, int], str]:
    """Normalised ontology path per region key (``entity->humans->group-of-persons``)."""
    paths: dict[tuple[int, int], str] = {}
    if not path.is_file():
        return paths
    lines = _text_lines(path, ledger)
    for line in lines:
        parts = line.split("\t")
        if len(parts) != 3 or not parts[0].strip().isdigit() or not parts[1].strip().isdigit():
            ledger.quirks["malformed_ontology_rows"] += 1
            continue
        nodes, quirks = normalise_ontology_path(parts[2])
        for q in quirks:
            ledger.quirks[f"ontology_{q}"] += 1
        for parent, child in itertools.pairwise(nodes):
            ledger.parents[child][parent] += 1
        ledger.interior.update(nodes[:-1])
        paths[(int(parts[0]), int(parts[1]))] = "->".join(nodes)
    return paths


def _read_image(path: Path, max_pixels: int) -> tuple[int, int, str, str]:
    """(width, height, mode, sha256) of a fully decoded image; raises ValueError with a reason."""
    data = path.read_bytes()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                width, height = im.size
                if width * height > max_pixels:
                    raise ValueError(f"decompression bomb: {width}x{height} exceeds max_image_pixels={max_pixels}")
                im.load()
                mode = im.mode
    except ValueError:
        raise
    except (OSError, Image.DecompressionBombError, Image.DecompressionBombWarning, SyntaxError) as exc:
        raise ValueError(f"unreadable image: {exc}") from None
    return width, height, mode, hashlib.sha256(data).hexdigest()


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
    root = Path(root)
    digest = hashlib.sha256()
    for path in folder_files(root, folder):
        stat = path.lstat()
        digest.update(f"{path.relative_to(root).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def ingest_folder(root: str | Path, folder: str, *, max_image_pixels: int = 40_000_000, strict: bool = False) -> Shard:
    """Read one folder shard ``<root>/<folder>`` of a SAIAPR tree into stage tables."""
    root = Path(root)
    base = root / folder
    if not base.is_dir():
        raise IngestError(f"{base}: folder shard missing; check raw_dir and the folder list")
    words = read_wordlist(root / "wlist.txt")
    ledger = _Ledger(root)
    rows, conflicted = _read_label_rows(base / "labels.txt", ledger)
    ontology = _read_ontology(base / "ontology_path.txt", ledger)

    # Images: every file in images/ and every image a label row names.
    image_entries = sorted((base / "images").glob("*"))
    files: dict[int, Path] = {}
    for path in image_entries:
        if path.suffix.lower() != ".jpg" or not path.stem.isdigit():
            ledger.reject(path, path.name, "image", "not an '<image_id>.jpg' file")
        elif not _inside(root, path):
            ledger.reject(path, path.stem, "image", "path escapes the collection root (symlink); copy the file in")
        else:
            files[int(path.stem)] = path
    named = {int(p.stem) for p in image_entries if p.stem.isdigit()}
    images: dict[int, dict] = {}
    for image_id in sorted(files):
        path = files[image_id]
        try:
            width, height, mode, digest = _read_image(path, max_image_pixels)
        except ValueError as exc:
            ledger.reject(path, str(image_id), "image", str(exc))
            continue
        if mode in ("L", "1", "I;16"):
            ledger.quirks["grayscale_images"] += 1
        images[image_id] = {
            "image_id": image_id, "folder": folder, "path": path.relative_to(root).as_posix(),
            "width": width, "height": height, "mode": mode, "sha256": digest,
            **{f"caption_{f.lower()}": None for f in CAPTION_FIELDS}, "caption_encoding": None,
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
        elif not _inside(root, path):
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
        x, y, w, h = geometry.bbox(mask)
        regions.append({
            "image_id": image_id, "annotator": ANNOTATOR, "region_id": region_id,
            "label_id": label_id, "label": words[label_id], "ontology_path": ontology.get(key),
            "bbox_x": x, "bbox_y": y, "bbox_w": w, "bbox_h": h, "area_px": int(mask.sum()),
            "mask_rle": geometry.encode_rle(mask),
            "geometry": shapely.to_wkb(geometry.mask_to_polygon(mask)),
        })  # fmt: skip

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
        "parents": {child: dict(sorted(p.items())) for child, p in sorted(ledger.parents.items())},
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
        if not _inside(root, path):
            ledger.reject(path, path.stem, "caption", "path escapes the collection root (symlink); copy the file in")
            continue
        try:
            fields, encoding = parse_caption(path.read_bytes())
        except ValueError as exc:
            ledger.reject(path, path.stem, "caption", str(exc))
            continue
        if encoding != "utf-8":
            ledger.quirks["captions_not_utf8"] += 1
        record = images[int(path.stem)]
        for name, value in fields.items():
            record[f"caption_{name}"] = value
        record["caption_encoding"] = encoding


def majority_parent(parents: dict[str, int]) -> str:
    """The parent seen most often (ties: first by name)."""
    return min(parents, key=lambda p: (-parents[p], p))


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
            parents[child].update(seen)
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


def caption_document(image: dict) -> str:
    """An image's IAPR TC-12 ``.eng`` document from its caption fields (absent fields omitted)."""
    folder, image_id = image["folder"], image["image_id"]
    lines = ["<DOC>", f"<DOCNO>annotations/{folder}/{image_id}.eng</DOCNO>"]
    for tag in CAPTION_FIELDS:
        value = image[f"caption_{tag.lower()}"]
        if value is not None:
            lines.append(f"<{tag}>{value}</{tag}>")
    lines += [f"<IMAGE>images/{folder}/{image_id}.jpg</IMAGE>", "</DOC>", ""]
    return "\n".join(lines)


def export_release(release: str | Path, out: str | Path, images: str | Path | None = None) -> dict[str, int]:
    """Write a release back in the SAIAPR TC-12 layout, so tools of the original format work.

    Writes ``wlist.txt`` (the vocabulary), per folder ``labels.txt``, ``ontology_path.txt``,
    ``features.txt`` (MATLAB ``num2str`` style) and ``segmentation_masks/<image>_<region>.mat``
    (``segimg_t``: 0 inside, -1 outside), and the captions in their original encoding. The
    release does not carry pixels: with ``images`` (a raw tree) the JPEGs are copied from it,
    each checked against the sha256 the release records. Only the ``saiapr`` annotator's
    regions fit this layout.
    """
    from regionbench.features import FEATURE_NAMES, num2str
    from regionbench.io.matlab import mat_bytes

    release, out = Path(release), Path(out)
    if out.exists():
        raise ValueError(f"{out}: already exists; export-saiapr writes a new folder, choose another path")
    image_rows = pq.read_table(release / "data" / "images.parquet").to_pylist()
    regions = pq.read_table(release / "data" / "regions.parquet")
    regions = regions.filter(pc.equal(regions["annotator"], ANNOTATOR))
    vocabulary = pq.read_table(release / "data" / "vocabulary.parquet", columns=["label_id", "label"])
    out.mkdir(parents=True)
    rows = sorted(zip(vocabulary["label_id"].to_pylist(), vocabulary["label"].to_pylist(), strict=True))
    (out / "wlist.txt").write_text("".join(f"{i}\t{label}\n" for i, label in rows), encoding="utf-8")

    by_id = {}
    for image in image_rows:
        by_id[image["image_id"]] = image
        folder = out / image["folder"]
        (folder / "images").mkdir(parents=True, exist_ok=True)
        (folder / "segmentation_masks").mkdir(exist_ok=True)
        if images is not None:
            source = Path(images) / image["path"]
            if not source.is_file() or hashlib.sha256(source.read_bytes()).hexdigest() != image["sha256"]:
                raise ValueError(f"{source}: missing or not the image the release records (sha256); pass the raw tree")
            shutil.copyfile(source, out / image["path"])
        if image["caption_encoding"] is not None:
            caption = out / "annotations_complete_eng" / image["folder"] / f"{image['image_id']}.eng"
            caption.parent.mkdir(parents=True, exist_ok=True)
            caption.write_bytes(caption_document(image).encode(image["caption_encoding"]))

    texts: dict[str, tuple[list[str], list[str], list[str]]] = defaultdict(lambda: ([], [], []))
    columns = ["image_id", "region_id", "label_id", "ontology_path", "mask_rle", *FEATURE_NAMES]
    for region in regions.select(columns).to_pylist():
        image = by_id[region["image_id"]]
        key = f"{region['image_id']}\t{region['region_id']}"
        labels, paths, feats = texts[image["folder"]]
        labels.append(f"{key}\t{region['label_id']}\n")
        if region["ontology_path"] is not None:
            paths.append(f"{key}\t{region['ontology_path']}\n")
        feats.append(f"{key}\t{num2str(np.array([region[n] for n in FEATURE_NAMES]))}\t{region['label_id']}\n")
        mask = geometry.decode_rle(region["mask_rle"], image["height"], image["width"])
        name = out / image["folder"] / "segmentation_masks" / f"{region['image_id']}_{region['region_id']}.mat"
        name.write_bytes(mat_bytes({MASK_VARIABLE: np.where(mask, 0.0, -1.0)}))
    for folder in sorted({image["folder"] for image in image_rows}):
        for name, lines in zip(("labels.txt", "ontology_path.txt", "features.txt"), texts[folder], strict=True):
            (out / folder / name).write_text("".join(lines), encoding="utf-8")
    return {"folders": len({i["folder"] for i in image_rows}), "images": len(image_rows), "regions": regions.num_rows}
