"""Ingest of COCO instances files (several annotators): exact masks, every bad item rejected."""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import shapely
import yaml
from conftest import WHOLE
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image
from pycocotools import mask as coco_mask

from regionbench.core import geometry
from regionbench.core.hierarchy import Hierarchy
from regionbench.io import layouts
from regionbench.io.shards import (
    DEFAULT_SHARDS,
    MAX_SHARD_SIZE,
    MIN_SHARD_SIZE,
    IngestError,
    Shard,
    default_shard_size,
    image_id_of,
)
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.synthetic.coco import uncompressed_rle

H, W = 30, 40
WORDS = {"sky": 2, "man": 3, "grass": 5}


def rect(x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    mask = np.zeros((H, W), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


def compressed(mask: np.ndarray) -> dict:
    return {"size": [H, W], "counts": geometry.encode_rle(mask)}


def uncompressed(mask: np.ndarray) -> dict:
    return uncompressed_rle(mask)


RING = rect(5, 5, 25, 25) & ~rect(10, 10, 20, 20)  # a region with a hole
HUGE = st.sampled_from([10**400, -(10**400), 2**64, -(2**63) - 1])  # JSON integers beyond 64 bits
TWO_PARTS = rect(0, 0, 5, 5) | rect(30, 20, 38, 28)  # a multi-part region
SQUARE = [[2.0, 2.0, 12.0, 2.0, 12.0, 12.0, 2.0, 12.0]]
GROUP = rect(0, 15, 40, 30)
MEMBER = rect(10, 18, 16, 29)  # overlaps GROUP


def write_tree(root: Path, alice: dict, bob: dict) -> Path:
    (root / "images").mkdir(parents=True)
    (root / "annotations").mkdir()
    for k, name in enumerate(("25.jpg", "7.jpg", "beach.png")):  # three photographs: three colours
        Image.new("RGB", (W, H), (100 + 40 * k, 150, 200)).save(root / "images" / name)
    for annotator, data in (("alice", alice), ("bob", bob)):
        (root / "annotations" / f"{annotator}.json").write_text(json.dumps(data))
    return root


CATEGORIES = [{"id": 1, "name": "sky"}, {"id": 2, "name": "man"}, {"id": 3, "name": "grass"}]


def alice_file() -> dict:
    return {
        "images": [
            {"id": 1, "file_name": "25.jpg", "width": W, "height": H},
            {"id": 2, "file_name": "beach.png", "width": W, "height": H},
        ],
        "categories": copy.deepcopy(CATEGORIES),
        "annotations": [
            {"id": 10, "image_id": 1, "category_id": 1, "segmentation": SQUARE},
            {"id": 11, "image_id": 1, "category_id": 3, "segmentation": uncompressed(RING)},
            {"id": 12, "image_id": 2, "category_id": 1, "segmentation": compressed(TWO_PARTS)},
            {"id": 13, "image_id": 2, "category_id": 3, "segmentation": compressed(GROUP)},
            {"id": 14, "image_id": 2, "category_id": 2, "segmentation": compressed(MEMBER)},
        ],
    }


def bob_file() -> dict:
    # Other COCO ids for the same files: images match by file name.
    return {
        "images": [
            {"id": 7, "file_name": "beach.png", "width": W, "height": H},
            {"id": 9, "file_name": "7.jpg", "width": W, "height": H},
        ],
        "categories": copy.deepcopy(CATEGORIES),
        "annotations": [
            {"id": 1, "image_id": 7, "category_id": 1, "segmentation": compressed(TWO_PARTS)},
            {"id": 2, "image_id": 9, "category_id": 2, "segmentation": compressed(MEMBER)},
        ],
    }


def reconciles(shard: Shard) -> None:
    for counts in [shard.report["images"], *shard.report["annotators"].values()]:
        assert counts["seen"] == counts["accepted"] + counts["rejected"], shard.report
    assert shard.report["regions"]["accepted"] == shard.regions.num_rows
    assert shard.report["images"]["accepted"] == shard.images.num_rows


def test_layout_is_detected(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "coco", alice_file(), bob_file())
    assert layouts.detect(root).name == "coco"
    (tmp_path / "saiapr").mkdir()
    (tmp_path / "saiapr" / "wlist.txt").write_text("1\tn.a.\n")
    assert layouts.detect(tmp_path / "saiapr").name == "saiapr"
    with pytest.raises(IngestError, match=r"neither a ade20k tree .* nor a coco tree .* nor a voc tree"):
        layouts.detect(tmp_path / "nothing")


def test_image_ids_come_from_file_names() -> None:
    assert image_id_of("25.jpg") == 25 and image_id_of("0025.png") == 25
    assert image_id_of("beach.png") == image_id_of("beach.png") != image_id_of("beach.jpg")
    assert 0 <= image_id_of("beach.png") < 2**63


def test_every_kind_of_segmentation_decodes_exactly(tmp_path: Path) -> None:
    shard = ingest_shard(
        write_tree(tmp_path / "coco", alice_file(), bob_file()), "00", WORDS, settings=IngestSettings(shard_size=WHOLE)
    )
    reconciles(shard)
    assert shard.rejects.num_rows == 0
    assert shard.report["annotators"] == {
        "alice": {"seen": 5, "accepted": 5, "rejected": 0},
        "bob": {"seen": 2, "accepted": 2, "rejected": 0},
    }
    masks = {
        (r["image_id"], r["annotator"], r["region_id"]): geometry.from_rle(r["mask"]) for r in shard.regions.to_pylist()
    }
    beach = image_id_of("beach.png")
    polygon = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(SQUARE, H, W))).astype(bool)
    assert (masks[(25, "alice", 1)] == polygon).all()
    assert (masks[(25, "alice", 2)] == RING).all()  # the hole survives
    assert (masks[(beach, "alice", 1)] == TWO_PARTS).all() and (masks[(beach, "bob", 1)] == TWO_PARTS).all()
    assert (masks[(beach, "alice", 2)] & masks[(beach, "alice", 3)]).any()  # overlap kept
    assert (masks[(7, "bob", 1)] == MEMBER).all()
    for region in shard.regions.to_pylist():
        shape = geometry.polygon_to_mask(shapely.from_wkb(region["geometry"]), H, W)
        assert (shape == masks[(region["image_id"], region["annotator"], region["region_id"])]).all()
    assert sorted(shard.images.column("image_id").to_pylist()) == sorted([7, 25, beach])


