"""Record digests, content hashes, scans, diffs and version rules on small in-memory tables."""

from __future__ import annotations

import hashlib
import itertools
import tempfile
import tracemalloc
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench import release
from regionbench.core import tables
from regionbench.release.schemas import TableSchema

DOCUMENT = {
    "description": "a toy table",
    "x-primary-key": ["id"],
    "x-statistics": ["count"],
    "properties": {
        "id": {"type": "integer", "x-arrow-type": "int64", "description": "key"},
        "name": {"type": "string", "x-arrow-type": "string", "description": "a value", "pattern": "^[a-z]+$"},
        "count": {"type": "integer", "x-arrow-type": "int64", "description": "a statistic"},
    },
}
SCHEMA = TableSchema("regions", DOCUMENT)  # no geometry column: the scan skips the GeoParquet extent


def table(rows: list[tuple[int, str, int]]) -> pa.Table:
    ids, names, counts = zip(*rows, strict=True) if rows else ((), (), ())
    return pa.table({"id": list(ids), "name": list(names), "count": list(counts)}, schema=SCHEMA.arrow)


ROWS = [(1, "sky", 10), (2, "man", 5), (3, "tree", 7)]


def test_statistics_change_the_content_but_not_the_record() -> None:
    a, b = table(ROWS), table([(1, "sky", 11), *ROWS[1:]])
    assert list(release.records([lambda: a], SCHEMA)) == list(release.records([lambda: b], SCHEMA))
    assert release.content_hash(a, SCHEMA) != release.content_hash(b, SCHEMA)


def test_content_hash_ignores_row_order() -> None:
    assert release.content_hash(table(ROWS), SCHEMA) == release.content_hash(table(ROWS[::-1]), SCHEMA)


def _in_pieces(whole: pa.Table, pieces: int) -> list:
    """``whole`` cut (``_cut``) into ``pieces`` parts of equal rows, the last one shorter."""
    step = max(1, -(-whole.num_rows // pieces))
    return _cut(whole, list(range(step, whole.num_rows, step)), shuffled=False)


@settings(deadline=None)
@given(st.lists(st.integers(0, 50), unique=True, max_size=30), st.integers(1, 5), st.integers(1, 3))
def test_a_scan_of_any_cut_is_the_scan_of_the_whole(ids: list[int], pieces: int, workers: int) -> None:
    whole = table([(i, "x" * (1 + i % 3), i) for i in sorted(ids)])
    parts = _in_pieces(whole, pieces)
    scanned = release.scan(parts, SCHEMA, workers=workers)
    assert scanned.rows == whole.num_rows and scanned.problems == []
    assert scanned.content_sha256 == release.content_hash(whole, SCHEMA)
    assert list(release.records(parts, SCHEMA)) == list(release.records([lambda: whole], SCHEMA))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["sky", "man", "Sky"])), max_size=30),
    st.integers(1, 5),
    st.sampled_from(["in key order", "reversed", "as drawn"]),
    st.integers(2, 4),
)
def test_a_scan_on_several_workers_is_the_scan_on_one(
    rows: list[tuple[int, str]], pieces: int, order: str, workers: int
) -> None:
    """Parts in or out of key order, keys repeated, values that break the schema: the parts read
    by several processes give what one process reads."""
    if order != "as drawn":  # one row a key, sorted: the parts follow each other
        rows = sorted(dict(rows).items())
    parts = _in_pieces(table([(i, name, i) for i, name in rows]), pieces)
    parts = parts[::-1] if order == "reversed" else parts
    assert release.scan(parts, SCHEMA, workers=workers) == release.scan(parts, SCHEMA)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 20), max_size=12), st.integers(1, 4), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    st.integers(1, 3),
)
def test_tables_scanned_together_are_each_scanned_alone(drawn: list, workers: int) -> None:
    """The parts of several tables share one set of workers; a table whose scan stops early (a
    part without a column) leaves the next table's parts to it."""
    schemas, parts = {}, {}
    for k, (ids, pieces, broken) in enumerate(drawn):
        name = f"toy{k}"
        schemas[name] = TableSchema(name, DOCUMENT)
        parts[name] = _in_pieces(table([(i, "sky", i) for i in sorted(set(ids))]), pieces)
        if broken:  # a first part without the column ``name``: the scan stops there
            parts[name] = [partial(lambda: table(ROWS).drop_columns(["name"])), *parts[name]]
    together = release.scan_tables(parts, schemas, workers=workers)
    assert together == {name: release.scan(parts[name], schemas[name]) for name in parts}
    assert all(bool(together[f"toy{k}"].problems) == broken for k, (_, _, broken) in enumerate(drawn))


