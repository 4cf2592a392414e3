"""Arrow schemas of the stage tables and the one way stage tables land on disk.

Stage outputs are sorted by their key and written without pandas metadata or timestamps,
so a stage rerun on the same inputs gives the same bytes.
"""

from __future__ import annotations

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


def write_parquet(table: pa.Table, path: str | Path, metadata: dict[bytes, bytes] | None = None) -> None:
    """Write a table deterministically: zstd, fixed row groups, and no metadata but ``metadata``
    (no pandas schema, no timestamps)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        table.replace_schema_metadata(metadata),
        path,
        compression="zstd",
        row_group_size=65_536,
        write_statistics=True,
    )


def read_parquet(path: str | Path) -> pa.Table:
    return pq.read_table(path)


def concat(parts: list[pa.Table]) -> pa.Table:
    """Shard tables as one (schemas must agree)."""
    return pa.concat_tables(parts) if parts else pa.table({})
