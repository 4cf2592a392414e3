"""Label-map collections (Pascal VOC, Cityscapes, ADE20K) read back exactly: trees in each
format's own encoding (palette, 16-bit, class x 1000 + instance) with any values, broken files
and missing halves; every value a region or a reject with its reason, the ledger balanced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from regionbench.core import geometry
from regionbench.io import ade20k, cityscapes, layouts, voc
from regionbench.io.labelmaps import masks_by_value, safe_label
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.synthetic import ade20k as ade_synth
from regionbench.synthetic import ade20k_full as ade_full_synth
from regionbench.synthetic import cityscapes as cs_synth
from regionbench.synthetic import voc as voc_synth

H, W = 12, 16
ALL = IngestSettings(shard_size=1000)
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def balanced(shard) -> None:
    report = shard.report
    for counts in [report["images"], report["regions"], *report["annotators"].values()]:
        assert counts["seen"] == counts["accepted"] + counts["rejected"], report
    assert report["regions"]["accepted"] == shard.regions.num_rows
    assert report["images"]["accepted"] == shard.images.num_rows
    assert shard.rejects.num_rows == report["images"]["rejected"] + report["regions"]["rejected"]


def rebuilt(shard, image_id: int, who: str, value_of) -> np.ndarray:
    """The map of ``who`` back from the shard's regions (``value_of`` a row's map value), -1 elsewhere."""
    out = np.full((H, W), -1, np.int64)
    for row in shard.regions.to_pylist():
        if row["image_id"] == image_id and row["annotator"] == who:
            out[geometry.from_rle(row["mask"])] = value_of(row)
    return out


def test_masks_by_value_is_one_mask_per_value() -> None:
    values = np.array([[3, 0, 3], [7, 7, 0]])
    found = masks_by_value(values, skip=(0,))
    assert [v for v, _ in found] == [3, 7]
    assert all(np.array_equal(m, values == v) for v, m in found)


# --- Pascal VOC -------------------------------------------------------------------------------------------


def voc_tree(root: Path, classes: np.ndarray, instances: np.ndarray | None, mode: str = "P") -> Path:
    folder = root / "VOC2012"
    for kind in ("JPEGImages", "SegmentationClass", "SegmentationObject", "ImageSets/Segmentation"):
        (folder / kind).mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((H, W, 3), 90, np.uint8)).save(folder / "JPEGImages/2008_000001.jpg")
    for kind, values in (("SegmentationClass", classes), ("SegmentationObject", instances)):
        if values is not None:
            image = Image.fromarray(values.astype(np.uint8), mode="L").convert(mode)
            if mode == "P":
                image.putpalette(voc.palette())
            image.save(folder / kind / "2008_000001.png")
    (folder / "ImageSets/Segmentation/val.txt").write_text("2008_000001\n2008_000002\n")
    return root


VOC_WORDS = {c: i for i, c in enumerate(voc.CLASSES)}
CLASS_VALUES = st.sampled_from([0, 0, 1, 5, 15, 20, 21, 254, 255])


@PROPERTY
@given(classes=arrays(np.uint8, (H, W), elements=CLASS_VALUES), instances=arrays(np.uint8, (H, W), elements=st.sampled_from([0, 1, 2, 3, 255])))  # fmt: skip
def test_voc_instances_are_regions_pixel_exact_or_rejects(tmp_path: Path, classes, instances) -> None:
    root = voc_tree(tmp_path / str(np.random.default_rng().integers(1 << 40)), classes, instances)
    shard = ingest_shard(root, "00", VOC_WORDS, layout="voc", settings=ALL)
    balanced(shard)
    void = (classes == 255) | (instances == 255)
    image_id = 2008000001
    [coverage] = shard.coverage.to_pylist()
    ignore = geometry.from_rle(coverage["ignore_mask"]) if coverage["ignore_mask"] else np.zeros((H, W), bool)
    assert np.array_equal(ignore, void)
    got = rebuilt(shard, image_id, "voc", lambda r: r["annotation_id"] or 0)
    for index in set(np.unique(instances).tolist()) - {0, 255}:
        under = set(np.unique(classes[(instances == index) & ~void]).tolist())
        kept = len(under) == 1 and 0 < min(under) <= 20
        assert np.array_equal(got == index, (instances == index) & ~void if kept else np.zeros_like(void)), index
        if kept:
            [row] = [r for r in shard.regions.to_pylist() if r["annotation_id"] == index]
            assert row["label"] == voc.CLASSES[min(under)] and row["category_id"] == min(under)
    background = (instances == 0) & (classes == 0) & ~void
    assert np.array_equal(got == 0, background)
    assert shard.images.to_pylist()[0]["split"] == "val"
    # the list names 2008_000002, which has no image: a reject, not a silence
    assert "2008_000002" in shard.rejects.column("key").to_pylist()
    # a class VOC does not have, under no instance: a reject naming it (was dropped without a word)
    stray = set(np.unique(classes[(instances == 0) & ~void]).tolist()) - set(range(21))
    keys = shard.rejects.column("key").to_pylist()
    assert {k for k in keys if "/class-" in k} == {f"2008_000001/class-{v}" for v in stray}


@PROPERTY
@given(
    lists=st.lists(st.sampled_from(["train", "val", "trainval", "test"]), min_size=1, max_size=4, unique=True),
    empty=st.booleans(),
)
def test_voc_split_lists_are_read_against_each_other(tmp_path: Path, lists: list[str], empty: bool) -> None:
    """An image in two split lists (trainval, their union, aside) is a reject naming both; an
    empty list is a named quirk; one list gives the image its split."""
    classes = np.zeros((H, W), np.uint8)
    root = voc_tree(tmp_path / str(np.random.default_rng().integers(1 << 40)), classes, None, mode="L")
    (root / "VOC2012/SegmentationObject").rmdir()
    folder = root / "VOC2012/ImageSets/Segmentation"
    (folder / "val.txt").unlink()
    for name in lists:
        (folder / f"{name}.txt").write_text("2008_000001\n")
    if empty:
        (folder / "extra.txt").write_text("")
    shard = ingest_shard(root, "00", VOC_WORDS, layout="voc", settings=ALL)
    balanced(shard)
    splits = [n for n in lists if n != "trainval"]
    if len(splits) > 1:
        [reason] = shard.rejects.column("reason").to_pylist()
        assert all(f"{n}.txt" in reason for n in splits) and shard.images.num_rows == 0
    else:
        assert shard.images.to_pylist()[0]["split"] == (splits[0] if splits else None)
    assert shard.report["quirks"].get("empty_split_list", 0) == int(empty)


@PROPERTY
@given(classes=arrays(np.uint8, (H, W), elements=CLASS_VALUES))
def test_voc_class_maps_alone_give_a_region_per_class(tmp_path: Path, classes) -> None:
    root = voc_tree(tmp_path / str(np.random.default_rng().integers(1 << 40)), classes, None, mode="L")
    (root / "VOC2012/SegmentationObject").rmdir()
    shard = ingest_shard(root, "00", VOC_WORDS, layout="voc", settings=ALL)
    balanced(shard)
    got = rebuilt(shard, 2008000001, "voc", lambda r: r["category_id"])
    known = classes <= 20
    assert np.array_equal(np.where(known, classes.astype(np.int64), -1), got)
    reasons = shard.rejects.column("reason").to_pylist()
    assert sorted(r for r in reasons if "outside VOC's table" in r) == sorted(
        f"class index {v} is outside VOC's table (0-20, 255 void)"
        for v in set(np.unique(classes).tolist()) - set(range(21)) - {255}
    )


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda f: Image.new("P", (W + 1, H)).save(f / "SegmentationClass/2008_000001.png"),
            "is 17x12, its image 16x12",
        ),
        (lambda f: Image.new("RGB", (W, H)).save(f / "SegmentationClass/2008_000001.png"), "in mode RGB"),
        (lambda f: (f / "SegmentationClass/2008_000001.png").write_bytes(b"\x89PNG\r\n"), "cannot be decoded"),
        (lambda f: (f / "JPEGImages/2008_000001.jpg").unlink(), "its label map has no image"),
        (
            lambda f: (
                (f / "JPEGImages/x.jpg").write_bytes(b"") or Image.new("P", (W, H)).save(f / "SegmentationClass/x.png")
            ),
            "not named YYYY_NNNNNN",
        ),
    ],
    ids=["size", "mode", "truncated", "no-image", "name"],
)
def test_a_broken_voc_file_is_a_reject_naming_it(tmp_path: Path, change, reason: str) -> None:
    root = voc_tree(tmp_path, np.zeros((H, W), np.uint8), np.zeros((H, W), np.uint8))
    change(root / "VOC2012")
    shard = ingest_shard(root, "00", VOC_WORDS, layout="voc", settings=ALL)
    balanced(shard)
    assert any(reason in r for r in shard.rejects.column("reason").to_pylist()), shard.rejects.to_pylist()


def test_voc_flags_come_from_the_xml_object_of_the_same_index(tmp_path: Path) -> None:
    list(voc_synth.write_tree(tmp_path, 4, seed=2, size=(60, 40)))
    shard = ingest_shard(tmp_path, "00", VOC_WORDS, layout="voc", settings=ALL)
    balanced(shard)
    folder = tmp_path / "VOCdevkit/VOC2012"
    for row in shard.regions.to_pylist():
        if row["annotation_id"] is None:
            assert row["label"] == "background" and row["difficult"] is None
            continue
        paths = dict(zip(shard.images["image_id"].to_pylist(), shard.images["path"].to_pylist(), strict=True))
        name = Path(paths[row["image_id"]]).stem
        xml_name, flags = voc.flags_of(folder / f"Annotations/{name}.xml")[row["annotation_id"] - 1]
        assert xml_name == row["label"] and {f: row[f] for f in voc.FLAGS} == flags


@PROPERTY
@given(keep=st.floats(0, 0.95), garbage=st.binary(max_size=40))
def test_an_unreadable_annotations_xml_leaves_the_flags_unknown_and_is_said(
    tmp_path: Path, keep: float, garbage: bytes
) -> None:
    """An XML cut short or overwritten: the image and its regions are kept (the XML holds only
    flags), their flags null, and the quirk counted; the readable XMLs' flags are unchanged."""
    root = tmp_path / str(np.random.default_rng().integers(1 << 40))
    list(voc_synth.write_tree(root, 4, seed=2, size=(60, 40)))
    folder = root / "VOCdevkit/VOC2012"
    xml = sorted((folder / "Annotations").glob("*.xml"))[0]
    text = xml.read_bytes()
    xml.write_bytes(text[: int(len(text) * keep)] + garbage)
    broken = voc.flags_of(xml) is None
    shard = ingest_shard(root, "00", VOC_WORDS, layout="voc", settings=ALL)
    balanced(shard)
    assert shard.report["quirks"].get("annotation_xml_unreadable", 0) == int(broken)
    if broken:
        names = dict(zip(shard.images["image_id"].to_pylist(), shard.images["path"].to_pylist(), strict=True))
        mine = [r for r in shard.regions.to_pylist() if Path(names[r["image_id"]]).stem == xml.stem]
        assert all(r["difficult"] is None for r in mine)


