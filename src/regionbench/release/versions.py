"""Versions and diffs: semantic versions, the record diff between releases and the bump it needs.

``diff`` compares two releases key by key: a key only in the new release is added, only in the
old one removed, in both with another record changed. Both releases are read in key order, part
by part, and merged as two sorted streams. Croissant's rules give the bump:
removed or changed records (a region moving between splits is a changed record) need MAJOR,
additions alone MINOR, identical records PATCH (docs/releases.md).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from regionbench.release.manifest import ReleaseError, read_manifest, sealed_contents
from regionbench.release.records import (
    Part,
    PartsInterleave,
    Record,
    as_parts,
    combined,
    record_columns,
    records,
    release_parts,
)
from regionbench.release.schemas import TABLES, TableSchema, load_schemas

BUMPS = ("patch", "minor", "major")


VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


def tag_name(dataset: str, version: str) -> str:
    """The tag of ``dataset``'s release ``version``: ``<dataset>-v<X.Y.Z>``."""
    return f"{dataset}-v{version}"


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


KINDS = ("added", "removed", "changed")
EXAMPLES = 3  # keys kept per table and kind


@dataclass
class TableDiff:
    """How many records were added, removed and changed, the first keys of each kind (in key
    order) and, per column, how many changed records differ in it. Counts, not key lists: a
    diff of millions of records holds a few keys."""

    key: list[str] = field(default_factory=list)  # the key's column names
    added: int = 0
    removed: int = 0
    changed: int = 0
    examples: dict[str, list[tuple]] = field(default_factory=lambda: {kind: [] for kind in KINDS})
    columns: dict[tuple, list[str]] = field(default_factory=dict)  # changed example key -> columns that differ
    differing: dict[str, int] = field(default_factory=dict)  # column -> changed records that differ in it

    def note(self, kind: str, key: tuple, keep: int, columns: Sequence[str] = ()) -> None:
        """Count one record of ``kind`` (and, if changed, the ``columns`` it differs in); keep its
        key if fewer than ``keep`` of its kind are kept."""
        setattr(self, kind, getattr(self, kind) + 1)
        for column in columns:
            self.differing[column] = self.differing.get(column, 0) + 1
        if len(self.examples[kind]) < keep:
            self.examples[kind].append(key)
            if kind == "changed":
                self.columns[key] = list(columns)

    def column_counts(self) -> dict[str, int]:
        """Per column, how many changed records differ in it (most first, then by name)."""
        return dict(sorted(self.differing.items(), key=lambda item: (-item[1], item[0])))

    def name(self, key: tuple) -> str:
        """``key`` with its column names: ``image_id=25, region_id=1``."""
        return ", ".join(f"{c}={v}" for c, v in zip(self.key, key, strict=True)) if self.key else str(key)

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

    def lines(self) -> list[str]:
        """Per table a count line, the columns that changed, then the keys kept of each kind
        (changed ones with their columns); last, the bump required."""
        out = []
        for name, d in self.tables.items():
            line = f"{name}: {d.added} added, {d.removed} removed, {d.changed} changed"
            if counts := d.column_counts():
                line += "; columns changed: " + ", ".join(f"{c} ({n})" for c, n in counts.items())
            out.append(line)
            for kind in KINDS:
                for key in d.examples[kind]:
                    detail = f": {', '.join(d.columns[key])}" if kind == "changed" else ""
                    out.append(f"  {kind} {d.name(key)}{detail}")
        out.append(f"required bump: {self.required.upper()}")
        return out


def table_diff(
    before: Iterable[Record], after: Iterable[Record], schema: TableSchema, examples: int = EXAMPLES
) -> TableDiff:
    """Records added, removed and changed between two streams of records in key order (see
    ``records``), merged as two sorted lists: memory holds two records and the kept keys."""
    compared = [(i, c) for i, c in enumerate(record_columns(schema)) if c not in schema.key]
    d = TableDiff(key=list(schema.key))
    old, new = iter(before), iter(after)
    a, b = next(old, None), next(new, None)
    while a is not None or b is not None:
        if a is not None and (b is None or a.key < b.key):
            d.note("removed", a.key, examples)
            a = next(old, None)
        elif b is not None and (a is None or b.key < a.key):
            d.note("added", b.key, examples)
            b = next(new, None)
        elif a is not None and b is not None:  # the same key on both sides
            if a.text != b.text:  # NaN equal to NaN, 0.0 not -0.0: values compared by repr
                differ = [c for i, c in compared if repr(a.values[i]) != repr(b.values[i])]
                d.note("changed", b.key, examples, differ)
            a, b = next(old, None), next(new, None)
    return d


def diff_tables(
    old: Mapping[str, pa.Table | Sequence[Part]],
    new: Mapping[str, pa.Table | Sequence[Part]],
    schemas: Mapping[str, TableSchema],
    examples: int = EXAMPLES,
    same: Collection[str] = (),
) -> Diff:
    """Records added, removed and changed per table, by primary key (tables or their parts, a
    table missing from one side as empty), keeping ``examples`` keys per table and kind. The
    tables named in ``same`` are known to hold equal records (equal content hashes) and are
    not read."""
    out = {}
    for name in (n for n in TABLES if n in schemas):
        schema = schemas[name]
        if name in same:
            out[name] = TableDiff(key=list(schema.key))
            continue
        before, after = (as_parts(side[name]) if name in side else [] for side in (old, new))
        try:
            out[name] = table_diff(records(before, schema), records(after, schema), schema, examples)
        except PartsInterleave:  # parts not in key order: each side as its sorted whole
            out[name] = table_diff(
                records(combined(before), schema), records(combined(after), schema), schema, examples
            )
    return Diff(out)


def check_bump(previous: str, version: str, diff: Diff) -> None:
    """Refuse ``version`` when its bump over ``previous`` is smaller than the diff requires."""
    bump = bump_of(previous, version)
    if bump is None:
        raise ReleaseError(f"version {version} is not above the previous release {previous}; raise release.version")
    if BUMPS.index(bump) < BUMPS.index(diff.required):
        counts = ", ".join(
            f"{name}: {d.removed} removed, {d.changed} changed, {d.added} added"
            for name, d in diff.tables.items()
            if d.required != "patch"
        )
        raise ReleaseError(
            f"version {version} is a {bump.upper()} bump over {previous} but the records need "
            f"{diff.required.upper()} ({counts}); set release.version accordingly"
        )


def diff_releases(old: Path, new: Path, examples: int = EXAMPLES) -> Diff:
    """Record diff between two release folders of one dataset (the new one's schemas give the
    keys), keeping ``examples`` keys per table and kind; releases of two datasets are a ``ReleaseError``: their records share no meaning."""
    datasets = [read_manifest(Path(folder))["dataset"] for folder in (old, new)]
    if datasets[0] != datasets[1]:
        raise ReleaseError(
            f"{old} is dataset {datasets[0]!r} and {new} is dataset {datasets[1]!r}; "
            "diff compares two versions of one dataset"
        )
    before, after = release_parts(old), release_parts(new)
    names = [name for name in TABLES if name in before or name in after]
    return diff_tables(before, after, load_schemas(Path(new) / "schemas", names), examples, same_contents(old, new))


def same_contents(old: Path, new: Path) -> set[str]:
    """The tables whose sealed content hashes (``sealed_contents``) agree in both releases."""
    a, b = sealed_contents(Path(old)), sealed_contents(Path(new))
    return {name for name, digest in a.items() if b.get(name) == digest}