def _damage(data: dict, change: str) -> dict:
    data = copy.deepcopy(data)
    ann = data["annotations"][0]
    if change == "unknown category":
        ann["category_id"] = 99
    elif change == "unmapped category":
        data["categories"][0]["name"] = "cloud-cirrus"
    elif change == "outside":
        ann["segmentation"] = [[-3.0, 2.0, 12.0, 2.0, 12.0, 12.0]]
    elif change == "self-intersecting":
        ann["segmentation"] = [[2.0, 2.0, 12.0, 12.0, 12.0, 2.0, 2.0, 12.0]]
    elif change == "degenerate":
        ann["segmentation"] = [[2.0, 2.0, 12.0, 2.0]]
    elif change == "unknown image":
        ann["image_id"] = 404
    elif change == "RLE size":
        data["annotations"][2]["segmentation"]["size"] = [H + 1, W]
    elif change == "duplicate id":
        data["annotations"][1]["id"] = ann["id"]
    elif change == "empty":
        data["annotations"][2]["segmentation"] = compressed(np.zeros((H, W), dtype=bool))
    elif change == "not a segmentation":
        ann["segmentation"] = "square"
    elif change == "image id twice":
        data["images"][1]["id"] = data["images"][0]["id"]
    elif change == "category id twice":
        data["categories"][1]["id"] = data["categories"][0]["id"]
    elif change == "file_name not a string":
        data["images"][1]["file_name"] = 25
    elif change == "image entry not an object":
        data["images"].append("25.jpg")
    elif change == "annotation not an object":
        data["annotations"].append([1, 2, 3])
    elif change == "RLE counts short":
        data["annotations"][2]["segmentation"]["counts"] = data["annotations"][2]["segmentation"]["counts"][:-2]
    elif change == "RLE counts garbage":
        data["annotations"][2]["segmentation"]["counts"] = "\x7f\x7f"
    elif change == "RLE size not a pair":
        data["annotations"][2]["segmentation"]["size"] = H
    elif change == "image id a list":
        data["annotations"][0]["image_id"] = [1]
    elif change == "category id a list":
        data["annotations"][0]["category_id"] = [1]
    elif change == "annotation id a list":
        data["annotations"][0]["id"] = [10]
    return data


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("unknown category", "unknown category id 99"),
        ("unmapped category", "'cloud-cirrus' is not a vocabulary label; map it under category_map"),
        ("outside", "polygon outside the image"),
        ("degenerate", "degenerate polygon"),
        ("unknown image", "annotation for unknown image id 404"),
        ("RLE size", "RLE size [31, 40] differs from the image's [30, 40]"),
        ("duplicate id", "annotation id missing or used twice"),
        ("empty", "empty mask"),
        ("not a segmentation", "neither polygons nor an RLE"),
        ("image id twice", "image id 1 is listed for 25.jpg and beach.png; fix the entry"),
        ("category id twice", "category id 1 names several categories (man, sky); give each its own id"),
        ("file_name not a string", "file_name 25 is not a file name; fix the entry"),
        ("image entry not an object", "an images entry that is not a JSON object; fix the entry"),
        ("annotation not an object", "an annotations entry that is not a JSON object"),
        ("RLE counts short", "compressed RLE counts cover"),
        ("RLE counts garbage", "undecodable RLE"),
        ("RLE size not a pair", f"RLE size {H} differs from the image's"),
        ("image id a list", "annotation for unknown image id [1]"),
        ("category id a list", "category id [1] is not an integer"),
        ("annotation id a list", "annotation id missing or used twice"),
    ],
)
def test_bad_items_are_rejected_with_their_reason(tmp_path: Path, change: str, reason: str) -> None:
    root = write_tree(tmp_path / "coco", _damage(alice_file(), change), bob_file())
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    reasons = shard.rejects.column("reason").to_pylist()
    assert any(reason in r for r in reasons), reasons
    assert set(shard.rejects.column("source").to_pylist()) == {"annotations/alice.json"}
    assert shard.report["annotators"]["bob"] == {"seen": 2, "accepted": 2, "rejected": 0}
    entries = shard.report["image_entries"]["alice"]
    assert entries["seen"] == entries["accepted"] + entries["rejected"]
    with pytest.raises(IngestError) as failed:
        ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE, strict=True))
    assert reason in str(failed.value) and len(str(failed.value).splitlines()) == shard.rejects.num_rows


