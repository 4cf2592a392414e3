"""A collection with near-copies among its images: the build groups them, keeps each group on
one side of the subsets' split, reports a group the collection's own split cuts, and
``regionbench audit`` finds the same groups in the release and across two releases."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
from conftest import TINY, TINY_RELEASE, build, built_release, regionbench_cli, workflow_copy, write_config
from PIL import Image, ImageEnhance

from regionbench import release
from regionbench.synthetic import voc


def near_copy(source: Path, target: Path, quality: int, brightness: float) -> None:
    """``source`` made brighter and saved again as a JPEG of another quality."""
    image = ImageEnhance.Brightness(Image.open(source).convert("RGB")).enhance(brightness)
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=quality)
    target.write_bytes(out.getvalue())


def copy_item(base: Path, name: str, new: str, split: str, quality: int, brightness: float) -> None:
    """Image ``name`` of a VOC tree again as ``new`` (its maps and XML too), listed in ``split``."""
    near_copy(base / f"JPEGImages/{name}.jpg", base / f"JPEGImages/{new}.jpg", quality, brightness)
    for kind in ("SegmentationClass", "SegmentationObject"):
        (base / f"{kind}/{new}.png").write_bytes((base / f"{kind}/{name}.png").read_bytes())
    xml = (base / f"Annotations/{name}.xml").read_text()
    (base / f"Annotations/{new}.xml").write_text(xml.replace(name, new))
    for listing in (split, "trainval"):
        path = base / f"ImageSets/Segmentation/{listing}.txt"
        path.write_text(path.read_text() + f"{new}\n")


def audit(*args: str) -> subprocess.CompletedProcess:
    return regionbench_cli("audit", *args)


def test_near_copies_are_grouped_kept_on_one_side_and_audited(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    list(voc.write_tree(raw, 30, seed=5, size=(160, 120)))
    base = raw / "VOCdevkit/VOC2012"
    train = (base / "ImageSets/Segmentation/train.txt").read_text().split()
    # three train images copied into train, one of them twice (a chain: a copy of a copy), and
    # one copied into val: the collection's own split then cuts that group
    copies = {train[0]: ["2099_000001", "2099_000002"], train[1]: ["2099_000003"], train[2]: ["2099_000004"]}
    for n, (name, news) in enumerate(copies.items()):
        for k, new in enumerate(news):
            copy_item(base, name if k == 0 else news[k - 1], new, "train", 60 + 10 * n, 1.0 + 0.04 * (k + 1))
    copy_item(base, train[3], "2099_000005", "val", 75, 0.93)
    expected = {int(train[0].replace("_", "")), 2099000001, 2099000002}

    _, _, folder = built_release(tmp_path, "voc", f"raw_dir: {raw}\nclassifiers: {{names: [majority]}}\n")

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


def test_audits_switched_off_leave_empty_tables_that_verify(tiny_build: Path, tmp_path: Path) -> None:
    """Both audits off: their tables are empty and verified, the card says they did not run, and
    the rest of the release is the tiny one's, record for record."""
    project = workflow_copy(tmp_path / "wf")
    off = "audit: {duplicates: {enabled: false}, labels: {enabled: false}}\n"
    done = build(project, "--configfile", str(write_config(project, TINY + off)))
    assert done.returncode == 0, done.stderr[-3000:]
    folder = project / TINY_RELEASE
    assert release.verify(folder) == []
    for name in ("audit_duplicates", "audit_labels"):
        assert pq.read_table(folder / f"data/{name}.parquet").num_rows == 0
        assert not (folder / f"results/{name}.json").exists()
    card = (folder / "README.md").read_text()
    assert "The near-duplicate audit was switched off" in card and "The label audit was switched off" in card
    on = tiny_build / TINY_RELEASE
    assert (on / "results/audit_labels.json").is_file() and (on / "results/audit_duplicates.json").is_file()
    for name in ("images", "regions", "subsets"):  # no near-copies in the tiny collection: the same split
        assert pq.read_table(folder / f"data/{name}.parquet").equals(pq.read_table(on / f"data/{name}.parquet"))
