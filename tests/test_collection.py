"""Collection statistics (paper 001, section 3.4) on hand-made tables."""

import pyarrow as pa
import pytest

from regionbench import collection


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
    assert list(stats["label_histogram"].items()) == [("sky", 3), ("man", 1)]
    everyone = collection.statistics(images, regions, vocabulary)
    assert everyone["regions"] == 5 and everyone["leaves_used"] == 2
