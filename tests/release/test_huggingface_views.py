"""The Hugging Face views are written part by part and hold the same rows as the tables filtered whole."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench.core import tables
from regionbench.release import huggingface

SIDES = [None, "train", "test"]


def _folder(root: Path, images: int, regions: int, seed: int) -> Path:
    """A release's ``data/`` with the columns the views read, and an image file per image under ``root/raw``."""
    rng = np.random.default_rng(seed)
    (root / "data").mkdir(parents=True)
    (root / "raw").mkdir()
    ids = np.arange(1, images + 1)
    image_side = rng.integers(0, 3, images)
    paths, digests = [], []
    for k in ids:
        data = f"pixels of {k}".encode()
        (root / "raw" / f"{k}.jpg").write_bytes(data)
        paths.append(f"{k}.jpg")
        digests.append(hashlib.sha256(data).hexdigest())
    tables.write_parquet(pa.table({"image_id": ids, "path": paths, "sha256": digests}), root / "data/images.parquet")
    owner = np.sort(rng.integers(0, images, regions))
    region_side = rng.integers(0, 3, regions)
    region_table = pa.table(
        {
            "image_id": ids[owner],
            "region_id": np.arange(regions, dtype=np.int32),
            "split": pa.array([SIDES[s] for s in region_side], pa.string()),
            "image_split": pa.array([SIDES[image_side[o]] for o in owner], pa.string()),
        }
    )
    tables.write_parquet(region_table, root / "data/regions.parquet", metadata={b"geo": b"{}"})
    return root


def _expected(folder: Path, split: str) -> tuple[pa.Table, pa.Table]:
    regions = pq.read_table(folder / "data/regions.parquet")
    images = pq.read_table(folder / "data/images.parquet")
    ids = pc.unique(regions.filter(pc.equal(regions["image_split"], split))["image_id"])
    return regions.filter(pc.equal(regions["split"], split)), images.filter(pc.is_in(images["image_id"], ids))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(images=st.integers(1, 260), regions=st.integers(0, 400), seed=st.integers(0, 2**16))
def test_views_are_the_tables_filtered(
    tmp_path_factory: pytest.TempPathFactory, images: int, regions: int, seed: int
) -> None:
    folder = _folder(tmp_path_factory.mktemp("views"), images, regions, seed)
    huggingface.write_views(folder, embed_from=folder / "raw")
    sided = False
    for split in huggingface.SPLITS:
        regions_side, images_side = _expected(folder, split)
        sided |= images_side.num_rows > 0
        # A side without rows has no file: datasets refuses an empty split.
        path = folder / huggingface.view_path("regions", split)
        assert path.is_file() == (regions_side.num_rows > 0)
        assert (folder / huggingface.view_path("images", split)).is_file() == (images_side.num_rows > 0)
        if not images_side.num_rows:
            continue
        written = pq.read_table(path) if path.is_file() else regions_side
        assert written.equals(regions_side) and (not path.is_file() or written.schema.metadata == {b"geo": b"{}"})
        embedded = pq.ParquetFile(folder / huggingface.view_path("images", split))
        rows = [embedded.metadata.row_group(i).num_rows for i in range(embedded.metadata.num_row_groups)]
        # A reader holds EMBED_ROWS images at a time: every group full but the last, none empty.
        assert rows == [huggingface.EMBED_ROWS] * (len(rows) - 1) + rows[-1:] and all(rows)
        assert sum(rows) == images_side.num_rows
        table = embedded.read()
        assert table.drop_columns(["image"]).equals(images_side)
        assert [c["bytes"] for c in table["image"].to_pylist()] == [
            f"pixels of {k}".encode() for k in images_side["image_id"].to_pylist()
        ]
    # No image on either side (no subsets): every image, one split.
    assert (folder / huggingface.view_path("images", huggingface.WHOLE)).is_file() == (not sided)


def test_views_of_more_regions_than_a_row_group(tmp_path: Path) -> None:
    """The regions are read and written a row group at a time; the views hold them all, in order."""
    folder = _folder(tmp_path, 40, tables.ROW_GROUP + 1_000, seed=3)
    huggingface.write_views(folder)
    for split in huggingface.SPLITS:
        regions_side, images_side = _expected(folder, split)
        assert pq.read_table(folder / huggingface.view_path("regions", split)).equals(regions_side)
        assert pq.read_table(folder / huggingface.view_path("images", split)).equals(images_side)
