"""Instance scoring is COCO's: the figures equal pycocotools' COCOeval run on the same files,
crowd regions, empty images and duplicate detections included."""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycocotools import mask as coco_mask

from regionbench.scoring import results
from regionbench.scoring.measures import average_precision as instances

H, W = 40, 60


def rle(mask: np.ndarray) -> dict:
    encoded = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": list(mask.shape), "counts": encoded["counts"].decode()}


def box_mask(x: int, y: int, w: int, h: int, size: tuple[int, int] = (H, W)) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    mask[y : y + h, x : x + w] = True
    return mask


def truth_and_detections(seed: int) -> tuple[dict, list[dict]]:
    """Three images (the last without ground truth), two categories, a crowd region, and
    detections near the truth, duplicated, misplaced and on the empty image."""
    rng = np.random.default_rng(seed)
    annotations, detections = [], []
    for image in (1, 2):
        for k in range(int(rng.integers(2, 6))):
            x, y = int(rng.integers(0, W - 12)), int(rng.integers(0, H - 12))
            w, h = int(rng.integers(4, 12)), int(rng.integers(4, 12))
            mask = box_mask(x, y, w, h)
            category = int(rng.integers(1, 3))
            crowd = int(k == 0 and image == 2)
            annotations.append(
                {"id": len(annotations) + 1, "image_id": image, "category_id": category, "segmentation": rle(mask),
                 "area": float(mask.sum()) + (17.5 if crowd else 0.0), "bbox": [x, y, w, h], "iscrowd": crowd}
            )  # fmt: skip
            for _ in range(int(rng.integers(0, 3))):  # duplicates, shifted a little
                dx, dy = int(rng.integers(-2, 3)), int(rng.integers(-2, 3))
                moved = box_mask(max(x + dx, 0), max(y + dy, 0), w, h)
                detections.append(
                    {"image_id": image, "category_id": category, "segmentation": rle(moved),
                     "bbox": [max(x + dx, 0), max(y + dy, 0), w, h], "score": float(rng.random())}
                )  # fmt: skip
    detections.append(
        {"image_id": 3, "category_id": 1, "segmentation": rle(box_mask(1, 1, 5, 5)), "bbox": [1, 1, 5, 5], "score": 0.9}
    )
    truth = {
        "images": [{"id": i, "width": W, "height": H, "file_name": f"{i}.png"} for i in (1, 2, 3)],
        "annotations": annotations,
        "categories": [{"id": 1, "name": "sky"}, {"id": 2, "name": "grass"}],
    }
    return truth, detections


