"""The COCO panoptic layout reads COCO, Cityscapes and ADE20K panoptic trees as published: every
segment a region repainting its PNG exactly, VOID the ignore mask, the source's ids, areas and
boxes kept; a damaged tree loses nothing: each raw item is a region, an image or a reject with
its reason, and the ledger balances."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from test_labelmaps import balanced  # the ledger of a shard balances: one check for every layout's tests

from regionbench.core import geometry
from regionbench.io import layouts, panoptic
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.synthetic import panoptic as synth

ALL = IngestSettings(shard_size=1000)


def words(root: Path) -> dict[str, int]:
    """The tree's own vocabulary (as a build without a vocabulary folder derives it)."""
    labels = panoptic.LAYOUT.write_vocabulary(root, root.parent / f"{root.name}-vocabulary").labels
    return {label: k for k, label in enumerate(sorted(labels), start=1)}


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("panoptic")
    out = {}
    for flavour, annotators in (("coco", 2), ("cityscapes", 1), ("ade20k", 1)):
        list(synth.write_tree(base / flavour, 6, 3, flavour, annotators))
        out[flavour] = base / flavour
    return out


@pytest.mark.parametrize("flavour", ["coco", "cityscapes", "ade20k"])
def test_each_flavour_reads_back_every_segment_pixel_exact(trees: dict[str, Path], flavour: str) -> None:
    root = trees[flavour]
    assert panoptic.LAYOUT.detect(root)
    shard = ingest_shard(root, "00", words(root), layout="coco-panoptic", settings=ALL)
    balanced(shard)
    assert shard.rejects.num_rows == 0 and shard.images.num_rows == 6
    images = {r["image_id"]: r for r in shard.images.to_pylist()}
    regions = shard.regions.to_pylist()
    coverage = {(c["image_id"], c["annotator"]): c for c in shard.coverage.to_pylist()}
    for source in panoptic.sources(root):
        document = json.loads((root / source.json).read_text())
        names = {im["id"]: im["file_name"] for im in document["images"]}
        categories = {c["id"]: c for c in document["categories"]}
        for annotation in document["annotations"]:
            image_id = next(i for i, r in images.items() if Path(r["path"]).name == names[annotation["image_id"]])
            assert images[image_id]["split"] == source.split
            ids = panoptic.rgb_to_id(np.asarray(Image.open(root / source.folder / annotation["file_name"])))
            painted = np.zeros_like(ids)
            own = [r for r in regions if r["image_id"] == image_id and r["annotator"] == source.annotator]
            for r in own:
                painted[geometry.from_rle(r["mask"])] = r["annotation_id"]
            assert np.array_equal(painted, ids)
            by_id = {s["id"]: s for s in annotation["segments_info"]}
            for r in own:
                segment = by_id[r["annotation_id"]]
                assert r["category_id"] == segment["category_id"] and r["iscrowd"] == bool(segment["iscrowd"])
                assert r["source_area"] == segment["area"] == r["area_px"]
                assert [r[f"source_bbox_{c}"] for c in "xywh"] == segment["bbox"]
                assert r["label"] == panoptic_label(categories[segment["category_id"]]["name"])
            void = geometry.from_rle(coverage[(image_id, source.annotator)]["ignore_mask"])
            assert np.array_equal(void, ids == 0)
            if isinstance(annotation["image_id"], int):
                assert coverage[(image_id, source.annotator)]["source_image_id"] == annotation["image_id"]


def panoptic_label(name: str) -> str:
    from regionbench.io.coco.ingest import category_label

    return category_label(name)


def test_the_format_s_categories_are_the_vocabulary_with_things_and_stuff_kept(
    trees: dict[str, Path], tmp_path: Path
) -> None:
    root = trees["coco"]
    vocabulary = panoptic.LAYOUT.write_vocabulary(root, tmp_path)
    assert {"animal", "cat", "dog", "sky", "sky-other-merged", "person"} <= set(vocabulary.labels)
    hierarchy = (tmp_path / "hierarchy.yaml").read_text()
    assert "cat" in hierarchy and "animal" in hierarchy
    rows = panoptic.LAYOUT.source_categories(root, layouts.Reading(words=words(root)))
    assert {(r["annotator"], r["name"], r["has_instances"]) for r in rows} >= {
        ("annotator1", "person", True),
        ("annotator2", "road", False),
    }


