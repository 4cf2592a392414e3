"""Versioned, verifiable releases (SPEC §8): write, verify and diff ``releases/<dataset>/v<X.Y.Z>/``.

A release folder holds ``data/<table>.parquet`` (the tables of ``TABLES``), ``results/``
(stage reports and figures), ``schemas/`` (the JSON Schema of every table, so a release
describes itself), ``croissant.json``, ``README.md`` (the dataset card) and ``manifest.json``.

Determinism is owned here: rows are sorted by each table's primary key, Parquet goes through
``tables.write_parquet`` (zstd, fixed row groups, no pandas metadata), JSON is written with
sorted keys, and nothing records a time or an absolute path.

Record identity. Each row has a *record digest* over its columns, except the columns a schema
marks as statistics (``x-statistics``, e.g. the vocabulary's region counts, which grow with
any addition). ``diff`` compares two releases key by key: a key only in the new release is
added, only in the old one removed, in both with another digest changed. Croissant's rules give
the bump: removed or changed records (a region moving between splits is a changed record) need
MAJOR, additions alone MINOR, identical records PATCH. The logical content hash of a table, in
the manifest, covers every column (statistics too), independently of the Parquet encoding.

Memory. A table may be handed over in *parts* (one per shard, or a file's row groups), each loaded
when needed. Parts whose keys follow each other are checked, hashed, diffed and written one at a
time, so writing or verifying a release holds one shard, not the whole collection; parts whose
keys interleave are combined and sorted first.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path

import jsonschema
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import shapely

from regionbench import tables

TABLES = ("images", "regions", "relations", "vocabulary", "subsets", "rejects")
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas" / "release"
FORMAT = "regionbench-release/1"
BUMPS = ("patch", "minor", "major")
ARROW_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "bool": pa.bool_(),
    "binary": pa.binary(),
}
GEOMETRY_TYPES = {3: "Polygon", 6: "MultiPolygon"}  # shapely type ids a mask outline can take
VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


class ReleaseError(ValueError):
    """A release cannot be written or read as asked; the message says what to change."""


# --- table schemas ---------------------------------------------------------------------------


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


def load_schemas(folder: Path = SCHEMA_DIR) -> dict[str, TableSchema]:
    """The JSON Schemas of every release table, read from ``folder``."""
    found = {}
    for name in TABLES:
        path = Path(folder) / f"{name}.schema.json"
        if not path.is_file():
            raise ReleaseError(f"{path}: table schema missing; every release table needs one")
        found[name] = TableSchema(name, json.loads(path.read_text()))
    return found


def conform(table: pa.Table, schema: TableSchema) -> pa.Table:
    """``table`` with exactly the schema's columns, in order and types, sorted by the key."""
    missing = [c for c in schema.columns if c not in table.column_names]
    if missing:
        raise ReleaseError(f"table {schema.name}: columns {missing} missing; the stage outputs do not match the schema")
    table = table.select(schema.columns).cast(schema.arrow)
    return table.sort_by([(k, "ascending") for k in schema.key]) if len(table) else table


@cache
def _value_validator(column_schema: str) -> jsonschema.Draft202012Validator:
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
    if len(table) and len(table.group_by(schema.key).aggregate([])) != len(table):
        problems.append(f"{schema.name}: duplicate primary keys {schema.key}")
    return problems


# --- record digests and content hashes --------------------------------------------------------


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


# --- tables in parts --------------------------------------------------------------------------

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


def release_parts(folder: Path) -> dict[str, list[Part]]:
    """Every table of a release folder, as the row groups of its file."""
    return {name: file_parts(Path(folder) / "data" / f"{name}.parquet") for name in TABLES}


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


# --- versions and diffs -----------------------------------------------------------------------


def parse_version(text: str) -> tuple[int, int, int]:
    m = VERSION.fullmatch(text.removeprefix("v"))
    if m is None:
        raise ReleaseError(f"version {text!r} is not MAJOR.MINOR.PATCH (e.g. 1.0.0); fix release.version")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def release_folders(paths: Iterable[str]) -> list[tuple[tuple[int, int, int], str]]:
    """(version, path) of every ``.../v<X.Y.Z>`` path given, lowest version first; others skipped."""
    found = []
    for path in paths:
        try:
            found.append((parse_version(str(path).rstrip("/").rsplit("/", 1)[-1]), str(path)))
        except ReleaseError:
            continue
    return sorted(found)