BOW_TIE = [[2.0, 2.0, 12.0, 12.0, 12.0, 2.0, 2.0, 12.0]]


def test_a_self_intersecting_polygon_is_taken_as_pycocotools_draws_it(tmp_path: Path) -> None:
    data = alice_file()
    data["annotations"][0]["segmentation"] = BOW_TIE
    shard = ingest_shard(
        write_tree(tmp_path / "coco", data, bob_file()), "00", WORDS, settings=IngestSettings(shard_size=WHOLE)
    )
    reconciles(shard)
    assert shard.rejects.num_rows == 0 and shard.report["quirks"] == {"self_intersecting_polygons": 1}
    drawn = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(BOW_TIE, H, W))).astype(bool)
    region = next(
        r for r in shard.regions.to_pylist() if (r["image_id"], r["annotator"], r["region_id"]) == (25, "alice", 1)
    )
    assert (geometry.from_rle(region["mask"]) == drawn).all()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, W), st.integers(0, H)), min_size=3, max_size=8))
def test_any_polygon_inside_the_image_is_drawn_as_pycocotools_draws_it(tmp_path_factory, points) -> None:
    """Whatever its shape (self-intersecting included), a polygon inside the image with three
    points off one line becomes the mask pycocotools draws, or an "empty mask" reject."""
    xy = np.array(points, dtype=float)
    if len(np.unique(xy, axis=0)) < 3 or np.linalg.matrix_rank(xy - xy[0]) < 2:
        return
    polygon = [[float(v) for p in points for v in p]]
    data = alice_file()
    data["annotations"][0]["segmentation"] = polygon
    shard = ingest_shard(
        write_tree(tmp_path_factory.mktemp("coco"), data, bob_file()),
        "00",
        WORDS,
        settings=IngestSettings(shard_size=WHOLE),
    )
    reconciles(shard)
    drawn = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(polygon, H, W))).astype(bool)
    found = [r for r in shard.regions.to_pylist() if (r["image_id"], r["annotator"]) == (25, "alice")]
    if drawn.any():
        assert (geometry.from_rle(found[0]["mask"]) == drawn).all() and shard.rejects.num_rows == 0
    else:
        assert shard.rejects.column("reason").to_pylist() == ["empty mask"]


def _near_a_line(draw: st.DrawFn) -> np.ndarray:
    """Points on a line through the image, each pushed off it by at most ``off`` (zero, the
    rounding of a float, or a visible amount), some repeated, at any scale."""
    n = draw(st.integers(2, 9))
    origin = np.array([draw(st.floats(0, 1000)), draw(st.floats(0, 1000))])
    direction = np.array([draw(st.floats(-1, 1)), draw(st.floats(-1, 1))])
    along = np.array(draw(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n)))
    off = draw(st.sampled_from([0.0, 1e-300, 1e-12, 1e-9, 1e-6, 1e-3, 1.0]))
    normal = np.array([-direction[1], direction[0]])
    shifts = np.array(draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n))) * off
    xy = origin + along[:, None] * direction + shifts[:, None] * normal
    return xy[draw(st.lists(st.integers(0, n - 1), min_size=3, max_size=12))]


