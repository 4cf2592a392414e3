"""AP's bootstrap over images is pycocotools' own: each resample's AP, AP50 and AP75 equal
``COCOeval.accumulate`` run on the per-image results (``evalImgs``) of the drawn images in drawn
order, for runs with tied scores, duplicates, misses, crowds and empty images, cut into ranges."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_instances import in_ranges, many_images
from test_lvis import lvis_collection, lvis_eval

from regionbench.scoring import results
from regionbench.scoring.measures import average_precision, bootstrap, kept_detections, lvis_federated, resampled_ap


def real_shaped_run(truth: dict, rng: np.random.Generator) -> list[dict]:
    """A run as a method writes one from a COCO instances file: each instance found (15 % missed,
    crowds too) as its own mask, a quarter given another category, a tenth written twice, scores
    rounded to 0.1 (ties within and across images)."""
    from pycocotools import mask as coco_mask

    size = {e["id"]: (e["height"], e["width"]) for e in truth["images"]}
    categories = [c["id"] for c in truth["categories"]]
    run = []
    for a in truth["annotations"]:
        if a["iscrowd"] or rng.random() < 0.15:  # missed
            continue
        segmentation = a["segmentation"]
        if isinstance(segmentation, list):
            segmentation = coco_mask.merge(coco_mask.frPyObjects(segmentation, *size[a["image_id"]]))
        counts = segmentation["counts"]
        rle = {"size": segmentation["size"], "counts": counts.decode() if isinstance(counts, bytes) else counts}
        d = {"image_id": a["image_id"], "category_id": a["category_id"], "segmentation": rle,
             "score": round(float(rng.random()), 1)}  # fmt: skip
        if rng.random() < 0.25:
            d["category_id"] = int(rng.choice(categories))
        run.append(d)
        if rng.random() < 0.1:
            run.append(dict(d))
    return run


def pycocotools_resampled(
    truth: dict, detections: list[dict], iou_type: str, most: int, resamples: int, seed: int
) -> dict[str, np.ndarray]:
    """AP, AP50 and AP75 of each resample by pycocotools: ``evaluate`` once, then, per resample,
    ``evalImgs`` laid out for the drawn images in drawn order (as if they were the run's images)
    and ``accumulate`` run on them; NaN where no category has an instance."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = copy.deepcopy(truth)
        gt.createIndex()
        evaluation = COCOeval(gt, gt.loadRes(copy.deepcopy(detections)), iou_type)
        evaluation.params.maxDets = [1, 10, most]
        evaluation.evaluate()  # which sorts maxDets
    at = evaluation.params.maxDets.index(most)
    found = evaluation.evalImgs
    images, categories = len(evaluation.params.imgIds), len(evaluation.params.catIds)
    areas = len(evaluation.params.areaRng)
    out: dict[str, list[float]] = {"AP": [], "AP50": [], "AP75": []}
    for drawn in bootstrap.draws(images, resamples, seed):
        evaluation.evalImgs = [
            found[k * areas * images + a * images + i] for k in range(categories) for a in range(areas) for i in drawn
        ]
        evaluation._paramsEval.imgIds = evaluation.params.imgIds = list(range(len(drawn)))
        with contextlib.redirect_stdout(io.StringIO()):
            evaluation.accumulate()
        precision = evaluation.eval["precision"][:, :, :, 0, at]
        for name, values in (("AP", precision), ("AP50", precision[:1]), ("AP75", precision[5:6])):
            kept = values[values > -1]
            out[name].append(float(kept.mean()) if kept.size else np.nan)
    return {k: np.array(v) for k, v in out.items()}


def ours(truth: dict, checked: list[dict], iou_type: str, most: int, cuts: list[int], resamples: int) -> dict:
    """The run evaluated a range of images at a time (cut at ``cuts``) and resampled."""
    parts = in_ranges(truth, checked, iou_type, most, cuts)
    evaluated = kept_detections.InMemory(parts, len(truth["categories"]), 4)
    return resampled_ap.resampled(evaluated, len(truth["categories"]), most, resamples, 0)


def close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(np.isnan(a), np.isnan(b)) and np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], atol=1e-12))


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    iou_type=st.sampled_from(["segm", "bbox"]),
    cuts=st.lists(st.integers(1, 5), max_size=3),
    most=st.sampled_from([2, 100]),
    digits=st.sampled_from([1, 2, 6]),
)
def test_each_resample_is_pycocotools_accumulate_of_the_drawn_images(
    tmp_path_factory: pytest.TempPathFactory, seed: int, iou_type: str, cuts: list[int], most: int, digits: int
) -> None:
    """Scores rounded to one digit tie across images and within one (the slow path, drawn order
    deciding); to six they mostly do not (the weighted path); ``most`` 2 leaves detections out."""
    folder = tmp_path_factory.mktemp("resampled")
    truth, detections = many_images(seed)
    rng = np.random.default_rng(seed)
    detections = [d | {"score": round(float(rng.random()), digits)} for d in detections]
    (folder / "results.json").write_text(json.dumps(detections))
    checked = results.check_results(folder / "results.json", detections, truth, {})
    mine = ours(truth, checked, iou_type, most, cuts, 40)
    theirs = pycocotools_resampled(truth, detections, iou_type, most, 40, 0)
    for name in resampled_ap.HEADLINE:
        assert close(mine[name], theirs[name]), name


