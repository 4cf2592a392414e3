"""One evaluation split: the build's subsets (their source split) and the release's manifest,
which ``evaluate``, the card, the baselines and the site read, take it from one rule."""

from types import SimpleNamespace

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from regionbench.core.errors import InputError
from regionbench.core.splits import evaluation_split
from regionbench.io import layouts
from regionbench.pipeline import subsets
from regionbench.scoring.tasks import _masks

NAMES = st.sampled_from(["train", "test", "val", "validation", "val2017", "train2017", "testing", "valB", "extra"])


LAYOUTS = st.sampled_from(sorted(layouts.registry()))


@given(st.lists(NAMES, min_size=1, max_size=12), st.one_of(st.none(), NAMES), LAYOUTS)
def test_the_subsets_source_split_is_the_evaluation_split(splits: list[str], wanted: str | None, layout: str) -> None:
    """Whenever the subsets take the collection's own split, it is the one the manifest records,
    for any layout's declared splits."""
    declared = layouts.get(layout).about.evaluation_splits
    try:
        taken = subsets.source_test_split(splits, wanted, declared)
    except InputError:  # none, or the evaluation split alone with no train side of the collection's own
        assert evaluation_split(splits, wanted, declared) is None or (wanted is None and len(set(splits)) < 2)
    else:
        assert taken == evaluation_split(splits, wanted, declared)


@given(st.lists(st.one_of(st.none(), NAMES), min_size=1, max_size=12), st.one_of(st.none(), NAMES), LAYOUTS)
def test_evaluate_s_default_side_is_the_manifest_s(splits: list[str | None], wanted: str | None, layout: str) -> None:
    """For any split names, any config and any layout: the side ``evaluate`` scores by default is
    the manifest's split, and a release without the field (published before it) reads the same
    rule, its layout's declared splits first."""
    declared = layouts.get(layout).about.evaluation_splits
    recorded = evaluation_split(splits, wanted, declared)
    images = pd.DataFrame({"image_id": range(len(splits)), "split": splits})
    regions = pd.DataFrame({"image_id": range(len(splits))})
    manifest = {"evaluation_split": recorded, "layout": layout}
    data = SimpleNamespace(manifest=manifest, images=images, table=lambda name, cols: regions)
    assert _masks.recorded_split(data) == recorded
    assert _masks.default_split(data) == ("source" if recorded else "test")
    legacy = SimpleNamespace(manifest={"layout": layout}, images=images, table=lambda name, cols: regions)
    assert _masks.recorded_split(legacy) == evaluation_split(splits, None, declared)


def test_a_layout_declares_its_benchmark_s_split() -> None:
    """A layout's declared splits come before the common names: COCO's published figures are on
    val2017 where a tree holds 2014 and 2017 both; Cityscapes' and VOC's on val, not a test side
    whose labels only their servers hold."""
    coco = layouts.get("coco").about.evaluation_splits
    assert evaluation_split(["train2014", "val2014", "train2017", "val2017"]) == "val2014"
    assert evaluation_split(["train2014", "val2014", "train2017", "val2017"], declared=coco) == "val2017"
    for name in ("cityscapes", "voc"):
        assert evaluation_split(["train", "val", "test"], declared=layouts.get(name).about.evaluation_splits) == "val"
    assert evaluation_split(["train", "val", "test"], "test", layouts.get("voc").about.evaluation_splits) == "test"


@pytest.mark.parametrize(
    ("splits", "wanted", "expected"),
    [
        (["train", "val", "test"], None, "test"),
        (["train2017", "val2017"], None, "val2017"),
        (["train", "val", "test"], "val", "val"),  # the config's own: never silently another
        (["train", "validation"], None, "validation"),
        (["train"], None, None),
        (["test"], None, "test"),  # BSDS500's test images alone: still its benchmark's side
        (["train", "extra"], None, None),
        (["train", "val"], "test", None),
    ],
)
def test_the_rule(splits: list[str], wanted: str | None, expected: str | None) -> None:
    assert evaluation_split(splits, wanted) == expected