def test_a_tree_is_detected_as_its_layout_and_the_coco_layout_leaves_panoptic_files_alone(
    trees: dict[str, Path],
) -> None:
    assert layouts.detect(trees["coco"]).name == "coco-panoptic"
    assert layouts.detect(trees["ade20k"]).name == "coco-panoptic"
    with pytest.raises(layouts.IngestError, match="set layout to one of cityscapes, coco-panoptic"):
        layouts.detect(trees["cityscapes"])  # createPanopticImgs writes into a Cityscapes tree
    assert layouts.detect(trees["cityscapes"], "coco-panoptic").name == "coco-panoptic"


def _damage(root: Path, kind: str) -> str:
    """Damage the first image of annotator1's val file of a COCO tree; returns the reason's words."""
    json_path = root / "annotations/annotator1/panoptic_val2017.json"
    document = json.loads(json_path.read_text())
    annotation = document["annotations"][0]
    png = root / "annotations/annotator1/panoptic_val2017" / annotation["file_name"]
    segments = annotation["segments_info"]
    if kind == "png id not listed":
        segments.pop(2)
    elif kind == "listed id not in png":
        segments.append({"id": 77, "category_id": 1, "iscrowd": 0, "area": 1, "bbox": [0, 0, 1, 1]})
    elif kind == "unknown category":
        segments[1]["category_id"] = 999
    elif kind == "duplicate id":
        segments.append(dict(segments[0]))
    elif kind == "segment id 0":
        segments.append({"id": 0, "category_id": 1, "iscrowd": 0})
    elif kind == "wrong mode" and png.exists():
        Image.open(png).convert("L").save(png)
    elif kind == "wrong size" and png.exists():
        Image.open(png).resize((10, 10)).save(png)
    elif kind == "missing png" and png.exists():
        png.unlink()
    elif kind == "missing image":
        (root / "images/val2017" / document["images"][0]["file_name"]).unlink()
    elif kind == "unlisted image":
        document["annotations"].append({"image_id": 424242, "file_name": "x.png", "segments_info": []})
    json_path.write_text(json.dumps(document))
    return {
        "png id not listed": "not in segments_info", "listed id not in png": "no pixels in the PNG",
        "unknown category": "not in the file's categories", "duplicate id": "listed 2 times",
        "segment id 0": "VOID", "wrong mode": "mode L", "wrong size": "10x10", "missing png": "missing",
        "missing image": "no image file", "unlisted image": "no image the file lists",
    }[kind]  # fmt: skip


KINDS = ["png id not listed", "listed id not in png", "unknown category", "duplicate id", "segment id 0",
         "wrong mode", "wrong size", "missing png", "missing image", "unlisted image"]  # fmt: skip


