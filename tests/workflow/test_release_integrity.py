"""A release checks itself: verify, tampering caught, load's cache of sound releases, damaged releases refused, tables written in parts as from whole tables."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path

import farm
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import build, file_digests
from release_helpers import VERSION, cli, provenance_of, rewrite

import regionbench
from regionbench import release
from regionbench.core import tables


def test_release_verifies_and_describes_itself(tiny_build: Path) -> None:
    folder = tiny_build / VERSION
    done = cli("verify", str(folder))
    assert done.returncode == 0, done.stdout
    assert "tiny v1.0.0 verified" in done.stdout
    manifest = release.read_manifest(folder)
    assert manifest["tables"]["regions"]["rows"] == 110
    # A fresh build's bytes are checked by the interrupted-build test and by reproduce.
    assert {"manifest.json", "croissant.json", "README.md", "data/regions.parquet", "results/classifiers.png"} <= set(
        manifest["files"]
    ) | {"manifest.json"}
    regions = pq.read_table(folder / "data/regions.parquet")
    assert regions.column_names[:7] == [
        "image_id",
        "annotator",
        "region_id",
        "label_id",
        "label",
        "ontology_path",
        "iscrowd",
    ]
    keys = pq.read_metadata(folder / "data/regions.parquet").metadata.keys()
    assert "convexity" in regions.column_names and b"geo" in keys and b"pandas" not in keys
    card = (folder / "README.md").read_text()
    front = card.split("\n---\n", 1)[0]
    assert card.startswith("---\n") and "\npretty_name: regionbench tiny v1.0.0\n" in front
    assert "config_name: regions" in card and "## Known conflicts" in card and "## Citation" in card
    assert "110 regions by saiapr over 24 images: 4.58 regions per image" in card
    assert "`image_split` puts every image on one side" in card
    for figure in ("collection.png", "relation_stats.png", "classifiers.png"):  # shown, and in the release
        assert f"](results/{figure})" in card and (folder / "results" / figure).stat().st_size > 0
    # The collection's figures are a results file the card reads, with the label-frequency figure.
    stats = json.loads((folder / "results/collection.json").read_text())
    assert stats["regions"] == 110 and stats["annotator"] == "saiapr"
    assert sum(r["regions"] for r in stats["label_histogram"]) == 110
    counts = [r["images"] for r in stats["train_label_frequency"]["labels"]]
    assert counts == sorted(counts, reverse=True) and stats["train_label_frequency"]["train_images"] > 0
    assert "![Regions per label and training images per label](results/collection.png)" in card
    assert {"results/collection.png", "results/soft_confusions.json"} <= set(manifest["files"])
    assert "relations agree: topological 100.00 %, horizontal 100.00 %, vertical 100.00 %." in card


@pytest.mark.parametrize("damage", ["byte", "row", "manifest"])
def test_tampering_is_caught(tiny_release: Path, damage: str) -> None:
    target = tiny_release / "data/regions.parquet"
    if damage == "byte":
        raw = bytearray(target.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        target.write_bytes(bytes(raw))
        expected = "data/regions.parquet"
    elif damage == "row":
        table = pq.read_table(target)
        tables.write_parquet(table.slice(0, table.num_rows - 1), target)
        expected = "data/regions.parquet"
    else:
        manifest = json.loads((tiny_release / "manifest.json").read_text())
        manifest["tables"]["images"]["rows"] += 1
        (tiny_release / "manifest.json").write_text(json.dumps(manifest))
        expected = "manifest.json"
    done = cli("verify", str(tiny_release))
    assert done.returncode == 1
    lines = done.stdout.strip().splitlines()
    assert lines and all(line.startswith(f"{tiny_release}: ") for line in lines)
    assert any(expected in line for line in lines), lines
    if damage == "row":
        assert any("109 rows, manifest.json says 110" in line for line in lines)


@pytest.mark.parametrize(
    ("count", "said"), [(("images", "accepted"), "images accepted"), (("regions", "rejected"), "regions rejected")]
)
def test_the_ingest_report_must_count_the_tables_rows(tiny_release: Path, count: tuple[str, str], said: str) -> None:
    """A report whose counts are not the tables' rows fails verify, even with every digest right:
    the ledger (accepted = rows, rejected = rejects rows) is part of a sound release."""
    path = tiny_release / "results/ingest_report.json"
    report = json.loads(path.read_text())
    report[count[0]][count[1]] += 1
    path.write_text(json.dumps(report))
    manifest = json.loads((tiny_release / "manifest.json").read_text())
    manifest["files"]["results/ingest_report.json"] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest.pop("digest")
    manifest["digest"] = release.canonical_digest(manifest)
    (tiny_release / "manifest.json").write_text(json.dumps(manifest))
    problems = release.verify(tiny_release)
    assert [p for p in problems if "ingest_report.json" in p and said in p], problems


def test_a_table_breaking_its_schema_is_refused(tiny_release: Path, tmp_path: Path) -> None:
    def bad_split(data: dict) -> None:
        subsets = data["subsets"]
        data["subsets"] = subsets.set_column(
            subsets.column_names.index("split"), "split", pa.array(["val"] * subsets.num_rows)
        )

    with pytest.raises(release.ReleaseError, match=r"subsets\.split: 1 distinct values break the schema"):
        rewrite(tiny_release, "2.0.0", tmp_path / "bad", bad_split)


def test_load_verifies_and_remembers_a_sound_release(tiny_release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert regionbench.load(tiny_release).version == "1.0.0"
    # Loaded again untouched: the verification is remembered, not repeated.
    monkeypatch.setattr(release, "verify", lambda folder: pytest.fail("verified twice"))
    assert regionbench.load(tiny_release).version == "1.0.0"
    monkeypatch.undo()
    raw = bytearray((tiny_release / "data/regions.parquet").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (tiny_release / "data/regions.parquet").write_bytes(bytes(raw))
    with pytest.raises(release.ReleaseError, match=r"refused, the release does not verify: data/regions.parquet"):
        regionbench.load(tiny_release)
    assert regionbench.load(tiny_release, verify=False).version == "1.0.0"
    with pytest.raises(release.ReleaseError, match=r"data/regions.parquet: unreadable \("):
        regionbench.load(tiny_release, verify=False).regions  # noqa: B018


def test_a_tampered_or_missing_release_is_one_line(tiny_release: Path, tmp_path: Path) -> None:
    (tiny_release / "extra").mkdir()
    missing = tmp_path / "nowhere"
    for source, expected in (
        (tiny_release, "refused, the release does not verify: extra/: a folder without any file listed"),
        (missing, f"{missing}: no such folder"),
        (tiny_release / "README.md", "a file, not a release folder"),
    ):
        done = cli("evaluate", "--release", str(source), "--predictions", "x.csv", "--task", "region")
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert expected in done.stderr
        with pytest.raises(release.ReleaseError, match=re.escape(expected)):
            regionbench.load(source)
    done = cli("evaluate", "--release", str(tiny_release), "--predictions", "x.csv", "--task", "region", "--no-verify")
    assert done.returncode == 2 and "x.csv: no such file" in done.stderr
    done = cli("verify", str(missing))  # an input error, as everywhere: exit 2, one line
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and f"{missing}: no such folder" in done.stderr


def test_export_and_diff_refuse_a_damaged_release(tiny_release: Path, tmp_path: Path) -> None:
    table = tiny_release / "data/regions.parquet"
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    for args in (
        ["export-saiapr", str(tiny_release), str(tmp_path / "out")],
        ["diff", str(tiny_release), str(tiny_release)],
    ):
        done = cli(*args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "refused, the release does not verify: data/regions.parquet" in done.stderr
    assert not (tmp_path / "out").exists()


def test_embedding_refuses_an_image_changed_or_gone_since_ingest(tmp_path: Path) -> None:
    from regionbench.release import huggingface

    (tmp_path / "a.jpg").write_bytes(b"pixels")
    images = pa.table({"path": ["a.jpg"], "sha256": [hashlib.sha256(b"pixels").hexdigest()]})
    embedded = huggingface.embed_images(images, tmp_path)
    assert embedded["image"].to_pylist() == [{"bytes": b"pixels", "path": "a.jpg"}]
    (tmp_path / "a.jpg").write_bytes(b"other")
    with pytest.raises(release.ReleaseError, match=r"a\.jpg changed since ingest"):
        huggingface.embed_images(images, tmp_path)
    (tmp_path / "a.jpg").unlink()
    with pytest.raises(release.ReleaseError, match=r"cannot read a\.jpg under .*: No such file"):
        huggingface.embed_images(images, tmp_path)


def _slices(table: pa.Table, cuts: list[int]) -> list:
    bounds = [0, *(c for c in cuts if 0 < c < table.num_rows), table.num_rows]
    return [partial(table.slice, a, b - a) for a, b in itertools.pairwise(bounds)]


def _interleaved(table: pa.Table) -> list:
    rows = np.arange(table.num_rows)
    return [partial(table.take, rows[rows % 2 == 0]), partial(table.take, rows[rows % 2 == 1])]


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("cut", ["consecutive", "interleaved"])
def test_a_release_from_parts_is_the_release_from_whole_tables(
    tiny_release: Path, tmp_path: Path, cut: str, workers: int
) -> None:
    # The workflow hands the writer one part per shard; any cut must give the same folder, and
    # so must any number of worker processes (the tiny build's release ran on two).
    data = release.read_tables(tiny_release)
    if cut == "consecutive":
        parts = {name: _slices(table, [1, 7, table.num_rows // 2]) for name, table in data.items()}
    else:
        parts = {name: _interleaved(table) for name, table in data.items()}
    provenance = provenance_of(tiny_release, "1.0.0")
    results = {p.relative_to(tiny_release / "results").as_posix(): p for p in (tiny_release / "results").rglob("*")}
    out = tmp_path / "v1.0.0"
    release.write_release(out, parts, {k: v for k, v in results.items() if v.is_file()}, provenance, workers=workers)
    assert file_digests(out) == file_digests(tiny_release)
    assert not (tmp_path / "v1.0.0.partial").exists()


def test_scan_finds_duplicates_across_parts(tiny_release: Path) -> None:
    regions = release.read_tables(tiny_release)["regions"]
    schema = release.load_schemas()["regions"]
    twice = release.scan([partial(regions.slice, 0, 5), partial(regions.slice, 4, 5)], schema)
    assert not twice.in_order and any("duplicate primary keys" in p for p in twice.problems)
    whole = release.scan(release.as_parts(regions), schema)
    assert whole.in_order and whole.content_sha256 == release.content_hash(regions, schema)


def test_the_regions_files_use_their_own_row_groups(tiny_release: Path, tmp_path: Path) -> None:
    """The regions table and its Hugging Face views are written in groups of REGION_ROW_GROUP
    rows (a region carries a mask and a polygon), every other table in groups of ROW_GROUP, and
    the folder verifies: a small group size gives the same records in more row groups."""
    data = release.read_tables(tiny_release)
    results = {p.relative_to(tiny_release / "results").as_posix(): p for p in (tiny_release / "results").rglob("*")}
    out = tmp_path / "v1.0.0"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables, "REGION_ROW_GROUP", 16)
        patch.setattr(tables, "ROW_GROUP", 64)
        release.write_release(
            out, data, {k: v for k, v in results.items() if v.is_file()}, provenance_of(tiny_release, "1.0.0")
        )
    assert release.verify(out) == []
    for path, rows in [("data/regions.parquet", 16), ("hf/regions-train.parquet", 16), ("data/relations.parquet", 64)]:
        meta = pq.read_metadata(out / path)
        sizes = [meta.row_group(k).num_rows for k in range(meta.num_row_groups)]
        assert sizes[:-1] == [rows] * (len(sizes) - 1) and 0 < sizes[-1] <= rows and meta.num_rows > rows, path
    manifest, before = release.read_manifest(out), release.read_manifest(tiny_release)
    assert {n: t["content_sha256"] for n, t in manifest["tables"].items()} == {
        n: t["content_sha256"] for n, t in before["tables"].items()
    }


def _relabel_first_region(data: dict) -> None:
    """The first region's label id set to another label's, its label name kept."""
    regions, vocabulary = data["regions"], data["vocabulary"]
    other = next(i for i in vocabulary["label_id"].to_pylist() if i != regions["label_id"][0].as_py())
    ids = regions["label_id"].to_pylist()
    data["regions"] = regions.set_column(regions.column_names.index("label_id"), "label_id", pa.array([other, *ids[1:]], pa.int32()))  # fmt: skip


def _drop_a_related_region(data: dict) -> None:
    """A region that relations and subsets name removed from regions alone."""
    regions, relations = data["regions"], data["relations"]
    key = relations.slice(0, 1).select(["image_id", "annotator", "region_id"]).to_pylist()[0]
    keep = [{k: r[k] for k in key} != key for r in regions.select(["image_id", "annotator", "region_id"]).to_pylist()]
    data["regions"] = regions.filter(pa.array(keep))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_relabel_first_region, "(label_id, label) not in vocabulary (label_id, label)"),
        (_drop_a_related_region, "(image_id, annotator, region_id) not in regions (image_id, annotator, region_id)"),
    ],
    ids=["label-id-of-another-label", "relation-to-no-region"],
)
def test_tables_that_disagree_on_a_key_fail_verify_though_sealed(
    tiny_release: Path, tmp_path: Path, change, expected: str
) -> None:
    """A release the writer sealed whole (every digest, count and content hash right) whose
    tables disagree: joining them on the key they share would give wrong answers, so verify
    names the pair."""
    rewrite(tiny_release, "2.0.0", tmp_path / "forged", change)
    problems = release.verify(tmp_path / "forged")
    assert any(expected in p for p in problems), problems


def test_a_release_resealed_whole_is_told_apart_by_its_pinned_digest(tiny_release: Path, tmp_path: Path) -> None:
    """A row removed and every checksum, count and hash written again by the writer itself:
    verify alone passes it, the digest the first release was pinned by does not; load refuses
    it the same way, with or without verification."""
    pinned = json.loads((tiny_release / "manifest.json").read_text())["digest"]
    assert release.verify(tiny_release, expect=pinned) == []
    assert release.verify(tiny_release, expect=f"sha256:{pinned[:12]}") == []

    def drop_a_rejected_row(data: dict) -> None:
        data["rejects"] = data["rejects"].slice(1)

    forged = tmp_path / "forged"
    rewrite(tiny_release, "1.0.1", forged, drop_a_rejected_row)
    assert not [p for p in release.verify(forged) if "digest" in p]
    problems = release.verify(forged, expect=pinned)
    assert any("is not the pinned" in p for p in problems), problems
    forged_digest = json.loads((forged / "manifest.json").read_text())["digest"]
    said = next(p for p in problems if "is not the pinned" in p)
    assert f"sha256:{forged_digest}" in said and pinned in said  # both in full: a user compares them
    for check in (True, False):
        with pytest.raises(release.ReleaseError, match="is not the pinned"):
            regionbench.load(forged, verify=check, expect=pinned)
    done = cli("verify", str(tiny_release), "--expect", pinned)
    assert done.returncode == 0 and f"digest sha256:{pinned} (the pinned digest)" in done.stdout
    assert cli("verify", str(forged), "--expect", pinned).returncode == 1
    assert "not a digest" in cli("verify", str(tiny_release), "--expect", "v1.0").stdout


@pytest.mark.parametrize("keep_times", [True, False], ids=["size-and-times-kept", "touched"])
def test_a_release_damaged_in_place_after_a_cached_verification_is_never_scored(
    tiny_release: Path, tmp_path: Path, keep_times: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With REGIONBENCH_CACHE remembering a sound verification, a table damaged in place (its
    size, times and inode kept, or not) is refused by load and by evaluate alike: reads check
    the bytes the cache key cannot see."""
    import os

    monkeypatch.setenv("REGIONBENCH_CACHE", str(tmp_path / "cache"))
    regions = pq.read_table(tiny_release / "data/regions.parquet", columns=["image_id", "region_id", "label"])
    subsets = pq.read_table(tiny_release / "data/subsets.parquet").to_pandas()
    test = subsets[(subsets["subset"] == "E") & (subsets["split"] == "test")][["image_id", "region_id", "label"]]
    test.to_csv(tmp_path / "run.csv", index=False)
    assert regions.num_rows
    command = ["evaluate", "--release", str(tiny_release)]
    command += ["--predictions", str(tmp_path / "run.csv"), "--task", "region", "--subset", "E"]
    assert cli(*command).returncode == 0
    path = tiny_release / "data/relations.parquet"
    stat = path.stat()
    with open(path, "r+b") as f:  # one byte changed, in place
        f.seek(stat.st_size // 2)
        byte = f.read(1)
        f.seek(stat.st_size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    if keep_times:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    done = cli(*command)
    assert done.returncode != 0 and "relations.parquet" in done.stderr, (done.returncode, done.stderr[-500:])


def test_a_damaged_assembled_table_is_never_published_and_the_rerun_assembles_it_again(
    release: Callable[[str], farm.Built], tmp_path: Path
) -> None:
    """A byte flipped in the assembled images table after its assembly, then the release step
    runs again (its folder and receipt gone): the build stops on one line naming the file and
    publishes nothing; the same command again assembles anew and publishes the farm's bytes."""
    built = release("tiny-audits-off")
    project = Path(shutil.copytree(built.project, tmp_path / "wf", symlinks=True))
    folder = project / built.folder.relative_to(built.project)
    shutil.rmtree(folder)
    (project / built.results.relative_to(built.project) / "release.json").unlink()
    table = project / built.results.relative_to(built.project) / "assembled" / "data" / "images.parquet"
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0xFF
    table.write_bytes(bytes(data))
    files = farm.configfiles("tiny-audits-off", project)
    done = build(project, *files)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "assembled/data/images.parquet: not the file the assembly sealed" in last, last
    assert "Traceback" not in done.stderr and not folder.exists() and not list(folder.parent.glob("*.partial"))
    again = build(project, *files)
    assert again.returncode == 0, again.stderr[-2000:]
    assert file_digests(folder) == file_digests(built.folder)