@settings(max_examples=400, deadline=None)
@given(st.composite(_near_a_line)())
def test_the_plane_fast_path_gives_matrix_rank_s_answer(xy: np.ndarray) -> None:
    """Whenever the fast check says the points span a plane, the exact check (three distinct
    points, rank two) agrees: a polygon is refused as flat exactly when it was before."""
    from regionbench.io.coco.ingest import _spans_a_plane

    if _spans_a_plane(xy):
        assert len(np.unique(xy, axis=0)) >= 3 and np.linalg.matrix_rank(xy - xy[0]) == 2


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 7), st.integers() | HUGE | st.floats() | st.booleans() | st.text(max_size=2) | st.none()
        ),
        max_size=3,
    ),
    st.integers() | HUGE | st.floats() | st.booleans() | st.none(),
)
def test_any_number_in_a_polygon_or_an_area_gives_a_mask_or_a_reason(values: list, area: object) -> None:
    """Any JSON value at any coordinate of a polygon: a mask or a ValueError (a reject's
    reason), never another exception; any area of an RLE: its number or None."""
    from regionbench.io.coco.ingest import _decode, source_geometry

    part: list = [2.0, 2.0, 12.0, 2.0, 12.0, 12.0, 2.0, 12.0]
    for at, value in values:
        part[at] = value
    try:
        mask = _decode([part], H, W, Counter())
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert mask.shape == (H, W) and mask.any()
    ring = {"segmentation": geometry.rle(RING), "area": area}
    kept, _ = source_geometry(ring, int(RING.sum()), False, Counter())
    assert kept is None or (isinstance(kept, float) and math.isfinite(kept))


def test_missing_image_file_rejects_the_image_and_its_regions(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "coco", alice_file(), bob_file())
    (root / "images" / "beach.png").unlink()
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    reasons = shard.rejects.column("reason").to_pylist()
    lost = "its image was rejected (images/beach.png: an annotator lists this image but its file is missing)"
    assert reasons.count(lost) == 4  # alice 3, bob 1: each with the image's reason
    assert any("its file is missing" in r for r in reasons)


def test_category_map_and_shards(tmp_path: Path) -> None:
    data = alice_file()
    data["categories"][1]["name"] = "person"
    root = write_tree(tmp_path / "coco", data, bob_file())
    mapped = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE, category_map={"person": "man"}))
    assert "man" in mapped.regions.column("label").to_pylist() and mapped.rejects.num_rows == 0
    unmapped = (
        ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE)).rejects.column("reason").to_pylist()
    )
    assert unmapped == ["category 'person' is not a vocabulary label; map it under category_map"]
    parts = [
        ingest_shard(root, f"{k:02d}", WORDS, settings=IngestSettings(category_map={"person": "man"}, shard_size=2))
        for k in range(2)
    ]
    assert sum(p.images.num_rows for p in parts) == 3
    assert sum(p.regions.num_rows for p in parts) == mapped.regions.num_rows


def test_not_a_coco_file_is_one_line(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "coco", alice_file(), bob_file())
    (root / "annotations" / "bob.json").write_text("{not json")
    with pytest.raises(IngestError) as failed:
        ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    assert "bob.json: not valid JSON" in str(failed.value) and "\n" not in str(failed.value)


@settings(max_examples=50, deadline=None)
@given(arrays(np.bool_, (H, W)))
def test_any_mask_round_trips_through_both_rle_forms(
    tmp_path_factory: pytest.TempPathFactory, mask: np.ndarray
) -> None:
    if not mask.any():
        return
    data = alice_file()
    data["annotations"] = [
        {"id": 1, "image_id": 1, "category_id": 1, "segmentation": compressed(mask)},
        {"id": 2, "image_id": 1, "category_id": 1, "segmentation": uncompressed(mask)},
    ]
    root = write_tree(tmp_path_factory.mktemp("rle") / "coco", data, bob_file())
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    got = [geometry.from_rle(r["mask"]) for r in shard.regions.to_pylist() if r["annotator"] == "alice"]
    assert len(got) == 2 and all((m == mask).all() for m in got)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200_000))