def cocoeval(truth: Path, results: Path, iou_type: str, max_dets: list[int]) -> np.ndarray:
    """pycocotools' 12 figures of the two files. Its ``summarize`` reads AP at 100 detections
    whatever ``maxDets`` holds (-1 when 100 is not among them): the figures are read here from
    its accumulated arrays at the largest ``maxDets``, as its summary does at the default."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(truth))
        evaluation = COCOeval(gt, gt.loadRes(str(results)), iou_type)
        evaluation.params.maxDets = max_dets
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    if max_dets[-1] == 100:
        return evaluation.stats
    p = evaluation.params
    iou = {
        None: slice(None),
        0.5: np.where(np.isclose(p.iouThrs, 0.5))[0],
        0.75: np.where(np.isclose(p.iouThrs, 0.75))[0],
    }

    def summary(ap: bool, area: str = "all", at: float | None = None, most: int = max_dets[-1]) -> float:
        a, m = p.areaRngLbl.index(area), p.maxDets.index(most)
        values = (
            evaluation.eval["precision"][iou[at], :, :, a, m] if ap else evaluation.eval["recall"][iou[at], :, a, m]
        )
        values = values[values > -1]
        return float(values.mean()) if values.size else -1.0

    return np.array(
        [summary(True), summary(True, at=0.5), summary(True, at=0.75)]
        + [summary(True, area) for area in ("small", "medium", "large")]
        + [summary(False, most=m) for m in max_dets]
        + [summary(False, area) for area in ("small", "medium", "large")]
    )


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), iou_type=st.sampled_from(["segm", "bbox"]), most=st.sampled_from([100, 300]))
def test_the_figures_are_cocoeval_s(
    tmp_path_factory: pytest.TempPathFactory, seed: int, iou_type: str, most: int
) -> None:
    folder = tmp_path_factory.mktemp("coco")
    truth, detections = truth_and_detections(seed)
    (folder / "truth.json").write_text(json.dumps(truth))
    (folder / "results.json").write_text(json.dumps(detections))
    read = results.read_results(folder / "results.json", truth, {})
    ours = instances.score(truth, read, iou_type, (1, 10, most))
    # detections of a category the truth lacks: COCOeval leaves them out, and so do we
    elsewhere = [d | {"category_id": 9, "score": 0.99} for d in detections[:3]]
    (folder / "more.json").write_text(json.dumps(detections + elsewhere))
    more = instances.score(truth, results.read_results(folder / "more.json", truth, {}), iou_type, (1, 10, most))
    assert more["stats"] == ours["stats"]
    with_absent = cocoeval(folder / "truth.json", folder / "more.json", iou_type, [1, 10, most])
    assert np.allclose(list(more["stats"].values()), with_absent, rtol=0, atol=1e-12)
    theirs = cocoeval(folder / "truth.json", folder / "results.json", iou_type, [1, 10, most])
    assert np.allclose(list(ours["stats"].values()), theirs, rtol=0, atol=1e-12)
    assert ours["crowd"] == 1 and ours["images"] == 3


def large_shapes(seed: int) -> tuple[dict, list[dict]]:
    """Ellipses and boxes of 20-120 px on 240x180 images (one a crowd), and detections that move
    or grow them by a few pixels (where mask and boundary IoU part) or invent one, scored."""
    from pycocotools import mask as coco_mask

    rng = np.random.default_rng(seed)
    height, width = 180, 240
    yy, xx = np.mgrid[0:height, 0:width]

    def encoded(mask: np.ndarray) -> dict:
        rle = coco_mask.encode(np.asfortranarray(mask, dtype=np.uint8))
        return {"size": rle["size"], "counts": rle["counts"].decode()}

    def shape() -> np.ndarray:
        w, h = rng.integers(20, 120, size=2)
        x, y = rng.integers(0, width - w), rng.integers(0, height - h)
        if rng.random() < 0.5:
            return (xx >= x) & (xx < x + w) & (yy >= y) & (yy < y + h)
        return ((xx - x - w / 2) / (w / 2)) ** 2 + ((yy - y - h / 2) / (h / 2)) ** 2 < 1

    annotations, detections = [], []
    for image_id in (1, 2, 3):
        for _ in range(int(rng.integers(1, 5))):
            mask = shape()
            rle = encoded(mask)
            crowd = int(len(annotations) == 1)
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, "category_id": int(rng.integers(1, 3)),
                                "segmentation": rle, "area": int(mask.sum()), "iscrowd": crowd,
                                "bbox": [float(v) for v in coco_mask.toBbox(rle)]})  # fmt: skip
            moved = np.roll(mask, tuple(rng.integers(-4, 5, size=2)), axis=(0, 1))
            detections.append({"image_id": image_id, "category_id": annotations[-1]["category_id"],
                               "segmentation": encoded(moved), "score": float(rng.random())})  # fmt: skip
        detections.append(
            {"image_id": image_id, "category_id": 1, "segmentation": encoded(shape()), "score": float(rng.random())}
        )
    truth = {
        "images": [{"id": i, "width": width, "height": height, "file_name": f"{i}.png"} for i in (1, 2, 3)],
        "annotations": annotations,
        "categories": [{"id": 1, "name": "sky"}, {"id": 2, "name": "grass"}],
    }
    return truth, detections


def faster_coco_eval(truth: Path, results: Path, iou_type: str, **options: float) -> np.ndarray:
    """faster-coco-eval's 12 figures of the two files, as its README calls it."""
    from faster_coco_eval import COCO, COCOeval_faster

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(truth))
        evaluation = COCOeval_faster(gt, gt.loadRes(str(results)), iou_type, **options)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return np.asarray(evaluation.stats[:12])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), ratio=st.sampled_from([0.005, 0.02, 0.1]))