# --- Cityscapes -------------------------------------------------------------------------------------------

CS_VALUES = st.sampled_from([0, 1, 7, 23, 24, 26, 34, 99, 7001, 24001, 26000, 26001, 26002, 34001, 65535])


def cs_tree(root: Path, fine: np.ndarray, coarse: np.ndarray | None) -> Path:
    for kind, values in (("gtFine", fine), ("gtCoarse", coarse)):
        if values is not None:
            (root / kind / "val/lindau").mkdir(parents=True, exist_ok=True)
            Image.fromarray(values.astype(np.uint16)).save(
                root / kind / f"val/lindau/lindau_000000_000019_{kind}_instanceIds.png"
            )
    (root / "leftImg8bit/val/lindau").mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((H, W, 3), 90, np.uint8)).save(
        root / "leftImg8bit/val/lindau/lindau_000000_000019_leftImg8bit.png"
    )
    return root


CS_WORDS = {safe_label(n): i for i, n, *_ in cityscapes.LABELS}


def cs_expected(value: int) -> bool:
    class_id = value // 1000 if value >= 1000 else value
    return value > 0 and class_id < 34 and (value < 1000 or cityscapes.LABELS[class_id][4])


@PROPERTY
@given(fine=arrays(np.uint16, (H, W), elements=CS_VALUES), coarse=st.none() | arrays(np.uint16, (H, W), elements=CS_VALUES))  # fmt: skip
def test_cityscapes_16_bit_instance_ids_read_exactly(tmp_path: Path, fine, coarse) -> None:
    root = cs_tree(tmp_path / str(np.random.default_rng().integers(1 << 40)), fine, coarse)
    shard = ingest_shard(root, "00", CS_WORDS, layout="cityscapes", settings=ALL)
    balanced(shard)
    image_id = shard.images["image_id"][0].as_py()
    assert shard.images["split"][0].as_py() == "val"
    for who, values in (("fine", fine), ("coarse", coarse)):
        if values is None:
            assert who not in shard.coverage["annotator"].to_pylist()
            continue
        got = rebuilt(
            shard, image_id, who, lambda r: r["annotation_id"] if r["annotation_id"] is not None else r["category_id"]
        )
        kept = np.vectorize(cs_expected)(values)
        assert np.array_equal(np.where(kept, values.astype(np.int64), -1), got)
        for row in (r for r in shard.regions.to_pylist() if r["annotator"] == who):
            has_instances = cityscapes.LABELS[row["category_id"]][4]
            assert row["iscrowd"] == (has_instances and row["annotation_id"] is None)


