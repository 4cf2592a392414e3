"""The leak audit: does a public release hold any value derived from its hidden side's truth?

Checked by content, in every file of the public release whatever its name, against the
private release it was made from (``regionbench audit --leaks PUBLIC PRIVATE``):

- Parquet tables: a row of a hidden image that carries truth (a region, label, category,
  annotation, mask, geometry, relation, agreement, coverage or subsets column; a near-copy row
  naming the subsets of a hidden image); a hidden region's mask encoding (its RLE counts), mask
  hash (the sha256 of those counts) or outline (WKB) in any column; a hidden annotation's id in
  an ``annotation_id`` column; a per-label count that counts hidden regions (a table of labels
  whose ``region_count`` or ``image_count`` is the private release's where the hidden side
  holds the label);
- JSON: a hidden mask's counts or hash in any string; an object of a hidden image (its
  ``image_id`` or ``file_name``) with a truth key (``category_id``, ``segmentation``, ``bbox``,
  ``label``, ``region_id``, ...); an object under the hidden split's name holding one of the
  hidden side's counts (its regions, over all or by annotator);
- any other text (the card, CSV, HTML): a hidden mask's counts or hash as a word; a table row
  naming the hidden split beside one of its counts.

Returns one line per leak: the file, what leaks, an example.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from regionbench.core.errors import InputError
from regionbench.release.loader import Release

# Columns (Parquet) and keys (JSON) whose value on a hidden image's row is its truth.
TRUTH_COLUMNS = frozenset(
    {"region_id", "label", "label_id", "annotation_id", "category_id", "mask", "geometry", "bbox_x", "area_px",
     "other_region_id", "topological", "matched", "mean_iou", "neg_category_ids", "not_exhaustive_category_ids",
     "pair_category_ids", "ignore_mask", "suggested_label", "annotator_a"}
)  # fmt: skip
TRUTH_KEYS = frozenset(
    {"category_id", "segmentation", "bbox", "label", "labels", "region_id", "area", "counts", "mask"}
)
TEXT_SUFFIXES = frozenset({".md", ".txt", ".csv", ".tsv", ".html", ".htm", ".yaml", ".yml", ".svg", ".xml"})
_WORD = re.compile(r"[\s\"',|]+")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SHORTEST = 8  # a mask encoding shorter than this is too common a word to name a hidden region


def mask_hash(counts: str) -> str:
    """A mask's hash as the audit looks for it: the sha256 of its RLE counts (UTF-8), hex."""
    return hashlib.sha256(counts.encode()).hexdigest()


@dataclass(frozen=True)
class Hidden:
    """What the hidden side's truth is made of, read from the private release."""

    split: str
    images: pa.Array  # their ids
    file_names: frozenset[str]
    image_ids: frozenset[int]  # the same, as Python's
    annotation_ids: pa.Array
    counts: pa.Array  # each hidden region's RLE counts (long enough to name it)
    encodings: frozenset[str]  # the same, as Python's
    hashes: frozenset[str]
    outlines: pa.Array  # their WKB
    totals: frozenset[int]  # the hidden regions, over all and by annotator
    private_counts: dict[str, tuple[int, int]]  # label -> (region_count, image_count) of the private release
    hidden_labels: frozenset[str]  # the labels the hidden side holds


