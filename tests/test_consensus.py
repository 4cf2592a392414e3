"""The consensus of several annotators and the reference annotator of subsets."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core import tables
from regionbench.pipeline import consensus, subsets
from regionbench.synthetic.plans import load_hierarchy

HIERARCHY = load_hierarchy()


def blob(seed: int, shape: tuple[int, int] = (20, 24)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mask = np.zeros(shape, dtype=bool)
    y, x = rng.integers(0, shape[0] - 6), rng.integers(0, shape[1] - 6)
    mask[y : y + rng.integers(4, 7), x : x + rng.integers(4, 7)] = True
    return mask


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(consensus.METHODS))
def test_two_identical_annotators_are_the_consensus(seed: int, method: str) -> None:
    rng = np.random.default_rng(seed)
    agreed = [(str(rng.choice(["sky", "man", "grass", "tree"])), blob(seed + k)) for k in range(3)]
    other = [("cloud", blob(seed + 100 + k)) for k in range(int(rng.integers(0, 4)))]
    found, problems = consensus.consensus({"a": agreed, "b": other, "c": agreed}, HIERARCHY, method=method)
    assert problems == []
    expected = sorted((label, mask.tobytes()) for label, mask in agreed)
    assert sorted((label, mask.tobytes()) for label, mask in found) == expected


def test_majority_masks_and_labels() -> None:
    base = np.zeros((10, 10), dtype=bool)
    base[2:8, 2:8] = True
    wider = base.copy()
    wider[2:8, 8] = True
    narrower = base.copy()
    narrower[2:8, 2] = False
    found, _ = consensus.consensus(
        {"a": [("tree", base)], "b": [("tree", wider)], "c": [("trees", narrower)]}, HIERARCHY
    )
    assert found[0][0] == "tree" and (found[0][1] == base).all()  # two of three pixels, two of three labels


def reference_staple(masks: list[np.ndarray], iterations: int = 500) -> np.ndarray:
    """Binary STAPLE written out from Warfield, Zou and Wells (2004), eqs. 12-14: the truth
    probability W of each pixel, with each annotator's sensitivity p and specificity q."""
    d = np.stack([m.ravel() for m in masks], axis=1).astype(float)
    prior = d.mean()
    p = q = np.full(d.shape[1], 0.99)
    for _ in range(iterations):
        a = prior * np.prod(np.where(d == 1, p, 1 - p), axis=1)
        b = (1 - prior) * np.prod(np.where(d == 0, q, 1 - q), axis=1)
        w = a / (a + b)
        p = (w @ d) / w.sum()
        q = ((1 - w) @ (1 - d)) / (1 - w).sum()
    return w.reshape(masks[0].shape)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 6))
def test_staple_matches_the_papers_algorithm(seed: int, annotators: int) -> None:
    rng = np.random.default_rng(seed)
    truth = np.zeros((24, 32), dtype=bool)
    truth[rng.integers(2, 8) : rng.integers(14, 22), rng.integers(2, 10) : rng.integers(18, 30)] = True
    masks = [truth ^ (rng.random(truth.shape) < rng.uniform(0.0, 0.25)) for _ in range(annotators)]
    expected = reference_staple(masks)
    got = consensus.staple_mask(masks)
    clear = np.abs(expected - 0.5) > 1e-3  # pixels a last-digit difference cannot flip
    assert (got[clear] == (expected[clear] >= 0.5)).all()


def test_staple_trusts_the_careful_annotators() -> None:
    """Two careful annotators and three who each add their own noise: the majority keeps the
    pixels that two noisy annotators share by chance, STAPLE weighs them by reliability."""
    rng = np.random.default_rng(7)
    truth = np.zeros((40, 40), dtype=bool)
    truth[10:30, 10:30] = True
    masks = [truth, truth] + [truth ^ (rng.random(truth.shape) < 0.3) for _ in range(3)]
    staple_wrong = (consensus.staple_mask(masks) != truth).sum()
    majority_wrong = (consensus.majority_mask(masks) != truth).sum()
    assert staple_wrong < majority_wrong


def test_staple_of_degenerate_masks_is_defined() -> None:
    full = np.ones((6, 8), dtype=bool)
    assert consensus.staple_mask([full, full]).all()
    part = full.copy()
    part[:2] = False
    assert consensus.staple_mask([full, full, part]).all()
    with pytest.raises(ValueError, match="not one of majority, staple"):
        consensus.consensus({"a": [], "b": []}, HIERARCHY, method="mean")


def test_a_tie_takes_the_deepest_common_ancestor_or_is_reported() -> None:
    mask = blob(1)
    found, problems = consensus.consensus({"a": [("man", mask)], "b": [("woman", mask)]}, HIERARCHY)
    ancestor = consensus.deepest_common_ancestor(["man", "woman"], HIERARCHY)
    assert found[0][0] == ancestor and ancestor != HIERARCHY.root and problems == []
    found, problems = consensus.consensus({"a": [("man", mask)], "b": [("car", mask)]}, HIERARCHY)
    assert found == [] and problems == [f"labels car, man tie and share no ancestor below {HIERARCHY.root}"]


def test_a_region_drawn_by_a_minority_is_left_out() -> None:
    found, _ = consensus.consensus({"a": [("sky", blob(1))], "b": [], "c": []}, HIERARCHY)
    assert found == []


def regions(*annotators: str) -> pa.Table:
    rows = [{"image_id": i, "annotator": a, "region_id": 1, "label": "sky"} for a in annotators for i in range(4)]
    return pa.Table.from_pylist(
        rows, schema=pa.schema([tables.REGIONS.field(c) for c in (*tables.REGION_KEY, "label")])
    )


def test_reference_annotator() -> None:
    chosen, name, unit = subsets.reference_regions(regions("saiapr"), None, "region")
    assert (name, unit, chosen.num_rows) == ("saiapr", "region", 4)
    chosen, name, unit = subsets.reference_regions(regions("a", "b", "consensus"), None, "region")
    assert (name, unit, set(chosen.column("annotator").to_pylist())) == ("consensus", "image", {"consensus"})
    chosen, name, _ = subsets.reference_regions(regions("a", "b", "consensus"), "b", "region")
    assert name == "b" and chosen.num_rows == 4
    with pytest.raises(ValueError, match="reference_annotator 'x' annotated nothing here"):
        subsets.reference_regions(regions("a", "b"), "x", "region")
