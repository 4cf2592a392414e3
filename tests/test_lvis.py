"""LVIS's federated AP is LVISEval's: the figures equal the ``lvis`` package's on the same files,
categories verified absent, not exhaustively annotated and never checked included."""

from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_instances import box_mask as instances_box
from test_instances import rle

from regionbench.scoring import results
from regionbench.scoring.measures import average_precision as instances

H, W = 48, 64
CATEGORIES = 8


def box_mask(x: int, y: int, w: int, h: int) -> np.ndarray:
    return instances_box(x, y, w, h, (H, W))


def lvis_collection(seed: int, images: int = 6) -> tuple[dict, list[dict]]:
    """An LVIS file of ``images`` images: each annotates a few categories (one not exhaustively)
    and verifies a few others absent; detections near the truth, of absent categories, of
    categories never checked, some images with more detections than the cap."""
    rng = np.random.default_rng(seed)
    frequencies = ["r", "c", "f"]
    categories = [
        {"id": c, "name": f"thing-{c}", "frequency": frequencies[c % 3], "synonyms": [f"thing-{c}"]}
        for c in range(1, CATEGORIES + 1)
    ]
    entries, annotations, detections = [], [], []
    for image in range(1, images + 1):
        present = sorted(int(c) for c in rng.choice(np.arange(1, CATEGORIES + 1), size=3, replace=False))
        rest = [c for c in range(1, CATEGORIES + 1) if c not in present]
        negative = sorted(int(c) for c in rng.choice(rest, size=2, replace=False))
        entries.append(
            {"id": image, "width": W, "height": H, "file_name": f"{image}.jpg", "neg_category_ids": negative,
             "not_exhaustive_category_ids": present[:1] if rng.random() < 0.6 else []}
        )  # fmt: skip
        for category in present:
            for _ in range(int(rng.integers(1, 4))):
                x, y = int(rng.integers(0, W - 20)), int(rng.integers(0, H - 20))
                w, h = int(rng.integers(3, 20)), int(rng.integers(3, 20))
                mask = box_mask(x, y, w, h)
                annotations.append(
                    {"id": len(annotations) + 1, "image_id": image, "category_id": category,
                     "segmentation": rle(mask), "area": float(mask.sum()), "bbox": [x, y, w, h], "iscrowd": 0}
                )  # fmt: skip
                for _ in range(int(rng.integers(0, 3))):  # near it, sometimes under another category
                    dx, dy = (int(v) for v in rng.integers(-3, 4, size=2))
                    nx, ny = min(max(x + dx, 0), W - w), min(max(y + dy, 0), H - h)
                    other = int(rng.integers(1, CATEGORIES + 1)) if rng.random() < 0.3 else category
                    detections.append(
                        {"image_id": image, "category_id": other, "segmentation": rle(box_mask(nx, ny, w, h)),
                         "bbox": [nx, ny, w, h], "score": float(rng.random())}
                    )  # fmt: skip
        for _ in range(int(rng.integers(0, 5))):  # anywhere, of any category: absent, unchecked, present
            x, y, w, h = int(rng.integers(0, W - 10)), int(rng.integers(0, H - 10)), 6, 8
            if rng.random() < 0.2:  # of no pixel: LVISEval leaves it out, COCOeval counts it wrong
                x, y, w, h = 0, 0, 0, 0
            detections.append(
                {"image_id": image, "category_id": int(rng.integers(1, CATEGORIES + 1)),
                 "segmentation": rle(box_mask(x, y, w, h)), "bbox": [x, y, w, h], "score": float(rng.random())}
            )  # fmt: skip
    order = rng.permutation(len(detections))
    truth = {"images": entries, "annotations": annotations, "categories": categories}
    return truth, [detections[k] for k in order]


def lvis_eval(truth: dict, detections: list[dict], iou_type: str, most: int) -> dict[str, float]:
    """The ``lvis`` package's figures. Version 0.5.3 still calls ``np.float``, which NumPy 1.24
    removed: the alias is given back for the call."""
    from lvis import LVIS, LVISEval, LVISResults

    logging.getLogger("lvis").setLevel(logging.ERROR)
    gt = LVIS.__new__(LVIS)
    gt.logger, gt.dataset = (
        logging.getLogger("lvis"),
        {
            "images": [dict(e) for e in truth["images"]],
            "annotations": [dict(a) for a in truth["annotations"]],
            "categories": [dict(c) for c in truth["categories"]],
        },
    )
    gt._create_index()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
        patch.setattr(np, "float", float, raising=False)
        evaluation = LVISEval(gt, LVISResults(gt, [dict(d) for d in detections], max_dets=most), iou_type)
        evaluation.params.max_dets = most
        evaluation.run()
    return {k: float(v) for k, v in evaluation.results.items()}


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    iou_type=st.sampled_from(["segm", "bbox"]),
    most=st.sampled_from([300, 4]),
    states=st.sampled_from([instances.STATES, 1, 60]),
)
def test_the_figures_are_lvis_eval_s(seed: int, iou_type: str, most: int, states: int) -> None:
    """``--method lvis``: the 13 figures equal LVISEval's to 1e-9, at its 300 detections an image
    and at a cap that drops some, the engine run on all categories at once or a few at a time
    (``STATES``: the images' lists name categories of other runs)."""
    truth, detections = lvis_collection(seed)
    checked = results.check_results(Path("run.json"), detections, truth, {})
    saved = instances.STATES
    try:
        instances.STATES = states
        ours = instances.score(truth, checked, iou_type, (most,), method="lvis")["stats"]
    finally:
        instances.STATES = saved
    theirs = lvis_eval(truth, detections, iou_type, most)
    assert list(ours) == list(theirs)
    assert np.allclose(list(ours.values()), list(theirs.values()), rtol=0, atol=1e-9), (ours, theirs)