IMAGE_LEVEL = {"wrong mode", "wrong size", "missing png", "missing image"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.lists(st.sampled_from(KINDS), min_size=1, max_size=3, unique=True))
def test_a_damaged_tree_loses_nothing_and_says_why(
    trees: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, damage: list[str]
) -> None:
    root = tmp_path_factory.mktemp("damaged") / "coco"
    shutil.copytree(trees["coco"], root)
    said = {kind: _damage(root, kind) for kind in damage}
    shard = ingest_shard(root, "00", words(root), layout="coco-panoptic", settings=ALL)
    balanced(shard)
    reasons = " | ".join(shard.rejects.column("reason").to_pylist())
    broken = [said[k] for k in damage if k in IMAGE_LEVEL]
    if broken:  # the image is the reject, for the first thing that stops its reading
        assert any(words_of_reason in reasons for words_of_reason in broken), (damage, reasons)
    else:
        assert all(said[k] in reasons for k in damage if k != "unlisted image"), (damage, reasons)
    if "unlisted image" in damage:
        assert said["unlisted image"] in reasons
    assert len({r["key"] for r in shard.rejects.to_pylist()}) == shard.rejects.num_rows  # each item once


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    values=st.integers(1, 70),
    listed_share=st.floats(0, 1),
)
def test_segment_masks_are_the_masks_of_every_value_listed_or_not(seed: int, values: int, listed_share: float) -> None:
    """Comparisons per listed id (few) or the sorted pixels (many): either way one mask per id of
    the map but VOID, the ids no segment lists included."""
    from regionbench.io.labelmaps import masks_by_value

    rng = np.random.default_rng(seed)
    palette = rng.choice(np.arange(1, 1 << 24), size=values, replace=False)
    ids = np.where(rng.random((9, 11)) < 0.2, 0, palette[rng.integers(0, values, size=(9, 11))]).astype(np.uint32)
    listed = [int(v) for v in palette if rng.random() < listed_share] + [int(rng.integers(1, 1 << 24))]
    found = panoptic.segment_masks(ids, listed, int((ids == 0).sum()))
    expected = dict(masks_by_value(ids, skip=(0,)))
    assert sorted(found) == sorted(expected)
    assert all(np.array_equal(found[v], expected[v]) for v in expected)


def test_a_stuff_class_in_two_segments_is_kept_as_the_file_has_it_and_counted(
    trees: dict[str, Path], tmp_path: Path
) -> None:
    root = tmp_path / "coco"
    shutil.copytree(trees["coco"], root)
    json_path = root / "annotations/annotator1/panoptic_val2017.json"
    document = json.loads(json_path.read_text())
    annotation = document["annotations"][0]
    png = root / "annotations/annotator1/panoptic_val2017" / annotation["file_name"]
    ids = panoptic.rgb_to_id(np.asarray(Image.open(png)))
    sky = annotation["segments_info"][0]  # the top band: stuff
    half = (ids == sky["id"]) & (np.arange(ids.shape[1])[None, :] < ids.shape[1] // 2)
    ids[half] = 4242
    Image.fromarray(panoptic.id_to_rgb(ids)).save(png)
    annotation["segments_info"].append(dict(sky, id=4242))
    json_path.write_text(json.dumps(document))
    shard = ingest_shard(root, "00", words(root), layout="coco-panoptic", settings=ALL)
    balanced(shard)
    assert shard.report["quirks"].get("stuff_class_in_several_segments") == 1, shard.report


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    constant=st.sampled_from(["NaN", "Infinity", "-Infinity"]),
    where=st.sampled_from(["area", "bbox", "id", "category_id", "width"]),
    pick=st.integers(0, 10_000),
)
def test_a_panoptic_file_with_a_number_json_lacks_is_refused_in_one_line(
    trees: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, constant: str, where: str, pick: int
) -> None:
    """NaN or Infinity anywhere a number stands (Python's JSON reads them; JSON has none): the
    file is refused in one line naming it and the value, as the COCO instances layout refuses them."""
    from regionbench.core.errors import InputError

    root = tmp_path_factory.mktemp("constant") / "coco"
    shutil.copytree(trees["coco"], root)
    source = panoptic.sources(root)[0]
    path = root / source.json
    text = path.read_text()
    spots = [k for k in range(len(text)) if text.startswith(f'"{where}": ', k)]
    assert spots
    at = spots[pick % len(spots)] + len(f'"{where}": ')
    end = at
    while text[end] in "-0123456789.e":
        end += 1
    if end == at:  # a list (bbox): its first number
        at += 1
        end = at
        while text[end] in "-0123456789.e":
            end += 1
    path.write_text(text[:at] + constant + text[end:])
    with pytest.raises(InputError) as refused:
        panoptic.read_source(root, source)
    said = str(refused.value)
    assert "\n" not in said and str(path) in said and f"{constant} is not a JSON number" in said