def bump_of(old: str, new: str) -> str | None:
    """The bump from ``old`` to ``new`` (``None`` if ``new`` is not above ``old``)."""
    a, b = parse_version(old), parse_version(new)
    if b <= a:
        return None
    if b[0] > a[0]:
        return "major"
    return "minor" if b[1] > a[1] else "patch"


@dataclass
class TableDiff:
    added: list[tuple] = field(default_factory=list)
    removed: list[tuple] = field(default_factory=list)
    changed: list[tuple] = field(default_factory=list)

    @property
    def required(self) -> str:
        if self.removed or self.changed:
            return "major"
        return "minor" if self.added else "patch"


@dataclass
class Diff:
    tables: dict[str, TableDiff]

    @property
    def required(self) -> str:
        return max((d.required for d in self.tables.values()), key=BUMPS.index, default="patch")

    def lines(self, examples: int = 3) -> list[str]:
        out = []
        for name, d in self.tables.items():
            line = f"{name}: {len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed"
            shown = [f"{kind} {key}" for kind, keys in (("removed", d.removed), ("changed", d.changed)) for key in keys]
            if shown:
                line += " (e.g. " + "; ".join(shown[:examples]) + ")"
            out.append(line)
        out.append(f"required bump: {self.required.upper()}")
        return out


def table_diff(before: Mapping[tuple, bytes], after: Mapping[tuple, bytes]) -> TableDiff:
    """Records added, removed and changed between two key -> record digest maps."""
    return TableDiff(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        changed=sorted(k for k in after.keys() & before.keys() if after[k] != before[k]),
    )


def diff_tables(
    old: Mapping[str, pa.Table | Sequence[Part]],
    new: Mapping[str, pa.Table | Sequence[Part]],
    schemas: Mapping[str, TableSchema],
) -> Diff:
    """Records added, removed and changed per table, by primary key (tables or their parts)."""

    def digests(tables_: Mapping, name: str) -> dict[tuple, bytes]:
        if name not in tables_:
            return {}
        return scan(as_parts(tables_[name]), schemas[name], digests=True, validate=False).digests

    return Diff({name: table_diff(digests(old, name), digests(new, name)) for name in TABLES})


def check_bump(previous: str, version: str, diff: Diff) -> None:
    """Refuse ``version`` when its bump over ``previous`` is smaller than the diff requires."""
    bump = bump_of(previous, version)
    if bump is None:
        raise ReleaseError(f"version {version} is not above the previous release {previous}; raise release.version")
    if BUMPS.index(bump) < BUMPS.index(diff.required):
        counts = ", ".join(
            f"{name}: {len(d.removed)} removed, {len(d.changed)} changed, {len(d.added)} added"
            for name, d in diff.tables.items()
            if d.required != "patch"
        )
        raise ReleaseError(
            f"version {version} is a {bump.upper()} bump over {previous} but the records need "
            f"{diff.required.upper()} ({counts}); set release.version accordingly"
        )


# --- assembling -------------------------------------------------------------------------------

REGION_KEY = ["image_id", "annotator", "region_id"]


def region_splits(subsets: pa.Table) -> pa.Table:
    """Each region's one split over subsets A-H (key columns and ``split``)."""
    splits = subsets.select([*REGION_KEY, "split"]).group_by([*REGION_KEY, "split"]).aggregate([])
    if len(splits.group_by(REGION_KEY).aggregate([])) != len(splits):
        raise ReleaseError("a region is in train for one subset and in test for another; the subsets must nest")
    return splits


def regions_table(regions: pa.Table, features: pa.Table, splits: pa.Table) -> pa.Table:
    """Ingested regions with their 27 features and their split (null outside subsets A-H);
    ``splits`` comes from ``region_splits``."""
    if features.num_rows != regions.num_rows:
        raise ReleaseError(
            f"features cover {features.num_rows} regions of {regions.num_rows}; rerun the features stage"
        )
    joined = regions.join(features, REGION_KEY, join_type="left outer").join(splits, REGION_KEY, join_type="left outer")
    return joined.sort_by([(k, "ascending") for k in REGION_KEY])


# --- writing ----------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprint_tree(root: Path) -> str:
    """sha256 over the relative path and sha256 of every file under ``root``, in path order."""
    root = Path(root)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(root).as_posix()}\0{sha256_file(path)}\n".encode())
    return digest.hexdigest()