def test_boundary_figures_are_faster_coco_eval_s(
    tmp_path_factory: pytest.TempPathFactory, seed: int, ratio: float
) -> None:
    """Boundary AP (``--iou-type boundary``) equals faster-coco-eval's ``iouType="boundary"``
    (boundary-iou-api's) at any band width, the crowd region included; the thin instances the
    band covers whole are counted."""
    folder = tmp_path_factory.mktemp("boundary")
    truth, detections = large_shapes(seed)
    (folder / "truth.json").write_text(json.dumps(truth))
    (folder / "results.json").write_text(json.dumps(detections))
    read = results.read_results(folder / "results.json", truth, {})
    ours = instances.score(truth, read, "boundary", (1, 10, 100), dilation_ratio=ratio)
    theirs = faster_coco_eval(folder / "truth.json", folder / "results.json", "boundary", boundary_dilation_ratio=ratio)
    assert np.allclose(list(ours["stats"].values()), theirs, rtol=0, atol=1e-9)
    segm = instances.score(truth, read, "segm", (1, 10, 100))
    assert ours["stats"]["AP"] <= segm["stats"]["AP"] + 1e-12  # the smaller of mask and boundary IoU
    # the bands the engine made of the truth count the thin instances as bands made afresh do
    fresh = truth | {"annotations": [dict(a) for a in truth["annotations"]]}
    instances.Engine("boundary", 100, instances.area_bounds(None), ratio).evaluate(fresh, [dict(d) for d in read])
    assert all("boundary" in a for a in fresh["annotations"])
    assert instances.band_covers_mask(fresh["annotations"], ratio) == instances.band_covers_mask(
        truth["annotations"], ratio
    )


def test_the_band_covers_a_thin_instance_whole_and_a_large_one_not() -> None:
    from pycocotools import mask as coco_mask

    def rle(box: tuple[slice, slice]) -> dict:
        mask = np.zeros((200, 300), np.uint8, order="F")
        mask[box] = 1
        encoded = coco_mask.encode(mask)
        return {"size": encoded["size"], "counts": encoded["counts"].decode()}

    thin = {"iscrowd": 0, "segmentation": rle((slice(10, 14), slice(10, 200)))}
    large = {"iscrowd": 0, "segmentation": rle((slice(20, 180), slice(20, 280)))}
    crowd = dict(thin, iscrowd=1)
    assert instances.band_covers_mask([thin, large, crowd], 0.02) == 1
    assert instances.band_covers_mask([thin, large], 0.5) == 2


def test_results_that_cannot_be_scored_are_named(tmp_path: Path) -> None:
    truth, _ = truth_and_detections(0)
    bad = [
        {"image_id": 99, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5},
        {"image_id": 1, "category_id": 7, "bbox": [0, 0, 1, 1], "score": 0.5},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": float("nan")},
        {"image_id": 1, "category_id": 1, "segmentation": [[0, 0, 99, 0, 99, 5]], "score": 0.5},
        {"image_id": 1, "category_id": 1, "segmentation": {"size": [3, 3], "counts": "00"}, "score": 0.5},
        {"image_id": 1, "label": "sky", "score": 0.5},
    ]
    (tmp_path / "bad.json").write_text(json.dumps(bad).replace("NaN", "null"))
    with pytest.raises(instances.InstancesError) as refused:
        results.read_results(tmp_path / "bad.json", truth, {"sky": 1}, strict=True)
    text = str(refused.value)
    assert "\n" not in text
    for said in ("detection 0: image_id 99", "detection 1: category_id 7 is not a category of the truth", "detection 2: score None", "detection 3: a polygon leaves",
                 "detection 4: RLE size [3, 3]", "detection 5: neither a segmentation nor a bbox"):  # fmt: skip
        assert said in text, said
    (tmp_path / "absent.json").write_text(json.dumps(bad[1:2]))  # without --strict: left out, as COCOeval does
    assert results.read_results(tmp_path / "absent.json", truth, {"sky": 1}) == []
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(instances.InstancesError, match="a folder, not a COCO results file"):
        results.read_results(tmp_path / "folder.json", truth, {})


bounds = st.sampled_from([0.0, 100.0, 1024.0, 2000.0, 9216.0, 20000.0, 1e10])