# --- ADE20K -----------------------------------------------------------------------------------------------


@PROPERTY
@given(values=arrays(np.uint8, (H, W), elements=st.sampled_from([0, 1, 2, 12, 13, 200])))
def test_ade20k_classes_are_regions_and_other_is_ignored(tmp_path: Path, values) -> None:
    root = tmp_path / str(np.random.default_rng().integers(1 << 40))
    list(ade_synth.write_tree(root, 0))
    folder = root / "ADEChallengeData2016"
    for kind in ("images", "annotations"):
        (folder / kind / "validation").mkdir(parents=True)
    Image.fromarray(np.full((H, W, 3), 90, np.uint8)).save(folder / "images/validation/ADE_val_00000001.jpg")
    Image.fromarray(values, mode="L").save(folder / "annotations/validation/ADE_val_00000001.png")
    known = ade20k.table(root)
    words = {label: i for i, (_, label) in known.items()}
    shard = ingest_shard(root, "00", words, layout="ade20k", settings=ALL)
    balanced(shard)
    got = rebuilt(shard, shard.images["image_id"][0].as_py(), "ade20k", lambda r: r["category_id"])
    assert np.array_equal(np.where((values > 0) & (values <= 12), values.astype(np.int64), -1), got)
    assert {r["annotation_id"] for r in shard.regions.to_pylist()} <= {None}  # no instances in this format