def test_default_shards_keep_every_core_busy(images: int) -> None:
    """Without ingest.shard_size a collection has as many shards as a machine of up to eight
    cores has cores once each holds at least ``MIN_SHARD_SIZE`` images (a smaller one is fewer
    shards, one below that size: a job's start costs more than its images), a large one runs
    of 1,000."""
    size = default_shard_size(images)
    shards = -(-images // size)
    assert MIN_SHARD_SIZE <= size <= MAX_SHARD_SIZE
    assert shards >= min(images // MIN_SHARD_SIZE, DEFAULT_SHARDS) and shards >= 1
    if images <= MIN_SHARD_SIZE:
        assert shards == 1
    if images >= DEFAULT_SHARDS * MAX_SHARD_SIZE:
        assert size == MAX_SHARD_SIZE


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.sampled_from([0, 1, True, False]), st.integers(-3, 5), st.floats(0, 1), st.text(max_size=2)))
def test_iscrowd_is_kept_or_rejected_with_its_reason(tmp_path_factory, crowd) -> None:
    """Any iscrowd value: 0 or 1 (as a number or a boolean) becomes the column, with the COCO
    annotation and category ids; anything else is a reject naming the value. A crowd region
    never enters the consensus."""
    data = alice_file()
    data["annotations"][1]["iscrowd"] = crowd
    root = write_tree(tmp_path_factory.mktemp("coco"), data, bob_file())
    tree = {"root": "entity", "nodes": [{"name": n, "parent": "entity"} for n in WORDS]}
    (root / "hierarchy.yaml").write_text(yaml.safe_dump(tree))
    hierarchy = Hierarchy.from_yaml(root / "hierarchy.yaml")
    shard = ingest_shard(root, "00", WORDS, hierarchy=hierarchy, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    rows = {(r["image_id"], r["annotator"], r["region_id"]): r for r in shard.regions.to_pylist()}
    kept = not isinstance(crowd, float | str) and crowd in (0, 1)
    ring = next((r for r in rows.values() if r["annotation_id"] == 11 and r["annotator"] == "alice"), None)
    if not kept:
        assert ring is None
        assert shard.rejects.column("reason").to_pylist() == [f"iscrowd is {crowd!r}, not 0 or 1"]
        return
    assert (ring["iscrowd"], ring["category_id"]) == (bool(crowd), 3)
    # Alice alone covers 25.jpg: its consensus is her regions, her crowd ring left out.
    consensus_labels = [r["label"] for r in rows.values() if r["annotator"] == "consensus" and r["image_id"] == 25]
    assert ("grass" in consensus_labels) == (not crowd)
    assert all(r["annotation_id"] is None for r in rows.values() if r["annotator"] == "consensus")


@settings(max_examples=60, deadline=None)
@given(
    # NaN and Infinity are not JSON: a file cannot hold them (the parser's refusal is tested apart).
    area=st.none()
    | st.booleans()
    | st.integers(-(2**62), 2**62)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=2),
    bbox=st.none() | st.lists(st.integers(-5, 5) | st.floats(-5, 5) | st.text(max_size=1), max_size=5),
    crowd=st.sampled_from([0, 1]),
)
def test_every_decodable_region_is_kept_with_the_source_s_area_and_box(tmp_path_factory, area, bbox, crowd) -> None:
    """Whatever a file says of an RLE region's ``area`` and ``bbox``, the region is kept: its
    own box and area measured on the mask, the source's beside them where they are numbers
    (a crowd area that is not its pixel count, as COCO's are, counted as a quirk)."""
    data = alice_file()
    ann = data["annotations"][2]  # TWO_PARTS, an RLE
    ann["iscrowd"] = crowd
    for field, value in (("area", area), ("bbox", bbox)):
        if value is None:
            ann.pop(field, None)
        else:
            ann[field] = value
    root = write_tree(tmp_path_factory.mktemp("coco"), data, bob_file())
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    assert not shard.rejects.num_rows
    row = next(r for r in shard.regions.to_pylist() if r["annotation_id"] == ann["id"] and r["annotator"] == "alice")
    pixels = int(TWO_PARTS.sum())
    assert row["area_px"] == pixels
    number = isinstance(area, int | float) and not isinstance(area, bool) and math.isfinite(float(area))
    assert row["source_area"] == (float(area) if number else None)
    numbers = isinstance(bbox, list) and len(bbox) == 4 and all(isinstance(v, int | float) for v in bbox)
    box = [row[f"source_bbox_{c}"] for c in "xywh"]
    assert box == ([float(v) for v in bbox] if numbers else [None] * 4)
    differs = number and abs(float(area) - pixels) > 0.5
    quirk = "crowd_area_not_its_pixels" if crowd else "rle_area_not_its_pixels"
    assert shard.report["quirks"].get(quirk, 0) == int(differs)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | HUGE | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