def test_scan_reports_duplicates_and_bad_values() -> None:
    twice = release.scan([partial(table, ROWS), partial(table, ROWS[:1])], SCHEMA)
    assert not twice.in_order and any("duplicate primary keys" in p for p in twice.problems)
    bad = release.scan(release.as_parts(table([(1, "Sky", 1)])), SCHEMA)
    assert any("regions.name: 1 distinct values break the schema" in p for p in bad.problems)


@pytest.mark.parametrize(
    ("new", "bump"),
    [
        (ROWS, "patch"),
        ([*ROWS, (4, "car", 1)], "minor"),
        ([(1, "sky", 99), *ROWS[1:]], "patch"),  # a statistic only
        (ROWS[:2], "major"),
        ([(1, "sea", 10), *ROWS[1:]], "major"),
    ],
)
def test_diff_gives_the_bump(new: list, bump: str) -> None:
    diff = release.diff_tables({"regions": table(ROWS)}, {"regions": table(new)}, {"regions": SCHEMA})
    assert diff.required == bump
    assert diff.lines()[-1] == f"required bump: {bump.upper()}"


def test_versions() -> None:
    assert release.parse_version("v1.2.3") == (1, 2, 3)
    for bad in ("1.2", "01.2.3", "1.2.3-rc1", ""):
        with pytest.raises(release.ReleaseError):
            release.parse_version(bad)
    assert release.bump_of("1.2.3", "2.0.0") == "major"
    assert release.bump_of("1.2.3", "1.3.0") == "minor"
    assert release.bump_of("1.2.3", "1.2.4") == "patch"
    assert release.bump_of("1.2.3", "1.2.3") is None
    found = release.release_folders(["r/v1.10.0", "r/v1.2.0/", "r/latest", "r/v0.9.9"])
    assert [path for _, path in found] == ["r/v0.9.9", "r/v1.2.0/", "r/v1.10.0"]


def test_check_bump_refuses_a_smaller_bump_in_one_line() -> None:
    diff = release.Diff({"regions": release.TableDiff(removed=1)})
    with pytest.raises(release.ReleaseError) as refused:
        release.check_bump("1.0.0", "1.1.0", diff)
    assert "\n" not in str(refused.value) and "need MAJOR" in str(refused.value)
    release.check_bump("1.0.0", "2.0.0", diff)
    with pytest.raises(release.ReleaseError, match="not above"):
        release.check_bump("1.0.0", "1.0.0", release.Diff({}))


WIDE = TableSchema(
    "vocabulary",
    {
        "description": "a toy table with a two-column key",
        "x-primary-key": ["image_id", "region_id"],
        "x-statistics": ["count"],
        "properties": {
            "image_id": {"type": "integer", "x-arrow-type": "int64", "description": "key"},
            "region_id": {"type": "integer", "x-arrow-type": "int64", "description": "key"},
            "label": {"type": "string", "x-arrow-type": "string", "description": "a value"},
            "area": {"type": "number", "x-arrow-type": "double", "description": "a value"},
            "split": {"type": ["string", "null"], "x-arrow-type": "string", "description": "a value"},
            "count": {"type": "integer", "x-arrow-type": "int64", "description": "a statistic"},
        },
    },
)
EDITS = {"label": lambda v: v + "x", "area": lambda v: float("nan") if v == 1.0 else v + 1, "split": lambda v: None}