@PROPERTY
@given(same_pixels=st.booleans())
def test_ade20k_an_image_in_two_splits_is_one_image_and_a_rejected_copy(tmp_path: Path, same_pixels: bool) -> None:
    """The same image name in training and validation: the first (training) is the image, the
    other a reject naming it, whether the files are the same bytes or not; nothing is lost."""
    root = tmp_path / str(np.random.default_rng().integers(1 << 40))
    list(ade_synth.write_tree(root, 0))
    folder = root / "ADEChallengeData2016"
    for split in ("training", "validation"):
        for kind in ("images", "annotations"):
            (folder / kind / split).mkdir(parents=True, exist_ok=True)
        shade = 90 if same_pixels or split == "training" else 120
        Image.fromarray(np.full((H, W, 3), shade, np.uint8)).save(folder / f"images/{split}/ADE_x_00000001.jpg")
        Image.fromarray(np.ones((H, W), np.uint8), mode="L").save(folder / f"annotations/{split}/ADE_x_00000001.png")
    known = ade20k.table(root)
    shard = ingest_shard(root, "00", {label: i for i, (_, label) in known.items()}, layout="ade20k", settings=ALL)
    balanced(shard)
    assert shard.images.num_rows == 1 and shard.images["split"][0].as_py() == "training"
    [reject] = shard.rejects.to_pylist()
    assert reject["key"] == "validation/ADE_x_00000001" and "training/ADE_x_00000001" in reject["reason"]


def test_ade20k_without_its_class_table_says_where_it_goes(tmp_path: Path) -> None:
    list(ade_synth.write_tree(tmp_path, 2, size=(20, 10)))
    (tmp_path / "ADEChallengeData2016/objectInfo150.txt").unlink()
    layout = layouts.detect(tmp_path)
    with pytest.raises(
        layouts.IngestError, match=r"but no objectInfo150\.txt or objectInfo150\.csv; if it is ADEChallengeData2016"
    ):
        layout.check(tmp_path)


