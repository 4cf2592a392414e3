"""The stage tables: their Arrow schemas and keys, and the one way stage outputs land on disk.

Every stage table's schema is defined here, once. Stage outputs are sorted by their key and
written without pandas metadata or timestamps (Parquet) or with sorted keys (JSON), so a stage
rerun on the same inputs gives the same bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Every region is keyed by (image, annotator, region): one image can carry the regions of
# several annotators.
REGION_KEY = ["image_id", "annotator", "region_id"]
CONSENSUS = "consensus"  # the annotator name of the consensus derived from several annotators
_REGION_KEY_FIELDS = [("image_id", pa.int64()), ("annotator", pa.string()), ("region_id", pa.int32())]

_MOMENTS = ("mean", "std", "skew")
# The 27 saiapr27 region features, in the order of the official features.txt (docs/features.md).
# The first seven are normalised by the image (its size, its pixel coordinates' spread): their
# names say so, apart from the images' width and height in pixels.
FEATURE_NAMES: tuple[str, ...] = (
    "area_norm", "width_norm", "height_norm", "mean_x_norm", "mean_y_norm", "std_x_norm", "std_y_norm",
    "boundary_area", "convexity",
    *(f"rgb_{m}_{c}" for m in _MOMENTS for c in "rgb"),
    *(f"lab_{m}_{c}" for m in _MOMENTS for c in "lab"),
)  # fmt: skip

# A mask as COCO writes it: its size [height, width] and compressed RLE counts.
RLE = pa.struct([("size", pa.list_(pa.int32())), ("counts", pa.string())])

IMAGES = pa.schema(
    [
        ("image_id", pa.int64()),
        ("folder", pa.string()),
        ("path", pa.string()),
        ("split", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("mode", pa.string()),
        ("sha256", pa.string()),
        ("phash", pa.string()),
        ("dhash", pa.string()),
        ("caption_title", pa.string()),
        ("caption_description", pa.string()),
        ("caption_notes", pa.string()),
        ("caption_location", pa.string()),
        ("caption_date", pa.string()),
        ("caption_encoding", pa.string()),
        ("license", pa.string()),
        ("license_url", pa.string()),
        ("url", pa.string()),
        ("original_url", pa.string()),
        ("attribution", pa.string()),
    ]
)

REGIONS = pa.schema(
    [
        *_REGION_KEY_FIELDS,
        ("label_id", pa.int32()),
        ("label", pa.string()),
        ("ontology_path", pa.string()),
        ("iscrowd", pa.bool_()),
        ("annotation_id", pa.int64()),
        ("category_id", pa.int64()),
        ("bbox_x", pa.int32()),
        ("bbox_y", pa.int32()),
        ("bbox_w", pa.int32()),
        ("bbox_h", pa.int32()),
        ("area_px", pa.int64()),
        ("source_area", pa.float64()),
        ("source_bbox_x", pa.float64()),
        ("source_bbox_y", pa.float64()),
        ("source_bbox_w", pa.float64()),
        ("source_bbox_h", pa.float64()),
        ("difficult", pa.bool_()),
        ("truncated", pa.bool_()),
        ("occluded", pa.bool_()),
        ("parent_region_id", pa.int32()),
        ("part_level", pa.int32()),
        ("mask", RLE),
        ("geometry", pa.binary()),
    ]
)

REJECTS = pa.schema(
    [
        ("source", pa.string()),
        ("key", pa.string()),
        ("item", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
    ]
)

FEATURES = pa.schema([*_REGION_KEY_FIELDS, *((name, pa.float64()) for name in FEATURE_NAMES)])

RELATIONS = pa.schema(
    [
        *_REGION_KEY_FIELDS,
        ("other_region_id", pa.int32()),
        ("topological", pa.string()),
        ("horizontal", pa.string()),
        ("vertical", pa.string()),
    ]
)

RELATION_STATS = pa.schema(
    [
        ("group", pa.string()),
        ("relation", pa.string()),
        ("count", pa.int64()),
        ("share", pa.float64()),
        ("share_of_pairs", pa.float64()),
    ]
)

VOCABULARY = pa.schema(
    [
        ("label_id", pa.int32()),
        ("label", pa.string()),
        ("parent", pa.string()),
        ("depth", pa.int32()),
        ("path", pa.string()),
        ("relation", pa.string()),
        ("is_leaf", pa.bool_()),
        ("group", pa.bool_()),
        ("in_h_list", pa.bool_()),
        ("in_a_list", pa.bool_()),
        ("in_t_list", pa.bool_()),
        ("origin", pa.string()),
        ("caption_count", pa.int64()),
        ("region_count", pa.int64()),
        ("image_count", pa.int64()),
    ]
)

BRANCH_STATS = pa.schema(
    [
        ("branch", pa.string()),
        ("frequency", pa.int64()),
        ("normalised_frequency", pa.float64()),
        ("descendants", pa.int32()),
        ("leaves", pa.int32()),
    ]
)

SUBSETS = pa.schema(
    [
        ("subset", pa.string()),
        ("image_id", pa.int64()),
        ("annotator", pa.string()),
        ("region_id", pa.int32()),
        ("label", pa.string()),
        ("split", pa.string()),
        ("image_split", pa.string()),
    ]
)

PREDICTIONS = pa.schema([*_REGION_KEY_FIELDS, ("label", pa.string()), ("predicted", pa.string())])

CLASSIFIER_SCORES = pa.schema(
    [
        ("subset", pa.string()),
        ("classifier", pa.string()),
        ("n_labels", pa.int32()),
        ("n_train", pa.int64()),
        ("n_test", pa.int64()),
        ("e_hard", pa.float64()),
        ("soft", pa.float64()),
        ("mean_e", pa.float64()),
    ]
)

AGREEMENT = pa.schema(
    [
        ("image_id", pa.int64()),
        ("annotator_a", pa.string()),
        ("annotator_b", pa.string()),
        ("matched", pa.int64()),
        ("unmatched_a", pa.int64()),
        ("unmatched_b", pa.int64()),
        ("mean_iou", pa.float64()),
        ("mean_dice", pa.float64()),
        ("exact_label", pa.float64()),
        ("hierarchical_label", pa.float64()),
        ("pixel_kappa", pa.float64()),
        ("rand_index", pa.float64()),
        ("vi_bits", pa.float64()),
        ("covering_of_a", pa.float64()),
        ("covering_of_b", pa.float64()),
    ]
)

# Which annotators covered (were shown) each image: an annotator absent from an image is not one
# who drew nothing on it (docs/agreement.md, "Coverage").
# LVIS's federated lists are one file's statements about one image: they sit beside its id there.
COVERAGE = pa.schema(
    [
        ("image_id", pa.int64()),
        ("annotator", pa.string()),
        ("source_image_id", pa.int64()),
        ("source_position", pa.int64()),
        ("source_license", pa.int64()),
        ("ignore_mask", RLE),
        ("neg_category_ids", pa.list_(pa.int64())),
        ("not_exhaustive_category_ids", pa.list_(pa.int64())),
        ("pair_ids", pa.list_(pa.int64())),
        ("pair_category_ids", pa.list_(pa.int64())),
    ]
)

# The categories each annotator's source file names, as it names them (io.layouts.NamesCategories).
SOURCE_CATEGORIES = pa.schema(
    [
        ("annotator", pa.string()),
        ("category_id", pa.int64()),
        ("name", pa.string()),
        ("supercategory", pa.string()),
        ("label", pa.string()),
        ("train_id", pa.int64()),
        ("has_instances", pa.bool_()),
        ("ignore_in_eval", pa.bool_()),
        ("frequency", pa.string()),
        ("synonyms", pa.list_(pa.string())),
    ]
)

# Image-level labels from an image-level source (io.imageclef.ingest_judgments).
IMAGE_LABELS = pa.schema(
    [("image_id", pa.int64()), ("annotator", pa.string()), ("label_id", pa.int32()), ("label", pa.string())]
)

# Per label, summed over a shard's image pairs (agreement.label_tally).
AGREEMENT_LABELS = pa.schema([("label", pa.string()), ("regions", pa.int64()), ("agreed", pa.int64())])

KEYS = {
    "images": ["image_id"],
    "regions": REGION_KEY,
    "rejects": ["source", "key", "item", "reason"],
    "image_labels": ["image_id", "annotator", "label"],
    "coverage": ["image_id", "annotator"],
    "source_categories": ["annotator", "category_id"],
}


def from_rows(rows: list[dict], schema: pa.Schema, key: list[str]) -> pa.Table:
    """A table of ``rows`` in ``schema``, sorted by ``key``."""
    table = pa.Table.from_pylist(rows, schema=schema)
    return table.sort_by([(k, "ascending") for k in key]) if len(table) else table


ROW_GROUP = 65_536
# The regions' rows carry a mask and an exact polygon (kilobytes each at 480x360): 65,536 of
# them decode to 381 MiB, which the writer holds about twice. Their files use smaller groups.
REGION_ROW_GROUP = 8_192
READ_ROWS = 8_192  # rows per part when a file is read part by part (read_parquet_parts)


def rows_per_group(table: str) -> int:
    """Rows per Parquet row group of a release table's files (its ``data/`` file and its views):
    ``REGION_ROW_GROUP`` for ``regions``, ``ROW_GROUP`` for every other."""
    return REGION_ROW_GROUP if table == "regions" else ROW_GROUP


def write_parquet(table: pa.Table, path: str | Path, metadata: dict[bytes, bytes] | None = None) -> None:
    """Write a table deterministically: zstd, fixed row groups, and no metadata but ``metadata``
    (no pandas schema, no timestamps)."""
    write_parquet_parts([table], table.schema, path, metadata)


def write_parquet_parts(
    parts: Iterable[pa.Table],
    schema: pa.Schema,
    path: str | Path,
    metadata: dict[bytes, bytes] | None = None,
    row_group: int = ROW_GROUP,
) -> None:
    """``write_parquet`` for a table given as consecutive parts, holding about one row group at a time.

    Rows are regrouped into row groups of exactly ``row_group`` rows (the last one shorter), each
    written from contiguous arrays: the bytes depend on the rows alone, not on how they were cut.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = schema.with_metadata(metadata) if metadata else schema.remove_metadata()
    with pq.ParquetWriter(path, schema, compression="zstd", write_statistics=True) as writer:
        pending: list[pa.Table] = []
        rows = 0
        for part in parts:
            pending.append(part.replace_schema_metadata(metadata))
            rows += part.num_rows
            if rows >= row_group:
                buffered = pa.concat_tables(pending)
                full = rows - rows % row_group
                for start in range(0, full, row_group):  # one group's arrays in memory at a time
                    writer.write_table(buffered.slice(start, row_group).combine_chunks(), row_group_size=row_group)
                pending, rows = [buffered.slice(full)], rows - full
        if rows:  # the rest; an empty table has no row group (readers size batches by the first one)
            writer.write_table(pa.concat_tables(pending).cast(schema).combine_chunks(), row_group_size=row_group)


