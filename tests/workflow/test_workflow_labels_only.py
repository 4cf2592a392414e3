"""A SAIAPR tree whose folders lack segmentation_masks/: the build says so in one line and releases
those regions by their labels and official features, with features parity over the regions
that have masks."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import site_shows_the_release
from farm import Built

from regionbench.core import tables
from regionbench.io.saiapr import export_release, read_official_features
from regionbench.pipeline.ingest import ingest_shard
from regionbench.release import loader


@pytest.mark.browser
def test_a_folder_without_masks_is_released_by_labels_and_official_features(
    browser, release: Callable[[str], Built], tmp_path: Path
) -> None:
    built = release("tiny-labels-only")  # folder 00 without segmentation_masks/
    tiny_copy = built.raw
    said = [line for line in built.stdout.splitlines() if "segmentation_masks" in line]
    assert said == [
        "  labels only: 00 had no segmentation_masks/: their regions carry labels and the official "
        "features, no masks, boxes or relations"
    ]
    folder = built.folder
    regions = pq.read_table(folder / "data/regions.parquet")
    images = {r["image_id"]: r["folder"] for r in pq.read_table(folder / "data/images.parquet").to_pylist()}
    rows = regions.to_pylist()
    bare = [r for r in rows if images[r["image_id"]] == "00"]
    assert bare and all(r["mask"] is None and r["geometry"] is None and r["area_px"] is None for r in bare)
    assert all(r["mask"] is not None for r in rows if images[r["image_id"]] != "00")
    official = read_official_features([tiny_copy / "00" / "features.txt"])
    for r in bare:  # the official values, as features.txt gives them
        np.testing.assert_array_equal([r[n] for n in tables.FEATURE_NAMES], official[(r["image_id"], r["region_id"])])
    relations = pq.read_table(folder / "data/relations.parquet", columns=["image_id"])["image_id"].to_pylist()
    assert not {i for i in relations if images[i] == "00"}  # no relations without masks
    parity = json.loads((folder / "results/features_parity.json").read_text())
    assert parity["rows_without_mask"] == len(bare)
    assert parity["rows_compared"] == len(rows) - len(bare) and parity["rows_only_official"] == 0
    assert "**Labels only in 00.**" in (folder / "README.md").read_text()
    site_shows_the_release(browser, folder, tmp_path / "site", tiny_copy)  # 00: listed, not drawn
    assert pq.read_table(folder / "data/subsets.parquet").num_rows > 0  # the labels still make subsets
    # Written back, the folder has its labels and features but no mask files, as it came.
    out = tmp_path / "saiapr"
    export_release(loader.load(folder), out)
    assert len((out / "00" / "labels.txt").read_text().splitlines()) == len(bare)
    assert len((out / "00" / "features.txt").read_text(encoding="latin-1").splitlines()) == len(bare)
    assert not list((out / "00").glob("segmentation_masks/*.mat")) and list(
        (out / "01").glob("segmentation_masks/*.mat")
    )


def test_a_tree_without_any_masks_is_labels_only(tiny_copy: Path) -> None:
    """Every folder without masks: every region accepted by label with its official features,
    rows without a features.txt row rejected with the reason."""
    for folder in ("00", "01"):
        shutil.rmtree(tiny_copy / folder / "segmentation_masks")
    features = tiny_copy / "01" / "features.txt"
    lines = features.read_text(encoding="latin-1").splitlines(keepends=True)
    features.write_text("".join(lines[1:]), encoding="latin-1")  # one region loses its features row
    for folder in ("00", "01"):
        shard = ingest_shard(tiny_copy, folder)
        assert shard.report["labels_only_folders"] == [folder]
        assert shard.regions.num_rows == shard.features.num_rows > 0
        assert shard.relations.num_rows == 0
        assert all(m is None for m in shard.regions["mask"].to_pylist())
        reasons = shard.rejects.filter(pc.equal(shard.rejects["item"], "region"))["reason"].to_pylist()
        if folder == "01":
            assert len(reasons) == 1 and "no mask (the folder has no segmentation_masks/)" in reasons[0]
        else:
            assert reasons == []
        counts = shard.report["regions"]
        assert counts["seen"] == counts["accepted"] + counts["rejected"]