FIELDS = [
    ("images", "id"), ("images", "file_name"), ("images", "width"), ("images", None),
    ("annotations", "id"), ("annotations", "image_id"), ("annotations", "category_id"),
    ("annotations", "segmentation"), ("annotations", "iscrowd"), ("annotations", "area"), ("annotations", None),
    ("categories", "id"), ("categories", "name"), ("categories", None),
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FIELDS), st.integers(0, 4), JSON), min_size=1, max_size=3))
def test_any_value_anywhere_is_accepted_or_rejected_never_a_traceback(tmp_path_factory, changes) -> None:
    """Any JSON value in place of any field (or of a whole entry) of a file: ingest ends with
    every item accepted or rejected, in whichever of two shards owns it, or one IngestError line."""
    data = alice_file()
    for (part, field), n, value in changes:
        entries = data[part]
        if field is None:
            entries.append(value)
        elif isinstance(entries[n % len(entries)], dict):
            entries[n % len(entries)][field] = value
    root = write_tree(tmp_path_factory.mktemp("coco"), data, bob_file())
    try:
        shards = [ingest_shard(root, f"{k:02d}", WORDS, settings=IngestSettings(shard_size=2)) for k in (0, 1)]
    except IngestError as exc:
        assert "\n" not in str(exc)
        return
    for shard in shards:
        reconciles(shard)
    alice = [s.report["annotators"]["alice"] for s in shards]
    # Each entry counted once, by the shard that owns it (shard 0 when no image does).
    assert sum(a["seen"] for a in alice) == len(data["annotations"])
    assert sum(s.report["image_entries"]["alice"]["seen"] for s in shards) == len(data["images"])


def test_instance_files_in_any_case_byte_copies_and_clashes(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "coco", alice_file(), bob_file())
    (root / "annotations" / "bob.json").rename(root / "annotations" / "bob.JSON")
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    assert sorted(shard.report["annotators"]) == ["alice", "bob"]  # .JSON is an annotator's file
    (root / "annotations" / "bob.json").write_text(json.dumps(bob_file()) + " ")
    with pytest.raises(IngestError, match=r"name one annotator 'bob'; keep one"):
        ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    (root / "annotations" / "bob.json").unlink()
    (root / "annotations" / "carol.json").write_bytes((root / "annotations" / "alice.json").read_bytes())
    with pytest.raises(IngestError, match=r"carol\.json: a byte copy of alice\.json; an annotator counts once"):
        ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))


@pytest.mark.parametrize(
    ("name", "save", "reason"),
    [
        ("rgba.png", lambda p: Image.new("RGBA", (W, H)).save(p), "PNG in mode RGBA"),
        ("deep.png", lambda p: Image.new("I;16", (W, H)).save(p), "PNG in mode I"),
        ("cmyk.jpg", lambda p: Image.new("CMYK", (W, H)).save(p, "JPEG"), "JPEG in mode CMYK"),
        ("gif.jpg", lambda p: Image.new("P", (W, H)).save(p, "GIF"), "a GIF file named .jpg"),
        ("png.jpg", lambda p: Image.new("RGB", (W, H)).save(p, "PNG"), "a PNG file named .jpg"),
        ("palette.png", lambda p: Image.new("P", (W, H)).save(p), "PNG in mode P"),
        ("sub/in-a-folder.jpg", lambda p: Image.new("RGB", (W, H)).save(p), None),
        ("sub/gray.png", lambda p: Image.new("L", (W, H)).save(p), None),
    ],
)
def test_image_files_follow_one_format_rule(tmp_path: Path, name: str, save, reason: str | None) -> None:
    root = write_tree(tmp_path / "coco", alice_file(), bob_file())
    (root / "images" / name).parent.mkdir(parents=True, exist_ok=True)
    save(root / "images" / name)
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    rejected = {r["key"]: r["reason"] for r in shard.rejects.to_pylist() if r["item"] == "image"}
    if reason is None:  # a file in a subfolder is an image, named by its path below images/
        assert name not in rejected and image_id_of(name) in shard.images.column("image_id").to_pylist()
        assert f"images/{name}" in shard.images.column("path").to_pylist()
    else:
        assert reason in rejected[name], rejected


@pytest.mark.parametrize("name", [["sky"], {"en": "sky"}, 7, None])
def test_a_category_name_that_is_not_text_is_named(tmp_path: Path, name: object) -> None:
    """Ingest rejects the category's annotations with the reason; the derived vocabulary stops
    in one line, never turning ['sky'] into the label sky."""
    from regionbench.io.coco.categories import categories

    data = alice_file()
    data["categories"][0]["name"] = name
    root = write_tree(tmp_path / "coco", data, bob_file())
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    assert "category 1 has no name (or one that is not text); name the category" in shard.rejects["reason"].to_pylist()
    with pytest.raises(IngestError, match="has no letter or digit; rename the category"):
        categories(root)


