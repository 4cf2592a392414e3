"""Label maps scored from one confusion matrix, flat and per hierarchy level."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.scoring.measures import confusion as semantic

TREE = Hierarchy.from_nodes(
    "entity",
    {
        "entity": Node("entity", None),
        "animal": Node("animal", "entity"),
        "cat": Node("cat", "animal"),
        "dog": Node("dog", "animal"),
        "landscape": Node("landscape", "entity"),
        "sky": Node("sky", "landscape"),
    },
)
NAMES = ["cat", "dog", "sky"]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_measures_are_their_formulas(data: st.DataObject) -> None:
    """Against the definitions computed pixel by pixel: accuracy, class accuracy, IoU per class
    (over the classes in truth or prediction), fwIoU; pixels without a prediction are wrong."""
    size = data.draw(st.integers(1, 60))
    truth = np.array(data.draw(st.lists(st.integers(0, 2), min_size=size, max_size=size)))
    predicted = np.array(data.draw(st.lists(st.integers(0, 3), min_size=size, max_size=size)))  # 3: none
    ignore = np.array(data.draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    found = semantic.measures(semantic.confusion(truth, predicted, 3, ignore), NAMES)
    t, p = truth[~ignore], predicted[~ignore]
    assert found["pixels"] == t.size
    if not t.size:
        return
    assert found["pixel_accuracy"] == pytest.approx((t == p).mean())
    ious = {}
    for k, name in enumerate(NAMES):
        union = ((t == k) | (p == k)).sum()
        if union:
            ious[name] = ((t == k) & (p == k)).sum() / union
    assert found["per_class_iou"] == pytest.approx(ious)
    assert found["miou"] == pytest.approx(np.mean(list(ious.values())))
    present = [k for k in range(3) if (t == k).any()]
    assert found["mean_class_accuracy"] == pytest.approx(np.mean([(p[t == k] == k).mean() for k in present]))
    assert found["fwiou"] == pytest.approx(sum((t == k).mean() * ious.get(NAMES[k], 0) for k in range(3)))
    # a class the run predicts and the truth lacks: IoU 0 in miou, named, and left out of the truth's mean
    lacking = [NAMES[k] for k in range(3) if (p == k).any() and not (t == k).any()]
    assert found["predicted_not_in_truth"] == lacking and all(found["per_class_iou"][n] == 0 for n in lacking)
    assert found["miou_truth_classes"] == pytest.approx(np.mean([ious[NAMES[k]] for k in present]))


def test_a_dog_on_a_cat_is_right_at_animal() -> None:
    truth = np.array([0, 0, 0, 2, 2])  # cat cat cat sky sky
    predicted = np.array([1, 1, 0, 2, 3])  # dog dog cat sky none
    matrix = semantic.confusion(truth, predicted, 3, np.zeros(5, dtype=bool))
    flat = semantic.measures(matrix, NAMES)
    levels = semantic.hierarchical(matrix, NAMES, TREE)
    assert flat["pixel_accuracy"] == pytest.approx(2 / 5)
    assert list(levels) == ["1"] and levels["1"]["pixel_accuracy"] == pytest.approx(4 / 5)  # animal, landscape
    assert semantic.at_level(TREE, ["cat", "sky", "animal"], 1) == ["animal", "landscape", "animal"]
