"""The one way stage and release tables land on disk."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from regionbench import tables


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
