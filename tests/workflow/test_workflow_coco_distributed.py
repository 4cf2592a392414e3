"""COCO as its zips unpack builds as it is, and its release scores as COCO's benchmark does: the
collection's val2017 is the test side by default, and a results file for val2017 scores
without options."""

from __future__ import annotations

import json
from collections.abc import Callable

import pyarrow.parquet as pq
from conftest import evaluate_instances
from farm import Built

from regionbench.io.shards import image_id_of


def test_coco_s_own_tree_builds_with_its_split_as_the_release_s(release: Callable[[str], Built], tmp_path) -> None:
    built = release("coco-distributed")
    folder, info = built.folder, built.tree_info
    images = {r["image_id"]: r for r in pq.read_table(folder / "data/images.parquet").to_pylist()}
    assert {images[image_id_of(n)]["path"] for n in info["folder"]} == {f"{f}/{n}" for n, f in info["folder"].items()}
    assert {r["split"] for r in images.values()} == {"train2017", "val2017"}
    regions = pq.read_table(folder / "data/regions.parquet", columns=["annotator"]).to_pylist()
    assert len(regions) == info["annotations"] and {r["annotator"] for r in regions} == {"coco"}
    # subsets.split: auto takes the collection's split: val2017 is the test side, train2017 the train
    subsets = pq.read_table(folder / "data/subsets.parquet", columns=["image_id", "image_split", "split"]).to_pylist()
    assert subsets and all(
        r["image_split"] == r["split"] == ("test" if images[r["image_id"]]["split"] == "val2017" else "train")
        for r in subsets
    )
    report = json.loads((folder / "results/subsets.json").read_text())
    assert report["source_split"] == {"test": "val2017", "splits": ["train2017", "val2017"]}
    said = built.stdout + built.stderr
    assert "left alone (not instances files): " + ", ".join(info["left_alone"]) in said
    # the label tasks score the test side, and say it is the collection's val2017
    from regionbench.client import loader
    from regionbench.client.tasks import _labels

    spec = _labels.subset_truth(loader.load(folder), "A")
    assert spec.image_scope().line().startswith(f"scored: {len(spec.test)} of ")
    assert "the test side of the image split (the collection's val2017)" in spec.image_scope().line()
    assert "val2017 images are the test side" in " ".join((folder / "README.md").read_text().split())

    # COCO's own val2017 file, its annotations as detections: scored on val2017 without options.
    truth = json.loads((built.raw / "annotations/instances_val2017.json").read_text())
    run = [
        {"image_id": a["image_id"], "category_id": a["category_id"], "segmentation": a["segmentation"], "score": 1.0}
        for a in truth["annotations"]
    ]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(run))
    done = evaluate_instances(folder, str(path))
    assert done.returncode == 0, done.stderr
    val = sum(f == "val2017" for f in info["folder"].values())
    first = done.stdout.splitlines()[0]
    assert first == f"scored: {val} of {len(images)} images, the source's val2017 split (--split all scores every one)"
    assert "AP " in done.stdout and "1.000" in done.stdout.split("AP ")[1].splitlines()[0]
