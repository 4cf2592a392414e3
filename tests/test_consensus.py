"""The consensus of several annotators and the reference annotator of subsets."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench import consensus, subsets, tables
from regionbench.synth import load_hierarchy

HIERARCHY = load_hierarchy()


def blob(seed: int, shape: tuple[int, int] = (20, 24)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mask = np.zeros(shape, dtype=bool)
    y, x = rng.integers(0, shape[0] - 6), rng.integers(0, shape[1] - 6)
    mask[y : y + rng.integers(4, 7), x : x + rng.integers(4, 7)] = True
    return mask


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_two_identical_annotators_are_the_consensus(seed: int) -> None:
    rng = np.random.default_rng(seed)
    agreed = [(str(rng.choice(["sky", "man", "grass", "tree"])), blob(seed + k)) for k in range(3)]
    other = [("cloud", blob(seed + 100 + k)) for k in range(int(rng.integers(0, 4)))]
    found, problems = consensus.consensus({"a": agreed, "b": other, "c": agreed}, HIERARCHY)
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