@settings(max_examples=80, deadline=None)
@given(given_ranges=st.dictionaries(st.sampled_from(["small", "medium", "large"]), st.tuples(bounds, bounds)))
def test_area_ranges_never_overlap(given_ranges: dict[str, tuple[float, float]]) -> None:
    """Given ranges stand with COCO's for the others; an instance is never of two ranges: ranges
    that overlap are one line naming both and where each came from."""
    given_ranges = {k: (min(v), max(v)) for k, v in given_ranges.items() if v[0] != v[1]}
    merged = instances.AREA_RANGES | given_ranges
    order = [merged[k] for k in ("small", "medium", "large")]
    overlapping = any(a[1] > b[0] for a, b in itertools.pairwise(order))
    if not overlapping:
        assert instances.merged_area_ranges(given_ranges) == merged
        return
    with pytest.raises(instances.InstancesError) as refused:
        instances.merged_area_ranges(given_ranges)
    text = str(refused.value)
    assert "\n" not in text and " overlaps " in text and "only touch" in text
    named = [k for k in ("small", "medium", "large") if f"{k} {merged[k][0]:g}:{merged[k][1]:g} (" in text]
    assert len(named) == 2
    for k in named:
        origin = "(given)" if k in given_ranges else "(COCO's, as none was given)"
        assert f"{k} {merged[k][0]:g}:{merged[k][1]:g} {origin}" in text


def test_other_area_ranges_are_cocoeval_s_with_them(tmp_path: Path) -> None:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    truth, detections = truth_and_detections(3)
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    (tmp_path / "results.json").write_text(json.dumps(detections))
    ranges = {"small": (0.0, 40.0), "medium": (40.0, 90.0), "large": (90.0, 1e10)}
    ours = instances.score(
        truth, results.read_results(tmp_path / "results.json", truth, {}), "segm", area_ranges=ranges
    )
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(tmp_path / "truth.json"))
        evaluation = COCOeval(gt, gt.loadRes(str(tmp_path / "results.json")), "segm")
        evaluation.params.areaRng = [[0.0, 1e10], *(list(ranges[k]) for k in ("small", "medium", "large"))]
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    assert np.allclose([ours["stats"][k] for k in instances.STATS], evaluation.stats, rtol=0, atol=1e-12)
    with pytest.raises(instances.InstancesError, match="area range 'tiny'"):
        instances.score(truth, [], "segm", area_ranges={"tiny": (0.0, 1.0)})


