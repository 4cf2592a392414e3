"""Label-map collections as distributed build with no converter and no vocabulary folder: the
release's masks rebuild the format's maps pixel-exact, and the collection's own split can be
the test side."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from conftest import regionbench_cli
from farm import Built
from PIL import Image

from regionbench.core import geometry
from regionbench.io import voc as voc_layout
from regionbench.io.voc import CLASSES, VOID


def test_a_voc_tree_builds_pixel_exact_with_its_own_split_as_test_side(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    built = release("voc")  # 2012_999999.jpg: a detection-only image
    raw, folder = built.raw, built.folder
    rejects = pq.read_table(folder / "data/rejects.parquet").to_pylist()
    counted = [r for r in rejects if r["key"] == "2012_999999"]
    assert len(counted) == 1 and counted[0]["reason"].startswith("no segmentation map: VOC annotates this image")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["layout"] == "voc" and manifest["source"]["name"].startswith("The PASCAL Visual Object Classes")

    vocabulary = pq.read_table(folder / "data/vocabulary.parquet").to_pylist()
    ids = {r["label"]: r["label_id"] for r in vocabulary}
    assert all(ids[c] == i for i, c in enumerate(CLASSES))  # VOC's indices are the label ids

    images = {r["image_id"]: r for r in pq.read_table(folder / "data/images.parquet").to_pylist()}
    regions = pq.read_table(folder / "data/regions.parquet").to_pylist()
    coverage = {r["image_id"]: r for r in pq.read_table(folder / "data/coverage.parquet").to_pylist()}
    base = raw / "VOCdevkit/VOC2012"
    lists = {s: (base / f"ImageSets/Segmentation/{s}.txt").read_text().split() for s in ("train", "val")}
    assert len(images) == 18
    for image_id, image in images.items():
        name = Path(image["path"]).stem
        assert image["split"] == ("val" if name in lists["val"] else "train")
        classes = np.asarray(Image.open(base / f"SegmentationClass/{name}.png"))
        instances = np.asarray(Image.open(base / f"SegmentationObject/{name}.png"))
        # the maps back from the release: each instance by its index, the classes by label id
        rebuilt_classes = np.full(classes.shape, VOID, np.uint8)
        rebuilt_instances = np.full(classes.shape, VOID, np.uint8)
        for r in (r for r in regions if r["image_id"] == image_id):
            mask = geometry.from_rle(r["mask"])
            rebuilt_classes[mask] = r["label_id"]
            rebuilt_instances[mask] = r["annotation_id"] or 0
        void = geometry.from_rle(coverage[image_id]["ignore_mask"])
        assert np.array_equal(void, classes == VOID)
        assert np.array_equal(rebuilt_classes, classes) and np.array_equal(rebuilt_instances, instances)

    subsets = pq.read_table(folder / "data/subsets.parquet", columns=["image_id", "split"]).to_pylist()
    assert subsets and all(
        r["split"] == ("test" if images[r["image_id"]]["split"] == "val" else "train") for r in subsets
    )

    # written back as VOC: the same class and object maps, lists and XML flags, the JPEGs checked
    out = tmp_path / "export"
    done = regionbench_cli("export", str(folder), str(out), "--format", "voc", "--images", str(raw))
    assert done.returncode == 0, done.stderr
    back = out / "VOC2012"
    for kind in ("SegmentationClass", "SegmentationObject"):
        for path in sorted((base / kind).glob("*.png")):
            assert np.array_equal(np.asarray(Image.open(back / kind / path.name)), np.asarray(Image.open(path))), path
    for split in ("train", "val"):
        assert (back / f"ImageSets/Segmentation/{split}.txt").read_text().split() == lists[split]
    for path in sorted((base / "Annotations").glob("*.xml")):  # each instance in the maps: its object's flags
        present = set(np.unique(np.asarray(Image.open(base / "SegmentationObject" / f"{path.stem}.png"))).tolist())
        exported, original = (voc_layout.flags_of(p) for p in (back / "Annotations" / path.name, path))
        assert [exported[k - 1] for k in sorted(present - {0, VOID})] == [
            original[k - 1] for k in sorted(present - {0, VOID})
        ]
    # each photograph's credit (VOC2007's <source> flickrid and <owner> name): in the release, written back
    credits = {p.stem: voc_layout.credit_of(p) for p in sorted((base / "Annotations").glob("*.xml"))}
    assert any(c["attribution"] for c in credits.values()) and any(not c["attribution"] for c in credits.values())
    for row in images.values():
        assert {k: row[k] for k in ("original_url", "attribution")} == credits[Path(row["path"]).stem]
    for stem, credit in credits.items():
        assert voc_layout.credit_of(back / "Annotations" / f"{stem}.xml") == credit
    assert sorted(p.read_bytes() for p in (back / "JPEGImages").iterdir()) == sorted(
        p.read_bytes()
        for p in (base / "JPEGImages").iterdir()
        if p.stem != "2012_999999"  # the reject
    )

    # label maps scored per source split: the val side alone (--split test: the release's test side
    # is VOC's val) gives what --split all reports for val, from the same per-image matrices
    run = tmp_path / "run"
    run.mkdir()
    for k, path in enumerate(sorted((base / "SegmentationClass").glob("*.png"))):
        values = np.asarray(Image.open(path)).copy()
        values[: values.shape[0] // (2 + k % 3)] = k % 5  # wrong in part, differently per image
        Image.fromarray(values).save(run / path.name)
    val = tmp_path / "run-val"  # the test side's files only: any other is refused
    val.mkdir()
    for name in lists["val"]:
        shutil.copy(run / f"{name}.png", val / f"{name}.png")
    reports = {}
    for side, files in (("all", run), ("test", val)):
        done = regionbench_cli(
            "evaluate", "--release", str(folder), "--predictions", str(files),
            "--task", "semantic", "--split", side, "--out", str(tmp_path / f"{side}.json"),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        reports[side] = json.loads((tmp_path / f"{side}.json").read_text())
    split = reports["all"]["per_source_split"]
    assert sorted(split) == ["train", "val"] and split["val"]["images"] == len(lists["val"])
    assert split["val"] == {"images": len(lists["val"])} | reports["test"]["measures"]
    assert reports["test"]["per_source_split"] == {}  # one split scored: no breakdown


def test_cityscapes_and_ade20k_trees_build_and_rebuild_their_maps(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """Each format's generated tree builds with its own classes as the vocabulary (the format's
    ids kept), verifies, and its regions repaint every annotator's map exactly."""
    for name, maps in (
        ("cityscapes", "{kind}/{split}/*/{stem}_{kind}_instanceIds.png"),
        ("ade20k", "ADEChallengeData2016/annotations/{split}/{stem}.png"),
    ):
        built = release(name)
        raw, folder = built.raw, built.folder
        images = {r["image_id"]: r for r in pq.read_table(folder / "data/images.parquet").to_pylist()}
        regions = pq.read_table(folder / "data/regions.parquet").to_pylist()
        splits = {"training", "validation"} if name == "ade20k" else {"train", "val"}
        assert len(images) == 9 and {i["split"] for i in images.values()} == splits
        categories = pq.read_table(folder / "data/source_categories.parquet").to_pylist()
        vocabulary = {r["label"]: r["label_id"] for r in pq.read_table(folder / "data/vocabulary.parquet").to_pylist()}
        assert all(vocabulary[c["label"]] == c["category_id"] for c in categories if c["label"])  # the format's ids
        for who in sorted({r["annotator"] for r in regions} - {"consensus"}):
            kind = {"fine": "gtFine", "coarse": "gtCoarse"}.get(who, "")
            for image_id, image in images.items():
                path = Path(image["path"])
                stem = path.stem.removesuffix("_leftImg8bit")
                found = list(raw.glob(maps.format(kind=kind, split=image["split"], stem=stem)))
                if not found:
                    continue
                values = np.asarray(Image.open(found[0])).astype(np.int64)
                painted = np.zeros_like(values)
                for r in (r for r in regions if r["image_id"] == image_id and r["annotator"] == who):
                    value = r["annotation_id"] if r["annotation_id"] is not None else r["category_id"]
                    painted[geometry.from_rle(r["mask"])] = value
                assert np.array_equal(painted, values), (name, who, image_id)
        # written back in the format: every map of the tree, pixel for pixel, and the images
        out = tmp_path / f"export-{name}"
        done = regionbench_cli("export", str(folder), str(out), "--format", name, "--images", str(raw))
        assert done.returncode == 0, done.stderr
        maps_of = ("gt*/*/*/*.png",) if name == "cityscapes" else ("ADEChallengeData2016/annotations/*/*.png",)
        originals = sorted(p for pattern in maps_of for p in raw.glob(pattern))
        assert originals and sorted(p.relative_to(out) for p in out.glob(maps_of[0])) == [
            p.relative_to(raw) for p in originals
        ]
        for path in originals:
            again = np.asarray(Image.open(out / path.relative_to(raw)))
            assert np.array_equal(again, np.asarray(Image.open(path))), path
        pictures = "leftImg8bit/*/*/*.png" if name == "cityscapes" else "ADEChallengeData2016/images/*/*.jpg"
        assert [(out / p.relative_to(raw)).read_bytes() == p.read_bytes() for p in raw.glob(pictures)] == [
            True for _ in raw.glob(pictures)
        ]