def config_hash(config: Mapping) -> str:
    """sha256 of the build configuration, without the settings that name local paths."""
    settings = {k: v for k, v in config.items() if k != "raw_dir"}
    if "release" in settings:
        settings["release"] = {k: v for k, v in settings["release"].items() if k != "previous"}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def geo_extent(geometry: pa.ChunkedArray) -> tuple[set[int], list[float]]:
    """Shapely type ids and total bounds of a WKB column (no bounds when empty)."""
    if not len(geometry):
        return set(), []
    shapes = shapely.from_wkb(geometry.to_numpy(zero_copy_only=False))
    return set(shapely.get_type_id(shapes).tolist()), shapely.total_bounds(shapes).tolist()


def geo_metadata(extents: Iterable[tuple[set[int], list[float]]]) -> dict[bytes, bytes]:
    """GeoParquet 1.1 file metadata for the WKB ``geometry`` column (pixel space, no CRS),
    from the ``geo_extent`` of each part."""
    type_ids: set[int] = set()
    boxes = []
    for ids, box in extents:
        type_ids |= ids
        if box:
            boxes.append(box)
    bounds = []
    if boxes:
        bounds = [
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        ]
    column = {
        "encoding": "WKB",
        "geometry_types": sorted(GEOMETRY_TYPES[t] for t in type_ids),
        "crs": None,  # image pixel coordinates: x to the right, y down
        "edges": "planar",
    }
    if bounds:
        column["bbox"] = bounds
    meta = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": column}}
    return {b"geo": json.dumps(meta, sort_keys=True).encode()}


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def canonical_digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class Provenance:
    """What a release was built from; goes to the manifest and the dataset card."""

    dataset: str
    version: str
    code_version: str
    config_sha256: str
    inputs_sha256: str
    license: str = "CC-BY-4.0"  # SPDX id


def read_tables(folder: Path) -> dict[str, pa.Table]:
    return {name: pq.read_table(Path(folder) / "data" / f"{name}.parquet") for name in TABLES}


def write_release(
    out: Path,
    data: Mapping[str, pa.Table | Sequence[Part]],
    results: Mapping[str, Path],
    provenance: Provenance,
    *,
    previous: Path | None = None,
    card: Callable[[Path, dict], str] | None = None,
    croissant: Callable[[Path, dict], dict] | None = None,
    schema_dir: Path = SCHEMA_DIR,
) -> dict:
    """Write the release folder ``out`` and return its manifest.

    ``data`` maps every name of ``TABLES`` to its table, or to its parts in key order (see
    ``scan``); ``results`` maps a file name under ``results/`` to the stage output to copy.
    Every table is checked against its schema, and with ``previous`` (an earlier release folder)
    the version bump against the record diff, before anything is written. The folder is
    assembled beside ``out`` and moved into place whole. ``card`` and ``croissant`` render
    README.md and croissant.json from the folder and the manifest so far
    (``regionbench.datacard`` and ``regionbench.croissant`` by default).
    """
    from regionbench import croissant as croissant_module
    from regionbench import datacard

    out = Path(out)
    schemas = load_schemas(schema_dir)
    parts = {name: as_parts(data[name]) for name in TABLES}
    scans = {name: scan(parts[name], schemas[name], digests=previous is not None, conformed=True) for name in TABLES}
    problems = [p for name in TABLES for p in scans[name].problems]
    if problems:
        raise ReleaseError("tables break their schemas:\n" + "\n".join(problems))
    parse_version(provenance.version)
    diff, previous_manifest = None, None
    if previous is not None:
        previous_manifest = read_manifest(previous)
        before = release_parts(previous)
        diff = Diff(
            {
                name: table_diff(
                    scan(before[name], schemas[name], digests=True, validate=False).digests, scans[name].digests
                )
                for name in TABLES
            }
        )
        check_bump(previous_manifest["version"], provenance.version, diff)

    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "data").mkdir(parents=True)
    for name in TABLES:
        schema = schemas[name]
        conformed = (conform(part(), schema) for part in parts[name])
        if not scans[name].in_order:
            conformed = iter([conform(tables.concat([part() for part in parts[name]]), schema)])
        meta = geo_metadata(scans[name].geo_extents) if name == "regions" else None
        tables.write_parquet_parts(conformed, schema.arrow, staging / "data" / f"{name}.parquet", metadata=meta)
    for rel, src in sorted(results.items()):
        (staging / "results" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, staging / "results" / rel)
    for name in TABLES:
        (staging / "schemas").mkdir(exist_ok=True)
        shutil.copyfile(Path(schema_dir) / f"{name}.schema.json", staging / "schemas" / f"{name}.schema.json")

    manifest = {
        "format": FORMAT,
        "dataset": provenance.dataset,
        "version": provenance.version,
        "license": provenance.license,
        "code_version": provenance.code_version,
        "config_sha256": provenance.config_sha256,
        "inputs_sha256": provenance.inputs_sha256,
        "previous": None
        if previous is None
        else {"version": previous_manifest["version"], "required_bump": diff.required},
        "tables": {
            name: {
                "path": f"data/{name}.parquet",
                "rows": scans[name].rows,
                "key": schemas[name].key,
                "content_sha256": scans[name].content_sha256,
            }
            for name in TABLES
        },
    }
    write_json(staging / "croissant.json", (croissant or croissant_module.croissant)(staging, manifest))
    (staging / "README.md").write_text((card or datacard.dataset_card)(staging, manifest), encoding="utf-8")
    manifest["files"] = {
        p.relative_to(staging).as_posix(): sha256_file(p) for p in sorted(staging.rglob("*")) if p.is_file()
    }
    manifest["digest"] = canonical_digest(manifest)
    write_json(staging / "manifest.json", manifest)
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return manifest


