"""Collection statistics (paper 001, section 3.4) on hand-made tables."""

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.pipeline import collection


def test_statistics_by_hand() -> None:
    images = pa.table({"image_id": [1, 2, 3], "width": [10, 10, 4], "height": [10, 5, 5]})
    regions = pa.table(
        {
            "image_id": [1, 1, 2, 2, 1],
            "annotator": ["a", "a", "a", "a", "b"],
            "label": ["sky", "man", "sky", "sky", "tree"],
            "area_px": [30, 20, 40, 30, 99],
        }
    )
    vocabulary = pa.table({"label": ["sky", "man", "tree", "sky-blue"], "is_leaf": [False, True, True, True]})
    stats = collection.statistics(images, regions, vocabulary, "a")
    # Image 1: 50 of 100 px; image 2: 70 of 50 px, capped at 1; image 3 has no region.
    assert stats["coverage"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert stats["regions"] == 4 and stats["regions_per_image"] == pytest.approx(4 / 3)
    assert stats["labels_used"] == 2 and stats["leaves_used"] == 1
    assert stats["label_histogram"] == [{"label": "sky", "regions": 3}, {"label": "man", "regions": 1}]
    everyone = collection.statistics(images, regions, vocabulary)
    assert everyone["regions"] == 5 and everyone["leaves_used"] == 2


def test_train_label_frequency_by_hand() -> None:
    subsets = pa.table(
        {
            "subset": ["H", "H", "H", "H", "H", "E"],
            "image_id": [1, 1, 1, 2, 3, 4],
            "label": ["sky", "sky", "man", "man", "tree", "sky"],
            "image_split": ["train", "train", "train", "train", "test", "train"],
        }
    )
    # Image 1 shows sky (twice: one image) and man; image 2 man; image 3 is a test image.
    assert collection.train_label_frequency(subsets) == {
        "subset": "H",
        "train_images": 2,
        "labels": [{"label": "man", "images": 2}, {"label": "sky", "images": 1}],
    }


def test_the_label_frequency_figure_is_deterministic(tmp_path) -> None:
    from regionbench.pipeline import plots

    histogram = [{"label": f"l{n}", "regions": 100 - n} for n in range(60)]
    train = {"subset": "H", "train_images": 7, "labels": [{"label": "l0", "images": 5}, {"label": "l1", "images": 1}]}
    for run in ("a", "b"):
        plots.label_frequency_figure(histogram, train, tmp_path / f"{run}.png", tmp_path / f"{run}.svg")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    assert b"l49" in (tmp_path / "a.svg").read_bytes() and b"l50" not in (tmp_path / "a.svg").read_bytes()


def test_show_colours_segments_apart_when_labels_do_not() -> None:
    from regionbench.pipeline import plots

    mask = np.zeros((4, 4), dtype=bool)
    free = [{"masks": [("segment", mask)] * 3}, {"masks": [("segment", mask)] * 2}]
    colours = plots.region_colours(free)
    assert [len({tuple(c) for c in panel}) for panel in colours] == [3, 2]  # every segment its own colour
    labelled = [{"masks": [("sky", mask), ("man", mask), ("sky", mask)]}, {"masks": [("man", mask)]}]
    colours = plots.region_colours(labelled)
    assert tuple(colours[0][0]) == tuple(colours[0][2]) != tuple(colours[0][1]) == tuple(colours[1][0])


REGION = st.tuples(
    st.integers(1, 6), st.sampled_from("ab"), st.sampled_from(["sky", "man", "tree"]), st.none() | st.integers(0, 80)
)


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(REGION, max_size=40), annotator=st.none() | st.sampled_from("abc"))
def test_statistics_equal_a_region_by_region_count(rows, annotator) -> None:
    """Whatever the regions (images without any, regions without a mask, annotators absent), the
    figures equal a plain count over the regions one at a time."""
    images = pa.table({"image_id": [1, 2, 3, 4, 5], "width": [10, 8, 0, 4, 9], "height": [10, 5, 5, 4, 3]})
    columns = ("image_id", "annotator", "label", "area_px")
    schema = pa.schema(
        [("image_id", pa.int64()), ("annotator", pa.string()), ("label", pa.string()), ("area_px", pa.int64())]
    )
    regions = pa.Table.from_pylist([dict(zip(columns, r, strict=True)) for r in rows], schema=schema)
    vocabulary = pa.table({"label": ["sky", "man", "tree"], "is_leaf": [False, True, True]})
    kept = [r for r in rows if annotator is None or r[1] == annotator]
    covered: Counter = Counter()
    for image_id, _, _, area in kept:
        covered[image_id] += area or 0
    sizes = {1: 100, 2: 40, 3: 0, 4: 16, 5: 27}
    labels = Counter(r[2] for r in kept)
    got = collection.statistics(images, regions, vocabulary, annotator)
    assert got["regions"] == len(kept) and got["images"] == 5
    assert got["coverage"] == pytest.approx(np.mean([min(1.0, covered[i] / a) if a else 0.0 for i, a in sizes.items()]))
    assert got["label_histogram"] == [
        {"label": x, "regions": n} for x, n in sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    assert got["leaves_used"] == len(set(labels) - {"sky"})
