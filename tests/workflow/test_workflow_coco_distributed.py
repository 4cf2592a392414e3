"""COCO as its zips unpack builds as it is, and its release scores as COCO's benchmark does: the
collection's val2017 is the test side by default, and a results file for val2017 scores
without options."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import evaluate_instances
from farm import Built

import regionbench
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
    from regionbench.release import loader
    from regionbench.scoring.tasks import _labels

    spec = _labels.subset_truth(loader.load(folder), "A")
    assert spec.image_scope().line().startswith(f"scored: {len(spec.test)} of ")
    assert "the test side of the image split (the collection's val2017)" in spec.image_scope().line()
    card = " ".join((folder / "README.md").read_text().split())
    assert "val2017 images are the test side" in card
    # the introduction says the same split, and what the collection is as distributed
    assert "with subsets A-H whose test side is the collection's own val2017 split" in card and "70/30" not in card
    assert "COCO as distributed (`train2017/`, `val2017/` and an instances file per split" in card
    assert json.loads((folder / "manifest.json").read_text())["evaluation_split"] == "val2017"

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


def test_tide_under_ties_equals_tidecv_walking_coco_s_own_val_file(release: Callable[[str], Built], tmp_path) -> None:
    """A run as a method writes one, scores rounded to 0.1 (ties within and across images), a
    tenth of the detections exact copies, some relabelled, some instances missed: ``--tide`` on the
    release equals tidecv walking COCO's own val2017 file (its images in no id order, which its ties
    follow) to 1e-6, every figure; and the export lists the images as that file does."""
    import contextlib
    import io

    import numpy as np
    from test_resampled_ap import real_shaped_run
    from tidecv import TIDE, datasets

    import regionbench

    built = release("coco-distributed")
    truth_path = built.raw / "annotations/instances_val2017.json"
    truth = json.loads(truth_path.read_text())
    order = [e["id"] for e in truth["images"]]
    assert order != sorted(order)
    run = real_shaped_run(truth, np.random.default_rng(0))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(run))
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator = TIDE()
        theirs = evaluator.evaluate(
            datasets.COCO(str(truth_path)), datasets.COCOResult(str(path)), mode=TIDE.MASK, name="run"
        )
        main, special = evaluator.get_main_errors()["run"], evaluator.get_special_errors()["run"]
    found = regionbench.evaluate(regionbench.load(built.folder), path, "instances", tide=True)
    assert found["scored"]["count"] == len(truth["images"])
    ours = found["tide"]
    assert ours["ap"] == pytest.approx(theirs.ap, abs=1e-6)
    assert ours["main"] == {k: pytest.approx(v, abs=1e-6) for k, v in main.items()}
    assert ours["special"] == {k: pytest.approx(v, abs=1e-6) for k, v in special.items()}
    # export coco writes the files that came in, each listing its images as it did
    from regionbench import cli

    assert cli.main(["export-coco", str(built.folder), str(tmp_path / "coco")]) == 0
    for split in ("train2017", "val2017"):
        exported = json.loads((tmp_path / f"coco/annotations/instances_{split}.json").read_text())
        given = json.loads((built.raw / f"annotations/instances_{split}.json").read_text())
        assert [e["id"] for e in exported["images"]] == [e["id"] for e in given["images"]]
    assert [e["id"] for e in given["images"]] == order


def test_instance_intervals_are_pycocotools_re_accumulated_over_the_drawn_images(
    release: Callable[[str], Built], tmp_path
) -> None:
    """A run as a method writes one (ties, duplicates, misses) scored on the release: each
    resample's AP, AP50 and AP75 equal pycocotools' ``accumulate`` of its own per-image results
    of the drawn images (COCO's val2017 file, images by id), the intervals their percentiles, and
    the point values COCOeval's."""
    import contextlib
    import io

    import numpy as np
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    from test_resampled_ap import pycocotools_resampled, real_shaped_run

    built = release("coco-distributed")
    truth = json.loads((built.raw / "annotations/instances_val2017.json").read_text())
    run = real_shaped_run(truth, np.random.default_rng(1))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(run))
    found = regionbench.evaluate(regionbench.load(built.folder), path, "instances", resamples=60, seed=5)
    theirs = pycocotools_resampled(truth, run, "segm", 100, 60, 5)
    assert (
        found["resampled"]["images_sha256"]
        == hashlib.sha256("\n".join(str(i) for i in sorted(e["id"] for e in truth["images"])).encode()).hexdigest()
    )
    for name in ("AP", "AP50", "AP75"):
        assert np.allclose(found["resampled"]["values"][name], theirs[name], rtol=0, atol=1e-9), name
        low, high = np.percentile(theirs[name], [2.5, 97.5])
        assert found["intervals"][name]["low"] == pytest.approx(low, abs=1e-9)
        assert found["intervals"][name]["high"] == pytest.approx(high, abs=1e-9)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(built.raw / "annotations/instances_val2017.json"))
        evaluation = COCOeval(gt, gt.loadRes(str(path)), "segm")
        evaluation.evaluate(), evaluation.accumulate(), evaluation.summarize()
    assert [found["measures"][k] for k in ("AP", "AP50", "AP75")] == pytest.approx(evaluation.stats[:3], abs=1e-12)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

