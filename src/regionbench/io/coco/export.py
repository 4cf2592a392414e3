"""A release written as a COCO tree (``images/``, ``annotations/<annotator>.json``), the layout
annotation tools export and ``pycocotools`` scores with; ingest of the export gives the release's
regions again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.io.coco import attribution
from regionbench.io.layouts import ReleaseTables, image_credits, image_files

# The derived consensus is exported under a name ingest accepts as an annotator's file.
CONSENSUS_FILE = "derived-consensus"


def _file_name(path: str) -> str:
    """An image's COCO ``file_name`` from its release path: below ``images/`` in a COCO tree
    (subfolders kept), the file's name in a SAIAPR tree (``NN/images/<id>.jpg``)."""
    return path.removeprefix("images/") if path.startswith("images/") else Path(path).name


def _ids_or_none(values: list[int | None], labels: list[str] | None = None) -> list[int] | None:
    """``values`` when every one is set, unique (per label, one id each when ``labels``), else None."""
    known = [v for v in values if v is not None]
    if len(known) < len(values):
        return None
    if labels is None:
        return known if len(set(known)) == len(known) else None
    per_label = dict(zip(labels, known, strict=True))
    consistent = all(per_label[label] == v for label, v in zip(labels, known, strict=True))
    return known if consistent and len(set(per_label.values())) == len(per_label) else None


def as_written(value: float) -> int | float:
    """A source number as JSON wrote it most likely: a whole one as an integer (equal either way)."""
    return int(value) if float(value).is_integer() else value


def _instances(
    images: list[dict[Any, Any]],
    regions: dict[str, list[Any]],
    categories: list[dict[Any, Any]],
    category_ids: list[int],
) -> dict[Any, Any]:
    """One annotator's COCO instances document. ``regions`` holds the release's columns in
    (image_id, region_id) order, ``category_ids`` each region's category id; annotation ids are
    the source file's when every region has one, else 1, 2, ... in that order, so each image's
    regions keep their order (their region ids). ``area`` and ``bbox`` are the source's where it
    gave them (COCO's crowd areas are not their pixel counts), else measured on the mask."""
    n = len(regions["image_id"])
    annotation_ids = _ids_or_none(regions["annotation_id"]) or list(range(1, n + 1))
    annotations = []
    unknown = [None] * n  # a release made before the source_* columns
    for k in range(n):
        box = [regions[c][k] for c in ("bbox_x", "bbox_y", "bbox_w", "bbox_h")]
        source_box = [regions.get(f"source_{c}", unknown)[k] for c in ("bbox_x", "bbox_y", "bbox_w", "bbox_h")]
        source_area = regions.get("source_area", unknown)[k]
        annotations.append(
            {
                "id": annotation_ids[k],
                "image_id": regions["image_id"][k],
                "category_id": category_ids[k],
                "segmentation": {"size": list(regions["mask"][k]["size"]), "counts": regions["mask"][k]["counts"]},
                "area": regions["area_px"][k] if source_area is None else as_written(source_area),
                "bbox": box if None in source_box else [as_written(v) for v in source_box],
                "iscrowd": int(regions["iscrowd"][k]),
            }
        )
    return {"images": images, "annotations": annotations, "categories": categories}


def _source_image_ids(coverage: pa.Table, ids: list[int]) -> dict[int, int]:
    """Release image id -> the id the annotator's own file gave it (``coverage.source_image_id``)
    when it gave every one of ``ids`` one, each its own; else the release's ids."""
    given = (
        dict(zip(coverage["image_id"].to_pylist(), coverage["source_image_id"].to_pylist(), strict=True))
        if "source_image_id" in coverage.column_names
        else {}
    )
    source = [given.get(i) for i in ids]
    if None in source or len(set(source)) < len(source):
        return {i: i for i in ids}
    return {i: int(given[i]) for i in ids}


def _in_source_order(coverage: pa.Table, ids: list[int]) -> list[int]:
    """``ids`` in the order the annotator's own files listed them (``coverage.source_position``)
    where they listed every one, so a tool that walks the file meets the images as in the source
    (tidecv's ties follow that order); else as given (id order)."""
    if "source_position" not in coverage.column_names:
        return ids
    given = dict(zip(coverage["image_id"].to_pylist(), coverage["source_position"].to_pylist(), strict=True))
    if any(given.get(i) is None for i in ids):
        return ids
    return sorted(ids, key=lambda i: given[i])


LVIS_CATEGORY = ("frequency", "synonyms")  # source_categories columns an LVIS file's categories carry
FEDERATED = ("neg_category_ids", "not_exhaustive_category_ids")  # coverage columns its images carry


def _federated(coverage: pa.Table) -> dict[int, dict[str, list[int]]]:
    """Release image id -> the LVIS lists the annotator's file gave the image (``coverage``)."""
    if not set(FEDERATED) <= set(coverage.column_names):
        return {}
    rows = coverage.select(["image_id", *FEDERATED]).to_pylist()
    return {r["image_id"]: {k: r[k] for k in FEDERATED if r[k] is not None} for r in rows}


