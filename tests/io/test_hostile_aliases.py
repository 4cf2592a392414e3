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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from test_coco import WORDS, alice_file, bob_file, write_tree
from test_hostile_raw import small_tree

from regionbench import cli
from regionbench.io import imageclef
from regionbench.io import images as images_io
from regionbench.io.saiapr.writer import LayoutWriter
from regionbench.io.shards import IngestError
from regionbench.pipeline.ingest import IngestSettings, ingest_shard

# A file of the tree: new bytes (a seed and a length: files of one length compete), or a copy
# of an earlier file by bytes, hard link or symbolic link.
files_of_a_tree = st.lists(
    st.one_of(
        st.tuples(st.just("new"), st.integers(0, 3), st.sampled_from([3, 8, 40])),
        st.tuples(st.sampled_from(["copy", "hard", "soft"]), st.integers(0, 20), st.just(0)),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=files_of_a_tree, folders=st.integers(1, 3))
def test_a_copy_of_an_earlier_image_is_named_with_the_first(
    tmp_path_factory: pytest.TempPathFactory, files: list, folders: int
) -> None:
    """Whatever the copies, links and files that only share a length or a head: each file whose
    bytes an earlier file holds maps to the first of them, and no other file does."""
    root = tmp_path_factory.mktemp("tree")
    paths, contents = [], []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(images_io, "HEAD_BYTES", 4)  # heads that agree, tails that do not
        for k, (kind, seed, length) in enumerate(files):
            relative = f"{k % folders:02d}/images/{k:03d}.jpg"
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "new" or not paths:
                data = b"head" + np.random.default_rng([seed, length]).integers(0, 2, length, dtype=np.uint8).tobytes()
                path.write_bytes(data)
            else:
                source = root / paths[seed % len(paths)]
                data = source.read_bytes()
                if kind == "copy":
                    shutil.copyfile(source, path)
                elif kind == "hard":
                    os.link(source, path)
                else:
                    path.symlink_to(source)
            paths.append(relative)
            contents.append(data)
        found = images_io.copies(root, paths)
    expected = {
        p: paths[contents.index(data)]
        for p, data in zip(paths, contents, strict=True)
        if paths[contents.index(data)] != p
    }
    assert found == expected


def test_one_photograph_under_ids_in_two_folders_is_kept_once(tmp_path: Path) -> None:
    """A SAIAPR tree whose folder 01 holds a copy, a hard link and a symbolic link of an image of
    folder 00: the three are rejected, each naming the first, and their regions with them."""
    tree = small_tree(tmp_path / "raw")
    first = tree / "00/images/5.jpg"
    shutil.copyfile(first, tree / "01/images/1005.jpg")
    os.link(first, tree / "01/images/1006.jpg")
    (tree / "01/images/1007.jpg").symlink_to(first)
    with (tree / "01/labels.txt").open("a") as f:
        f.write("1005 1 2\n")
    shard = ingest_shard(tree, "01")
    reasons = {r["key"]: r["reason"] for r in shard.rejects.to_pylist() if r["item"] == "image"}
    for copy in ("1005", "1006", "1007"):
        assert reasons[copy] == images_io.copy_reason("00/images/5.jpg")
    assert not {1005, 1006, 1007} & set(shard.images.column("image_id").to_pylist())
    assert 5 in ingest_shard(tree, "00").images.column("image_id").to_pylist()


def test_a_coco_image_file_linked_under_another_name_is_rejected_with_its_annotations(tmp_path: Path) -> None:
    """COCO: a hard link and a byte copy (in a subfolder) of a listed image, each listed by an
    annotator under its own id: both are rejected naming the first file, and so are the
    annotations drawn on them; the first keeps its id."""
    import json

    root = write_tree(tmp_path / "coco", alice_file(), bob_file())
    os.link(root / "images/25.jpg", root / "images/26.jpg")
    (root / "images/sub").mkdir()
    shutil.copyfile(root / "images/25.jpg", root / "images/sub/27.jpg")
    data = alice_file()
    for k, name in ((3, "26.jpg"), (4, "sub/27.jpg")):
        data["images"].append({"id": k, "file_name": name, "width": 40, "height": 30})
        data["annotations"].append(dict(data["annotations"][0], id=100 + k, image_id=k))
    (root / "annotations/alice.json").write_text(json.dumps(data))
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=100))  # one shard of all
    rejected = {r["key"]: r["reason"] for r in shard.rejects.to_pylist() if r["item"] == "image"}
    assert rejected == {n: images_io.copy_reason("images/25.jpg") for n in ("26.jpg", "sub/27.jpg")}
    lost = [r for r in shard.rejects.to_pylist() if r["item"] == "region"]
    assert sorted(r["key"] for r in lost) == ["26.jpg/103", "sub/27.jpg/104"]
    assert 25 in shard.images.column("image_id").to_pylist()


def _variant(kind: int) -> dict:
    """One of four annotator files: Alice's, Bob's, Alice's with one label changed, Bob's less
    one annotation."""
    data = alice_file() if kind in (0, 2) else bob_file()
    if kind == 2:
        data["annotations"][0]["category_id"] = 3
    if kind == 3:
        data["annotations"].pop()
    return data


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.text("ab ", max_size=4)), min_size=1, max_size=5))
def test_an_annotator_file_that_says_what_another_says_is_named_with_it(
    tmp_path_factory: pytest.TempPathFactory, files: list[tuple[int, str]]
) -> None:
    """Annotator files that differ in their ``info`` alone are one annotator under two names: each
    later one is named with the first in the ingest report and counted; a file that differs in
    one annotation is not. (A byte copy stops the build: ``check_sources``.)"""
    import json

    root = write_tree(tmp_path_factory.mktemp("coco"), alice_file(), bob_file())
    for old in (root / "annotations").iterdir():
        old.unlink()
    for k, (kind, info) in enumerate(files):
        (root / "annotations" / f"a{k}.json").write_text(
            json.dumps({"info": {"description": f"{info}{k}"}, **_variant(kind)})
        )
    report = ingest_shard(root, "00", WORDS).report
    first = {}
    expected = [
        f"annotations/a{k}.json says what annotations/a{first[kind]}.json says"
        for k, (kind, _) in enumerate(files)
        if first.setdefault(kind, k) != k
    ]
    found = report.get("alike_annotator_files", [])
    assert [line.split(" (")[0] for line in found] == expected
    assert report["quirks"].get("annotator_files_alike", 0) == len(expected)


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