# --- reading and verifying --------------------------------------------------------------------


def read_manifest(folder: Path) -> dict:
    path = Path(folder) / "manifest.json"
    if not path.is_file():
        raise ReleaseError(f"{path}: no manifest; is {folder} a regionbench release folder?")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"{path}: not valid JSON ({exc})") from None


def verify(folder: Path) -> list[str]:
    """Every problem of the release in ``folder``, one line each naming the file (none: sound).

    Checks the manifest's own digest, the sha256 of every file (and files the manifest does
    not list), each table against the release's JSON Schema, its row count and its logical
    content hash, and the sha256 that croissant.json declares.
    """
    folder = Path(folder)
    try:
        manifest = read_manifest(folder)
    except ReleaseError as exc:
        return [str(exc)]
    problems = []
    sealed = {k: v for k, v in manifest.items() if k != "digest"}
    if manifest.get("digest") != canonical_digest(sealed):
        problems.append("manifest.json: digest does not match its content (the manifest was edited)")
    listed = manifest.get("files", {})
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {"manifest.json"}
    for rel in sorted(present - listed.keys()):
        problems.append(f"{rel}: not listed in manifest.json")
    for rel, expected in sorted(listed.items()):
        path = folder / rel
        if not path.is_file():
            problems.append(f"{rel}: missing (listed in manifest.json)")
        elif sha256_file(path) != expected:
            problems.append(f"{rel}: sha256 differs from manifest.json")
    try:
        schemas = load_schemas(folder / "schemas")
    except ReleaseError as exc:
        return [*problems, str(exc)]
    for name, entry in sorted(manifest.get("tables", {}).items()):
        path = folder / entry["path"]
        if name not in schemas or not path.is_file():
            problems.append(f"{entry['path']}: table {name} missing or without schema")
            continue
        try:
            found = scan(file_parts(path), schemas[name])  # row group by row group
        except (OSError, pa.ArrowException) as exc:
            problems.append(f"{entry['path']}: unreadable Parquet ({str(exc).splitlines()[0]})")
            continue
        problems += [f"{entry['path']}: {p}" for p in found.problems]
        if found.rows != entry["rows"]:
            problems.append(f"{entry['path']}: {found.rows} rows, manifest.json says {entry['rows']}")
        if found.content_sha256 and found.content_sha256 != entry["content_sha256"]:
            problems.append(f"{entry['path']}: content hash differs from manifest.json (records changed)")
    problems += _verify_croissant(folder)
    return problems


def _verify_croissant(folder: Path) -> list[str]:
    path = folder / "croissant.json"
    if not path.is_file():
        return ["croissant.json: missing"]
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return [f"croissant.json: not valid JSON ({exc})"]
    problems = []
    for item in document.get("distribution", []):
        target = folder / item.get("contentUrl", "")
        if item.get("@type") == "cr:FileObject" and target.is_file() and sha256_file(target) != item.get("sha256"):
            problems.append(f"croissant.json: sha256 of {item['contentUrl']} differs from the file")
    return problems


def diff_releases(old: Path, new: Path) -> Diff:
    """Record diff between two release folders (the new one's schemas give the keys)."""
    return diff_tables(release_parts(old), release_parts(new), load_schemas(Path(new) / "schemas"))
