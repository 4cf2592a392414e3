"""Versions and diffs: semantic versions, the record diff between releases and the bump it needs.

``diff`` compares two releases key by key: a key only in the new release is added, only in the
old one removed, in both with another record digest changed. Croissant's rules give the bump:
removed or changed records (a region moving between splits is a changed record) need MAJOR,
additions alone MINOR, identical records PATCH (docs/releases.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from regionbench.release.manifest import ReleaseError, read_manifest
from regionbench.release.records import Part, as_parts, release_parts, scan
from regionbench.release.schemas import TABLES, TableSchema, load_schemas

BUMPS = ("patch", "minor", "major")


VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


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
    key: list[str] = field(default_factory=list)  # the key's column names
    columns: dict[tuple, list[str]] = field(default_factory=dict)  # changed key -> columns that differ

    def column_counts(self) -> dict[str, int]:
        """Per column, how many changed records differ in it (most first, then by name)."""
        counts: dict[str, int] = {}
        for names in self.columns.values():
            for name in names:
                counts[name] = counts.get(name, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

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

    def lines(self, examples: int = 3) -> list[str]:
        """Per table a count line, the columns that changed, then up to ``examples`` keys of each
        kind (changed ones with their columns); last, the bump required."""
        out = []
        for name, d in self.tables.items():
            line = f"{name}: {len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed"
            if counts := d.column_counts():
                line += "; columns changed: " + ", ".join(f"{c} ({n})" for c, n in counts.items())
            out.append(line)
            for kind, keys in (("added", d.added), ("removed", d.removed), ("changed", d.changed)):
                for key in keys[:examples]:
                    detail = f": {', '.join(d.columns[key])}" if kind == "changed" and key in d.columns else ""
                    out.append(f"  {kind} {d.name(key)}{detail}")
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

    out = {}
    for name in (n for n in TABLES if n in schemas):
        schema = schemas[name]
        d = table_diff(digests(old, name), digests(new, name))
        d.key = list(schema.key)
        if d.changed:
            record = [c for c in schema.columns if c not in schema.statistics and c not in schema.key]
            before, after = (_records(tables_[name], schema.key, set(d.changed)) for tables_ in (old, new))
            d.columns = {k: [c for c in record if not _same(before[k].get(c), after[k].get(c))] for k in d.changed}
        out[name] = d
    return Diff(out)


def _records(parts: pa.Table | Sequence[Part], key: Sequence[str], wanted: set[tuple]) -> dict[tuple, dict]:
    """The rows of ``parts`` whose key is in ``wanted``, as dictionaries."""
    found = {}
    for part in as_parts(parts):
        for row in part().to_pylist():
            k = tuple(row[c] for c in key)
            if k in wanted:
                found[k] = row
    return found


def _same(a: object, b: object) -> bool:
    """Equal values, NaN equal to NaN (as in the record digests, which compare ``repr``)."""
    return repr(a) == repr(b)


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


def diff_releases(old: Path, new: Path) -> Diff:
    """Record diff between two release folders of one dataset (the new one's schemas give the
    keys); releases of two datasets are a ``ReleaseError``: their records share no meaning."""
    datasets = [read_manifest(Path(folder))["dataset"] for folder in (old, new)]
    if datasets[0] != datasets[1]:
        raise ReleaseError(
            f"{old} is dataset {datasets[0]!r} and {new} is dataset {datasets[1]!r}; "
            "diff compares two versions of one dataset"
        )
    before, after = release_parts(old), release_parts(new)
    names = [name for name in TABLES if name in before or name in after]
    return diff_tables(before, after, load_schemas(Path(new) / "schemas", names))
