"""TIDE's error types and their dAP equal the reference code's (``tidecv``) on the same files:
generated runs with crowds, duplicates, wrong classes, poor localisation, background and missed
instances, masks and boxes."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_instances import large_shapes, truth_and_detections
from tidecv import TIDE, datasets  # make installs it (Makefile: why --no-deps)

from regionbench.scoring.measures import tide_errors as tide

NAMES = {"Cls": "Cls", "Loc": "Loc", "Both": "Both", "Dupe": "Dupe", "Bkg": "Bkg", "Miss": "Miss"}


def reference(truth: Path, results: Path, mode: str) -> tuple[float, dict, dict]:
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator = TIDE()
        run = evaluator.evaluate(datasets.COCO(str(truth)), datasets.COCOResult(str(results)), mode=mode, name="run")
        main = evaluator.get_main_errors()["run"]
        special = evaluator.get_special_errors()["run"]
    return run.ap, main, special


def by_image(truth: dict, detections: list[dict]) -> tuple[dict[int, list[dict]], dict[int, list[dict]]]:
    """The truth's instances and the detections by image, each named by its place in its file."""
    instances: dict[int, list[dict]] = {}
    for k, a in enumerate(truth["annotations"]):
        instances.setdefault(a["image_id"], []).append(dict(a, id=k))
    found: dict[int, list[dict]] = {}
    for k, d in enumerate(detections):
        found.setdefault(d["image_id"], []).append(dict(d, id=k))
    return instances, found


def ours(truth: dict, detections: list[dict], shape: str) -> dict:
    part = tide.collect([im["id"] for im in truth["images"]], *by_image(truth, detections), shape)
    return tide.summarize(part) | {"outcomes": part.outcomes}


def with_errors(seed: int) -> tuple[dict, list[dict]]:
    """``large_shapes`` with each kind of error made on purpose: a detection relabelled, one
    duplicated at a lower score, one moved far, one invented in the background."""
    truth, detections = large_shapes(seed)
    rng = np.random.default_rng(seed)
    more = []
    for d in detections:
        if rng.random() < 0.3:
            more.append(dict(d, category_id=3 - d["category_id"], score=float(rng.random())))  # the other class
        if rng.random() < 0.3:
            more.append(dict(d, score=d["score"] * 0.5))  # a duplicate
    return truth, detections + more


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), mode=st.sampled_from(["mask", "bbox"]), small=st.booleans())
def test_tide_equals_tidecv(tmp_path_factory: pytest.TempPathFactory, seed: int, mode: str, small: bool) -> None:
    folder = tmp_path_factory.mktemp("tide")
    truth, detections = truth_and_detections(seed) if small else with_errors(seed)
    if mode == "bbox":
        from pycocotools import mask as coco_mask

        for d in detections:
            if "bbox" not in d:
                rle = d["segmentation"]
                d["bbox"] = [
                    float(v)
                    for v in coco_mask.toBbox(
                        dict(rle, counts=rle["counts"].encode()) if isinstance(rle["counts"], str) else rle
                    )
                ]
    (folder / "truth.json").write_text(json.dumps(truth))
    (folder / "results.json").write_text(json.dumps(detections))
    ap, main, special = reference(
        folder / "truth.json", folder / "results.json", TIDE.MASK if mode == "mask" else TIDE.BOX
    )
    found = ours(truth, detections, "segmentation" if mode == "mask" else "bbox")
    assert found["ap"] == pytest.approx(ap, abs=1e-6)
    for kind in tide.MAIN:
        assert found["main"][kind] == pytest.approx(main[NAMES[kind]], abs=1e-6), (kind, found["main"], main)
    for kind in tide.SPECIAL:
        assert found["special"][kind] == pytest.approx(special[kind], abs=1e-6), (kind, found["special"], special)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), cut=st.integers(1, 2))
def test_parts_of_ranges_of_images_join_into_the_run_s(seed: int, cut: int) -> None:
    """The instances task collects TIDE a range of images at a time (on worker processes): the
    parts joined give the figures of the whole run, whatever the cut."""
    truth, detections = with_errors(seed)
    instances, found = by_image(truth, detections)
    images = [im["id"] for im in truth["images"]]
    whole = tide.summarize(tide.collect(images, instances, found))
    joined = tide.collect(images[:cut], instances, found)
    joined.add(tide.collect(images[cut:], instances, found))
    assert tide.summarize(joined) == whole


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), mode=st.sampled_from(["mask", "bbox"]), cut=st.integers(1, 2))
def test_ties_fall_in_the_truth_file_s_image_order_as_tidecv_s(
    tmp_path_factory: pytest.TempPathFactory, seed: int, mode: str, cut: int
) -> None:
    """Scores rounded to 0.1 (ties within and across images), a tenth of the detections exact
    copies, the truth file's images in any order: collected in id order, range by range, and
    summarized in the file's order, every figure equals tidecv's walking the file."""
    folder = tmp_path_factory.mktemp("ties")
    truth, detections = with_errors(seed)
    rng = np.random.default_rng(seed)
    detections = [dict(d, score=round(d["score"], 1)) for d in detections]
    detections += [dict(d) for d in detections if rng.random() < 0.1]
    truth["images"] = [truth["images"][k] for k in rng.permutation(len(truth["images"]))]
    shape = "segmentation" if mode == "mask" else "bbox"
    if mode == "bbox":
        from pycocotools import mask as coco_mask

        for d in detections:
            d.setdefault(
                "bbox",
                [
                    float(v)
                    for v in coco_mask.toBbox(dict(d["segmentation"], counts=d["segmentation"]["counts"].encode()))
                ],
            )
    (folder / "truth.json").write_text(json.dumps(truth))
    (folder / "results.json").write_text(json.dumps(detections))
    ap, main, special = reference(
        folder / "truth.json", folder / "results.json", TIDE.MASK if mode == "mask" else TIDE.BOX
    )
    instances, found = by_image(truth, detections)
    ids = sorted(im["id"] for im in truth["images"])
    part = tide.collect(ids[:cut], instances, found, shape)
    part.add(tide.collect(ids[cut:], instances, found, shape))
    ours = tide.summarize(part, {im["id"]: n for n, im in enumerate(truth["images"])})
    assert ours["ap"] == pytest.approx(ap, abs=1e-6)
    for kind in tide.MAIN:
        assert ours["main"][kind] == pytest.approx(main[NAMES[kind]], abs=1e-6), (kind, ours["main"], main)
    for kind in tide.SPECIAL:
        assert ours["special"][kind] == pytest.approx(special[kind], abs=1e-6), (kind, ours["special"], special)