@settings(max_examples=30, deadline=None)
@given(
    named=st.lists(st.sampled_from([None, 1, 2, 3, "x"]), min_size=4, max_size=4),
    info=st.sampled_from([None, {}, {"description": "Street scenes 2017", "url": "https://example.org/streets"}]),
)
def test_the_source_is_what_the_files_state(tmp_path_factory, named: list, info: dict | None) -> None:
    """Each image's licence from its file's ``licenses`` table (alice's before bob's), and the
    collection's: named when every image entry names one (its name, or "per image" and the
    names), else unstated; its name and home page from ``info``; the ids each file gives its
    images in ``coverage.source_image_id``."""
    from regionbench.pipeline import source

    table = [
        {"id": 1, "name": "CC BY 2.0", "url": "http://creativecommons.org/licenses/by/2.0/"},
        {"id": 2, "name": "PD"},
    ]
    files = [alice_file(), bob_file()]
    entries = [entry for data in files for entry in data["images"]]
    for entry, licence in zip(entries, named, strict=True):
        if licence is not None:
            entry["license"] = licence
    for data in files:
        data["licenses"] = table
        if info is not None:
            data["info"] = info
    root = write_tree(tmp_path_factory.mktemp("coco"), *files)
    found = source.describe("coco", root, {"name": None, "license": None}, generated=False, release_license="CC0-1.0")
    names = {1: "CC BY 2.0", 2: "PD"}
    used = {names.get(licence) for licence in named}
    expected = None if None in used else next(iter(used)) if len(used) == 1 else "per image: " + "; ".join(sorted(used))
    assert found["license"] == expected
    assert found["name"] == (info or {}).get("description") and found["homepage"] == (info or {}).get("url")
    assert source.embeds(found, "embed") == (expected is not None)
    assert source.describe("coco", root, {"license": "CC-BY-4.0"}, False, "CC0-1.0")["license"] == "CC-BY-4.0"

    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    by_name = {Path(r["path"]).name: r for r in shard.images.to_pylist()}
    first = {}  # file name -> the licence the first annotator listing it with one names
    for entry, licence in reversed(list(zip(entries, named, strict=True))):
        if licence in names:
            first[entry["file_name"]] = names[licence]
    for name, row in by_name.items():
        assert row["license"] == first.get(name), name
    given = {(r["image_id"], r["annotator"]): r["source_image_id"] for r in shard.coverage.to_pylist()}
    for annotator, data in zip(("alice", "bob"), files, strict=True):
        for entry in data["images"]:
            assert given[(image_id_of(entry["file_name"]), annotator)] == entry["id"]


@given(
    folder=st.sampled_from(["", "val2017/", "train2017/"]),
    files=st.lists(st.sampled_from(["instances_val2017", "instances_train2017", "alice", "instances_"]), max_size=3),
)
def test_an_image_s_split_is_its_folder_else_the_instances_file_naming_it(folder: str, files: list[str]) -> None:
    from regionbench.io.coco.ingest import split_of

    named = {f.removeprefix("instances_") for f in files if f.startswith("instances_") and f != "instances_"}
    expected = folder.rstrip("/") if folder else (named.pop() if len(named) == 1 else None)
    assert split_of(f"{folder}000000000139.jpg", files) == expected


@settings(max_examples=25, deadline=None)
@given(stem=st.binary(min_size=1, max_size=5).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")))  # fmt: skip
def test_an_image_file_named_in_any_bytes_is_kept_or_rejected(tmp_path_factory, stem: bytes) -> None:
    """An image file whose name is not UTF-8 (caf\\xe9.jpg on disk, café.jpg in the file):
    rejected with one line, never a traceback; a UTF-8 name is the image."""
    import os

    root = tmp_path_factory.mktemp("coco")
    (root / "images").mkdir()
    (root / "annotations").mkdir()
    name = os.fsdecode(stem + b".jpg")
    Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(root / "images" / name, format="JPEG")
    listed = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    doc = {"images": [{"id": 1, "file_name": listed, "width": W, "height": H}], "annotations": [], "categories": []}
    (root / "annotations" / "alice.json").write_text(json.dumps(doc), encoding="utf-8")
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    assert shard.images.num_rows == int(listed == name)


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)) | st.none(), min_size=2, max_size=2))
def test_a_listed_size_that_is_not_the_image_s_is_said_and_the_pixels_rule(tmp_path_factory, sizes) -> None:
    """An images entry whose width and height are not the file's: the image keeps its decoded
    size, its regions are read on it, and each such entry is counted (a quirk), never silent."""
    data = alice_file()
    expected = 0
    for entry, size in zip(data["images"][:2], sizes, strict=True):
        if size is not None:
            entry["width"], entry["height"] = size
            expected += size != (W, H)
    root = write_tree(tmp_path_factory.mktemp("coco"), data, bob_file())
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    assert shard.report["quirks"].get("listed_size_differs_from_the_image", 0) == expected
    sizes_on_disk = {r["path"]: Image.open(root / r["path"]).size for r in shard.images.to_pylist()}
    assert all((r["width"], r["height"]) == sizes_on_disk[r["path"]] for r in shard.images.to_pylist())