@pytest.mark.parametrize(
    ("layout", "make"),
    [("voc", voc_synth.write_tree), ("ade20k", ade_synth.write_tree), ("ade20k-full", ade_full_synth.write_tree)],
)
def test_grayscale_photos_among_colour_ones_are_kept_and_counted(tmp_path: Path, layout: str, make) -> None:
    """The generated trees ship a grayscale JPEG every fourth image, as VOC and ADE20K do: each is
    accepted with its regions, and counted (``grayscale_images``)."""
    list(make(tmp_path / "raw", 8, 0, (48, 32)))
    photos = [p for p in (tmp_path / "raw").rglob("*.jpg")]
    gray = sum(Image.open(p).mode == "L" for p in photos)
    assert 0 < gray < len(photos)
    found = layouts.get(layout)
    (tmp_path / "vocabulary").mkdir()
    words = found.write_vocabulary(tmp_path / "raw", tmp_path / "vocabulary").ids
    shard = ingest_shard(tmp_path / "raw", "00", words, layout=found, settings=ALL)
    balanced(shard)
    assert shard.images.num_rows == len(photos) and shard.report["quirks"]["grayscale_images"] == gray
    assert set(shard.images["mode"].to_pylist()) == {"RGB", "L"}


@pytest.mark.parametrize("make", [voc_synth.write_tree, cs_synth.write_tree, ade_synth.write_tree], ids=["voc", "cityscapes", "ade20k"])  # fmt: skip
def test_each_generated_tree_is_detected_as_its_layout(tmp_path: Path, make) -> None:
    list(make(tmp_path, 2, 0, (32, 24)))
    assert layouts.detect(tmp_path).name == make.__module__.rsplit(".", 1)[1]


# --- ADE20K, the full release -----------------------------------------------------------------------------

ADE_CLASSES = st.sampled_from([0, 0, 7, 300, 2978, 3001])  # 3001 no JSON names: a reject


@PROPERTY
@given(
    classes=arrays(np.int64, (H, W), elements=ADE_CLASSES),
    instances=arrays(np.int64, (H, W), elements=st.integers(0, 3)),
    parts=st.booleans(),
)
def test_ade20k_full_masks_decode_exactly_with_parts_in_their_objects(
    tmp_path: Path, classes, instances, parts
) -> None:
    root = tmp_path / str(np.random.default_rng().integers(1 << 40))
    folder = root / "images/ADE/validation/street"
    folder.mkdir(parents=True)
    Image.fromarray(np.full((H, W, 3), 90, np.uint8)).save(folder / "ADE_val_00000001.jpg")
    Image.fromarray(ade_full_synth.encode(classes, instances)).save(folder / "ADE_val_00000001_seg.png")
    named = [
        {"id": 1, "name": n, "name_ndx": i} for i, n in ((7, "road, route"), (300, "car"), (2978, "wall"), (5, "wheel"))
    ]
    (folder / "ADE_val_00000001.json").write_text(json.dumps({"annotation": {"object": named}}))
    part = np.where((classes == 300) & (instances == 1), 5, 0)  # a wheel on car 1
    if parts:
        Image.fromarray(ade_full_synth.encode(part, np.where(part > 0, 1, 0))).save(
            folder / "ADE_val_00000001_parts_1.png"
        )
    layout = layouts.detect(root)
    assert layout.name == "ade20k-full"
    words = layout.write_vocabulary(root, tmp_path).ids
    shard = ingest_shard(root, "00", words, layout=layout, settings=ALL)
    balanced(shard)
    rows = shard.regions.to_pylist()
    objects = [r for r in rows if r["part_level"] == 0]
    painted = np.full((H, W), -1, np.int64)
    for r in objects:
        painted[geometry.from_rle(r["mask"])] = r["category_id"] * 256 + r["annotation_id"]
    assert np.array_equal(painted, np.where((classes > 0) & (classes != 3001), classes * 256 + instances, -1))
    wheels = [r for r in rows if r["part_level"] == 1]
    assert len(wheels) == int(parts and part.any())
    for wheel in wheels:
        [car] = [r for r in objects if r["region_id"] == wheel["parent_region_id"]]
        assert (car["label"], car["annotation_id"], wheel["label"]) == ("car", 1, "wheel")
    assert shard.rejects.num_rows == len({(c, i) for c, i in zip(classes.ravel(), instances.ravel(), strict=True) if c == 3001})  # fmt: skip