def _source_rows(release: ReleaseTables) -> list[dict[str, Any]]:
    """The release's ``source_categories`` rows; none in a release made before the table."""
    try:
        rows: list[dict[str, Any]] = release.arrow("source_categories").to_pylist()
    except InputError:
        return []
    return rows


def _own_categories(who: str, source: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The source categories of ``who``'s file; for the consensus, every annotator's when they
    agree on each id's name (else none: the vocabulary's are written)."""
    own = [r for r in source if r["annotator"] == who]
    if own or who != tables.CONSENSUS:
        return own
    by_id: dict[int, dict[str, Any]] = {}
    for row in source:
        if by_id.setdefault(row["category_id"], row)["name"] != row["name"]:
            return []
    return list(by_id.values())


def _categories(
    who: str, source: list[dict[str, Any]], vocabulary: list[dict[str, Any]], regions: pa.Table
) -> tuple[list[dict[str, Any]], list[int]]:
    """The ``categories`` of ``who``'s file and each of its regions' category id. The source's own
    (ids, names as spelled, supercategories; a category with none under its label's parent) when
    the release keeps them and they name every region's label; else the vocabulary's labels under
    their parents, with the source's category ids when the regions carry one id per label, else
    the label ids."""
    parent = {v["label"]: v["parent"] or "" for v in vocabulary}
    labels, region_ids = regions["label"].to_pylist(), regions["category_id"].to_pylist()
    own = sorted(_own_categories(who, source), key=lambda r: r["category_id"])
    first_id: dict[str, int] = {}
    for row in own:
        if row["label"] is not None:
            first_id.setdefault(row["label"], row["category_id"])
    ids = [i if i is not None else first_id.get(label) for i, label in zip(region_ids, labels, strict=True)]
    if own and None not in ids:
        categories = [
            {
                "id": r["category_id"],
                "name": r["name"],
                "supercategory": r["supercategory"] if r["supercategory"] is not None else parent.get(r["label"], ""),
            }
            | {k: r[k] for k in LVIS_CATEGORY if r.get(k) is not None}  # an LVIS file's, written back
            for r in own
        ]
        return categories, [int(i) for i in ids if i is not None]
    source_ids = _ids_or_none(region_ids, labels)
    id_of = dict(zip(labels, source_ids, strict=True)) if source_ids else {}
    categories = [
        {"id": id_of.get(v["label"], v["label_id"]), "name": v["label"], "supercategory": v["parent"] or ""}
        for v in vocabulary
        if not id_of or v["label"] in id_of  # source ids: only the categories the regions use
    ]
    categories.sort(key=lambda c: c["id"])
    known = {c["name"]: c["id"] for c in categories}
    return categories, [known[label] for label in labels]


def _source_files(release: ReleaseTables) -> list[dict[str, Any]]:
    """The annotation files the release was built from, as it keeps them (manifest
    ``source_files``; none in a release made before it kept them)."""
    return list(release.manifest.get("source_files") or [])


def _files_of(
    who: str, ids: list[int], split_of: dict[int, str | None], files: list[dict[str, Any]]
) -> list[tuple[dict[str, Any] | None, list[int]]]:
    """Where ``who``'s images go: each of their source files with its images (by the split it
    holds when they came in several), so the export writes the files that came in; else (no
    source file, or an image no file's split holds) one file, ``None``, with all of them."""
    own = [f for f in files if f["annotator"] == who]
    if len(own) == 1:
        return [(own[0], ids)]
    by_split = {f["split"]: f for f in own}
    if not own or None in by_split or any(split_of[i] not in by_split for i in ids):
        return [(None, ids)]
    return [(f, [i for i in ids if split_of[i] == f["split"]]) for f in own]


def _licence_ids(coverage: pa.Table) -> dict[int, int]:
    """Image id -> the licence id the files of ``coverage`` (one annotator's rows, or every one's)
    give it (``coverage.source_license``): the first that gives one."""
    if "source_license" not in coverage.column_names:
        return {}
    found: dict[int, int] = {}
    for image_id, licence in zip(coverage["image_id"].to_pylist(), coverage["source_license"].to_pylist(), strict=True):
        if licence is not None:
            found.setdefault(image_id, licence)
    return found


def _one_licence_table(files: list[dict[str, Any]]) -> list[Any] | None:
    """The ``licenses`` every source file gives, when they give one and the same (COCO's train and
    val files do): what a file made of several annotators' readings (the consensus) can name."""
    tables_given = [json.dumps(f["licenses"], sort_keys=True) for f in files]
    if not files or len(set(tables_given)) != 1 or files[0]["licenses"] is None:
        return None
    return list(files[0]["licenses"])


def export_release(
    release: ReleaseTables, out: str | Path, images: str | Path | None = None, annotator: str | None = None
) -> dict[str, int]:
    """Write ``release`` (a loaded release, ``ReleaseTables``) as a COCO tree under ``out`` (a new folder).

    Each annotator's readings go back to the files they came in (manifest ``source_files``): the
    same paths (COCO's own tree: ``annotations/instances_<split>.json`` with the images in
    ``<split>/``), each with its ``info`` and ``licenses`` as given and every image's licence id
    as its entry gave it. A release without them (or the derived consensus, as
    ``annotations/derived-consensus.json``) gets one file per annotator,
    ``annotations/<annotator>.json``, under a licence table numbered from 1 in (name, url) order
    unless every source file gives the same table. Every annotator who covered an image is
    written, or only ``annotator``. A file's ``images`` are the images the annotator covered, by
    the ids their file gave them; each region is an annotation with its compressed RLE, box, area
    and ``iscrowd`` (box and area as the source gave them, ``_instances``) under its source id.
    Categories are the source's as its file named them, where the release keeps them
    (``_categories``); an LVIS file's federated lists and category frequencies and synonyms are
    written back. With ``images`` (the raw tree) the image files are copied in, each checked
    against the sha256 the release records.

    Returns the number of files, annotators, images and regions written.
    """
    out = Path(out)
    image_rows = release.arrow("images", ["image_id", "path", "split", "width", "height", "sha256"])
    regions = release.arrow("regions").sort_by([("image_id", "ascending"), ("region_id", "ascending")])
    coverage = release.arrow("coverage")
    drawn = set(regions["annotator"].to_pylist())
    found = sorted(drawn | set(coverage["annotator"].to_pylist()))
    if annotator is not None and annotator not in found:
        raise InputError(
            f"{release.folder}: no annotator {annotator!r}; choose one of {', '.join(found)} with --annotator"
        )
    chosen = [annotator] if annotator else [a for a in found if a != tables.CONSENSUS] or found

    vocabulary = release.arrow("vocabulary", ["label_id", "label", "parent"]).to_pylist()
    named = _source_rows(release)
    written = regions.filter(pc.is_in(regions["annotator"], pa.array(chosen, pa.string())))

    by_id = {row["image_id"]: row for row in image_rows.to_pylist()}
    split_of = {image_id: row["split"] for image_id, row in by_id.items()}
    sources = _source_files(release)
    renumbered, about = attribution.written(image_credits(release))
    shared = _one_licence_table(sources)
    anyone = _licence_ids(coverage) if shared else {}
    files = {image_id: _file_name(row["path"]) for image_id, row in by_id.items()}
    (out / "annotations").mkdir(parents=True)
    documents = 0
    for who in chosen:
        own = coverage.filter(pc.equal(coverage["annotator"], who))
        covered = own["image_id"].to_pylist()
        mine = regions.filter(pc.equal(regions["annotator"], who))
        every = sorted(set(covered) | set(mine["image_id"].to_pylist())) if covered else sorted(by_id)
        lists, given = _federated(own), _licence_ids(own)
        categories, category_ids = _categories(who, named, vocabulary, mine)
        keys = list(zip(mine["image_id"].to_pylist(), mine["region_id"].to_pylist(), strict=True))
        category_of = dict(zip(keys, category_ids, strict=True))
        for source, ids in _files_of(who, every, split_of, sources):
            numbered = _source_image_ids(own, ids)  # a file's ids are its own: unique within it
            licence_of: dict[int, int] | None  # the ids as given; None: renumbered with the table
            if source is not None:
                licences, licence_of = source["licenses"], given
                folder = source["folder"]
                names = {i: by_id[i]["path"].removeprefix(folder) for i in ids} if folder is not None else {}
                path = source["file"]
            else:
                licences, licence_of = (shared, anyone) if shared else (renumbered, None)
                names = {i: files[i] for i in ids}
                path = f"annotations/{CONSENSUS_FILE if who == tables.CONSENSUS else who}.json"
            entries = []
            for i in _in_source_order(own, ids):
                entry = {"id": numbered[i], "width": by_id[i]["width"], "height": by_id[i]["height"]}
                entry |= {"file_name": names[i]} if i in names else {}
                entry |= about[i] if licence_of is None else attribution.as_given(about[i], licence_of.get(i))
                entries.append(entry | lists.get(i, {}))
            part = mine.filter(pc.is_in(mine["image_id"], pa.array(ids, pa.int64())))
            columns = part.to_pydict()
            ids_of = [category_of[k] for k in zip(columns["image_id"], columns["region_id"], strict=True)]
            columns["image_id"] = [numbered[i] for i in columns["image_id"]]
            document = _instances(entries, columns, categories, ids_of)
            if source is not None and source["info"] is not None:
                document["info"] = source["info"]
            if licences is not None:
                document["licenses"] = licences
            text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            (out / path).parent.mkdir(parents=True, exist_ok=True)
            (out / path).write_text(text + "\n", encoding="utf-8")
            documents += 1
    # An export's images below images/; COCO's own tree's in their split folders, as they came.
    target = {i: row["path"] if sources else f"images/{files[i]}" for i, row in by_id.items()}
    for folder in sorted({str(Path(t).parent) for t in target.values()} | (set() if sources else {"images"})):
        (out / folder).mkdir(parents=True, exist_ok=True)
    if images is not None:
        for image_id, content in image_files(release, Path(images), sorted(by_id)):
            (out / target[image_id]).parent.mkdir(parents=True, exist_ok=True)
            (out / target[image_id]).write_bytes(content)
    return {"files": documents, "annotators": len(chosen), "images": len(by_id), "regions": written.num_rows}