@pytest.mark.parametrize(
    ("second_image", "lvis_ap"),
    [
        ({"neg_category_ids": [], "not_exhaustive_category_ids": []}, 1.0),  # nobody checked: dropped
        ({"neg_category_ids": [1], "not_exhaustive_category_ids": []}, 0.5),  # verified absent: wrong
    ],
)
def test_federated_rules_decide_what_a_detection_of_an_unannotated_image_is(second_image: dict, lvis_ap: float) -> None:
    """One instance of a category on the first image, found; a better-scored detection of the same
    category on the second image, which has none. COCO counts it false (AP 0.5 at every IoU);
    LVIS counts it only where the second image's file verified the category absent."""
    one = box_mask(4, 4, 20, 20)
    truth = {
        "images": [
            {"id": 1, "width": W, "height": H, "neg_category_ids": [], "not_exhaustive_category_ids": []},
            {"id": 2, "width": W, "height": H} | second_image,
        ],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "segmentation": rle(one), "area": float(one.sum()),
             "bbox": [4, 4, 20, 20], "iscrowd": 0},
            {"id": 2, "image_id": 2, "category_id": 2, "segmentation": rle(one), "area": float(one.sum()),
             "bbox": [4, 4, 20, 20], "iscrowd": 0},
        ],
        "categories": [{"id": 1, "name": "cat", "frequency": "r"}, {"id": 2, "name": "dog", "frequency": "f"}],
    }  # fmt: skip
    run = [
        {"image_id": 1, "category_id": 1, "segmentation": rle(one), "score": 0.5},
        {"image_id": 2, "category_id": 1, "segmentation": rle(box_mask(30, 30, 8, 8)), "score": 0.9},
    ]
    checked = results.check_results(Path("run.json"), run, truth, {})
    coco = instances.score(truth, checked, "segm")["per_category_ap"][1]["ap"]
    lvis = instances.score(truth, checked, "segm", (300,), method="lvis")
    assert coco == pytest.approx(0.5, abs=0.01)
    assert lvis["per_category_ap"][1] == {"name": "cat", "ap": pytest.approx(lvis_ap, abs=0.01), "frequency": "r"}
    assert lvis["stats"]["APr"] == lvis["per_category_ap"][1]["ap"] and lvis["stats"]["APc"] == -1
    assert lvis["stats"] == pytest.approx(lvis_eval(truth, run, "segm", 300), abs=1e-12)


def test_an_unmatched_detection_of_a_category_not_annotated_exhaustively_is_not_counted() -> None:
    """The second image shows the category, not every instance annotated: a detection there that
    takes no instance is ignored, one that does is a hit."""
    one, two = box_mask(4, 4, 20, 20), box_mask(30, 20, 10, 10)
    truth = {
        "images": [{"id": 1, "width": W, "height": H, "neg_category_ids": [], "not_exhaustive_category_ids": [1]}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": rle(one),
                         "area": float(one.sum()), "bbox": [4, 4, 20, 20], "iscrowd": 0}],
        "categories": [{"id": 1, "name": "cat", "frequency": "c"}],
    }  # fmt: skip
    run = [
        {"image_id": 1, "category_id": 1, "segmentation": rle(two), "score": 0.9},
        {"image_id": 1, "category_id": 1, "segmentation": rle(one), "score": 0.5},
    ]
    checked = results.check_results(Path("run.json"), run, truth, {})
    assert instances.score(truth, checked, "segm")["stats"]["AP"] == pytest.approx(0.5, abs=0.01)
    assert instances.score(truth, checked, "segm", (300,), method="lvis")["stats"]["AP"] == pytest.approx(1.0)


def test_an_empty_detection_beside_the_truth_scores_as_lvis_eval() -> None:
    """Two images of a generated LVIS run (the 20,000-image benchmark's), one category, one
    detection of no pixel: LVISEval takes only what covers a pixel (``get_ann_ids``: area > 0),
    where COCOeval counts it a false positive, so its figures are LVISEval's."""
    import copy
    import json
    from pathlib import Path

    case = json.loads((Path(__file__).parent / "data" / "lvis-empty-detection.json").read_text())
    truth, detections = case["truth"], case["detections"]
    checked = results.check_results(Path("run.json"), copy.deepcopy(detections), copy.deepcopy(truth), {})
    ours = instances.score(copy.deepcopy(truth), checked, "segm", (300,), method="lvis")["stats"]
    theirs = lvis_eval(copy.deepcopy(truth), copy.deepcopy(detections), "segm", 300)
    assert np.allclose(list(ours.values()), list(theirs.values()), rtol=0, atol=1e-9), (ours, theirs)