@pytest.mark.parametrize("layout", ["cityscapes", "ade20k"])
def test_a_map_without_its_image_and_an_image_without_its_map_are_rejects(tmp_path: Path, layout: str) -> None:
    make = {"cityscapes": cs_synth.write_tree, "ade20k": ade_synth.write_tree}[layout]
    list(make(tmp_path, 3, 0, (32, 16)))
    images = sorted(p for p in tmp_path.rglob("*") if p.suffix in (".png", ".jpg") and ("leftImg8bit" in p.name or "/images/" in p.as_posix()))  # fmt: skip
    maps = sorted(p for p in tmp_path.rglob("*") if "instanceIds" in p.name or "/annotations/" in p.as_posix())
    images[0].unlink()  # its map stays
    for path in maps:  # the last image's maps go
        if path.name.startswith(images[-1].name.removesuffix("_leftImg8bit.png").removesuffix(".jpg")):
            path.unlink()
    found = layouts.get(layout)
    words = found.write_vocabulary(tmp_path, tmp_path).ids
    shard = ingest_shard(tmp_path, "00", words, layout=found, settings=ALL)
    balanced(shard)
    reasons = sorted(shard.rejects.column("reason").to_pylist())
    assert reasons == ["a label map without its image", "an image without a label map"]
    assert shard.images.num_rows == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.sampled_from(["cityscapes", "ade20k", "ade20k-full"]),
    stem=st.binary(min_size=1, max_size=6).filter(
        lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
    ),
)
def test_any_file_name_is_an_image_or_a_reject_never_a_traceback(tmp_path: Path, layout: str, stem: bytes) -> None:
    """Names from the file system in any bytes (not UTF-8 included): the image is accepted when
    its name is UTF-8 text, else rejected with its regions, and the ledger balances."""
    import os
    import shutil

    root = tmp_path / str(np.random.default_rng().integers(1 << 40))
    make = {"cityscapes": cs_synth.write_tree, "ade20k": ade_synth.write_tree, "ade20k-full": ade_full_synth.write_tree}
    list(make[layout](root, 1, 0, (64, 32)))
    name = os.fsdecode(stem)
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "objectInfo" not in p.name):
        old = {"cityscapes": "aachen_000000_000000", "ade20k": "ADE_train_00000001", "ade20k-full": "ADE_train_00000001"}[layout]  # fmt: skip
        shutil.move(path, path.with_name(path.name.replace(old, f"{name}_{old}" if layout == "cityscapes" else name)))
    found = layouts.get(layout)
    words = found.write_vocabulary(root, tmp_path).ids
    shard = ingest_shard(root, "00", words, layout=found, settings=ALL)
    balanced(shard)
    utf8 = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace") == name
    assert shard.images.num_rows == int(utf8)
    assert all(r["reason"] == "its file name is not UTF-8 text; rename the file (a release names files in UTF-8)" for r in shard.rejects.to_pylist() if r["item"] == "image")  # fmt: skip


@PROPERTY
@given(damage=st.sampled_from(["missing", "not json", "empty file", "no object list", "no object", "fine"]))
def test_ade20k_full_an_image_whose_json_cannot_stand_is_a_reject(tmp_path: Path, damage: str) -> None:
    """The full release's per-image JSON (its objects' names): missing, broken, empty, without
    an object list, or listing nothing beside a mask of objects — the image is a reject naming
    the JSON (its regions were accepted before); a sound one changes nothing."""
    root = tmp_path / str(np.random.default_rng().integers(1 << 40))
    folder = root / "images/ADE/validation/street"
    folder.mkdir(parents=True)
    Image.fromarray(np.full((H, W, 3), 90, np.uint8)).save(folder / "ADE_val_00000001.jpg")
    classes = np.full((H, W), 7)
    Image.fromarray(ade_full_synth.encode(classes, np.ones((H, W), np.int64))).save(folder / "ADE_val_00000001_seg.png")
    other = root / "images/ADE/validation/park"  # another image names class 7, so its label exists
    other.mkdir(parents=True)
    (other / "ADE_val_00000002.json").write_text(
        json.dumps({"annotation": {"object": [{"name": "road", "name_ndx": 7}]}})
    )
    text = {
        "not json": "{not json", "empty file": "", "no object list": json.dumps({"annotation": {}}),
        "no object": json.dumps({"annotation": {"object": []}}),
        "fine": json.dumps({"annotation": {"object": [{"name": "road", "name_ndx": 7}]}}),
    }.get(damage)  # fmt: skip
    if text is not None:
        (folder / "ADE_val_00000001.json").write_text(text)
    layout = layouts.get("ade20k-full")
    (tmp_path / "vocabulary").mkdir(exist_ok=True)
    words = layout.write_vocabulary(root, tmp_path / "vocabulary").ids
    shard = ingest_shard(root, "00", words, layout=layout, settings=ALL)
    balanced(shard)
    if damage == "fine":
        assert shard.images.num_rows == 1 and shard.rejects.num_rows == 0
        return
    [reject] = shard.rejects.to_pylist()
    assert reject["source"].endswith("ADE_val_00000001.json") and reject["reason"].startswith("ADE_val_00000001.json")
    assert shard.images.num_rows == 0 and shard.regions.num_rows == 0


