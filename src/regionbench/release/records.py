"""Record identity: row digests, record digests and content hashes, read in parts.

Each row has a *record digest* over its columns, except the columns a schema marks as
statistics (``x-statistics``, e.g. the vocabulary's region counts, which grow with any
addition). The logical content hash of a table covers every column (statistics too) in key
order, independently of the Parquet encoding.

Memory. A table may be handed over in *parts* (one per shard, or a file's row groups), each
loaded when needed. Parts whose keys follow each other are checked, hashed and digested one at
a time, so a pass holds one shard, not the whole collection; parts whose keys interleave are
combined and sorted first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from regionbench import tables
from regionbench.release.geoparquet import geo_extent
from regionbench.release.schemas import TABLES, TableSchema, conform, validate_table


def _rows(table: pa.Table, columns: list[str]) -> Iterable[tuple]:
    # Batch by batch: Python objects for a few thousand rows at a time, not for the whole table.
    for batch in table.select(columns).to_batches(max_chunksize=4096):
        yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)


def _row_digests(table: pa.Table, columns: list[str]) -> Iterable[bytes]:
    """A 16-byte digest of each row's values in ``columns`` (``repr`` is exact for floats)."""
    for row in _rows(table, columns):
        yield hashlib.blake2b(repr(row).encode(), digest_size=16).digest()


def record_digests(table: pa.Table, schema: TableSchema) -> dict[tuple, bytes]:
    """Primary key -> digest of the record's non-statistics columns."""
    record = [c for c in schema.columns if c not in schema.statistics]
    return dict(zip(_rows(table, schema.key), _row_digests(table, record), strict=True))


def content_hash(table: pa.Table, schema: TableSchema) -> str:
    """sha256 over every record (all columns) in key order: equal records, equal hash."""
    digest = hashlib.sha256(schema.name.encode())
    for row_digest in _row_digests(_sorted(table, schema.key), schema.columns):
        digest.update(row_digest)
    return digest.hexdigest()


Part = Callable[[], pa.Table]


def _whole(table: pa.Table) -> Part:
    return partial(lambda t: t, table)


def as_parts(value: pa.Table | Sequence[Part]) -> list[Part]:
    """A table, or a sequence of parts, as a list of parts."""
    return [_whole(value)] if isinstance(value, pa.Table) else list(value)


def file_parts(path: Path) -> list[Part]:
    """The row groups of a Parquet file as parts, read one at a time."""
    count = pq.ParquetFile(path).num_row_groups
    if not count:
        return [partial(pq.read_table, path)]
    return [partial(lambda i: pq.ParquetFile(path).read_row_group(i), i) for i in range(count)]


def _with_missing_columns(table: pa.Table, schema: TableSchema) -> pa.Table:
    """A table of an older release layout, with the columns it lacks as nulls: its records then
    differ from records that carry values there, which is what they are."""
    for column in schema.arrow:
        if column.name not in table.column_names:
            table = table.append_column(column, pa.nulls(len(table), column.type))
    return table


def release_parts(folder: Path) -> dict[str, list[Part]]:
    """Every table of a release folder, as the row groups of its file (tables an older release
    lacks are left out)."""
    paths = {name: Path(folder) / "data" / f"{name}.parquet" for name in TABLES}
    return {name: file_parts(path) for name, path in paths.items() if path.is_file()}


def _sorted(table: pa.Table, key: list[str]) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in key]) if len(table) else table


def _key_at(table: pa.Table, key: list[str], row: int) -> tuple:
    return tuple(table[k][row].as_py() for k in key)


@dataclass
class TableScan:
    """What one pass over a table's parts learns: rows, content hash, problems, record digests."""

    rows: int = 0
    content_sha256: str = ""
    problems: list[str] = field(default_factory=list)
    digests: dict[tuple, bytes] = field(default_factory=dict)
    geo_extents: list[tuple[set[int], list[float]]] = field(default_factory=list)  # regions: per part
    in_order: bool = True


def scan(
    parts: Sequence[Part],
    schema: TableSchema,
    *,
    digests: bool = False,
    conformed: bool = False,
    validate: bool = True,
) -> TableScan:
    """One pass over ``parts``: each is loaded, sorted by the key (and conformed to ``schema`` with
    ``conformed``), validated (unless ``validate`` is false), hashed in key order and, with
    ``digests``, digested record by record.

    When the parts' keys interleave (a part starts at or before the previous part's end), the
    parts are combined into one sorted table and scanned again: the result is always that of
    the whole table.
    """
    result = TableScan()
    digest = hashlib.sha256(schema.name.encode())
    last = None
    for part in parts:
        table = conform(part(), schema) if conformed else _sorted(part(), schema.key)
        if not validate:
            table = _with_missing_columns(table, schema)
        result.rows += table.num_rows
        if validate:
            result.problems += validate_table(table, schema)
        if result.problems and table.column_names != schema.columns:
            return result
        if len(table):
            if last is not None and _key_at(table, schema.key, 0) <= last:
                result.in_order = False
                break
            last = _key_at(table, schema.key, len(table) - 1)
        for row_digest in _row_digests(table, schema.columns):
            digest.update(row_digest)
        if digests:
            result.digests.update(record_digests(table, schema))
        if schema.name == "regions" and "geometry" in table.column_names:
            result.geo_extents.append(geo_extent(table["geometry"]))
    if not result.in_order:
        whole = tables.concat([part() for part in parts])
        merged = scan([_whole(whole)], schema, digests=digests, conformed=conformed, validate=validate)
        merged.in_order = False  # the writer must combine the parts too
        return merged
    result.content_sha256 = digest.hexdigest()
    return result
