"""The one way stage and release tables land on disk."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench.core import tables


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("rows", [0, 10, tables.ROW_GROUP, 2 * tables.ROW_GROUP + 7])
def test_parts_are_written_as_the_whole_table(tmp_path: Path, rows: int) -> None:
    rng = np.random.default_rng(rows)
    table = pa.table({"key": np.arange(rows), "value": rng.random(rows), "label": [f"l{i % 13}" for i in range(rows)]})
    meta = {b"note": b"kept"}
    tables.write_parquet(table, tmp_path / "whole.parquet", metadata=meta)
    cuts = sorted({0, *rng.integers(0, rows + 1, size=5).tolist(), rows})
    parts = [table.slice(a, b - a) for a, b in itertools.pairwise(cuts)]
    tables.write_parquet_parts(parts, table.schema, tmp_path / "parts.parquet", metadata=meta)
    assert digest(tmp_path / "parts.parquet") == digest(tmp_path / "whole.parquet")
    written = tables.read_parquet(tmp_path / "parts.parquet")
    assert written.equals(table) and written.schema.metadata == meta


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(0, 3 * tables.ROW_GROUP), cuts=st.lists(st.floats(0, 1), max_size=4))
def test_no_row_group_is_empty(tmp_path: Path, rows: int, cuts: list[float]) -> None:
    """Readers that size their batches by the first row group (Hugging Face datasets) read every
    table, empty ones included: no file has a row group of zero rows, however the rows came in."""
    table = pa.table({"key": np.arange(rows, dtype=np.int64)})
    bounds = sorted({0, rows, *(int(c * rows) for c in cuts)})
    path = tmp_path / f"t{rows}.parquet"
    tables.write_parquet_parts([table.slice(a, b - a) for a, b in itertools.pairwise(bounds)], table.schema, path)
    meta = pq.ParquetFile(path).metadata
    assert all(meta.row_group(i).num_rows > 0 for i in range(meta.num_row_groups))
    assert meta.num_row_groups == -(-rows // tables.ROW_GROUP) and tables.read_parquet(path).equals(table)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(0, 300), row_group=st.integers(1, 64), cuts=st.lists(st.floats(0, 1), max_size=6))
def test_any_row_group_size_depends_on_the_rows_alone(
    tmp_path: Path, rows: int, row_group: int, cuts: list[float]
) -> None:
    """However the parts are cut, the file is that of the whole table in groups of ``row_group``
    rows, every one full but the last; and it reads back part by part as the same rows."""
    table = pa.table({"key": np.arange(rows, dtype=np.int64), "label": [f"l{i % 7}" for i in range(rows)]})
    bounds = sorted({0, rows, *(int(c * rows) for c in cuts)})
    whole, cut = tmp_path / f"w{rows}-{row_group}.parquet", tmp_path / f"c{rows}-{row_group}.parquet"
    tables.write_parquet_parts([table], table.schema, whole, row_group=row_group)
    parts = [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    tables.write_parquet_parts(parts, table.schema, cut, row_group=row_group)
    assert digest(cut) == digest(whole)
    meta = pq.ParquetFile(cut).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sizes == [row_group] * (rows // row_group) + ([rows % row_group] if rows % row_group else [])
    read = list(tables.read_parquet_parts(cut))
    assert all(0 < p.num_rows <= tables.ROW_GROUP for p in read)
    assert (pa.concat_tables(read) if read else table.slice(0, 0)).equals(table)


def test_parquet_parts_read_each_file_when_used(tmp_path: Path) -> None:
    """A sequence of the files' tables (columns as asked), read anew at each use, sliceable."""
    paths = []
    for k in range(3):
        paths.append(tmp_path / f"{k}.parquet")
        tables.write_parquet(pa.table({"a": [k, k + 1], "b": ["x", "y"]}), paths[-1])
    parts = tables.ParquetParts(paths, ["a"])
    assert len(parts) == 3 and [t.column("a").to_pylist() for t in parts] == [[0, 1], [1, 2], [2, 3]]
    assert [t.column_names for t in parts[1:]] == [["a"], ["a"]]
    tables.write_parquet(pa.table({"a": [9]}), paths[0])
    assert parts[0].column("a").to_pylist() == [9]  # nothing kept: the file as it is now