def _by_pixels(truth: dict, detections: list[dict], max_dets: int) -> tuple[dict[int, float], dict[int, tuple]]:
    """``per_image_f1`` and ``matches`` by their definitions, on the decoded masks: IoU =
    |d and g| / |d or g|, a crowd's overlap = |d and c| / |d|. Returns the F1 per image and
    each detection's (outcome, IoU) by its index."""

    def mask(value: dict) -> np.ndarray:
        return coco_mask.decode({"size": value["size"], "counts": value["counts"].encode()}).astype(bool)

    out, outcomes = {}, {}
    for entry in truth["images"]:
        image = entry["id"]
        mine = [a for a in truth["annotations"] if a["image_id"] == image]
        matched = counted = 0
        counted += sum(1 for a in mine if not a["iscrowd"])
        for category in {a["category_id"] for a in mine} | {
            d["category_id"] for d in detections if d["image_id"] == image
        }:
            shapes = [mask(a["segmentation"]) for a in mine if a["category_id"] == category and not a["iscrowd"]]
            crowds = [mask(a["segmentation"]) for a in mine if a["category_id"] == category and a["iscrowd"]]
            found = [k for k, d in enumerate(detections) if (d["image_id"], d["category_id"]) == (image, category)]
            ranked = sorted(found, key=lambda k: -detections[k]["score"])
            outcomes |= {k: ("dropped", 0.0) for k in ranked[max_dets:]}
            taken = [False] * len(shapes)
            for k in ranked[:max_dets]:
                m = mask(detections[k]["segmentation"])
                every = [(m & g).sum() / (m | g).sum() for g in shapes]
                ious = [(-1.0 if t else iou) for iou, t in zip(every, taken, strict=True)]
                if ious and max(ious) >= 0.5:
                    taken[int(np.argmax(ious))] = True
                    matched += 1
                    counted += 1
                    outcomes[k] = ("matched", max(ious))
                elif any((m & c).sum() / max(m.sum(), 1) >= 0.5 for c in crowds):
                    outcomes[k] = ("crowd", max(every, default=0.0))
                else:
                    counted += 1
                    outcomes[k] = ("unmatched", max(every, default=0.0))
        out[image] = 2 * matched / counted if counted else 1.0
    return out, outcomes


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 100]))
def test_the_per_image_f1_is_its_definition_on_the_pixels(seed: int, max_dets: int) -> None:
    """What ``view --run`` sorts an instances run by, and draws each detection as: each image's
    F1 at IoU 0.5 and each detection's outcome and IoU, read from the engine's own matches, the
    same as counted on the decoded masks, duplicates, crowds, empty images and the detection cap
    included."""
    truth, detections = truth_and_detections(seed)
    checked = results.check_results(Path("results.json"), detections, truth, {})
    found = instances.Engine("segm", max_dets, instances.area_bounds(None)).evaluate(truth, checked, outcomes=True)
    ours = instances.per_image_f1(found.per_image)
    expected, outcomes = _by_pixels(truth, detections, max_dets)
    assert ours.keys() == expected.keys()
    assert all(ours[i] == pytest.approx(expected[i], abs=1e-12) for i in ours)
    assert sorted(found.outcomes) == list(range(len(detections)))
    for index, (outcome, iou) in found.outcomes.items():
        assert outcome == outcomes[index][0]
        assert iou == pytest.approx(outcomes[index][1], abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    iou_type=st.sampled_from(["segm", "bbox"]),
    cuts=st.lists(st.integers(1, 5), max_size=4),
    most=st.sampled_from([2, 100]),
)
def test_ranges_of_images_accumulate_to_cocoeval_s_figures(
    tmp_path_factory: pytest.TempPathFactory, seed: int, iou_type: str, cuts: list[int], most: int
) -> None:
    """A run evaluated a range of images at a time (any cut of the images, in id order) and
    accumulated gives pycocotools' figures, per category too: a run of many images is scored in
    memory by the range."""
    folder = tmp_path_factory.mktemp("ranges")
    truth, detections = many_images(seed)
    (folder / "truth.json").write_text(json.dumps(truth))
    (folder / "results.json").write_text(json.dumps(detections))
    checked = results.check_results(folder / "results.json", detections, truth, {})
    parts = in_ranges(truth, checked, iou_type, most, cuts)
    categories = {c["id"]: c["name"] for c in truth["categories"]}
    ours = instances.report(parts, categories, iou_type, (1, 10, most), None, {})
    theirs = cocoeval(folder / "truth.json", folder / "results.json", iou_type, [1, 10, most])
    assert np.allclose(list(ours["stats"].values()), theirs, rtol=0, atol=1e-12)
    whole = instances.score(truth, checked, iou_type, (1, 10, most))
    assert ours["per_category_ap"] == whole["per_category_ap"] and ours["stats"] == whole["stats"]


def in_ranges(truth: dict, checked: list[dict], iou_type: str, most: int, cuts: list[int]) -> list:
    """The run evaluated by the engine a range of images at a time, the images (in id order) cut
    at the running sums of ``cuts``: each range's ``Evaluated``."""
    ids = sorted(e["id"] for e in truth["images"])
    bounds = sorted({min(sum(cuts[: k + 1]), len(ids)) for k in range(len(cuts))} | {0, len(ids)})
    parts = []
    for low, high in itertools.pairwise(bounds):
        chosen = set(ids[low:high])
        part = {
            "images": [e for e in truth["images"] if e["id"] in chosen],
            "annotations": [dict(a) for a in truth["annotations"] if a["image_id"] in chosen],
            "categories": truth["categories"],
        }
        mine = [dict(d) for d in checked if d["image_id"] in chosen]
        parts.append(instances.Engine(iou_type, max(10, most), instances.area_bounds(None)).evaluate(part, mine))
    return parts


