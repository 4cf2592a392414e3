"""Panoptic quality equals the COCO panoptic API's ``pq_compute`` (panopticapi-lite) on generated
image pairs: crowds, VOID, predicted categories absent from the truth, empty images; and the
rules the API does not have (several crowds of a category, hierarchy levels) as stated."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from panopticapi import evaluation as reference  # the reference; make installs it (Makefile: why --no-deps)
from PIL import Image

from regionbench.io.panoptic import id_to_rgb, rgb_to_id
from regionbench.scoring.measures import panoptic_quality as measures

# (id, isthing): things 1-3, stuff 4-6
CATEGORIES = {1: 1, 2: 1, 3: 1, 4: 0, 5: 0, 6: 0}
H, W = 10, 12


@st.composite
def image_pair(draw: st.DrawFn) -> tuple[np.ndarray, list[dict], np.ndarray, list[dict]]:
    """A truth map and segments (one crowd per category at most, VOID anywhere, possibly empty)
    and a prediction made from it (segments moved, relabelled, merged, invented, dropped)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    segments = draw(st.integers(0, 6))
    truth = rng.integers(0, segments + 1, size=(H, W)) if segments else np.zeros((H, W), np.int64)
    if segments and draw(st.booleans()):  # blocky segments: matches happen
        truth = np.repeat(np.repeat(rng.integers(0, segments + 1, size=(H // 2, W // 3)), 2, 0), 3, 1)
    truth_ids = rng.choice(np.arange(1, 1 << 24), size=segments + 1, replace=False)
    truth_ids[0] = 0
    truth_map = truth_ids[truth]
    crowded: set[int] = set()
    truth_info = []
    for k in range(1, segments + 1):
        category = int(rng.choice(list(CATEGORIES)))
        crowd = category not in crowded and CATEGORIES[category] == 1 and rng.random() < 0.25
        crowded |= {category} if crowd else set()
        area = int((truth == k).sum())
        if area:
            truth_info.append({"id": int(truth_ids[k]), "category_id": category, "iscrowd": int(crowd), "area": area})
    predicted = truth.copy()
    if draw(st.booleans()):
        predicted = np.roll(predicted, draw(st.integers(-2, 2)), axis=draw(st.integers(0, 1)))
    noise = rng.random((H, W)) < draw(st.sampled_from([0.0, 0.1, 0.4]))
    predicted[noise] = rng.integers(0, segments + 3, size=int(noise.sum()))
    predicted_ids = rng.choice(np.arange(1, 1 << 24), size=segments + 3, replace=False)
    predicted_ids[0] = 0
    predicted_map = predicted_ids[predicted]
    by_truth = {s["id"]: s["category_id"] for s in truth_info}
    predicted_info = []
    for k in range(1, segments + 3):
        if not (predicted == k).any():
            continue
        category = by_truth.get(int(truth_ids[k]) if k <= segments else -1)
        if category is None or rng.random() < 0.2:
            category = int(rng.choice(list(CATEGORIES)))  # relabelled, or invented (maybe absent from the truth)
        predicted_info.append({"id": int(predicted_ids[k]), "category_id": category, "iscrowd": 0})
    return truth_map, truth_info, predicted_map, predicted_info


def reference_pq(tmp: Path, pairs: list[tuple[np.ndarray, list[dict], np.ndarray, list[dict]]]) -> dict:
    """``pq_compute``'s figures of the pairs, written as its files (one process)."""
    for side in ("gt", "pred"):
        (tmp / side).mkdir(parents=True, exist_ok=True)
    annotations = []
    for k, (truth, truth_info, predicted, predicted_info) in enumerate(pairs):
        Image.fromarray(id_to_rgb(truth)).save(tmp / "gt" / f"{k}.png")
        Image.fromarray(id_to_rgb(predicted)).save(tmp / "pred" / f"{k}.png")
        annotations.append(
            ({"image_id": k, "file_name": f"{k}.png", "segments_info": truth_info},
             {"image_id": k, "file_name": f"{k}.png", "segments_info": [dict(s) for s in predicted_info]})
        )  # fmt: skip
    categories = {i: {"id": i, "isthing": t, "name": str(i)} for i, t in CATEGORIES.items()}
    stat = reference.pq_compute_single_core.__wrapped__(0, annotations, str(tmp / "gt"), str(tmp / "pred"), categories)
    out = {}
    for name, isthing in (("all", None), ("things", True), ("stuff", False)):
        try:
            out[name], per_class = stat.pq_average(categories, isthing=isthing)
        except ZeroDivisionError:  # no category counted: the API divides by zero
            out[name], per_class = {"pq": None, "sq": None, "rq": None, "n": 0}, {}
        if name == "all":
            out["per_class"] = per_class
    return out


def ours(pairs: list[tuple[np.ndarray, list[dict], np.ndarray, list[dict]]]) -> tuple[np.ndarray, np.ndarray]:
    """Our tally of the pairs, category index = category id - 1, read back through the PNG encoding."""
    tally = np.zeros((len(CATEGORIES), 4))
    for truth, truth_info, predicted, predicted_info in pairs:
        gt = measures.dense(
            rgb_to_id(id_to_rgb(truth)) * np.isin(truth, [s["id"] for s in truth_info]),
            {s["id"]: (s["category_id"] - 1, bool(s["iscrowd"])) for s in truth_info},
        )
        pred = measures.dense(
            rgb_to_id(id_to_rgb(predicted)), {s["id"]: (s["category_id"] - 1, False) for s in predicted_info}
        )
        tally += measures.match(gt, pred, len(CATEGORIES)).tally
    return tally, np.array([CATEGORIES[i] == 1 for i in sorted(CATEGORIES)])


def close(a: object, b: object) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(float(a) - float(b)) <= 1e-12)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(image_pair(), min_size=1, max_size=4))
def test_panoptic_quality_equals_the_coco_panoptic_api(tmp_path_factory: pytest.TempPathFactory, pairs: list) -> None:
    expected = reference_pq(tmp_path_factory.mktemp("pq"), pairs)
    tally, things = ours(pairs)
    found = measures.summary(tally, things)
    for name in ("all", "things", "stuff"):
        for key in ("pq", "sq", "rq", "n"):
            assert close(found[name][key], expected[name][key]), (name, key, found, expected)
    per_class = measures.per_category(tally)
    for category_id, figures in expected["per_class"].items():
        k = sorted(CATEGORIES).index(category_id)
        assert all(close(per_class[k, j], figures[key]) for j, key in enumerate(("pq", "sq", "rq")))


def test_every_crowd_of_a_category_counts_together() -> None:
    """Two crowd segments of one category: a prediction lying two-thirds on them is left out
    (the API, taking only one, would count it a false positive)."""
    truth = np.array([[1, 1, 2, 2, 3, 3]] * 2)
    gt = measures.dense(truth, {1: (0, True), 2: (0, True), 3: (1, False)})
    pred = measures.dense(np.array([[7, 7, 7, 7, 7, 7]] * 2), {7: (0, False)})
    tally = measures.match(gt, pred, 2).tally
    assert tally[0].tolist() == [0, 0, 0, 0]  # crowd-covered: no FP, crowds are never FN
    assert tally[1].tolist() == [0, 0, 0, 1]


def test_a_coarser_level_matches_what_the_leaf_level_does_not() -> None:
    """A dog segment predicted as cat: a FP and a FN among the leaves, a match at ``animal``."""
    truth = np.array([[1, 1, 0], [1, 1, 0]])
    gt = measures.dense(truth, {1: (0, False)})  # 0 dog, 1 cat, 2 animal
    pred = measures.dense(truth, {1: (1, False)})
    leaf = measures.match(gt, pred, 3).tally
    assert leaf[0].tolist() == [0, 0, 0, 1] and leaf[1].tolist() == [0, 0, 1, 0]
    up = np.array([2, 2, 2])
    level = measures.match(gt, pred, 3, None, up[gt.category], up[pred.category]).tally
    assert level[2].tolist() == [1.0, 1, 0, 0]


def test_void_is_left_out_of_the_union_and_a_mostly_void_prediction_is_no_false_positive() -> None:
    truth = np.array([[1, 1, 1, 0, 0, 0]])
    gt = measures.dense(truth, {1: (0, False)})
    pred = measures.dense(np.array([[5, 5, 5, 5, 6, 6]]), {5: (0, False), 6: (0, False)})
    matched = measures.match(gt, pred, 1)
    assert matched.tally[0].tolist() == [1.0, 1, 0, 0]  # IoU 3 / (4 + 3 - 3 - 1) = 1; segment 6 all VOID
    assert matched.iou.tolist() == [0, 1.0, 0] and not matched.false_positive.any()


def test_a_map_id_the_segments_lack_is_named() -> None:
    with pytest.raises(ValueError, match=r"\[9\]"):
        measures.dense(np.array([[1, 9]]), {1: (0, False)})


def test_the_reference_reads_our_encoding(tmp_path: Path) -> None:
    ids = np.array([[0, 1, 256, 65536, (1 << 24) - 1]], dtype=np.uint32)
    Image.fromarray(id_to_rgb(ids)).save(tmp_path / "x.png")
    from panopticapi.utils import rgb2id

    assert np.array_equal(rgb2id(np.array(Image.open(tmp_path / "x.png"), dtype=np.uint32)), ids)
    assert json.dumps(rgb_to_id(id_to_rgb(ids)).tolist()) == json.dumps(ids.tolist())


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.lists(st.integers(0, 2**32 - 1), max_size=6), st.booleans())
def test_painting_from_runs_is_painting_the_masks_in_order(
    height: int, width: int, seeds: list[int], apart: bool
) -> None:
    """``paint`` of the regions' uncompressed RLE equals their decoded masks painted in order, a
    later region over an earlier one, whether they overlap or not."""
    from pycocotools import mask as coco_mask

    masks = [np.random.default_rng(seed).random((height, width)) < 0.4 for seed in seeds]
    if apart:  # a partition, as a panoptic truth is
        owner = np.full((height, width), -1)
        for k, mask in enumerate(masks):
            owner[mask] = k
        masks = [owner == k for k in range(len(masks))]
    expected = np.zeros((height, width), np.int32)
    runs = []
    for k, mask in enumerate(masks, start=1):
        expected[mask] = k
        rle = coco_mask.encode(np.asfortranarray(mask, dtype=np.uint8))
        runs.append(coco_mask_counts(rle, height, width))
    assert np.array_equal(measures.paint((height, width), runs), expected)


def coco_mask_counts(rle: dict, height: int, width: int) -> list[int]:
    """The uncompressed counts of a compressed RLE, by decoding it (the test's own way)."""
    from pycocotools import mask as coco_mask

    flat = coco_mask.decode(rle).ravel(order="F")
    changes = np.flatnonzero(np.diff(np.concatenate([[0], flat, [1 - flat[-1]]])))  # run boundaries
    counts = np.diff(np.concatenate([[0], changes]))
    return [int(c) for c in counts]


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    ids=st.lists(st.integers(1, (1 << 24) - 1), min_size=1, max_size=30, unique=True),
    shared=st.booleans(),
)
def test_a_map_s_ids_become_their_places_in_id_order_whatever_their_low_bits(
    data: st.DataObject, ids: list[int], shared: bool
) -> None:
    """``dense`` gives each pixel its id's place among VOID and the sorted ids, by the small table
    or, where two ids share their low 16 bits, by search; an id the segments lack is one line
    naming it."""
    if shared:  # a second id with the first one's low bits
        ids = sorted({*ids, ((ids[0] >> 16) ^ 1) << 16 | (ids[0] & 0xFFFF) or 1})
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    picture = rng.choice(np.array([0, *ids]), size=(7, 9)).astype(np.int32)
    found = measures.dense(picture, {i: (k % 3, False) for k, i in enumerate(ids)})
    place = {v: k for k, v in enumerate([0, *sorted(ids)])}
    assert found.ids.tolist() == [[place[v] for v in row] for row in picture.tolist()]
    stranger = data.draw(st.integers(1, (1 << 24) - 1).filter(lambda v: v not in ids))
    picture[3, 4] = stranger
    with pytest.raises(ValueError, match=f"segment ids \\[{stranger}\\] are in the map but not in its segments"):
        measures.dense(picture, {i: (0, False) for i in ids})
