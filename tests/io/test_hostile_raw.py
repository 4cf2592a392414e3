"""Hostile and careless raw trees: nothing lost, nothing silently accepted, one line per problem.

A small SAIAPR tree is written by hand (two folders, 8x6 JPEGs), so hundreds of damaged
variants ingest in seconds.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from regionbench.core import tables
from regionbench.io.saiapr import LayoutError
from regionbench.io.saiapr.writer import FolderRows, LayoutWriter
from regionbench.io.shards import trees_state
from regionbench.pipeline.ingest import IngestSettings, ingest_shard

WORDS = {1: "n.a.", 2: "sky", 3: "grass", 4: "man"}
IMAGES = {"00": [5, 17], "01": [1002, 1010]}


def jpeg(seed: int, mode: str = "RGB", fmt: str = "JPEG") -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).convert(mode).save(out, format=fmt)
    return out.getvalue()


def small_tree(root: Path) -> Path:
    """Two folders of two 8x6 images, each with a top and a bottom region."""
    writer = LayoutWriter(root)
    writer.wordlist(WORDS)
    for folder, ids in IMAGES.items():
        rows = FolderRows()
        for image_id in ids:
            writer.image(folder, image_id, jpeg(image_id))
            top = np.zeros((6, 8), dtype=bool)
            top[:3] = True
            for region_id, (mask, label_id) in enumerate(((top, 2), (~top, 3)), start=1):
                writer.mask(folder, image_id, region_id, mask)
                rows.add(image_id, region_id, label_id, "entity->->landscape-nature->sky  ", None)
        writer.texts(folder, rows)
    return root


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    return small_tree(tmp_path / "raw")


def ingest_all(root: Path) -> dict[str, object]:
    return {folder: ingest_shard(root, folder) for folder in IMAGES}


def balanced(shard) -> None:
    for part in ("images", "regions"):
        r = shard.report[part]
        assert r["seen"] == r["accepted"] + r["rejected"], (part, r)


def reasons_of(shard, key: str | None = None) -> list[str]:
    rows = shard.rejects.to_pylist()
    return [r["reason"] for r in rows if key is None or r["key"] == key]


def test_the_small_tree_is_accepted_whole(tree: Path) -> None:
    for shard in ingest_all(tree).values():
        balanced(shard)
        assert shard.rejects.num_rows == 0 and shard.images.num_rows == 2 and shard.regions.num_rows == 4


@pytest.mark.parametrize(
    ("original", "alias", "key"),
    [
        ("00/images/5.jpg", "00/images/05.jpg", "5"),
        ("00/segmentation_masks/5_1.mat", "00/segmentation_masks/005_1.mat", "5/1"),
        ("00/segmentation_masks/5_1.mat", "00/segmentation_masks/5_01.mat", "5/1"),
    ],
)
def test_two_files_of_one_key_are_both_rejected(tree: Path, original: str, alias: str, key: str) -> None:
    shutil.copy(tree / original, tree / alias)
    shard = ingest_shard(tree, "00")
    balanced(shard)
    rejected = {r["source"]: r["reason"] for r in shard.rejects.to_pylist() if r["key"] == key}
    assert set(rejected) == {original, alias}, shard.rejects.to_pylist()
    assert all("both name" in reason and "keep one" in reason for reason in rejected.values())


def test_the_same_image_in_two_folders_is_rejected_in_both(tree: Path) -> None:
    (tree / "01" / "images" / "5.jpg").write_bytes((tree / "00" / "images" / "5.jpg").read_bytes())
    shards = ingest_all(tree)
    for folder, other in (("00", "01"), ("01", "00")):
        balanced(shards[folder])
        assert reasons_of(shards[folder], "5") == [f"also in {other}/images/5.jpg; keep one"]
    assert 5 not in shards["00"].images.column("image_id").to_pylist()


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda t: (t / "00/images/4343.jpg").mkdir(), "a folder, not a file named '<image_id>.jpg'"),
        (lambda t: (t / "00/images/12345678901234567890.jpg").write_bytes(jpeg(1)), "not named '<image_id>.jpg'"),
        (lambda t: (t / "00/images/\u0663.jpg").write_bytes(jpeg(1)), "not named '<image_id>.jpg' (ASCII digits)"),
        (
            lambda t: (t / "00/images/5.jpg").write_bytes(jpeg(5, fmt="PNG")),
            "a PNG file named .jpg; convert it to JPEG",
        ),
        (lambda t: (t / "00/images/5.jpg").write_bytes(jpeg(5, "CMYK")), "JPEG in mode CMYK"),
        (lambda t: (t / "00/images/5.jpg").write_bytes(jpeg(5, "I;16", "PNG")), "a PNG file named .jpg"),
        (
            lambda t: (t / "00/images/9.jpg").symlink_to(t / "00/images/missing.jpg"),
            "a dangling link (it points to nothing)",
        ),
    ],
)
def test_named_image_damage(tree: Path, damage: Callable[[Path], None], expected: str) -> None:
    damage(tree)
    shard = ingest_shard(tree, "00")
    balanced(shard)
    assert any(expected in reason for reason in reasons_of(shard)), reasons_of(shard)


def test_a_non_ascii_digit_in_labels_txt_is_a_rejected_row(tree: Path) -> None:
    path = tree / "00" / "labels.txt"
    path.write_bytes(path.read_bytes() + "5\t\u00b3\t2\n".encode("latin-1") + "17\t3\t\u0663\n".encode())
    shard = ingest_shard(tree, "00")
    balanced(shard)
    rows = [r for r in shard.rejects.to_pylist() if r["item"] == "label-row"]
    assert [r["source"] for r in rows] == ["00/labels.txt:5", "00/labels.txt:6"]
    assert shard.regions.num_rows == 4


def test_a_byte_order_mark_is_removed_and_reported(tree: Path) -> None:
    path = tree / "00" / "ontology_path.txt"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    shard = ingest_shard(tree, "00")
    assert shard.report["quirks"]["byte_order_marks_removed"] == 1
    assert shard.rejects.num_rows == 0 and shard.regions.column("ontology_path").null_count == 0


def test_a_malformed_ontology_row_is_a_reject(tree: Path) -> None:
    path = tree / "00" / "ontology_path.txt"
    path.write_text(path.read_text() + "5\tx\tentity->->sky  \n")
    shard = ingest_shard(tree, "00")
    assert [r["item"] for r in shard.rejects.to_pylist()] == ["ontology-row"]
    assert shard.report["ontology_rows_rejected"] == 1


def test_a_text_file_linked_from_outside_is_refused(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "labels.txt"
    shutil.move(tree / "00" / "labels.txt", outside)
    os.symlink(outside, tree / "00" / "labels.txt")
    with pytest.raises(LayoutError, match=r"^00/labels.txt: links outside the raw tree; copy the file in$"):
        ingest_shard(tree, "00")


NAMES = st.sampled_from(
    [
        *("5", "05", "17", "0017", "99", "\u0663", "\u00b2", "12345678901234567890", "x", "", "5_1", "17_2", "5_01"),
        *(os.fsdecode(b"\xff5"), os.fsdecode(b"5\xe9"), os.fsdecode(b"\xc3")),  # names that are not UTF-8
    ]
)
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["copy_image", "copy_mask", "folder", "garbage", "png", "other_folder", "row", "caption"]),
        NAMES,
        st.sampled_from(["00", "01"]),
        st.binary(max_size=40),
    ),
    min_size=1,
    max_size=6,
)


def apply(root: Path, op: str, name: str, folder: str, data: bytes) -> None:
    """One careless act on the tree; names and bytes come from hypothesis."""
    base = root / folder
    if op == "copy_image":
        shutil.copy(root / "00/images/5.jpg", base / "images" / f"{name}.jpg")
    elif op == "copy_mask":
        shutil.copy(root / "00/segmentation_masks/5_1.mat", base / "segmentation_masks" / f"{name}.mat")
    elif op == "folder":
        (base / "images" / f"{name}.jpg").mkdir(exist_ok=True)
    elif op == "garbage":
        (base / "segmentation_masks" / f"{name}.mat").write_bytes(data)
    elif op == "png":
        (base / "images" / f"{name}.jpg").write_bytes(jpeg(3, fmt="PNG"))
    elif op == "other_folder":
        shutil.copy(root / "00/images/17.jpg", root / ("01" if folder == "00" else "00") / "images/17.jpg")
    elif op == "row":
        with (base / "labels.txt").open("ab") as f:
            f.write(os.fsencode(f"{name}\t1\t2\n") + data.replace(b"\n", b" ") + b"\n")
    elif op == "caption":
        path = root / "annotations_complete_eng" / folder / f"{name}.eng"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS)
def test_damaged_trees_lose_nothing(operations: list[tuple[str, str, str, bytes]]) -> None:
    """Any mix of careless acts: each folder's ledger balances, every reject names its item in
    one line, and no image id is accepted twice across the folders."""
    with tempfile.TemporaryDirectory() as scratch:
        root = small_tree(Path(scratch) / "raw")
        for op in operations:
            try:
                apply(root, *op)
            except (FileExistsError, IsADirectoryError, NotADirectoryError, shutil.SameFileError):
                continue  # the act itself was impossible on this tree
        accepted: list[int] = []
        trees_state(root, IMAGES)  # the workflow's fingerprint of the tree, whatever its names
        for folder in IMAGES:
            shard = ingest_shard(root, folder)
            balanced(shard)
            tables.write_parquet(shard.rejects, Path(scratch) / f"{folder}.rejects.parquet")  # text Parquet takes
            for row in shard.rejects.to_pylist():
                assert row["key"] and row["reason"] and "\n" not in row["reason"], row
                assert scratch not in row["reason"] and scratch not in row["source"], row
            accepted += shard.images.column("image_id").to_pylist()
            # Nothing silently accepted: every accepted image is an 8-bit RGB or gray JPEG.
            for row in shard.images.to_pylist():
                with Image.open(root / row["path"]) as im:
                    assert (im.format, im.mode) in (("JPEG", "RGB"), ("JPEG", "L")), row
        assert len(accepted) == len(set(accepted))


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"segimg_t": "inside"}, "segimg_t is not a real numeric matrix (it holds str"),
        ({"segimg_t": np.zeros((6, 8, 3))}, "mask shape 6x8x3 (3-D) differs from the image's 6x8"),
        ({"segimg_t": np.zeros((8, 6))}, "mask shape 8x6 (2-D) differs from the image's 6x8"),
        ({"segimg_t": np.array([[{"a": 1}]], dtype=object)}, "is not a real numeric matrix"),
        ({"other": np.zeros((6, 8))}, "no variable 'segimg_t' (found: other)"),
    ],
)
def test_named_mask_damage(tree: Path, variables: dict, expected: str) -> None:
    import scipy.io

    scipy.io.savemat(tree / "00/segmentation_masks/5_1.mat", variables)
    shard = ingest_shard(tree, "00")
    balanced(shard)
    assert any(expected in reason for reason in reasons_of(shard, "5/1")), reasons_of(shard)


def test_the_same_image_id_from_two_coco_file_names_is_rejected(tmp_path: Path) -> None:
    import json

    root = tmp_path / "coco"
    (root / "images").mkdir(parents=True)
    (root / "annotations").mkdir()
    for k, name in enumerate(("984.jpg", "0984.jpg", "984.png", "7.jpg")):
        (root / "images" / name).write_bytes(jpeg(k, fmt="PNG" if name.endswith(".png") else "JPEG"))
    images = [{"id": k, "file_name": n, "width": 8, "height": 6} for k, n in enumerate(["984.jpg", "7.jpg"], 1)]
    (root / "annotations" / "ann.json").write_text(
        json.dumps({"images": images, "annotations": [], "categories": [{"id": 1, "name": "sky"}]})
    )
    shard = ingest_shard(root, "00", {"sky": 2}, settings=IngestSettings(shard_size=4))
    reasons = {r["key"]: r["reason"] for r in shard.rejects.to_pylist()}
    assert set(reasons) == {"984.jpg", "0984.jpg", "984.png"}
    assert all("all give image id 984; rename all but one" in reason for reason in reasons.values())
    assert shard.images.column("image_id").to_pylist() == [7]


@pytest.mark.parametrize("name", ["labels.txt", "ontology_path.txt", "features.txt"])
@pytest.mark.parametrize("kind", ["folder", "dangling link"])
def test_a_text_file_that_is_no_file_is_named(tree: Path, name: str, kind: str) -> None:
    path = tree / "00" / name
    path.unlink()
    if kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tree / "00" / "gone.txt")
    expected = "a folder" if kind == "folder" else "a dangling link (it points to nothing)"
    with pytest.raises(
        LayoutError, match=rf"^00/{name}: {re.escape(expected)}, not a file; put the file itself there$"
    ):
        ingest_shard(tree, "00")


def test_a_dangling_image_link_in_a_coco_tree_is_called_so(tmp_path: Path) -> None:
    from test_coco import WORDS, alice_file, bob_file, write_tree

    root = write_tree(tmp_path / "coco", alice_file(), bob_file())
    (root / "images" / "25.jpg").unlink()
    (root / "images" / "25.jpg").symlink_to(root / "images" / "nowhere.jpg")
    shard = ingest_shard(root, "00", WORDS)
    assert "a dangling link (it points to nothing); copy the file in" in shard.rejects["reason"].to_pylist()