@PROPERTY
@given(
    damage=st.sampled_from(["another class", "wrong size", "not a png", "absent", "as written"]),
    pixels=st.integers(1, 50),
)
def test_cityscapes_label_ids_are_read_against_the_instance_ids(tmp_path: Path, damage: str, pixels: int) -> None:
    """``*_gtFine_labelIds.png`` must give each pixel the class its instance id does: one that
    differs, is of another size or is no PNG makes its image a reject naming the label map; an
    absent one is not needed; as written, nothing changes."""
    root = tmp_path / str(np.random.default_rng().integers(1 << 40))
    list(cs_synth.write_tree(root, 1, 0, (32, 16)))
    [labels] = sorted(root.glob("gtFine/*/*/*_gtFine_labelIds.png"))
    values = np.asarray(Image.open(labels)).copy()
    if damage == "another class":
        flat = values.reshape(-1)
        flat[:pixels] = (flat[:pixels] + 1) % 34
        Image.fromarray(values).save(labels)
    elif damage == "wrong size":
        Image.fromarray(values[:-1]).save(labels)
    elif damage == "not a png":
        labels.write_bytes(b"not a png")
    elif damage == "absent":
        labels.unlink()
    words = cityscapes.LAYOUT.write_vocabulary(root, tmp_path).ids
    shard = ingest_shard(root, "00", words, layout="cityscapes", settings=ALL)
    balanced(shard)
    if damage in ("absent", "as written"):
        assert shard.images.num_rows == 1 and shard.rejects.num_rows == 0
        return
    [reject] = shard.rejects.to_pylist()
    assert labels.name in reject["reason"] and shard.images.num_rows == 0, reject
    if damage == "another class":
        assert reject["source"] == labels.relative_to(root).as_posix()


class _Regions:
    """A release as an export reads it: its regions' annotators only."""

    def __init__(self, annotators: list[str]) -> None:
        import pyarrow as pa

        self.folder = Path("release")
        self.table = pa.table({"annotator": annotators})

    def arrow(self, name: str, columns: list[str] | None = None) -> Any:
        return self.table

    def image_sources(self, ids: list[int], root: str | Path | None = None) -> dict[int, Path | bytes]:
        return {}


@settings(max_examples=40, deadline=None)
@given(
    present=st.lists(st.sampled_from(["fine", "coarse", "annotator1", "human", "consensus", "bob"]), max_size=6),
    asked=st.one_of(st.none(), st.sampled_from(["fine", "coarse", "annotator1", "consensus", "x"])),
)
def test_export_as_cityscapes_says_which_fault_is_the_user_s(present: list[str], asked: str | None) -> None:
    """Any release's annotators and any --annotator: a release with no Cityscapes annotator is
    said to be another collection's (whatever --annotator says), one whose --annotator is not
    fine or coarse names that option; each in one line."""
    from regionbench.core.errors import InputError

    ours = set(present) & set(cityscapes.ANNOTATORS)
    if ours and asked in (None, *cityscapes.ANNOTATORS):
        return  # an export that runs: written by the export tests
    with pytest.raises(InputError) as raised:
        cityscapes.export_release(_Regions(present), Path("/nonexistent"), None, asked)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "\n" not in message
    if not ours:
        assert (
            message.startswith("export --format cityscapes writes a Cityscapes release")
            and "--annotator" not in message
        )
    else:
        assert message.startswith(f"--annotator {asked}: Cityscapes' maps are fine or coarse")