def test_an_image_file_no_annotator_lists_is_kept_and_said(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "coco", alice_file(), bob_file())
    Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(root / "images" / "99.jpg")
    shard = ingest_shard(root, "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    reconciles(shard)
    assert 99 in shard.images["image_id"].to_pylist() and 99 not in shard.coverage["image_id"].to_pylist()
    assert shard.report["quirks"]["images_no_annotator_lists"] == 1
    assert shard.report["quirk_files"]["images_no_annotator_lists"] == ["images/99.jpg"]  # named, with the line


@settings(max_examples=25, deadline=None)
@given(repeats=st.lists(st.tuples(st.integers(1, 9), st.booleans()), max_size=4))
def test_a_category_id_listed_twice_is_said_once_for_the_build(tmp_path_factory, repeats) -> None:
    """A category id a file lists more than once, used or not, under its name or another, is
    counted (a quirk) once for the build, by the first shard, not once per shard."""
    data = alice_file()
    for category_id, same_name in repeats:
        data["categories"].append({"id": category_id, "name": "sky" if same_name else f"other-{category_id}"})
    listed = [c["id"] for c in data["categories"]]
    expected = sum(listed.count(i) > 1 for i in set(listed))
    root = write_tree(tmp_path_factory.mktemp("coco"), data, bob_file())
    shards = [ingest_shard(root, f"{k:02d}", WORDS, settings=IngestSettings(shard_size=2)) for k in (0, 1)]
    for shard in shards:
        reconciles(shard)
    assert [s.report["quirks"].get("category_id_listed_twice", 0) for s in shards] == [expected, 0]


@settings(max_examples=60, deadline=None)
@given(
    configured=st.none() | st.sampled_from(["CC0-1.0", "MIT"]),
    generated=st.booleans(),
    stated=st.none() | st.sampled_from(["CC-BY-2.0", "CC BY 2.0", "see the website", "per image: CC BY; PD"]),
)
def test_a_release_never_claims_a_licence_nobody_stated(configured, generated: bool, stated) -> None:
    """The release's licence: the config's, else a generated collection's own, else the source's
    SPDX id, or "other" for terms in words; else "unknown", never a default."""
    from regionbench.pipeline.source import GENERATED_LICENSE, resolved_license

    found = resolved_license(configured, generated, stated)
    if configured:
        assert found == configured
    elif generated:
        assert found == GENERATED_LICENSE
    elif stated is None:
        assert found == "unknown"
    else:
        assert found == (stated if " " not in stated else "other")


@settings(max_examples=20, deadline=None)
@given(
    info=st.sampled_from(
        [
            ({"description": "COCO 2017 Dataset", "url": "http://cocodataset.org"}, "lin2014microsoft"),
            ({"description": "LVIS v1.0", "url": "http://lvisdataset.org"}, "gupta2019lvis"),
            ({"description": "my street scenes"}, None),
            ({"url": "https://cocodataset.org/#home"}, "lin2014microsoft"),
            ({"description": "COCOA shapes"}, None),
            ({}, None),
        ]
    ),
    overridden=st.booleans(),
)
def test_a_collection_the_files_name_is_cited_as_it_asks(tmp_path_factory, info: tuple, overridden: bool) -> None:
    """A COCO or LVIS file (its ``info``) gets its collection's citation and home page on the
    card; an annotation tool's export cites nothing of its own; the config wins."""
    from regionbench.pipeline import source

    stated, key = info
    files = [alice_file(), bob_file()]
    for data in files:
        data["info"] = stated
    root = write_tree(tmp_path_factory.mktemp("coco"), *files)
    configured = {"citation": "@misc{mine}"} if overridden else {}
    found = source.describe("coco", root, configured, generated=False, release_license=None)
    if overridden:
        assert found["citation"] == "@misc{mine}"
    elif key is None:
        assert found["citation"] is None
    else:
        assert key in str(found["citation"]) and found["homepage"]