def many_images(seed: int) -> tuple[dict, list[dict]]:
    """Several of ``truth_and_detections``' collections side by side, their images renumbered
    apart and shuffled in the file, and detections whose scores tie across images."""
    truth: dict = {"images": [], "annotations": [], "categories": []}
    detections = []
    rng = np.random.default_rng(seed)
    for n in range(3):
        one, found = truth_and_detections(seed + n)
        shift = 10 * (n + 1) if n % 2 else 100 - 10 * n
        truth["categories"] = one["categories"]
        truth["images"] += [e | {"id": e["id"] + shift} for e in one["images"]]
        start = len(truth["annotations"])
        truth["annotations"] += [
            a | {"id": start + a["id"], "image_id": a["image_id"] + shift} for a in one["annotations"]
        ]
        detections += [d | {"image_id": d["image_id"] + shift, "score": round(d["score"], 1)} for d in found]
    order = rng.permutation(len(detections))
    return truth, [detections[k] for k in order]


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(
        ["negative box", "short polygon", "odd polygon", "rle overflow", "counts overflow", "bad counts"]
    ),
    size=st.integers(1, 40),
    at=st.integers(0, 5),
)
def test_a_detection_of_no_possible_shape_is_one_line_naming_it(
    tmp_path_factory: pytest.TempPathFactory, kind: str, size: int, at: int
) -> None:
    """Boxes of negative size, polygons of fewer than 3 points or an odd count, RLE runs that
    cover more pixels than the image: refused in one line naming the detection, never scored or
    a traceback."""
    from pycocotools import mask as coco_mask

    truth, _ = truth_and_detections(0)
    height, width = truth["images"][0]["height"], truth["images"][0]["width"]
    good = {"image_id": 1, "category_id": 1, "bbox": [1, 1, 5, 5], "score": 0.5}
    bad: dict = {"image_id": 1, "category_id": 1, "score": 0.5}
    if kind == "negative box":
        bad["bbox"] = [1, 1, -size, 5] if at % 2 else [1, 1, 5, -size]
    elif kind == "short polygon":
        bad["segmentation"] = [[1, 1, 2, 2][: 2 * (at % 3)] or [1, 1]]
    elif kind == "odd polygon":
        bad["segmentation"] = [[1, 1, 5, 1, 5, 5, float(size % 7)]]
    elif kind == "rle overflow":  # runs that go on past the last pixel, the region's included
        runs = [height * width - 1, size + 1]  # the region runs past the image's end
        bad["segmentation"] = coco_mask.frPyObjects(
            {"size": [height, width + size], "counts": runs}, height, width + size
        )
        bad["segmentation"] = {"size": [height, width], "counts": bad["segmentation"]["counts"].decode()}
    elif kind == "counts overflow":
        bad["segmentation"] = {"size": [height, width], "counts": [height * width + size, 1]}
    else:
        bad["segmentation"] = {"size": [height, width], "counts": [-size, height * width + size]}
    folder = tmp_path_factory.mktemp("bad")
    detections = [good] * at + [bad]
    (folder / "r.json").write_text(json.dumps(detections))
    with pytest.raises(instances.InstancesError) as refused:
        results.read_results(folder / "r.json", truth, {})
    text = str(refused.value)
    assert f"detection {at}:" in text and "\n" not in text, text


def compressed(runs: list[int]) -> str:
    """``runs`` as compressed RLE counts, as pycocotools' ``rleToString`` writes them (from the
    fourth run on, a difference to the run two before), negative runs included."""
    out = []
    for k, run in enumerate(runs):
        x, more = run - runs[k - 2] if k > 2 else run, True
        while more:
            c, x = x & 0x1F, x >> 5
            more = not ((c & 0x10 == 0 and x == 0) or (c & 0x10 and x == -1))
            out.append(chr((c | 0x20 if more else c) + 48))
    return "".join(out)