def read_parquet_parts(path: str | Path, columns: list[str] | None = None) -> Iterator[pa.Table]:
    """A Parquet file's rows in order, as consecutive tables of at most ``READ_ROWS`` rows read
    one at a time: a pass over the file holds about one part, not the file.

    Without pre-buffering and threads the reader decodes a part, not its whole row group ahead:
    a release's 118k-image regions view peaked at 896 MiB with them, 434 MiB without."""
    reader = pq.ParquetFile(path, pre_buffer=False)
    for batch in reader.iter_batches(batch_size=READ_ROWS, columns=columns, use_threads=False):
        yield pa.Table.from_batches([batch])


def write_json(path: str | Path, value: object, *, escape_non_ascii: bool = True) -> None:
    """Write a JSON artefact deterministically: sorted keys, one-space indent, UTF-8, final newline.

    Stage reports escape non-ASCII characters (``\\u00e1``); the release's documents meant for
    people (``croissant.json``, ``manifest.json``) pass ``escape_non_ascii=False``.
    """
    text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=escape_non_ascii)
    write_whole(path, (text + "\n").encode("utf-8"))


def write_whole(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: into a temporary file beside it, renamed
    over ``path`` once written. A full disk or a stop half-way leaves neither a short file nor a
    0-byte one; the ``OSError`` raised names ``path``, not the temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def row_keys(table: pa.Table, columns: list[str]) -> pa.Array:
    """One string per row of ``table``: its ``columns``' values as text, joined by the unit
    separator (no label, annotator or id holds one). A composite key that ``pc.unique`` and
    ``pc.is_in`` take as they are, without Arrow's query engine (``group_by`` and ``join``
    load it: 0.45 s of imports for a check of a few thousand rows)."""
    parts = [pc.cast(table[c], pa.string()) for c in columns]
    return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "\x1f")


def read_parquet(path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file's table, or only its ``columns`` (the others are never decoded: a stage
    that needs a region's label does not pay for its mask). Read as one file (``ParquetFile``),
    not through ``read_table``'s dataset layer: the same table, without the dataset module's
    0.3 s import and a dataset's set-up on every read."""
    with pq.ParquetFile(path) as source:
        return source.read(columns=columns)


class ParquetParts(Sequence[pa.Table]):
    """Parquet files as a sequence of tables, each read when it is used and not kept: a job that
    walks every shard's table (even twice) holds one at a time."""

    def __init__(self, paths: Iterable[str | Path], columns: list[str] | None = None) -> None:
        self.paths, self.columns = list(paths), columns

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int | slice) -> pa.Table | ParquetParts:
        if isinstance(index, slice):
            return ParquetParts(self.paths[index], self.columns)
        return read_parquet(self.paths[index], self.columns)


def concat(parts: list[pa.Table]) -> pa.Table:
    """Shard tables as one (schemas must agree)."""
    return pa.concat_tables(parts) if parts else pa.table({})
