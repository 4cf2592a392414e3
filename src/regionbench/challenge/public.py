"""The public release of a hosted benchmark: the private release with one side's truth taken out.

The hidden side is a split of the images (``images.split``; by default the evaluation split the
build recorded). The public release keeps every image, train and hidden, with what a
participant needs of it (id, file, size, hashes of its pixels), and every record of the other
side. Of the hidden side it keeps nothing derived from the truth:

- rows of the hidden images are left out of every table keyed by image (regions, relations,
  subsets, agreement, image labels, coverage, whose crowd masks and federated lists are truth);
- the label audit is left out whole: its candidates were scored by models fitted on every fold,
  the hidden regions among them;
- the near-copy audit keeps its pairs (they come from pixels) without the hidden images'
  subsets, which their labels decide;
- the vocabulary's counts are those of the public regions;
- rejects that name a hidden image or the hidden split are left out;
- no stage report, figure or baseline figure is carried over: each was computed over the truth
  of both sides.

The manifest's ``hidden`` says what is hidden and records the private release's digest; the
card and Croissant say it too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from regionbench.core.errors import InputError
from regionbench.release.loader import Release

# Tables keyed by image whose rows of a hidden image are truth: left out.
BY_IMAGE = ("regions", "relations", "subsets", "agreement", "image_labels", "coverage")
WITHHELD = ("audit_labels",)  # left out whole (module docstring)


def hidden_split(data: Release, hidden: str | None) -> str:
    """The split ``hidden`` names (default: the release's evaluation split), checked to hold
    images of ``data``; an ``InputError`` saying which splits there are otherwise."""
    splits = sorted({str(s) for s in data.images["split"].dropna()})
    if not splits:
        raise InputError(
            f"{data.folder}: its images have no split of their own (the collection ships none): a hosted benchmark "
            "hides a split of the images; build it from a collection that ships its test or validation split"
        )
    chosen = hidden if hidden is not None else data.manifest.get("evaluation_split")
    if chosen is None:
        raise InputError(
            f"{data.folder}: the release records no evaluation split; name the side to hide with --hidden "
            f"(its images' splits: {', '.join(splits) or 'none'})"
        )
    if chosen not in splits:
        raise InputError(
            f"--hidden {chosen}: no image of {data.folder} is in that split; its images' splits are "
            f"{', '.join(splits) or 'none'}"
        )
    return str(chosen)


def hidden_images(data: Release, split: str) -> pa.Array:
    """The ids of the images of ``split``."""
    images = data.arrow("images", ["image_id", "split"])
    return images.filter(pc.equal(images["split"], split))["image_id"].combine_chunks()


def _without(table: pa.Table, ids: pa.Array) -> pa.Table:
    return table.filter(pc.invert(pc.is_in(table["image_id"], value_set=ids)))


def _vocabulary(vocabulary: pa.Table, regions: pa.Table) -> pa.Table:
    """``vocabulary`` with ``region_count`` and ``image_count`` counted over ``regions`` (the
    build's rule: every annotator's regions, each label's own)."""
    by_label = regions.group_by("label").aggregate([("image_id", "count"), ("image_id", "count_distinct")])
    found = dict(zip(by_label["label"].to_pylist(), by_label["image_id_count"].to_pylist(), strict=True))
    shown = dict(zip(by_label["label"].to_pylist(), by_label["image_id_count_distinct"].to_pylist(), strict=True))
    labels = vocabulary["label"].to_pylist()
    for column, counts in (("region_count", found), ("image_count", shown)):
        index = vocabulary.schema.get_field_index(column)
        values = pa.array([int(counts.get(label, 0)) for label in labels], type=vocabulary.schema.field(index).type)
        vocabulary = vocabulary.set_column(index, vocabulary.schema.field(index), values)
    return vocabulary


def _duplicates(table: pa.Table, ids: pa.Array) -> pa.Table:
    """The near-copy pairs, a hidden image's subsets and subsets split emptied."""
    hidden = pc.is_in(table["image_id"], value_set=ids)
    for column in ("subsets", "split"):
        index = table.schema.get_field_index(column)
        field = table.schema.field(index)
        empty = pa.scalar([], type=field.type) if pa.types.is_list(field.type) else pa.scalar(None, field.type)
        table = table.set_column(index, field, pc.if_else(hidden, empty, table[column]))
    return table


def _rejects(table: pa.Table, names: list[str]) -> pa.Table:
    """The rejects whose source, key or item names none of ``names`` (the hidden images' files
    and the hidden split)."""
    keep = [
        not any(name in text for name in names for text in row)
        for row in zip(*(table[c].to_pylist() for c in ("source", "key", "item")), strict=True)
    ]
    return table.filter(pa.array(keep, type=pa.bool_()))


def public_tables(data: Release, split: str) -> tuple[dict[str, pa.Table], dict[str, int]]:
    """Every table of the public release of ``data`` with ``split`` hidden, and what was left
    out: table -> rows (module docstring)."""
    from regionbench.release.schemas import TABLES

    ids = hidden_images(data, split)
    images = data.arrow("images", ["image_id", "path"])
    hidden_paths = images.filter(pc.is_in(images["image_id"], value_set=ids))["path"].to_pylist()
    names = [split, *(Path(p).name for p in hidden_paths)]
    out: dict[str, pa.Table] = {}
    for name in TABLES:
        table = data.arrow(name)
        if name in BY_IMAGE:
            out[name] = _without(table, ids)
        elif name in WITHHELD:
            out[name] = table.slice(0, 0)
        elif name == "audit_duplicates":
            out[name] = _duplicates(table, ids)
        elif name == "rejects":
            out[name] = _rejects(table, names)
        else:
            out[name] = table
    out["vocabulary"] = _vocabulary(out["vocabulary"], out["regions"])
    rows = {name: data.manifest["tables"][name]["rows"] for name in TABLES}  # what the manifest sealed
    left_out = {name: rows[name] - out[name].num_rows for name in (*BY_IMAGE, *WITHHELD, "rejects")}
    return out, {name: rows for name, rows in left_out.items() if rows}


def write_public(
    data: Release,
    out: Path,
    split: str,
    scored_at: str,
    card: Callable[[Path, dict], str] | None = None,
    croissant: Callable[[Path, dict], dict] | None = None,
    leaks: int | None = None,
) -> dict:
    """The public release of ``data`` with ``split`` hidden written to ``out`` (sealed and
    verifiable as any release; its dataset ``<dataset>-public``); ``scored_at`` says where the
    hidden side is scored (the card and Croissant say it); ``leaks``: what the leak audit found
    in it (the card says it; None: not run yet). Returns its manifest."""
    from regionbench.release.manifest import Provenance
    from regionbench.release.writer import write_release

    manifest = data.manifest
    tables, left_out = public_tables(data, split)
    hidden = {
        "split": split,
        "images": len(hidden_images(data, split)),
        "private": {"dataset": manifest["dataset"], "version": manifest["version"], "digest": manifest["digest"]},
        "scored_at": scored_at,
        **({"leaks": leaks} if leaks is not None else {}),
        # the tables whose hidden rows were left out, by name: their counts would be the hidden
        # side's own figures
        "left_out": sorted(left_out),
    }
    provenance = Provenance(
        dataset=f"{manifest['dataset']}-public",
        version=manifest["version"],
        code_version=manifest["code_version"],
        config_sha256=manifest["config_sha256"],
        inputs_sha256=manifest["inputs_sha256"],
        date=manifest["date"],
        license=manifest["license"],
        synthetic=manifest["synthetic"],
        layout=manifest["layout"],
        creator=manifest["creator"],
        source=manifest.get("source"),
        images="paths",
        statements=manifest.get("statements"),
        evaluation_split=manifest.get("evaluation_split"),
        source_files=manifest.get("source_files"),
        hidden=hidden,
    )
    return write_release(out, tables, {}, provenance, card=card, croissant=croissant)