ENCODING = st.characters(min_codepoint=48, max_codepoint=111)  # the 64 characters of the counts


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(alphabet=ENCODING, max_size=24),
    runs=st.lists(st.integers(-4, 30), min_size=1, max_size=10),
    write_runs=st.booleans(),
)
def test_a_compressed_rle_is_taken_only_when_its_runs_make_the_mask(
    text: str, runs: list[int], write_runs: bool
) -> None:
    """Counts strings of the image's size (any text, or runs written as pycocotools writes them,
    some negative, most not making the image's pixels): taken only when the runs, decoded on
    their own here (``geometry.rle_runs``), are non-negative and make the whole mask; the
    others are one line. The engine's IoU loops for ever on the others."""
    from regionbench.core import geometry

    height, width = 6, 7
    counts = compressed(runs) if write_runs else text
    try:
        decoded = geometry.rle_runs(counts).tolist()
    except ValueError:
        decoded = None
    makes_mask = decoded is not None and sum(decoded) == height * width
    try:
        found = results.detection_shape({"segmentation": {"size": [height, width], "counts": counts}}, height, width)
    except ValueError as exc:
        assert not makes_mask and "\n" not in str(exc), (counts, decoded)
        return
    assert makes_mask, (counts, decoded)
    assert found["mask_area"] == sum(decoded[1::2]) == int(coco_mask.area(found["segmentation"]))
    full = coco_mask.encode(np.asfortranarray(np.ones((height, width), np.uint8)))
    expected = found["mask_area"] / (height * width)
    assert instances.engine_masks().iou([found["segmentation"]], [full], [0])[0][0] == pytest.approx(expected)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_categories_of_one_name_keep_their_own_ap(seed: int) -> None:
    """Every category's AP is keyed by its id with its name beside: categories that share a name
    (V3Det's ids share names) are never merged, and each AP is faster-coco-eval's for that id."""
    from faster_coco_eval import COCO, COCOeval_faster

    truth, detections = truth_and_detections(seed)
    ids = sorted(c["id"] for c in truth["categories"])
    for c in truth["categories"]:  # every category takes one name
        c["name"] = "same"
    checked = results.check_results(Path("run.json"), detections, truth, {})
    found = instances.score(truth, checked, "segm")["per_category_ap"]
    assert sorted(found) == ids and {found[c]["name"] for c in ids} == {"same"}
    gt = COCO()
    gt.dataset = copy.deepcopy(truth)
    gt.createIndex()
    evaluation = COCOeval_faster(gt, gt.loadRes(copy.deepcopy(checked)), "segm", print_function=lambda *a: None)
    evaluation.evaluate()
    evaluation.accumulate()
    precision = evaluation.eval["precision"][:, :, :, 0, -1]
    for k, c in enumerate(evaluation.params.catIds):
        values = precision[:, :, k][precision[:, :, k] > -1]
        assert found[c]["ap"] == (pytest.approx(float(values.mean()), abs=1e-12) if values.size else None)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), states=st.integers(1, 2_000), outcomes=st.booleans())
def test_a_range_evaluated_a_few_categories_at_a_time_is_evaluated_whole(
    seed: int, states: int, outcomes: bool
) -> None:
    """The engine runs on a few categories at a time where a range has many (``STATES``): every
    category's matches, the instances and each image's counts are those of one run."""
    truth, detections = many_images(seed)
    checked = results.check_results(Path("run.json"), detections, truth, {})
    engine = instances.Engine("segm", 100, instances.area_bounds(None))
    whole = engine.evaluate(copy.deepcopy(truth), copy.deepcopy(checked), outcomes)
    saved = instances.STATES
    try:
        instances.STATES = states
        parts = engine.evaluate(copy.deepcopy(truth), copy.deepcopy(checked), outcomes)
    finally:
        instances.STATES = saved
    assert pickle.dumps(parts) == pickle.dumps(whole)


