"""COCO and LVIS as their makers distribute them build as they are: a split file is a split of
one annotator's readings (``coco``, ``lvis``), not an annotator; the images stay in COCO's
folders; files that hold no instances are left alone, and said so."""

from __future__ import annotations

from pathlib import Path

import pytest
from layouts.coco_distributed import coco_tree, lvis_tree

from regionbench.io import layouts
from regionbench.io.coco import split
from regionbench.io.shards import image_id_of
from regionbench.pipeline import vocabulary
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.synthetic.coco import write_collection

WHOLE = IngestSettings(shard_size=1000)


def ingested(root: Path, tmp_path: Path):
    """The one shard of the tree, with the vocabulary its categories give."""
    vocabulary.derive("coco", root, tmp_path / "vocabulary")
    words = vocabulary.Registry.read(tmp_path / "vocabulary" / "label_ids.tsv").ids()
    return ingest_shard(root, "00", words, settings=WHOLE)


@pytest.mark.parametrize(("write", "annotator"), [(coco_tree, "coco"), (lvis_tree, "lvis")])
def test_a_distributed_tree_is_one_annotator_over_its_folders(tmp_path: Path, write, annotator: str) -> None:
    root = tmp_path / "raw"
    info = write(root)
    layout = layouts.detect(root)
    assert layout.name == "coco" and layout.annotators(root) == [annotator]
    shard = ingested(root, tmp_path)
    assert shard.rejects.num_rows == 0, shard.rejects.to_pylist()[:3]
    images = {r["image_id"]: r for r in shard.images.to_pylist()}
    assert len(images) == len(info["folder"])
    for name, folder in info["folder"].items():
        row = images[image_id_of(name)]
        assert row["path"] == f"{folder}/{name}"
        # COCO's split is its folder's; LVIS's, the file that lists the image (val holds both folders')
        assert row["split"] == (info["split"][name] if "split" in info else folder)
    regions = shard.regions.to_pylist()
    assert len(regions) == info["annotations"] and {r["annotator"] for r in regions} == {annotator}
    assert shard.report.get("files_left_alone", []) == info.get("left_alone", [])
    assert shard.report["annotators"][annotator]["accepted"] == info["annotations"]


def test_the_same_collection_exported_gives_the_same_regions(tmp_path: Path) -> None:
    """A tree as COCO distributes it and the same images and annotations as a tool's export
    (``images/``, one file): the same images, regions and masks, under their own paths."""
    distributed = tmp_path / "coco"
    info = coco_tree(distributed)
    exported = tmp_path / "export"
    for _ in write_collection(exported, "tiny", annotators=1, disagreement=0.0, workers=1):
        pass
    ours, theirs = ingested(distributed, tmp_path / "a"), ingested(exported, tmp_path / "b")
    key = lambda r: (r["image_id"], r["region_id"])  # noqa: E731
    for mine, other in zip(
        sorted(ours.regions.to_pylist(), key=key), sorted(theirs.regions.to_pylist(), key=key), strict=True
    ):
        assert (mine["image_id"], mine["label"], mine["mask"]) == (other["image_id"], other["label"], other["mask"])
    assert sorted(r["path"] for r in ours.images.to_pylist()) == sorted(
        f"{folder}/{name}" for name, folder in info["folder"].items()
    )


def test_the_distributed_shape_is_told_from_an_export(tmp_path: Path) -> None:
    """``images/`` makes an export whatever its files are named (today's trees keep building);
    without it, COCO's and LVIS's names make the distributed shape, and a split file whose
    folder is missing is no tree of the layout."""
    root = tmp_path / "raw"
    coco_tree(root)
    the_shape = split.shape(root)
    assert the_shape.distributed and the_shape.folders == ("train2017", "val2017")
    assert [(s.annotator, s.split, s.folder) for s in the_shape.sources] == [
        ("coco", "train2017", "train2017/"),
        ("coco", "val2017", "val2017/"),
    ]
    (root / "images").mkdir()
    assert not split.shape(root).distributed  # every file an annotator's, as before
    (root / "images").rmdir()
    for folder in ("train2017", "val2017"):
        (root / folder).rename(tmp_path / folder)
    assert not layouts.registry()["coco"].detect(root)


def test_split_files_naming_different_categories_are_refused(tmp_path: Path) -> None:
    import json

    root = tmp_path / "raw"
    coco_tree(root)
    path = root / "annotations" / "instances_val2017.json"
    data = json.loads(path.read_text())
    data["categories"][0]["name"] += " renamed"
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match=r"instances_val2017\.json: its categories differ .* \(coco\)"):
        ingested(root, tmp_path)
