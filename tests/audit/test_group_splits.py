"""Splits made by the workflow keep a near-duplicate group on one side, in every subset and for
both split units; a collection's own split is kept and the groups it cuts are reported."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.pipeline import subsets


@st.composite
def grouped_collections(draw: st.DrawFn) -> tuple[pa.Table, dict[int, int]]:
    """Regions of images with 1-4 labels, and groups of near-copies among the images."""
    labels = draw(
        st.dictionaries(
            st.integers(0, 5_000), st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=4), min_size=2, max_size=60
        )
    )
    images = sorted(labels)
    groups: dict[int, int] = {}
    for members in draw(st.lists(st.lists(st.sampled_from(images), min_size=2, max_size=5, unique=True), max_size=6)):
        # a group is a connected component: an image in two drawn groups joins them
        roots = {groups.get(m, m) for m in members}
        root = min(roots | set(members))
        for image, group in list(groups.items()):
            if group in roots:
                groups[image] = root
        for image in members:
            groups[image] = root
    rows = [(i, "a", n + 1, label) for i in images for n, label in enumerate(labels[i])]
    table = pa.table(
        {
            "image_id": [r[0] for r in rows],
            "annotator": [r[1] for r in rows],
            "region_id": [r[2] for r in rows],
            "label": [r[3] for r in rows],
        }
    )
    return table, groups


@settings(max_examples=100, deadline=None)
@given(grouped_collections(), st.sampled_from(["region", "image"]), st.integers(0, 3))
def test_a_group_is_never_split(collection: tuple[pa.Table, dict[int, int]], unit: str, seed: int) -> None:
    regions, groups = collection
    table, report = subsets.make_subsets(regions, seed, unit, groups=groups)
    sides: dict[int, set[str]] = {}
    for image, split, image_split in zip(
        table["image_id"].to_pylist(), table["split"].to_pylist(), table["image_split"].to_pylist(), strict=True
    ):
        if image in groups:
            sides.setdefault(groups[image], set()).update({split, image_split})
    assert all(len(s) == 1 for s in sides.values()), sides
    assert report["near_duplicates"]["groups_across_sides"] == 0
    assert report["near_duplicates"]["images"] == len({i for i in groups if i in set(regions["image_id"].to_pylist())})


@settings(max_examples=50, deadline=None)
@given(grouped_collections(), st.integers(0, 3))
def test_without_groups_the_split_is_as_before(collection: tuple[pa.Table, dict[int, int]], seed: int) -> None:
    regions, _ = collection
    assert subsets.make_subsets(regions, seed)[0] == subsets.make_subsets(regions, seed, groups={})[0]


def test_a_source_split_is_kept_and_its_cut_groups_named() -> None:
    regions = pa.table({"image_id": [1, 2, 3, 4], "annotator": ["a"] * 4, "region_id": [1] * 4, "label": list("abab")})
    sides = {1: "train", 2: "test", 3: "train", 4: "train"}
    table, report = subsets.make_subsets(regions, 0, "region", sides, groups={1: 1, 2: 1, 3: 3, 4: 3})
    assert dict(zip(table["image_id"].to_pylist(), table["image_split"].to_pylist(), strict=True)) == sides
    assert report["near_duplicates"] == {
        "groups": 2,
        "images": 4,
        "groups_across_sides": 1,
        "across": [{"group_id": 1, "test": [2], "train": [1]}],
    }


def test_groups_keep_the_test_share_near_thirty_percent() -> None:
    images = list(range(300))
    regions = pa.table(
        {"image_id": images, "annotator": ["a"] * 300, "region_id": [1] * 300, "label": [f"l{i % 3}" for i in images]}
    )
    groups = {i: i - i % 3 for i in images[:90]}  # 30 groups of three
    _, report = subsets.make_subsets(regions, 0, "region", groups=groups)
    for name in ("A", "B"):
        r = report["subsets"][name]
        assert abs(r["test"] / r["regions"] - 0.3) < 0.02