@given(
    st.sampled_from(["image_id", "category_id"]),
    st.one_of(
        st.integers(1, 500).map(str),
        st.integers(1, 500).map(float),
        st.booleans(),
        st.lists(st.integers(), max_size=2),
        st.just(213),
    ),
)
def test_an_id_that_is_not_an_integer_is_named_as_what_it_is(key: str, value: object) -> None:
    """Ids given as text ("213") or with a decimal point (213.0) are a type error in one line,
    never looked up (213.0 == 213 in Python) nor reported as an image or category that is missing."""
    from regionbench.scoring.results import Checker

    header = {"images": [{"id": 213, "height": 4, "width": 4}], "categories": [{"id": 213, "name": "a"}]}
    checker = Checker(header, {"a": 213})
    detection = {"image_id": 213, "category_id": 213, "bbox": [0, 0, 2, 2], "score": 0.5} | {key: value}
    taken = checker.take(0, detection)
    if type(value) is int:
        assert taken is not None and not checker.problems
        return
    assert taken is None and len(checker.problems) == 1
    said = checker.problems[0]
    assert said.startswith(f"detection 0: {key} ")
    if isinstance(value, str):
        assert "is text; write ids as JSON integers" in said
    elif isinstance(value, float):
        assert "is a decimal number; write ids as JSON integers" in said
    else:
        assert "is not an id" in said


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 30),
    data=st.data(),
    twice=st.sampled_from(["image_id", "category_id", "score", "bbox", "segmentation", "size", "counts"]),
)
def test_a_key_given_twice_in_a_detection_is_one_line_naming_it(
    tmp_path_factory: pytest.TempPathFactory, count: int, data: st.DataObject, twice: str
) -> None:
    """A key written twice in one object of a results file (the detection's own, or its
    segmentation's), which JSON readers take as the last value without a word, is refused in one
    line naming the detection and the key, whichever detection it is; without it the file reads."""
    at = data.draw(st.integers(0, count - 1))
    pieces = []
    for k in range(count):
        segmentation = '{"size": [4, 4], "counts": "04"}'
        fields = ['"image_id": 1', '"category_id": 1', '"score": 0.5', '"bbox": [0, 0, 2, 2]']
        if k == at and twice in ("size", "counts"):
            segmentation = segmentation.replace(
                "}", f', "{twice}": {"[4, 4]" if twice == "size" else chr(34) + "04" + chr(34)}}}'
            )
        fields.append(f'"segmentation": {segmentation}')
        if k == at and twice not in ("size", "counts"):
            fields.append(next(f for f in fields if f.startswith(f'"{twice}"')))
        pieces.append("{" + ", ".join(fields) + "}")
    path = tmp_path_factory.mktemp("twice") / "run.json"
    path.write_text("[" + ", ".join(pieces) + "]")
    with pytest.raises(instances.InstancesError) as refused:
        list(results.stream_items(path))
    said = str(refused.value)
    assert said == (
        f"{path}: detection {at}: key {twice!r} given twice in one object (JSON readers keep the last one without a "
        "word); write each key once"
    )
    path.write_text("[" + ", ".join(pieces[:at]) + "]")  # the detections before it read as they are
    assert len(list(results.stream_items(path))) == at


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["bom", "utf-16", "utf-32", "spaces"]), st.integers(0, 70_000))
def test_a_results_file_s_encoding_and_leading_space_are_named_or_read(
    tmp_path_factory, kind: str, spaces: int
) -> None:
    """A byte-order mark, UTF-16 or UTF-32 is named as what it is, in one line; any amount of
    whitespace before the list is read past, as JSON allows."""
    path = tmp_path_factory.mktemp("enc") / "run.json"
    text = json.dumps([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}])
    data = {
        "bom": b"\xef\xbb\xbf" + text.encode(),
        "utf-16": text.encode("utf-16"),
        "utf-32": text.encode("utf-32-le"),
        "spaces": (" \n\t" * spaces).encode()[:spaces] + text.encode(),
    }[kind]
    path.write_bytes(data)
    if kind == "spaces":
        assert [d["image_id"] for d in results.stream_items(path)] == [1]
        return
    with pytest.raises(instances.InstancesError) as raised:
        list(results.stream_items(path))
    said = str(raised.value)
    assert "\n" not in said and said.startswith(str(path))
    assert ("byte-order mark" in said) if kind == "bom" else ("UTF-16 or UTF-32" in said)


@settings(max_examples=10, deadline=None)
@given(st.integers(33, 200_000), st.booleans())
def test_a_results_file_nested_too_deep_is_one_line_in_bounded_memory(
    tmp_path_factory, depth: int, closed: bool
) -> None:
    """A file of nested lists (100,000 ``[`` grew the parser to 22 GB once): refused in one line
    before it is parsed; a detection's own depth (polygons, 4 levels) is read."""
    path = tmp_path_factory.mktemp("deep") / "run.json"
    path.write_text("[" * depth + ("]" * depth if closed else ""))
    with pytest.raises(instances.InstancesError, match=f"nested more than {results.MAX_DEPTH} deep") as raised:
        list(results.stream_items(path))
    assert "\n" not in str(raised.value)
    polygon = [{"image_id": 1, "category_id": 1, "segmentation": [[0, 0, 1, 0, 1, 1]], "score": 0.5}]
    path.write_text(json.dumps(polygon))
    assert [d["segmentation"] for d in results.stream_items(path)] == [[[0, 0, 1, 0, 1, 1]]]
