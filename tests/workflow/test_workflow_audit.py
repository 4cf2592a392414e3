"""A collection with near-copies among its images: the build groups them, keeps each group on
one side of the subsets' split, reports a group the collection's own split cuts, and
``regionbench audit`` finds the same groups in the release and across two releases."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
from conftest import TINY_RELEASE, regionbench_cli
from farm import Built


def audit(*args: str) -> subprocess.CompletedProcess:
    return regionbench_cli("audit", *args)


def test_near_copies_are_grouped_kept_on_one_side_and_audited(release: Callable[[str], Built], tmp_path: Path) -> None:
    built = release("voc-copies")  # farm._voc_copies: which images are copied where
    folder = built.folder
    train = (built.raw / "VOCdevkit/VOC2012/ImageSets/Segmentation/train.txt").read_text().split()
    train = [name for name in train if not name.startswith("2099_")]  # the list before the copies joined it
    expected = {int(train[0].replace("_", "")), 2099000001, 2099000002}

    table = pq.read_table(folder / "data/audit_duplicates.parquet").to_pylist()
    groups: dict[int, set[int]] = {}
    for row in table:
        groups.setdefault(row["group_id"], set()).add(row["image_id"])
    ids = {int(name.replace("_", "")) for name in train[:4]}
    assert expected in groups.values()
    assert {int(train[1].replace("_", "")), 2099000003} in groups.values()
    assert {int(train[3].replace("_", "")), 2099000005} in groups.values()
    assert all(min(g) == group for group, g in groups.items()) and ids <= set().union(*groups.values())

    # subsets A-H: every group on one side, of both splits, in every subset
    subsets = pq.read_table(folder / "data/subsets.parquet", columns=["image_id", "split", "image_split"])
    side: dict[int, set[str]] = {}
    for image, split, image_split in zip(*(subsets[c].to_pylist() for c in subsets.column_names), strict=True):
        side.setdefault(image, set()).update({split, image_split})
    for members in groups.values():
        assert len(set().union(*(side.get(i, set()) for i in members))) == 1, members
    assert {r["image_split"] for r in table} <= {"train", "test"}

    report = json.loads((folder / "results/audit_duplicates.json").read_text())
    assert report["groups_across_source_splits"] == 1 and report["images_hashed"] == 35
    card = (folder / "README.md").read_text()
    assert "## Audit" in card and f"{len(groups)} groups of {len(table)} images among 35" in card
    assert (
        "keep every group on one side" in card
        and "own splits (`split`), as the collection distributes them: 1." in card
    )

    # the command finds what the build found; across two releases, each image and its copies
    done = audit(str(folder), "--check", "--json", str(tmp_path / "audit.json"))
    assert done.returncode == 0, done.stderr
    assert f"35 images: {len(groups)} near-duplicate groups of {len(table)} images" in done.stdout
    assert "0 pairs on both sides of the subsets' image split" in done.stdout
    assert "1 pair in two of the collection's own splits" in done.stdout and "2099000005" in done.stdout
    written = json.loads((tmp_path / "audit.json").read_text())
    assert written["groups"] == len(groups) and written["images"] == len(table)
    done = audit(str(folder), str(folder), "--check")
    assert done.returncode == 1 and "near-duplicate pairs across" in done.stdout
    pairs = json.loads(
        (tmp_path / "two.json").read_text()
        if audit(str(folder), str(folder), "--json", str(tmp_path / "two.json")).returncode == 0
        else "{}"
    )["pairs_across_releases"]
    # every image with itself, and each pair of near-copies once in each order but a < b
    assert sum(p["a"]["image_id"] == p["b"]["image_id"] for p in pairs) == 35
    assert len(pairs) == 35 + sum(len(g) * (len(g) - 1) for g in groups.values())

    done = audit(str(folder), "--threshold", "200")
    assert done.returncode == 2 and "threshold" in done.stderr and "Traceback" not in done.stderr


def test_audits_switched_off_leave_empty_tables_that_verify(release: Callable[[str], Built], tiny_build: Path) -> None:
    """Both audits off: their tables are empty and verified, the card says they did not run, and
    the rest of the release is the tiny one's, record for record."""
    folder = release("tiny-audits-off").folder
    for name in ("audit_duplicates", "audit_labels"):
        assert pq.read_table(folder / f"data/{name}.parquet").num_rows == 0
        assert not (folder / f"results/{name}.json").exists()
    card = (folder / "README.md").read_text()
    assert "The near-duplicate audit was switched off" in card and "The label audit was switched off" in card
    on = tiny_build / TINY_RELEASE
    assert (on / "results/audit_labels.json").is_file() and (on / "results/audit_duplicates.json").is_file()
    for name in ("images", "regions", "subsets"):  # no near-copies in the tiny collection: the same split
        assert pq.read_table(folder / f"data/{name}.parquet").equals(pq.read_table(on / f"data/{name}.parquet"))
