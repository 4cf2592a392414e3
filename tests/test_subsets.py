import itertools
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.pipeline import subsets
from regionbench.synthetic import plans


def regions_from_counts(counts: dict[str, int], per_image: int = 5) -> pa.Table:
    labels = [label for label, n in sorted(counts.items()) for _ in range(n)]
    return pa.table(
        {
            "image_id": [n // per_image for n in range(len(labels))],
            "annotator": ["saiapr"] * len(labels),
            "region_id": [n % per_image + 1 for n in range(len(labels))],
            "label": labels,
        }
    )


@pytest.fixture(scope="module")
def paper() -> tuple[pa.Table, dict]:
    return subsets.make_subsets(regions_from_counts(plans.label_counts("paper")), seed=0)


def test_paper_subset_sizes_are_table_5(paper: tuple[pa.Table, dict]) -> None:
    _, report = paper
    sizes = {name: r["regions"] for name, r in report["subsets"].items()}
    assert sizes == {
        "A": 10_052,
        "B": 14_284,
        "C": 18_069,
        "D": 21_280,
        "E": 35_517,
        "F": 59_759,
        "G": 77_631,
        "H": 93_167,
    }
    assert report["subsets"]["A"]["labels"] == ["sky-blue", "man"]


def test_subsets_nest_and_splits_agree(paper: tuple[pa.Table, dict]) -> None:
    table, _ = paper
    rows = table.to_pylist()
    by_subset: dict[str, dict] = {}
    for r in rows:
        by_subset.setdefault(r["subset"], {})[(r["image_id"], r["annotator"], r["region_id"])] = r["split"]
    names = list(subsets.SUBSET_SIZES)
    for small, large in itertools.pairwise(names):
        assert set(by_subset[small]) <= set(by_subset[large])
        assert all(by_subset[large][k] == v for k, v in by_subset[small].items())


def test_each_label_is_thirty_percent_test(paper: tuple[pa.Table, dict]) -> None:
    table, _ = paper
    rows = [r for r in table.to_pylist() if r["subset"] == "H"]
    total, test = Counter(r["label"] for r in rows), Counter(r["label"] for r in rows if r["split"] == "test")
    for label, n in total.items():
        assert abs(test[label] - 0.3 * n) <= 1, label


def test_split_is_seeded() -> None:
    table = regions_from_counts({"a": 40, "b": 30, "c": 20})
    first, _ = subsets.make_subsets(table, seed=3)
    assert first.equals(subsets.make_subsets(table, seed=3)[0])
    assert not first.equals(subsets.make_subsets(table, seed=4)[0])


def test_ties_are_broken_by_name() -> None:
    assert subsets.ranked_labels(["b", "a", "c", "c"]) == ["c", "a", "b"]


def test_straddling_images_hand_made() -> None:
    assert subsets.straddling_images([1, 1, 2, 2, 3], ["train", "test", "test", "test", "train"]) == 1
    table = pa.table({"image_id": [1, 1, 1, 2, 2, 3], "annotator": ["x"] * 6, "region_id": [1, 2, 3, 1, 2, 1],
                      "label": ["a", "a", "a", "a", "b", "b"]})  # fmt: skip
    _, by_region = subsets.make_subsets(table, seed=0)
    splits = subsets.assign_splits(
        [(1, "x", 1), (1, "x", 2), (1, "x", 3), (2, "x", 1), (2, "x", 2), (3, "x", 1)], ["a", "a", "a", "a", "b", "b"]
    )
    assert by_region["straddling_images"] == subsets.straddling_images([1, 1, 1, 2, 2, 3], splits)
    _, by_image = subsets.make_subsets(table, seed=0, split_unit="image")
    assert by_image["straddling_images"] == 0


def test_image_unit_keeps_images_whole() -> None:
    table, report = subsets.make_subsets(regions_from_counts({"a": 300, "b": 200}, per_image=4), split_unit="image")
    sides: dict[int, set] = {}
    for r in table.to_pylist():
        sides.setdefault(r["image_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in sides.values()) and report["straddling_images"] == 0
    test_share = report["subsets"]["B"]["test"] / report["subsets"]["B"]["regions"]
    assert 0.2 < test_share < 0.4


def test_unknown_split_unit() -> None:
    with pytest.raises(ValueError, match="split_unit"):
        subsets.assign_splits([(1, "x", 1)], ["a"], split_unit="folder")


label_set_collections = st.dictionaries(
    st.integers(0, 10_000), st.sets(st.sampled_from("abcdefgh"), max_size=4), min_size=1, max_size=80
)


@settings(max_examples=80, deadline=None)
@given(label_set_collections, st.integers(0, 3))
def test_image_split_puts_each_image_on_one_side_stratified(label_sets: dict[int, set[str]], seed: int) -> None:
    sides = subsets.image_splits(label_sets, seed)
    assert set(sides) == set(label_sets) and set(sides.values()) <= {"train", "test"}
    assert sides == subsets.image_splits(dict(reversed(list(label_sets.items()))), seed)  # order-free
    # A label's share of images is served first when it is the rarest: within one image of 30 %
    # when every image carries a single label.
    single = {i: labels for i, labels in label_sets.items() if len(labels) == 1}
    if single:
        by_label = subsets.image_splits(single, seed)
        for label in {x for labels in single.values() for x in labels}:
            members = [i for i, labels in single.items() if label in labels]
            test = sum(by_label[i] == "test" for i in members)
            assert abs(test - 0.3 * len(members)) <= 1, (label, test, len(members))


def test_image_split_nests_and_covers_the_paper_profile(paper: tuple[pa.Table, dict]) -> None:
    table, report = paper
    rows = table.to_pylist()
    side: dict[int, set[str]] = {}
    for r in rows:
        side.setdefault(r["image_id"], set()).add(r["image_split"])
    assert all(len(s) == 1 for s in side.values())  # one side per image, in every subset
    overall = report["image_split"]
    assert 0.29 < overall["test_images"] / overall["images"] < 0.31
    h = report["subsets"]["H"]["image_split"]
    assert h["labels_without_test_images"] == [] and 0.2 < h["label_test_share_min"] <= h["label_test_share_max"] < 0.4


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.integers(0, 40), st.sampled_from(["train", "val", "test", "train2017", "val2017"]), min_size=1),
    st.integers(0, 3),
)
def test_the_source_split_is_the_test_side_image_by_image(split_of: dict[int, str], seed: int) -> None:
    """Under ``split: source`` an image is test exactly when its own split is the test split
    (test, else val, else val...), whatever the seed: every region of it on that side, in every subset."""
    found = set(split_of.values())
    try:
        test_split = subsets.source_test_split(split_of.values())
    except ValueError as exc:
        assert len(found) < 2 or not found & {"test", "val", "val2017"}, exc
        return
    assert test_split == next(s for s in ("test", "val", "val2017") if s in found)
    images = sorted(split_of)
    regions = pa.table(
        {
            "image_id": [i for i in images for _ in range(3)],
            "annotator": ["a"] * 3 * len(images),
            "region_id": [1, 2, 3] * len(images),
            "label": [label for i in images for label in (f"l{i % 4}", f"l{i % 3}", "sky")],
        }
    )
    table, report = subsets.make_subsets(regions, seed, "region", subsets.source_sides(split_of, test_split))
    assert report["split_unit"] == "image"
    for image, split, side in zip(table["image_id"].to_pylist(), table["split"].to_pylist(), table["image_split"].to_pylist(), strict=True):  # fmt: skip
        assert split == side == ("test" if split_of[image] == test_split else "train")


def test_a_source_split_names_what_to_set() -> None:
    with pytest.raises(ValueError, match=r"set subsets\.split: stratified"):
        subsets.source_test_split(["val", None])
    with pytest.raises(ValueError, match=r"'minival' holds no image with regions \(the splits: train, val\)"):
        subsets.source_test_split(["val", "train"], "minival")
    with pytest.raises(ValueError, match=r"set subsets\.test_split"):
        subsets.source_test_split(["train", "extra"])
    assert subsets.source_test_split(["train", "extra"], "extra") == "extra"