COUNTS = st.text(alphabet=st.characters(min_codepoint=48, max_codepoint=111), max_size=16)
NUMBER = st.floats(allow_nan=False, allow_infinity=False) | st.integers(
    -5, 1000
)  # JSON has no NaN: a file-level refusal


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.one_of(
        st.fixed_dictionaries({"size": st.lists(st.integers(0, 700), max_size=3), "counts": COUNTS}),
        st.fixed_dictionaries({"size": st.just("image"), "counts": COUNTS}),
        st.lists(st.lists(NUMBER, max_size=10), max_size=2),
    )
)
def test_a_malformed_detection_is_one_line_never_a_traceback(
    release: Callable[[str], Built], tmp_path_factory, shape
) -> None:
    """Random RLE strings (of any size, or the image's own, where counts may run past it or
    stop short) and polygons, beside a good detection: ``evaluate`` scores the run or refuses it
    in one line naming the detection (exit 2), never a traceback or an internal error."""
    from conftest import regionbench_cli

    built = release("coco-distributed")
    truth = json.loads((built.raw / "annotations/instances_val2017.json").read_text())
    image = truth["images"][0]
    if isinstance(shape, dict) and shape["size"] == "image":
        shape = {"size": [image["height"], image["width"]], "counts": shape["counts"]}
    good = next(a for a in truth["annotations"] if a["image_id"] == image["id"])
    run = [
        {
            "image_id": image["id"],
            "category_id": good["category_id"],
            "segmentation": good["segmentation"],
            "score": 0.9,
        },
        {"image_id": image["id"], "category_id": good["category_id"], "segmentation": shape, "score": 0.5},
    ]
    path = tmp_path_factory.mktemp("malformed") / "run.json"
    path.write_text(json.dumps(run))
    done = regionbench_cli(
        "evaluate", "--release", str(built.folder), "--predictions", str(path), "--task", "instances"
    )
    assert done.returncode in (0, 2), done.stderr
    if done.returncode == 2:
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "detection 1: " in lines[0], done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_export_in_another_collection_s_format_says_so(release: Callable[[str], Built], tmp_path) -> None:
    """``export --format cityscapes`` of a COCO release: one line saying the release is not
    Cityscapes', not a complaint about --annotator."""
    from conftest import regionbench_cli

    built = release("coco-distributed")
    done = regionbench_cli("export", str(built.folder), str(tmp_path / "out"), "--format", "cityscapes")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "writes a Cityscapes release" in lines[0] and "--annotator" not in lines[0], lines


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), tide=st.booleans())
def test_the_report_counts_the_detections_it_scored(release: Callable[[str], Built], data, tide: bool) -> None:
    """Any share of a run's detections given categories the truth lacks (none, some, all): the
    report counts the others, each once, with or without TIDE (which holds them apart)."""
    built = release("coco-distributed")
    truth = json.loads((built.raw / "annotations/instances_val2017.json").read_text())
    known = sorted({c["id"] for c in truth["categories"]})
    picked = [a for a in truth["annotations"] if not a.get("iscrowd")][: data.draw(st.integers(1, 30))]
    absent = data.draw(st.sets(st.integers(0, len(picked) - 1)))
    run = [
        {
            "image_id": a["image_id"],
            "bbox": a["bbox"],
            "segmentation": a["segmentation"],
            "score": 0.5,
            "category_id": max(known) + 1 + k if k in absent else a["category_id"],
        }
        for k, a in enumerate(picked)
    ]
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "run.json"
        path.write_text(json.dumps(run))
        report = regionbench.evaluate(regionbench.load(built.folder), path, "instances", tide=tide)
    assert report["detections"] == len(picked) - len(absent)
