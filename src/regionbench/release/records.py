"""Record identity: records, row digests and content hashes, read in parts.

A row's *record* is its values in every column except those a schema marks as statistics
(``x-statistics``, e.g. the vocabulary's region counts, which grow with any addition); two
records are the same when their values' ``repr`` are (exact for floats, NaN equal to NaN). The
logical content hash of a table covers every column (statistics too) in key order,
independently of the Parquet encoding.

Memory. A table may be handed over in *parts* (one per shard, or a file's row groups), each
loaded when needed. Parts whose keys follow each other are checked, hashed and streamed one at
a time, so a pass holds one shard, not the whole collection; parts whose keys interleave are
combined and sorted first.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from regionbench.core import tables
from regionbench.core.forked import forked_iter
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


def conformed_parts(parts: Sequence[Part], schema: TableSchema) -> list[Part]:
    """``parts``, each conformed to ``schema`` when it is loaded."""
    return [partial(lambda part: conform(part(), schema), part) for part in parts]


def file_parts(path: Path) -> list[Part]:
    """The row groups of a Parquet file as parts, read one at a time."""
    count = pq.ParquetFile(path).num_row_groups
    if not count:
        return [partial(tables.read_parquet, path)]
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
    geo_extents: list[tuple[set[int], list[float]]] = field(default_factory=list)  # regions: per part
    in_order: bool = True


@dataclass
class PartScan:
    """What ``scan`` learns of one part on its own: its rows, problems, first and last keys, row
    digests (concatenated, in key order) and geometry extent; ``columns_differ`` when its columns
    are not the schema's (a scan with problems stops there)."""

    rows: int
    problems: list[str]
    columns_differ: bool
    first: tuple | None = None
    last: tuple | None = None
    digests: bytes = b""
    geo_extent: tuple[set[int], list[float]] | None = None


def _scan_part(part: Part, schema: TableSchema, conformed: bool, validate: bool) -> PartScan:
    table = conform(part(), schema) if conformed else _sorted(part(), schema.key)
    if not validate:
        table = _with_missing_columns(table, schema)
    problems = validate_table(table, schema) if validate else []
    found = PartScan(table.num_rows, problems, table.column_names != schema.columns)
    if problems and found.columns_differ:  # validate_table said so; without validation every column is there
        return found
    if len(table):
        found.first, found.last = _key_at(table, schema.key, 0), _key_at(table, schema.key, len(table) - 1)
    found.digests = b"".join(_row_digests(table, schema.columns))
    if schema.name == "regions" and "geometry" in table.column_names:
        found.geo_extent = geo_extent(table["geometry"])
    return found


def scan(
    parts: Sequence[Part],
    schema: TableSchema,
    *,
    conformed: bool = False,
    validate: bool = True,
    workers: int = 1,
) -> TableScan:
    """One pass over ``parts``: each is loaded, sorted by the key (and conformed to ``schema`` with
    ``conformed``), validated (unless ``validate`` is false) and hashed in key order. Up to
    ``workers`` processes read and digest the parts (``forked.forked_iter``); the result is the
    same for any number.

    When the parts' keys interleave (a part starts at or before the previous part's end), the
    parts are combined into one sorted table and scanned again: the result is always that of
    the whole table.
    """
    return scan_tables(
        {schema.name: parts}, {schema.name: schema}, conformed=conformed, validate=validate, workers=workers
    )[schema.name]


def scan_tables(
    parts: Mapping[str, Sequence[Part]],
    schemas: Mapping[str, TableSchema],
    *,
    conformed: bool = False,
    validate: bool = True,
    workers: int = 1,
) -> dict[str, TableScan]:
    """``scan`` of each table of ``parts`` (name -> its parts), the parts of all of them shared
    by one set of ``workers`` processes."""
    pieces = [(name, part) for name in parts for part in parts[name]]
    found = forked_iter(lambda piece: _scan_part(piece[1], schemas[piece[0]], conformed, validate), pieces, workers)
    scans = {}
    for name in parts:
        own = itertools.islice(found, len(parts[name]))
        scans[name] = _fold(own, parts[name], schemas[name], conformed, validate)
        for _ in own:  # what a scan that stopped early left of its table's parts
            pass
    return scans


def _fold(
    found: Iterable[PartScan], parts: Sequence[Part], schema: TableSchema, conformed: bool, validate: bool
) -> TableScan:
    """A table's scan from its parts' scans, in order."""
    result = TableScan()
    digest = hashlib.sha256(schema.name.encode())
    last = None
    for piece in found:
        result.rows += piece.rows
        result.problems += piece.problems
        if result.problems and piece.columns_differ:
            return result
        if piece.first is not None:  # a part with rows
            if last is not None and piece.first <= last:
                result.in_order = False
                break
            last = piece.last
        digest.update(piece.digests)
        if piece.geo_extent is not None:
            result.geo_extents.append(piece.geo_extent)
    if not result.in_order:
        whole = tables.concat([part() for part in parts])
        merged = scan([_whole(whole)], schema, conformed=conformed, validate=validate)
        merged.in_order = False  # the writer must combine the parts too
        return merged
    result.content_sha256 = digest.hexdigest()
    return result


class PartsInterleave(Exception):
    """Raised by ``records`` when a part starts at or before the previous part's last key."""


class Record(NamedTuple):
    key: tuple
    values: tuple  # in ``record_columns`` order
    text: str  # ``repr(values)``: what two records are compared by


def record_columns(schema: TableSchema) -> list[str]:
    """The columns that make a record: every column but the statistics."""
    return [c for c in schema.columns if c not in schema.statistics]


def records(parts: Sequence[Part], schema: TableSchema) -> Iterator[Record]:
    """Every record of ``parts`` in key order, one part in memory at a time (each part sorted,
    columns it lacks, from an older layout, as nulls). Raises ``PartsInterleave`` when the parts'
    keys interleave: ``combined(parts)`` is then the sorted whole."""
    columns = record_columns(schema)
    last = None
    for part in parts:
        table = _with_missing_columns(_sorted(part(), schema.key), schema)
        if len(table):
            if last is not None and _key_at(table, schema.key, 0) <= last:
                raise PartsInterleave(schema.name)
            last = _key_at(table, schema.key, len(table) - 1)
        for key, values in zip(_rows(table, schema.key), _rows(table, columns), strict=True):
            yield Record(key, values, repr(values))


def combined(parts: Sequence[Part]) -> list[Part]:
    """``parts`` as one part, the whole table (none for no parts)."""
    return [lambda: tables.concat([part() for part in parts])] if parts else []