def test_the_full_ade20k_release_builds_with_parts_inside_their_objects(release: Callable[[str], Built]) -> None:
    from regionbench.io import ade20k_full

    built = release("ade20k-full")
    raw, folder = built.raw, built.folder
    images = {r["image_id"]: r for r in pq.read_table(folder / "data/images.parquet").to_pylist()}
    regions = pq.read_table(folder / "data/regions.parquet").to_pylist()
    for image_id, image in images.items():
        mine = {r["region_id"]: r for r in regions if r["image_id"] == image_id}
        for level, suffix in enumerate(("_seg.png", "_parts_1.png")):
            path = raw / image["path"].replace(".jpg", suffix)
            if not path.is_file():
                assert not [r for r in mine.values() if r["part_level"] == level]
                continue
            classes, instances = ade20k_full.decode(np.asarray(Image.open(path)))
            painted = np.zeros(classes.shape, np.int64)
            for r in (r for r in mine.values() if r["part_level"] == level):
                painted[geometry.from_rle(r["mask"])] = r["category_id"] * 256 + r["annotation_id"]
                if level:  # a part lies in the object it names as its parent
                    parent = geometry.from_rle(mine[r["parent_region_id"]]["mask"])
                    assert (
                        mine[r["parent_region_id"]]["part_level"] == 0
                        and (geometry.from_rle(r["mask"]) <= parent).all()
                    )
            assert np.array_equal(painted, np.where(classes > 0, classes * 256 + instances, 0))


