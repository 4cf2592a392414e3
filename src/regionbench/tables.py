"""Arrow schemas of the stage tables and the one way stage tables land on disk.

Stage outputs are sorted by their key and written without pandas metadata or timestamps,
so a stage rerun on the same inputs gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

IMAGES = pa.schema(
    [
        ("image_id", pa.int64()),
        ("folder", pa.string()),
        ("path", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("mode", pa.string()),
        ("sha256", pa.string()),
        ("caption_title", pa.string()),
        ("caption_description", pa.string()),
        ("caption_notes", pa.string()),
        ("caption_location", pa.string()),
        ("caption_date", pa.string()),
        ("caption_encoding", pa.string()),
    ]
)

REGIONS = pa.schema(
    [
        ("image_id", pa.int64()),
        ("annotator", pa.string()),
        ("region_id", pa.int32()),
        ("label_id", pa.int32()),
        ("label", pa.string()),
        ("ontology_path", pa.string()),
        ("bbox_x", pa.int32()),
        ("bbox_y", pa.int32()),
        ("bbox_w", pa.int32()),
        ("bbox_h", pa.int32()),
        ("area_px", pa.int64()),
        ("mask_rle", pa.string()),
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

KEYS = {
    "images": ["image_id"],
    "regions": ["image_id", "annotator", "region_id"],
    "rejects": ["source", "key", "item", "reason"],
}


def from_rows(rows: list[dict], schema: pa.Schema, key: list[str]) -> pa.Table:
    """A table of ``rows`` in ``schema``, sorted by ``key``."""
    table = pa.Table.from_pylist(rows, schema=schema)
    return table.sort_by([(k, "ascending") for k in key]) if len(table) else table


ROW_GROUP = 65_536


def write_parquet(table: pa.Table, path: str | Path, metadata: dict[bytes, bytes] | None = None) -> None:
    """Write a table deterministically: zstd, fixed row groups, and no metadata but ``metadata``
    (no pandas schema, no timestamps)."""
    write_parquet_parts([table], table.schema, path, metadata)


def write_parquet_parts(
    parts: Iterable[pa.Table], schema: pa.Schema, path: str | Path, metadata: dict[bytes, bytes] | None = None
) -> None:
    """``write_parquet`` for a table given as consecutive parts, holding about one row group at a time.

    Rows are regrouped into row groups of exactly ``ROW_GROUP`` (the last one shorter), each
    written from contiguous arrays: the bytes depend on the rows alone, not on how they were cut.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = schema.with_metadata(metadata) if metadata else schema.remove_metadata()
    with pq.ParquetWriter(path, schema, compression="zstd", write_statistics=True) as writer:
        pending: list[pa.Table] = []
        rows = written = 0
        for part in parts:
            pending.append(part.replace_schema_metadata(metadata))
            rows += part.num_rows
            if rows >= ROW_GROUP:
                buffered = pa.concat_tables(pending)
                full = rows - rows % ROW_GROUP
                writer.write_table(buffered.slice(0, full).combine_chunks(), row_group_size=ROW_GROUP)
                pending, rows, written = [buffered.slice(full)], rows - full, written + full
        if rows or not written:  # the rest; an empty table is written as write_table writes it
            rest = pa.concat_tables(pending) if pending else schema.empty_table()
            writer.write_table(rest.cast(schema).combine_chunks(), row_group_size=ROW_GROUP)


def read_parquet(path: str | Path) -> pa.Table:
    return pq.read_table(path)


def concat(parts: list[pa.Table]) -> pa.Table:
    """Shard tables as one (schemas must agree)."""
    return pa.concat_tables(parts) if parts else pa.table({})
