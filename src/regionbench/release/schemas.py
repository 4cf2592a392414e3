"""The JSON Schemas of the release tables and the checks a table must pass against them.

The schemas ship with the library (``regionbench/data/release/``) and are copied into every
release, so a release describes itself. Besides JSON Schema they carry ``x-primary-key``,
``x-statistics`` (columns outside record identity) and ``x-arrow-type`` (docs/releases.md).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from regionbench.core import tables
from regionbench.core.errors import first_line, parse_json
from regionbench.release.manifest import ReleaseError

TABLES = (
    "images", "regions", "relations", "vocabulary", "subsets", "rejects", "agreement", "image_labels", "coverage",
    "source_categories", "audit_duplicates", "audit_labels",
)  # fmt: skip


SCHEMA_DIR = Path(str(resources.files("regionbench") / "data" / "release"))  # the library's table schemas


ARROW_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "bool": pa.bool_(),
    "binary": pa.binary(),
    "rle": tables.RLE,  # a mask as COCO writes it: {size: [height, width], counts}
    "list<int64>": pa.list_(pa.int64()),
    "list<string>": pa.list_(pa.string()),
}


@dataclass(frozen=True)
class TableSchema:
    """A release table's JSON Schema with the annotations this module reads."""

    name: str
    document: dict

    @property
    def columns(self) -> list[str]:
        return list(self.document["properties"])

    @property
    def key(self) -> list[str]:
        return self.document["x-primary-key"]

    @property
    def statistics(self) -> list[str]:
        return self.document["x-statistics"]

    def nullable(self, column: str) -> bool:
        kind = self.document["properties"][column]["type"]
        return isinstance(kind, list) and "null" in kind

    @property
    def arrow(self) -> pa.Schema:
        props = self.document["properties"]
        return pa.schema(
            [pa.field(c, ARROW_TYPES[props[c]["x-arrow-type"]], nullable=self.nullable(c)) for c in self.columns]
        )


def load_schemas(folder: Path = SCHEMA_DIR, names: Iterable[str] = TABLES) -> dict[str, TableSchema]:
    """The JSON Schemas of the release tables ``names`` (default: all), read from ``folder``."""
    found = {}
    for name in names:
        path = Path(folder) / f"{name}.schema.json"
        if not path.is_file():
            raise ReleaseError(f"{path}: table schema missing; every release table needs one")
        try:
            schema = TableSchema(name, cast(dict[str, Any], parse_json(path.read_text(encoding="utf-8"))))
            schema.arrow  # noqa: B018 - every column typed, or the schema is unusable
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ReleaseError(f"{path}: not a table schema ({first_line(exc)}); fetch the release again") from None
        found[name] = schema
    return found


def conform(table: pa.Table, schema: TableSchema) -> pa.Table:
    """``table`` with exactly the schema's columns, in order and types, sorted by the key."""
    missing = [c for c in schema.columns if c not in table.column_names]
    if missing:
        raise ReleaseError(f"table {schema.name}: columns {missing} missing; the stage outputs do not match the schema")
    table = table.select(schema.columns).cast(schema.arrow)
    return table.sort_by([(k, "ascending") for k in schema.key]) if len(table) else table


@cache
def _value_validator(column_schema: str) -> Any:
    import jsonschema  # only a table's validation needs it: loading and scoring a release do not

    return jsonschema.Draft202012Validator(json.loads(column_schema))


def validate_table(table: pa.Table, schema: TableSchema) -> list[str]:
    """Problems of ``table`` against its JSON Schema, one line each (none: valid).

    Column names, order and Arrow types must match the schema exactly, and nulls appear only
    where the schema allows them; then every *distinct* value of a column is checked against
    the column's JSON Schema (bytes as base64 text). Checking distinct values keeps this cheap
    on 100,000 regions, and is exact because a column's constraints are per value.
    """
    problems = []
    if table.column_names != schema.columns:
        return [f"{schema.name}: columns {table.column_names} differ from the schema's {schema.columns}"]
    for column, expected in zip(schema.columns, schema.arrow, strict=True):
        values = table[column]
        if values.type != expected.type:
            problems.append(f"{schema.name}.{column}: type {values.type}, the schema says {expected.type}")
            continue
        if values.null_count and not schema.nullable(column):
            problems.append(f"{schema.name}.{column}: {values.null_count} nulls in a column that allows none")
        props = {k: v for k, v in schema.document["properties"][column].items() if not k.startswith("x-")}
        if set(props) <= {"type", "description"}:
            continue  # the Arrow type already guarantees the JSON type
        validator = _value_validator(json.dumps(props, sort_keys=True))
        distinct = pc.unique(values.drop_null() if not schema.nullable(column) else values).to_pylist()
        if values.type == pa.binary():
            distinct = [None if v is None else base64.b64encode(v).decode() for v in distinct]
        bad = [v for v in distinct if not validator.is_valid(v)]
        if bad:
            error = next(validator.iter_errors(bad[0]))
            problems.append(
                f"{schema.name}.{column}: {len(bad)} distinct values break the schema, e.g. {error.message}"
            )
    if len(table) and pc.count_distinct(tables.row_keys(table, list(schema.key)), mode="all").as_py() != len(table):
        problems.append(f"{schema.name}: duplicate primary keys {schema.key}")
    return problems