@given(st.integers(1, 12), st.data())
def test_diff_names_the_columns_that_changed(n: int, data: st.DataObject) -> None:
    rows = [
        {"image_id": i // 3, "region_id": i % 3, "label": "sky", "area": float(i), "split": "train", "count": i}
        for i in range(n)
    ]
    edited = [dict(r) for r in rows]
    expected = {}
    for k, row in enumerate(edited):
        columns = data.draw(st.sets(st.sampled_from([*EDITS, "count"])), label=f"row {k}")
        for column in columns:
            row[column] = row[column] + 1 if column == "count" else EDITS[column](row[column])
        if columns - {"count"}:
            expected[(row["image_id"], row["region_id"])] = [c for c in ("label", "area", "split") if c in columns]
    before, after = (pa.Table.from_pylist(t, schema=WIDE.arrow) for t in (rows, edited))
    diff = release.diff_tables({"vocabulary": before}, {"vocabulary": after}, {"vocabulary": WIDE}, examples=100)
    d = diff.tables["vocabulary"]
    assert d.columns == expected and d.examples["changed"] == sorted(expected) and d.changed == len(expected)
    lines = diff.lines()
    for key, columns in expected.items():
        assert f"  changed image_id={key[0]}, region_id={key[1]}: {', '.join(columns)}" in lines
    assert lines[-1] == f"required bump: {'MAJOR' if expected else 'PATCH'}"


def _cut(t: pa.Table, cuts: list[int], shuffled: bool) -> list:
    """``t`` as parts cut at ``cuts`` (reversed with ``shuffled``: keys then interleave)."""
    edges = sorted({0, t.num_rows, *(c % (t.num_rows + 1) for c in cuts)})
    parts = [partial(t.slice, a, b - a) for a, b in itertools.pairwise(edges)]
    return parts[::-1] if shuffled else parts


KEYED = st.dictionaries(
    st.tuples(st.integers(0, 9), st.integers(0, 3)),
    st.tuples(st.sampled_from(["sky", "sea"]), st.sampled_from([0.0, -0.0, 1.5, float("nan")]), st.integers(0, 2)),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(
    old=KEYED,
    new=KEYED,
    cuts=st.tuples(st.lists(st.integers(0, 30), max_size=4), st.lists(st.integers(0, 30), max_size=4)),
    shuffled=st.tuples(st.booleans(), st.booleans()),
    examples=st.integers(0, 4),
)
def test_the_streamed_diff_is_the_diff_of_the_whole_tables(
    old: dict, new: dict, cuts: tuple, shuffled: tuple, examples: int
) -> None:
    """Any two tables, in parts in key order or not: the merge of their record streams counts
    what comparing every key of both finds, keeps the first keys of each kind, and counts
    the columns that differ (NaN the same as NaN, -0.0 not 0.0; ``count`` is a statistic)."""

    def whole(rows: dict) -> pa.Table:
        items = sorted(rows.items())
        return pa.Table.from_pylist(
            [
                {"image_id": i, "region_id": r, "label": v[0], "area": v[1], "split": None, "count": v[2]}
                for (i, r), v in items
            ],
            schema=WIDE.arrow,
        )

    sides = [_cut(whole(rows), c, s) for rows, c, s in zip((old, new), cuts, shuffled, strict=True)]
    d = release.diff_tables({"vocabulary": sides[0]}, {"vocabulary": sides[1]}, {"vocabulary": WIDE}, examples).tables[
        "vocabulary"
    ]
    added, removed = sorted(new.keys() - old.keys()), sorted(old.keys() - new.keys())
    differ = {
        k: [c for c, i in (("label", 0), ("area", 1)) if repr(old[k][i]) != repr(new[k][i])]
        for k in sorted(old.keys() & new.keys())
    }
    changed = [k for k, columns in differ.items() if columns]
    assert (d.added, d.removed, d.changed) == (len(added), len(removed), len(changed))
    assert d.examples == {"added": added[:examples], "removed": removed[:examples], "changed": changed[:examples]}
    assert d.columns == {k: differ[k] for k in changed[:examples]}
    assert d.differing == {c: n for c in ("label", "area") if (n := sum(c in differ[k] for k in changed))}


def test_tables_known_the_same_are_not_read() -> None:
    def unread() -> pa.Table:
        raise AssertionError("a table known the same was read")

    diff = release.diff_tables({"regions": [unread]}, {"regions": [unread]}, {"regions": SCHEMA}, same={"regions"})
    assert diff.required == "patch" and diff.tables["regions"].key == ["id"]


def test_a_diff_holds_a_part_not_the_table() -> None:
    """Python memory of a diff of two tables of every size, cut in parts of 500 rows, whose
    records all change: flat, where a map of every key grew with the table."""

    def peak(rows: int) -> int:
        def side(label: str) -> list:
            t = pa.table(
                {
                    "image_id": pa.array(range(rows), pa.int64()),
                    "region_id": pa.array([0] * rows, pa.int64()),
                    "label": pa.array([label] * rows),
                    "area": pa.array([1.0] * rows),
                    "split": pa.nulls(rows, pa.string()),
                    "count": pa.array([1] * rows, pa.int64()),
                }
            )
            return [partial(t.slice, a, 500) for a in range(0, rows, 500)]

        before, after = side("sky"), side("sea")
        tracemalloc.start()
        d = release.diff_tables({"vocabulary": before}, {"vocabulary": after}, {"vocabulary": WIDE}).tables[
            "vocabulary"
        ]
        size = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert d.changed == rows and d.differing == {"label": rows}
        return size

    small, large = peak(2_000), peak(16_000)
    assert large < 1.5 * small, (small, large)


@settings(max_examples=60, deadline=None)
@given(
    regions=st.lists(st.tuples(st.integers(1, 8), st.sampled_from("ab"), st.integers(1, 4)), unique=True, max_size=30),
    split_of=st.dictionaries(
        st.tuples(st.integers(1, 8), st.sampled_from("ab"), st.integers(1, 4)), st.sampled_from(["train", "test"])
    ),
    images=st.sets(st.integers(1, 8)),
)
def test_a_part_of_the_regions_gets_each_region_s_own_split(regions, split_of, images) -> None:
    """A shard's regions (those of ``images``) joined with the splits of the whole collection: each
    region its own split or none, its features, its mask, in key order, whatever else the splits hold."""
    part = sorted(r for r in regions if r[0] in images)[::-1]  # a shard's rows, in no particular order
    key = {"image_id": pa.int64(), "annotator": pa.string(), "region_id": pa.int32()}

    def table(rows: list[tuple], **extra: tuple[pa.DataType, list]) -> pa.Table:
        columns = {name: pa.array([r[k] for r in rows], t) for k, (name, t) in enumerate(key.items())}
        return pa.table(columns | {name: pa.array(values, t) for name, (t, values) in extra.items()})

    splits = sorted(split_of.items())
    got = release.regions_table(
        table(part, mask=(pa.string(), [f"mask {r}" for r in part])),
        table(part, area=(pa.float64(), [float(r[2]) for r in part])),
        table(
            [k for k, _ in splits],
            split=(pa.string(), [s for _, s in splits]),
            image_split=(pa.string(), [s for _, s in splits]),
        ),
    ).to_pylist()
    assert [(r["image_id"], r["annotator"], r["region_id"]) for r in got] == sorted(part)
    assert all(r["split"] == split_of.get((r["image_id"], r["annotator"], r["region_id"])) for r in got)
    assert all(
        r["mask"] == f"mask {(r['image_id'], r['annotator'], r['region_id'])}" and r["area"] == r["region_id"]
        for r in got
    )


SUBSETS = pa.schema(
    [
        ("subset", pa.string()),
        ("image_id", pa.int64()),
        ("annotator", pa.string()),
        ("region_id", pa.int32()),
        ("split", pa.string()),
        ("image_split", pa.string()),
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    split_of=st.dictionaries(
        st.tuples(st.integers(1, 6), st.sampled_from(["a", "b", "c"]), st.integers(1, 3)),
        st.tuples(st.sampled_from(["train", "test"]), st.sampled_from(["train", "test", None])),
        max_size=40,
    ),
    subsets=st.lists(st.sets(st.integers(0, 39)), min_size=1, max_size=4),
    row_group=st.integers(1, 7),
    data=st.data(),
)
def test_region_splits_are_each_region_s_split_whatever_the_row_groups(
    tmp_path_factory: pytest.TempPathFactory, split_of: dict, subsets: list, row_group: int, data: st.DataObject
) -> None:
    """The subsets file read row group by row group, strings coded per part: each region in any
    subset once, with its split and image split; a region on two sides is refused."""
    regions = sorted(split_of)
    rows = [(f"S{k}", regions[i]) for k, members in enumerate(subsets) for i in sorted(members) if i < len(regions)]
    conflict = bool(rows) and data.draw(st.booleans(), label="conflict")
    flipped = rows[-1][1] if conflict else None
    table = pa.table(
        {
            "subset": [s for s, _ in rows],
            "image_id": [r[0] for _, r in rows],
            "annotator": [r[1] for _, r in rows],
            "region_id": [r[2] for _, r in rows],
            "split": [
                {"train": "test", "test": "train"}[split_of[r][0]]
                if r == flipped and k == len(rows) - 1
                else split_of[r][0]
                for k, (_, r) in enumerate(rows)
            ],
            "image_split": [split_of[r][1] for _, r in rows],
        },
        schema=SUBSETS,
    )
    path = tmp_path_factory.mktemp("subsets") / "subsets.parquet"
    pq.write_table(table, path, row_group_size=row_group)
    member = {r for _, r in rows}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables, "READ_ROWS", row_group)  # parts of a few rows, as row groups are at scale
        if conflict and sum(r == flipped for _, r in rows) > 1:
            with pytest.raises(release.ReleaseError, match="must nest"):
                release.region_splits(path)
            return
        got = release.region_splits(path)
    assert got.column_names == ["image_id", "annotator", "region_id", "split", "image_split"]
    assert got.schema.field("annotator").type == pa.string() and got.schema.field("region_id").type == pa.int32()
    expected = {r: split_of[r] for r in member}
    if conflict:
        expected[flipped] = ({"train": "test", "test": "train"}[split_of[flipped][0]], split_of[flipped][1])
    assert {
        (r["image_id"], r["annotator"], r["region_id"]): (r["split"], r["image_split"]) for r in got.to_pylist()
    } == expected
    assert got.num_rows == len(expected)


FILE_TREES = st.dictionaries(
    st.lists(st.sampled_from(["a", "b", "a-b", "a.b", "B"]), min_size=1, max_size=3).map("/".join),
    st.binary(max_size=3000),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(FILE_TREES, st.integers(2, 4))
def test_files_hashed_by_several_workers_give_the_same_digests(tree: dict[str, bytes], workers: int) -> None:
    """The inputs fingerprint and the file list of a release do not depend on the workers that
    hash them: each file's digest keeps its place in path order."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, data in tree.items():
            path = root / rel
            if any(p.is_file() for p in [*path.parents, path]) or path.is_dir():
                continue  # a file where a folder is (or the reverse): not a tree
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        one = release.file_digests(root)
        assert release.file_digests(root, workers) == one
        assert list(one) == [p.relative_to(root).as_posix() for p in sorted(q for q in root.rglob("*") if q.is_file())]
        assert all(hashlib.sha256((root / rel).read_bytes()).hexdigest() == d for rel, d in one.items())
        assert release.fingerprint_tree(root, workers) == release.fingerprint_tree(root)
