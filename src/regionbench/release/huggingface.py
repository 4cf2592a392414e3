"""The release as Hugging Face ``datasets`` reads it: one Parquet file per split, and the
card's ``configs`` and ``dataset_info`` that map them (docs/releases.md).

``datasets`` turns each file a config names into a split, and a config with one file and no
split named into a single ``train`` split. So the two tables people train and test on get a
file per side, under ``hf/``: ``regions`` by the region split (the regions of subsets A-H; a
region keeps its side in every subset) and ``images`` by the image split. Every other table
is one split named ``full``, and so is every region of every annotator in the ``regions``
config (the sides hold the reference annotator's regions of subsets A-H). The ``data/``
tables stay the release's record; these files are views of them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from regionbench.core import tables
from regionbench.core.forked import forked_map
from regionbench.release.manifest import ReleaseError
from regionbench.release.schemas import TABLES

SPLITS = ("train", "test")
WHOLE = "full"  # the split of a table that has no train/test sides
VIEWS = ("regions", "images")  # the tables split into hf/<table>-<split>.parquet
FEATURE_TYPES = {"int32": "int32", "int64": "int64", "double": "float64", "string": "string", "bool": "bool"}
# The column ``datasets`` decodes as its ``Image`` feature, and the schema metadata that says so.
IMAGE = "image"
IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
# Images per row group of an embedded file, as ``datasets`` writes image datasets: a reader (and
# the writer) holds a hundred images at a time, not a split's.
EMBED_ROWS = 100
IMAGE_FEATURE = {b"huggingface": json.dumps({"info": {"features": {IMAGE: {"_type": "Image"}}}}).encode()}


def view_path(table: str, split: str) -> str:
    """The file of ``table``'s ``split`` inside the release."""
    return f"hf/{table}-{split}.parquet"


def embed_images(images: pa.Table, raw_root: Path) -> pa.Table:
    """``images`` with an ``image`` column: each file's bytes (checked against its ``sha256``)
    and its path relative to the raw root, the struct ``datasets`` reads as an ``Image``."""
    cells = []
    for rel, digest in zip(images["path"].to_pylist(), images["sha256"].to_pylist(), strict=True):
        try:
            data = (Path(raw_root) / rel).read_bytes()
        except OSError as exc:
            raise ReleaseError(f"release.images: embed: cannot read {rel} under {raw_root}: {exc.strerror}") from exc
        if hashlib.sha256(data).hexdigest() != digest:
            raise ReleaseError(
                f"release.images: embed: {rel} changed since ingest (sha256 differs); rebuild to ingest it again"
            )
        cells.append({"bytes": data, "path": rel})
    return images.append_column(pa.field(IMAGE, IMAGE_TYPE), pa.array(cells, type=IMAGE_TYPE))


def _sides(regions: Path) -> tuple[dict[str, pa.Array], dict[str, int]]:
    """Split -> the ids of its images (an image's side is the ``image_split`` of its regions),
    and split -> how many regions are on it (their ``split``)."""
    ids: dict[str, list[pa.Array]] = {s: [pa.array([], pa.int64())] for s in SPLITS}
    counts = dict.fromkeys(SPLITS, 0)
    for part in tables.read_parquet_parts(regions, ["image_id", "split", "image_split"]):
        for split in SPLITS:
            ids[split].append(pc.unique(part.filter(pc.equal(part["image_split"], split))["image_id"]))
            counts[split] += pc.sum(pc.equal(part["split"], split)).as_py() or 0
    return {split: pc.unique(pa.concat_arrays(arrays)) for split, arrays in ids.items()}, counts


def _embedded(parts: Iterable[pa.Table], raw_root: Path) -> Iterator[pa.Table]:
    """``parts`` with their image bytes, ``EMBED_ROWS`` images at a time."""
    for part in parts:
        for start in range(0, part.num_rows, EMBED_ROWS):
            yield embed_images(part.slice(start, EMBED_ROWS), raw_root)


