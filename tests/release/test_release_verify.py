"""``verify`` on a small release folder written in memory: sound, then damaged in every way."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench import release
from regionbench.core import tables

REJECTS = [
    {"source": "00/images/7.jpg", "key": "7", "item": "image", "stage": "ingest", "reason": "unreadable image"},
    {"source": "00/labels.txt:3", "key": "line 3", "item": "label-row", "stage": "ingest", "reason": "malformed"},
]


def small_release(folder: Path) -> Path:
    """A release folder holding only a rejects table, sealed as the writer seals one."""
    schemas = release.load_schemas()
    table = release.conform(pa.Table.from_pylist(REJECTS, schema=tables.REJECTS), schemas["rejects"])
    tables.write_parquet(table, folder / "data" / "rejects.parquet")
    shutil.copytree(release.SCHEMA_DIR, folder / "schemas")
    data = folder / "data" / "rejects.parquet"
    croissant = {
        "distribution": [
            {"@type": "cr:FileObject", "contentUrl": "data/rejects.parquet", "sha256": release.sha256_file(data)}
        ]
    }
    tables.write_json(folder / "croissant.json", croissant)
    manifest = {
        "format": release.FORMAT,
        "dataset": "small",
        "version": "1.0.0",
        "tables": {
            "rejects": {
                "path": "data/rejects.parquet",
                "rows": table.num_rows,
                "key": schemas["rejects"].key,
                "content_sha256": release.content_hash(table, schemas["rejects"]),
            }
        },
    }
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    manifest["files"] = {p.relative_to(folder).as_posix(): release.sha256_file(p) for p in files}
    manifest["digest"] = release.canonical_digest(manifest)
    tables.write_json(folder / "manifest.json", manifest)
    return folder


def test_a_sound_release_verifies(tmp_path: Path) -> None:
    assert release.verify(small_release(tmp_path / "v1.0.0")) == []


def _flip_byte(folder: Path) -> None:
    path = folder / "data" / "rejects.parquet"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


def _drop_row(folder: Path) -> None:
    path = folder / "data" / "rejects.parquet"
    tables.write_parquet(pq.read_table(path).slice(1), path)


def _edit_manifest(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["version"] = "9.9.9"
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _extra_file(folder: Path) -> None:
    (folder / "data" / "extra.txt").write_text("x")


def _missing_schema(folder: Path) -> None:
    (folder / "schemas" / "images.schema.json").unlink()


def _broken_manifest(folder: Path) -> None:
    (folder / "manifest.json").write_text("{not json")


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (_flip_byte, "data/rejects.parquet: sha256 differs"),
        (_drop_row, "data/rejects.parquet: 1 rows, manifest.json says 2"),
        (_edit_manifest, "manifest.json: digest does not match"),
        (_extra_file, "data/extra.txt: not listed in manifest.json"),
        (_missing_schema, "schemas/images.schema.json: missing"),
        (_broken_manifest, "manifest.json: not valid JSON"),
    ],
)
def test_every_damage_is_named(tmp_path: Path, damage: Callable[[Path], None], expected: str) -> None:
    folder = small_release(tmp_path / "v1.0.0")
    damage(folder)
    problems = release.verify(folder)
    assert any(expected in line for line in problems), problems
    assert all("\n" not in line for line in problems)


def test_changed_records_are_named_even_when_resealed(tmp_path: Path) -> None:
    """A table rewritten with other records and a manifest re-sealed over its bytes still fails
    on the content hash."""
    folder = small_release(tmp_path / "v1.0.0")
    path = folder / "data" / "rejects.parquet"
    changed = [{**REJECTS[0], "reason": "another reason"}, REJECTS[1]]
    tables.write_parquet(pa.Table.from_pylist(changed, schema=tables.REJECTS).sort_by("source"), path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["data/rejects.parquet"] = release.sha256_file(path)
    manifest.pop("digest")
    manifest["digest"] = release.canonical_digest(manifest)
    tables.write_json(folder / "manifest.json", manifest)
    problems = release.verify(folder)
    assert any("content hash differs" in line for line in problems), problems


def reseal(folder: Path, edit: Callable[[dict], object]) -> None:
    """Replace the manifest by ``edit(manifest)`` and seal it again, as a careful forger would."""
    manifest = edit(json.loads((folder / "manifest.json").read_text()))
    if isinstance(manifest, dict):
        manifest.pop("digest", None)
        manifest["digest"] = release.canonical_digest(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_paths_outside_the_release_are_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = small_release(tmp_path / "rel" / "v1.0.0")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for hashing")
    opened: list[Path] = []
    real = release.verify.__globals__["sha256_file"]
    monkeypatch.setitem(release.verify.__globals__, "sha256_file", lambda p: opened.append(Path(p)) or real(p))
    for escape in ("../../secret.txt", str(secret), "data/../../../secret.txt", "./data/rejects.parquet"):
        reseal(folder, lambda m, escape=escape: m | {"files": m["files"] | {escape: "0" * 64}})
        problems = release.verify(folder)
        assert problems == [
            f"{folder / 'manifest.json'}: malformed: path {escape!r} is outside the release; "
            "a manifest names files inside its folder only"
        ]
        reseal(folder, lambda m, escape=escape: m | {"files": {k: v for k, v in m["files"].items() if k != escape}})
    assert all(folder in p.parents for p in opened) and release.verify(folder) == []


def test_unlisted_folders_and_links_are_named(tmp_path: Path) -> None:
    folder = small_release(tmp_path / "v1.0.0")
    (folder / "extra" / "deeper").mkdir(parents=True)
    copy = tmp_path / "copy.parquet"
    shutil.copy(folder / "data" / "rejects.parquet", copy)
    (folder / "data" / "rejects.parquet").unlink()
    (folder / "data" / "rejects.parquet").symlink_to(copy)
    problems = release.verify(folder)
    assert "extra/: a folder without any file listed in manifest.json" in problems
    assert "extra/deeper/: a folder without any file listed in manifest.json" in problems
    assert "data/rejects.parquet: a symbolic link; a release holds plain files only" in problems


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.lists(
        st.sampled_from(["files", "tables", "rejects", "path", "rows", "key", "dataset", "version"]), max_size=3
    ),
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-3, 3)
        | st.floats(allow_nan=False)
        | st.sampled_from(["", "..", "../x", "/etc/passwd", "data/rejects.parquet", "a\\b", "./x", "0" * 64])
        | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=6,
    ),
)
def test_any_damaged_manifest_gives_lines_not_tracebacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: list[str], value: object
) -> None:
    """Any value at any place of a re-sealed manifest: verify answers with one-line problems (or
    none, when the value changes nothing that matters) and never opens a file outside."""
    opened: list[Path] = []
    real = release.verify.__globals__["sha256_file"]
    monkeypatch.setitem(release.verify.__globals__, "sha256_file", lambda p: opened.append(Path(p)) or real(p))
    folder = tmp_path / "v1.0.0"
    if not folder.exists():
        small_release(folder)
    original = (folder / "manifest.json").read_text()

    def edit(manifest: dict) -> object:
        if not path:
            return value
        target = manifest
        for key in path[:-1]:
            if not isinstance(target.get(key), dict):
                target[key] = {}
            target = target[key]
        target[path[-1]] = value
        return manifest

    try:
        reseal(folder, edit)
        problems = release.verify(folder)
        assert all(isinstance(line, str) and "\n" not in line for line in problems)
        assert all(folder.resolve() in p.resolve().parents for p in opened), opened
    finally:
        (folder / "manifest.json").write_text(original)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda m: {**m, "version": "1.0.1"}, "croissant.json: version '1.0.0', manifest.json says '1.0.1'"),
        (lambda m: {**m, "version": "1.0.1"}, "manifest.json: version 1.0.1 in folder v1.0.0"),
        (lambda m: {**m, "version": "1.0.1"}, "README.md: pretty_name 'regionbench small v1.0.0'"),
        (lambda m: {**m, "dataset": "large"}, "croissant.json: name 'regionbench-small', manifest.json says"),
        (lambda m: {**m, "license": "CC0-1.0"}, "README.md: license 'cc-by-4.0', manifest.json says 'cc0-1.0'"),
        (lambda m: {**m, "license": "CC0-1.0"}, "croissant.json: license 'https://spdx.org/licenses/CC-BY-4.0.html'"),
    ],
)
def test_a_resealed_manifest_must_agree_with_folder_croissant_and_card(
    tmp_path: Path, edit: Callable[[dict], dict], expected: str
) -> None:
    folder = small_release(tmp_path / "v1.0.0")
    croissant = json.loads((folder / "croissant.json").read_text())
    croissant |= {
        "name": "regionbench-small",
        "version": "1.0.0",
        "license": ["https://spdx.org/licenses/CC-BY-4.0.html"],
    }
    tables.write_json(folder / "croissant.json", croissant)
    (folder / "README.md").write_text("---\nlicense: cc-by-4.0\npretty_name: regionbench small v1.0.0\n---\n# card\n")

    def sealed(manifest: dict) -> dict:
        manifest = edit({**manifest, "license": "CC-BY-4.0"})  # the licence the files state, then the edit
        manifest["files"] = {
            p.relative_to(folder).as_posix(): release.sha256_file(p)
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "manifest.json"
        }
        return manifest

    reseal(folder, sealed)
    problems = release.verify(folder)
    assert any(expected in line for line in problems), problems


def test_a_table_changed_after_verification_is_never_read(tmp_path: Path) -> None:
    """A byte flipped with its modification time set back: a release loaded before is caught
    when the table is read; a load after it verifies again (the cache key holds the change
    time, which no one sets back) and refuses."""
    import os

    import regionbench

    folder = small_release(tmp_path / "v1.0.0")
    data = regionbench.load(folder)
    assert len(data.rejects) == 2
    path = folder / "data" / "rejects.parquet"
    stat = path.stat()
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(release.ReleaseError, match=r"changed since the release was verified"):
        data.table("rejects")
    with pytest.raises(release.ReleaseError, match=r"refused, the release does not verify: data/rejects\.parquet"):
        regionbench.load(folder)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("data/rejects.parquet", "data/rejects.parquet: not a regular file (a FIFO"),
        ("schemas/rejects.schema.json", "schemas/rejects.schema.json: not a regular file (a FIFO"),
        ("croissant.json", "croissant.json: not a regular file (a FIFO"),
        ("manifest.json", "manifest.json: not a regular file"),
        ("data/unlisted", "data/unlisted: not a regular file (a FIFO"),
    ],
)
def test_a_fifo_anywhere_is_named_and_never_opened(tmp_path: Path, where: str, expected: str) -> None:
    """A FIFO (or socket, or device) in place of a file or beside them is named as such, never
    read: opening a FIFO for reading waits for a writer forever."""
    import os
    import signal

    folder = small_release(tmp_path / "v1.0.0")
    (folder / where).unlink(missing_ok=True)
    os.mkfifo(folder / where)

    def stuck(*_: object) -> None:
        raise TimeoutError(f"verify opened the FIFO {where}")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(20)
    try:
        problems = release.verify(folder)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert any(expected in line for line in problems), problems


def test_a_manifest_giving_a_key_twice_fails_to_verify(tmp_path: Path) -> None:
    """A manifest whose ``version`` is given twice (a reader keeping the last value would read
    another release than a checker keeping the first): refused in one line naming the key."""
    folder = small_release(tmp_path / "rel" / "v1.0.0")
    text = (folder / "manifest.json").read_text()
    (folder / "manifest.json").write_text(
        text.replace('"version": "1.0.0"', '"version": "1.0.0", "version": "9.9.9"', 1)
    )
    problems = release.verify(folder)
    assert len(problems) == 1 and "the key 'version' is given twice in one object" in problems[0], problems