def test_the_real_coco_subset_resamples_as_pycocotools_does(real_data, tmp_path: Path) -> None:
    """COCO's own val2017 annotations (80 real photographs, polygons and crowds) and a run made
    from them: every resample's AP, AP50, AP75 equal pycocotools' re-accumulation, masks and boxes."""
    truth_path = real_data("coco-tiny") / "annotations/instances_val2017.json"
    truth = json.loads(truth_path.read_text())
    run = real_shaped_run(truth, np.random.default_rng(2))
    (tmp_path / "results.json").write_text(json.dumps(run))
    checked = results.check_results(tmp_path / "results.json", run, truth, {})
    for iou_type in ("segm", "bbox"):
        mine = ours(truth, checked, iou_type, 100, [30, 30], 30)
        theirs = pycocotools_resampled(truth, run, iou_type, 100, 30, 0)
        for name in resampled_ap.HEADLINE:
            assert close(mine[name], theirs[name]), (iou_type, name)


@pytest.mark.parametrize("kept", ["none", "one image"])
def test_a_run_with_nothing_or_almost_nothing_to_curve_resamples_as_pycocotools(tmp_path: Path, kept: str) -> None:
    """No detection at all, or those of one image only: every resample's figures are still
    pycocotools' (0 where instances were drawn, none where none were)."""
    truth, detections = many_images(7)
    first = min(e["id"] for e in truth["images"])
    run = [] if kept == "none" else [d for d in detections if d["image_id"] == first]
    (tmp_path / "results.json").write_text(json.dumps(run))
    checked = results.check_results(tmp_path / "results.json", run, truth, {})
    mine = ours(truth, checked, "segm", 100, [2], 30)
    theirs = pycocotools_resampled(truth, run, "segm", 100, 30, 0) if run else None
    for name in resampled_ap.HEADLINE:
        if theirs is None:  # pycocotools refuses an empty results list; its figures would be 0
            assert np.all(mine[name] == 0.0), name
        else:
            assert close(mine[name], theirs[name]), name


@pytest.mark.parametrize(("digits", "ways"), [(None, {"weighted"}), (2, {"weighted", "laid out"})])
def test_ties_that_move_a_curve_are_laid_out_and_the_rest_weighted(digits: int | None, ways: set[str]) -> None:
    """Distinct scores take one weighted matrix; scores of two digits tie some detections that
    move a curve (laid out per resample) beside others that stand alone. Both kinds are in the
    runs the parity test above draws."""
    truth, detections = many_images(5)
    rng = np.random.default_rng(5)
    scores = rng.permutation(len(detections)) / len(detections) if digits is None else rng.random(len(detections))
    run = [
        d | {"score": float(s if digits is None else round(s, digits))} for d, s in zip(detections, scores, strict=True)
    ]
    engine = average_precision.Engine("segm", 100, average_precision.area_bounds(None))
    kept = kept_detections.InMemory(
        [engine.evaluate(copy.deepcopy(truth), results.check_results(Path("r.json"), run, truth, {}))],
        len(truth["categories"]), 4,
    )  # fmt: skip
    layout = resampled_ap.Layout.of(kept, np.arange(len(truth["categories"])), 100)
    moving = (layout.hits | layout.ignored) != 0
    found = {"weighted"} if (moving & ~layout.laid).any() else set()
    assert found | ({"laid out"} if layout.laid.any() else set()) == ways


def drawn_copies(truth: dict, detections: list[dict], drawn: np.ndarray) -> tuple[dict, list[dict]]:
    """A resample as a collection of its own: the drawn images, each a new image numbered in
    drawn order with its truth, its lists and its detections: scored as a whole, it gives the
    resample's figures by any reference tool."""
    ids = sorted(e["id"] for e in truth["images"])
    entry = {e["id"]: e for e in truth["images"]}
    images, annotations, copies = [], [], []
    for j, i in enumerate(drawn, start=1):
        images.append(entry[ids[i]] | {"id": j})
        annotations += [a | {"image_id": j} for a in truth["annotations"] if a["image_id"] == ids[i]]
        copies += [d | {"image_id": j} for d in detections if d["image_id"] == ids[i]]
    annotations = [a | {"id": k} for k, a in enumerate(annotations, start=1)]
    return truth | {"images": images, "annotations": annotations}, copies


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), most=st.sampled_from([300, 4]))
def test_lvis_resamples_are_lvis_eval_of_the_drawn_images(seed: int, most: int) -> None:
    """LVIS's federated AP and APr/APc/APf on each resample equal LVISEval scoring the drawn
    images as a collection of their own, each copy with its federated lists."""
    truth, detections = lvis_collection(seed, images=8)
    rng = np.random.default_rng(seed)
    detections = [d | {"score": round(float(rng.random()), 1)} for d in detections]  # ties too
    checked = results.check_results(Path("run.json"), detections, truth, {})
    engine = average_precision.Engine("segm", most, average_precision.area_bounds(None), lvis=True)
    ids = sorted(e["id"] for e in truth["images"])
    parts = []
    for chosen in (set(ids[:3]), set(ids[3:])):
        part = truth | {
            "images": [e for e in truth["images"] if e["id"] in chosen],
            "annotations": [dict(a) for a in truth["annotations"] if a["image_id"] in chosen],
        }
        mine = lvis_federated.capped([dict(d) for d in checked if d["image_id"] in chosen], most)
        parts.append(engine.evaluate(part, mine))
    groups = lvis_federated.frequency_groups(truth["categories"])
    evaluated = kept_detections.InMemory(parts, len(truth["categories"]), 4)
    mine = resampled_ap.resampled(evaluated, len(truth["categories"]), most, 8, 0, groups)
    for b, drawn in enumerate(bootstrap.draws(len(ids), 8, 0)):
        theirs = lvis_eval(*drawn_copies(truth, detections, drawn), "segm", most)
        for name in ("AP", "AP50", "AP75", "APr", "APc", "APf"):
            expected = np.nan if theirs[name] == -1 else theirs[name]
            assert close(mine[name][b : b + 1], np.array([expected])), (b, name)