def write_views(folder: Path, embed_from: Path | None = None, workers: int = 1) -> None:
    """Write the split files of ``VIEWS`` from the release's ``data/`` tables in ``folder``.

    A region's side is its ``split``; an image's is the ``image_split`` of its regions (the
    same for all of them; images none of whose regions is in a subset are in neither file).
    With ``embed_from`` (the raw root; ``release.images: embed``) the image files carry their
    bytes (``embed_images``) in row groups of ``EMBED_ROWS`` images; otherwise only their paths.
    Each file is written part by part: memory holds one row group, whatever the collection's size.
    The files are independent: up to ``workers`` processes write them (``forked.forked_map``).
    """
    folder = Path(folder)
    (folder / "hf").mkdir(exist_ok=True)
    sides, regions = _sides(folder / "data" / "regions.parquet")
    # A side without rows is no file (``datasets`` refuses an empty split). Without any image on
    # a side (no subsets A-H: a label-free collection) the images are one split, ``full``.
    files = [("regions", split) for split in SPLITS if regions[split]]
    files += [("images", split) for split in SPLITS if len(sides[split])]
    if not any(len(ids) for ids in sides.values()):
        files.append(("images", WHOLE))
    forked_map(partial(_write_view, folder, sides, embed_from), files, workers)


def _write_view(folder: Path, sides: dict[str, pa.Array], embed_from: Path | None, file: tuple[str, str]) -> None:
    """The file of one of ``VIEWS`` on one side (``write_views``)."""
    table, split = file
    source, path = folder / "data" / f"{table}.parquet", folder / view_path(table, split)
    schema = pq.read_schema(source)
    if table == "regions":
        side = (part.filter(pc.equal(part["split"], split)) for part in tables.read_parquet_parts(source))
        tables.write_parquet_parts(side, schema, path, schema.metadata, tables.rows_per_group("regions"))
        return
    parts = tables.read_parquet_parts(source)
    chosen = parts if split == WHOLE else (part.filter(pc.is_in(part["image_id"], sides[split])) for part in parts)
    if embed_from is None:
        tables.write_parquet_parts(chosen, schema, path)
    else:
        embedded = _embedded(chosen, embed_from)
        tables.write_parquet_parts(
            embedded, schema.append(pa.field(IMAGE, IMAGE_TYPE)), path, IMAGE_FEATURE, EMBED_ROWS
        )


def _files(folder: Path, manifest: dict, table: str) -> dict[str, str]:
    """Split name -> file of ``table``, the splits without rows left out: ``datasets`` refuses
    to load an empty split, so an empty table (no rejects, one annotator) has no config. The
    ``regions`` config has, beside its sides, the split ``full``: every annotator's regions,
    those outside subsets A-H too."""
    whole = {WHOLE: manifest["tables"][table]["path"]}
    files = {s: view_path(table, s) for s in SPLITS} if table in VIEWS else whole
    if table == "regions":
        files |= whole
    if table == "images" and (Path(folder) / view_path(table, WHOLE)).is_file():
        files = {WHOLE: view_path(table, WHOLE)}  # no sides: every image, as the views carry them
    return {
        s: p for s, p in files.items() if (Path(folder) / p).is_file() and pq.read_metadata(Path(folder) / p).num_rows
    }


def configs(folder: Path, manifest: dict) -> list[dict]:
    """The card's ``configs``: one per table with rows, ``regions`` the default."""
    return [
        {
            "config_name": table,
            "data_files": [{"split": s, "path": p} for s, p in files.items()],
            **({"default": True} if table == "regions" else {}),
        }
        for table in TABLES
        if (files := _files(folder, manifest, table))
    ]


def _feature(field: pa.Field) -> dict:
    """A column as ``dataset_info`` lists it; a struct (the mask) lists its fields in turn."""
    if field.name == IMAGE and field.type == IMAGE_TYPE:
        return {"name": field.name, "dtype": "image"}
    if pa.types.is_struct(field.type):
        return {"name": field.name, "struct": [_feature(child) for child in field.type]}
    if pa.types.is_list(field.type):
        return {"name": field.name, "list": _feature(field.type.value_field)["dtype"]}
    if pa.types.is_binary(field.type):
        return {"name": field.name, "dtype": "binary"}
    return {"name": field.name, "dtype": FEATURE_TYPES[str(field.type)]}


def dataset_info(folder: Path, manifest: dict) -> list[dict]:
    """The card's ``dataset_info``: per config its features and its splits' sizes in rows and bytes."""
    out = []
    for table in TABLES:
        if not (files := _files(folder, manifest, table)):
            continue
        schema = pq.read_schema(folder / next(iter(files.values())))
        splits = []
        for split, path in files.items():
            meta = pq.read_metadata(folder / path)
            splits.append({"name": split, "num_bytes": (folder / path).stat().st_size, "num_examples": meta.num_rows})
        out.append(
            {
                "config_name": table,
                "features": [_feature(f) for f in schema],
                "splits": splits,
                "download_size": sum(s["num_bytes"] for s in splits),
            }
        )
    return out