def hidden_truth(private: Release, split: str) -> Hidden:
    """The hidden side's truth of ``private`` (the images of ``split``)."""
    images = private.arrow("images", ["image_id", "split", "path"])
    chosen = images.filter(pc.equal(images["split"], split))
    ids = chosen["image_id"].combine_chunks()
    every = private.arrow(
        "regions", ["image_id", "region_id", "annotator", "annotation_id", "label", "mask", "geometry"]
    )
    inside = pc.is_in(every["image_id"], value_set=ids)
    regions, visible = every.filter(inside), every.filter(pc.invert(inside))
    # A mask or outline the other side has too (a whole-image segment, a shape drawn twice) names
    # no hidden region: only the hidden side's own are looked for.
    counts = pc.struct_field(regions["mask"], "counts").combine_chunks().drop_null()
    seen = pc.struct_field(visible["mask"], "counts").combine_chunks()
    counts = counts.filter(pc.invert(pc.is_in(counts, value_set=seen)))
    long_enough = counts.filter(pc.greater_equal(pc.utf8_length(counts), _SHORTEST))
    outlines = regions["geometry"].combine_chunks().drop_null()
    outlines = outlines.filter(pc.invert(pc.is_in(outlines, value_set=visible["geometry"].combine_chunks())))
    by_annotator = regions.group_by("annotator").aggregate([("region_id", "count")])["region_id_count"].to_pylist()
    vocabulary = private.arrow("vocabulary", ["label", "region_count", "image_count"])
    return Hidden(
        split=split,
        images=ids,
        file_names=frozenset(Path(p).name for p in chosen["path"].to_pylist()),
        image_ids=frozenset(ids.to_pylist()),
        annotation_ids=regions["annotation_id"].combine_chunks().drop_null(),
        counts=long_enough,
        encodings=frozenset(long_enough.to_pylist()),
        hashes=frozenset(mask_hash(c) for c in counts.to_pylist()),
        outlines=outlines,
        totals=frozenset(n for n in [regions.num_rows, *by_annotator] if n > 0),
        private_counts={
            label: (int(r), int(i))
            for label, r, i in zip(*(vocabulary[c].to_pylist() for c in vocabulary.column_names), strict=True)
        },
        hidden_labels=frozenset(regions["label"].drop_null().to_pylist()),
    )


def _example(values: Sequence[object]) -> str:
    shown = ", ".join(str(v)[:40] for v in values[:3])
    return f"{len(values)} (e.g. {shown})" if len(values) > 1 else shown