def test_a_folder_of_class_maps_builds_exports_back_and_scores_on_its_val_split(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """The generic layout: a folder with classes.csv, images/ and labels/ per split builds with
    its classes (ids kept, parents as the hierarchy, the void value each image's ignore mask),
    verifies, exports back pixel-exact (maps and class table), and a run of its own maps scores
    1.0 on the source's val split by default."""
    import csv

    built = release("classmap")
    raw, folder = built.raw, built.folder
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["layout"] == "classmap"
    vocabulary = {r["label"]: r for r in pq.read_table(folder / "data/vocabulary.parquet").to_pylist()}
    assert {label: vocabulary[label]["label_id"] for label in ("road", "sky", "bus")} == {"road": 1, "sky": 5, "bus": 8}
    assert vocabulary["car"]["path"].split("->")[-2:] == ["vehicle", "car"]
    images = pq.read_table(folder / "data/images.parquet").to_pylist()
    assert len(images) == 9 and {i["split"] for i in images} == {"train", "val"}
    out = tmp_path / "export"
    done = regionbench_cli("export", str(folder), str(out), "--format", "classmap", "--images", str(raw))
    assert done.returncode == 0, done.stderr
    for path in sorted((raw / "labels").rglob("*.png")):
        again = out / path.relative_to(raw)
        assert np.array_equal(np.asarray(Image.open(again)), np.asarray(Image.open(path))), path
    for path in sorted((raw / "images").rglob("*.*")):
        assert (out / path.relative_to(raw)).read_bytes() == path.read_bytes()
    rows = lambda p: sorted(tuple(r.values()) for r in csv.DictReader(p.read_text().splitlines()))  # noqa: E731
    assert rows(out / "classes.csv") == rows(raw / "classes.csv")
    report = tmp_path / "report.json"
    done = regionbench_cli(
        "evaluate", "--release", str(folder), "--predictions", str(out / "labels" / "val"),
        "--task", "semantic", "--out", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(report.read_text())
    assert found["scored"]["side"] == "the source's val split" and found["images"] == 3
    assert found["benchmark"]["name"] == "plain" and found["measures"]["miou"] == 1.0
