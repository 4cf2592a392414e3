"""Aliases and duplicates in raw trees: one photograph under two ids, EXIF orientation, a mask
traced twice, conflicting ontology rows, a caption beside the wrong folder, files linked from
outside, and synth into an existing tree. Each is reported or refused, never silent."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image
from test_coco import WORDS, alice_file, bob_file, write_tree
from test_hostile_raw import small_tree

from regionbench import cli
from regionbench.io import imageclef
from regionbench.io.saiapr.writer import LayoutWriter
from regionbench.io.shards import IngestError, same_bytes
from regionbench.pipeline.ingest import ingest_shard


@given(st.lists(st.tuples(st.integers(0, 50), st.sampled_from("abcd")), unique_by=lambda t: t[0], max_size=12))
def test_same_bytes_groups_exactly_the_ids_that_share_a_file(images: list[tuple[int, str]]) -> None:
    def table(part: list[tuple[int, str]]) -> pa.Table:
        return pa.table(
            {"image_id": [i for i, _ in part], "path": [f"{i}.jpg" for i, _ in part], "sha256": [d for _, d in part]}
        )

    groups = same_bytes([table(images[k::2]) for k in (0, 1)])
    by_digest = {d: sorted(i for i, e in images if e == d) for _, d in images}
    assert groups == sorted(
        (
            {"sha256": d, "image_ids": ids, "paths": [f"{i}.jpg" for i in ids]}
            for d, ids in by_digest.items()
            if len(ids) > 1
        ),
        key=lambda g: g["image_ids"],
    )


def turned_jpeg(size: tuple[int, int]) -> bytes:
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif)
    return out.getvalue()


def test_exif_orientation_is_reported_the_same_way_in_both_layouts(tmp_path: Path) -> None:
    saiapr = small_tree(tmp_path / "saiapr")
    (saiapr / "00/images/5.jpg").write_bytes(turned_jpeg((8, 6)))
    shard = ingest_shard(saiapr, "00")
    assert shard.report["quirks"]["exif_orientation_not_applied"] == 1
    assert shard.images.filter(pa.compute.equal(shard.images["image_id"], 5))["width"].to_pylist() == [8]
    coco = write_tree(tmp_path / "coco", alice_file(), bob_file())
    (coco / "images/25.jpg").write_bytes(turned_jpeg((40, 30)))
    assert ingest_shard(coco, "00", WORDS).report["quirks"]["exif_orientation_not_applied"] == 1


def test_a_mask_traced_twice_and_conflicting_ontology_rows(tmp_path: Path) -> None:
    tree = small_tree(tmp_path / "raw")
    shutil.copy(tree / "00/segmentation_masks/5_1.mat", tree / "00/segmentation_masks/5_2.mat")
    with (tree / "00/ontology_path.txt").open("a", encoding="latin-1") as f:
        f.write("17\t1\tentity->->humans->man  \n")  # region 17/1 again, under another path
    shard = ingest_shard(tree, "00")
    assert shard.report["quirks"]["identical_masks"] == 1
    reasons = [r["reason"] for r in shard.rejects.to_pylist() if r["item"] == "ontology-row"]
    assert len(reasons) == 2 and all("region 17/1 has rows with other paths" in r for r in reasons)
    region = next(r for r in shard.regions.to_pylist() if (r["image_id"], r["region_id"]) == (17, 1))
    assert region["ontology_path"] is None  # neither row is believed


def test_a_caption_beside_the_wrong_folder_says_where_its_image_is(tmp_path: Path) -> None:
    tree = small_tree(tmp_path / "raw")
    LayoutWriter(tree).caption("00", 1002, {"title": "a caption filed under 00"})
    shard = ingest_shard(tree, "00")
    reason = next(r["reason"] for r in shard.rejects.to_pylist() if r["item"] == "caption")
    assert reason == "caption of image 1002, which is 01/images/1002.jpg: move the caption to its folder's captions"


def test_files_linked_from_outside_the_tree_are_refused(tmp_path: Path) -> None:
    coco = write_tree(tmp_path / "coco", alice_file(), bob_file())
    outside = tmp_path / "carol.json"
    outside.write_text((coco / "annotations/bob.json").read_text().replace('"id": 1,', '"id": 5,'))
    os.symlink(outside, coco / "annotations/carol.json")
    with pytest.raises(IngestError, match=r"carol\.json: links outside the raw tree; copy the file in"):
        ingest_shard(coco, "00", WORDS)
    clef = tmp_path / "imageclef"
    imageclef.write_files(clef, {"a": {"1": {"sky"}}, "b": {"1": set()}, "c": {"1": {"sky"}}}, ["sky"], ["1"])
    moved = tmp_path / "elsewhere.txt"
    shutil.move(clef / "concepts" / "raw" / "sky.txt", moved)
    os.symlink(moved, clef / "concepts" / "raw" / "sky.txt")
    with pytest.raises(imageclef.ImageClefError, match=r"sky\.txt: links outside .*imageclef; copy the file in"):
        imageclef.read_files(clef)


def test_synth_into_an_existing_tree_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "wlist.txt").write_text("1\tn.a.\n")
    assert cli.main(["synth", "--profile", "tiny", "--out", str(tmp_path / "raw")]) == 2
    assert "already exists and is not empty; synth writes a new tree" in capsys.readouterr().err