def _strings(column: pa.ChunkedArray | pa.Array) -> Iterator[pa.Array]:
    """Every string (and binary) array inside ``column``: struct fields and list items opened."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = array.type
    if pa.types.is_struct(kind):
        for k in range(kind.num_fields):
            yield from _strings(pc.struct_field(array, [k]))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        yield from _strings(pc.list_flatten(array))
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
        yield array


def _parquet(rel: str, table: pa.Table, hidden: Hidden) -> Iterator[str]:
    names = set(table.column_names)
    if "image_id" in names:
        rows = table.filter(pc.is_in(table["image_id"], value_set=hidden.images))
        truth = sorted(names & TRUTH_COLUMNS)
        if rows.num_rows and truth:
            yield f"{rel}: {rows.num_rows} rows of hidden images with their truth ({', '.join(truth)}): image {_example(rows['image_id'].to_pylist())}"
        if rows.num_rows and "subsets" in names:
            named = rows.filter(pc.greater(pc.list_value_length(rows["subsets"]), 0))
            if named.num_rows:
                yield f"{rel}: the subsets of {named.num_rows} hidden images (their labels decide them): image {_example(named['image_id'].to_pylist())}"
    if "annotation_id" in names:
        found = pc.is_in(table["annotation_id"], value_set=hidden.annotation_ids)
        if (n := pc.sum(found).as_py() or 0) and "image_id" not in names:
            yield f"{rel}: {n} ids of hidden annotations in annotation_id"
    for name in table.column_names:
        for array in _strings(table[name]):
            if pa.types.is_binary(array.type):
                found = array.filter(pc.is_in(array, value_set=hidden.outlines))
                if len(found):
                    yield f"{rel}: {len(found)} outlines (WKB) of hidden regions in {name}"
                continue
            found = array.filter(pc.is_in(array, value_set=hidden.counts))
            if len(found):
                yield f"{rel}: {len(found)} mask encodings of hidden regions in {name}: {_example(found.to_pylist())}"
            hashed = [v for v in array.drop_null().to_pylist() if v in hidden.hashes]
            if hashed:
                yield f"{rel}: {len(hashed)} mask hashes of hidden regions in {name}: {_example(hashed)}"
    if {"label", "region_count", "image_count"} <= names:
        counted = [
            label
            for label, r, i in zip(
                *(table[c].to_pylist() for c in ("label", "region_count", "image_count")), strict=True
            )
            if label in hidden.hidden_labels and (r, i) == hidden.private_counts.get(label)
        ]
        if counted:
            yield f"{rel}: the counts of {len(counted)} labels count the hidden regions: {_example(counted)}"


def _json_leaks(rel: str, value: object, hidden: Hidden) -> Iterator[str]:
    found: dict[str, list[object]] = {}

    def walk(node: object, under_split: bool) -> None:
        if isinstance(node, dict):
            image = node.get("image_id")
            named = node.get("file_name") in hidden.file_names
            if ((isinstance(image, int) and image in hidden.image_ids) or named) and TRUTH_KEYS & node.keys():
                found.setdefault("objects of hidden images with their truth", []).append(image or node.get("file_name"))
            for key, item in node.items():
                walk(item, under_split or key == hidden.split)
        elif isinstance(node, list):
            for item in node:
                walk(item, under_split)
        elif isinstance(node, str):
            if node in hidden.encodings:
                found.setdefault("mask encodings of hidden regions", []).append(node)
            for digest in _SHA256.findall(node):
                if digest in hidden.hashes:
                    found.setdefault("mask hashes of hidden regions", []).append(digest)
        elif under_split and isinstance(node, int) and not isinstance(node, bool) and node in hidden.totals:
            found.setdefault(f"counts of the hidden {hidden.split} side's regions", []).append(node)

    walk(value, False)
    for what, values in found.items():
        yield f"{rel}: {what}: {_example(values)}"


def _text_leaks(rel: str, text: str, hidden: Hidden) -> Iterator[str]:
    words = {w.strip("`[]()") for w in _WORD.split(text)}
    encodings = sorted(words & hidden.encodings)
    if encodings:
        yield f"{rel}: mask encodings of hidden regions: {_example(list(encodings))}"
    hashes = sorted(set(_SHA256.findall(text)) & hidden.hashes)
    if hashes:
        yield f"{rel}: mask hashes of hidden regions: {_example(list(hashes))}"
    totals = {str(n) for n in hidden.totals} | {f"{n:,}" for n in hidden.totals}
    rows = [
        line.strip()
        for line in text.splitlines()
        if line.lstrip().startswith("|")
        and (cells := {c.strip().strip("`*") for c in line.strip().strip("|").split("|")})
        and hidden.split in cells
        and cells & totals
    ]
    if rows:
        yield f"{rel}: counts of the hidden {hidden.split} side's regions in a table: {_example(rows)}"


def audit(public: Path, private: Release) -> list[str]:
    """The leaks of the hidden truth of ``private`` in the files of the release folder
    ``public`` (module docstring), one line each; [] when there is none. The hidden side is the
    one the public manifest names (a release made by ``regionbench challenge``), else the
    private release's evaluation split."""
    public = Path(public)
    try:
        manifest = json.loads((public / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{public}: no readable manifest.json ({exc}); give the public release's folder") from None
    said = manifest.get("hidden") if isinstance(manifest, dict) else None
    split = said.get("split") if isinstance(said, dict) else private.manifest.get("evaluation_split")
    if not isinstance(split, str):
        raise InputError(
            f"{public}: its manifest names no hidden split and {private.folder} records no evaluation split"
        )
    if isinstance(said, dict) and said.get("private", {}).get("digest") != private.manifest["digest"]:
        raise InputError(
            f"{public} was made from another release (digest {str(said.get('private', {}).get('digest'))[:12]}) "
            f"than {private.folder} ({private.manifest['digest'][:12]}); give the private release it was made from"
        )
    hidden = hidden_truth(private, split)
    found: list[str] = []
    for path in sorted(p for p in public.rglob("*") if p.is_file()):
        rel = path.relative_to(public).as_posix()
        if path.suffix == ".parquet":
            try:
                table = pq.read_table(path)
            except (OSError, pa.ArrowInvalid) as exc:
                found.append(f"{rel}: unreadable Parquet ({exc}); cannot say what it holds")
                continue
            found += _parquet(rel, table, hidden)
        elif path.suffix == ".json":
            try:
                found += _json_leaks(rel, json.loads(path.read_text(encoding="utf-8")), hidden)
            except (UnicodeDecodeError, ValueError):
                found.append(f"{rel}: not JSON; cannot say what it holds")
        elif path.suffix.lower() in TEXT_SUFFIXES:
            found += _text_leaks(rel, path.read_text(encoding="utf-8", errors="replace"), hidden)
    return found
