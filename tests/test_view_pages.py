"""What the site writes of a release: outlines to a tenth of a pixel; colours, where the labels (or, without labels, the regions) of one image never share a
colour, each keeps the colour it prefers where no earlier one took it, and a page is the same
every time it is written."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.client import view


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=60),
    st.dictionaries(st.text(min_size=1, max_size=6), st.integers(0, len(view.PALETTE) - 1)),
)
def test_an_image_s_keys_never_share_a_colour(keys: list[str], preferred: dict[str, int]) -> None:
    colours = view.image_colours(keys, preferred)
    assert set(colours) == set(keys) and len(set(colours.values())) == len(keys)
    assert colours == view.image_colours(keys, preferred)  # the same page every time
    taken: set[str] = set()
    for key in keys:  # a key has its own colour unless an earlier key of the image took it
        own = view.PALETTE[preferred.get(key, 0)]
        if own not in taken:
            assert colours[key] == own
        taken.add(colours[key])
    assert all(c.startswith("#") and len(c) == 7 for c in colours.values())


def test_colours_past_the_palette_stay_apart() -> None:
    extra = [view.extra_colour(k) for k in range(300)]
    assert len(set(extra)) == 300 and not set(extra) & set(view.PALETTE)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-50, 500, allow_nan=False), st.floats(-50, 500, allow_nan=False)), min_size=3, max_size=30
    )
)
def test_outlines_are_the_polygons_to_a_tenth_of_a_pixel(points: list[tuple[float, float]]) -> None:
    """Every outline lies within the simplification tolerance and a twentieth of a pixel of its
    polygon, and writes at most one decimal."""
    import numpy as np
    import shapely

    polygon = shapely.convex_hull(shapely.MultiPoint(points))
    if not isinstance(polygon, shapely.Polygon) or polygon.area < 1:
        return
    (path,) = view.outline_paths(np.array([polygon], dtype=object))
    if shapely.simplify(polygon, view.OUTLINE_TOLERANCE, preserve_topology=False).is_empty:
        assert path == ""  # thinner than the tolerance: nothing to draw
        return
    numbers = path[1:-1].split()
    assert all(len(n.split(".")[1]) == 1 for n in numbers if "." in n)
    xy = np.array(numbers, dtype=float).reshape(-1, 2)
    drawn = shapely.Polygon(xy)
    assert shapely.hausdorff_distance(drawn, polygon) <= view.OUTLINE_TOLERANCE + 0.05 * 2**0.5 + 1e-9


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 50), min_size=4, max_size=4), min_size=4, max_size=4))
def test_a_run_page_keeps_every_cell_of_a_dense_confusion_matrix(matrix: list[list[int]]) -> None:
    """A region task's matrix (dense) becomes the page's cells: every nonzero count at its place,
    an off-diagonal cell linked where the pages saw images confusing so."""
    labels = ["a", "b", "c", "d"]
    seen = {("a", "b"): {1}, ("d", "c"): {2, 3}}
    page = view.run_view({"task": "region", "confusion": {"labels": labels, "matrix": matrix}}, seen)
    cells = page["confusion"]["cells"]
    assert {(t, p): n for t, p, n, _ in cells} == {
        (t, p): n for t, row in enumerate(matrix) for p, n in enumerate(row) if n
    }
    links = sorted(seen)
    for t, p, _, link in cells:
        pair = (labels[t], labels[p])
        assert link == (links.index(pair) if pair in seen else None)
    assert page["confusion"]["unit"] == "regions"


def test_the_humans_stand_beside_the_figures_they_match() -> None:
    """The ceiling's figure beside the run's of the same name; BSDS's one human figure beside the
    run's ODS and OIS (``covering`` beside ``covering ods``, ``f`` beside ``ods f``), never beside
    another figure."""
    report = {
        "measures": {"AP": 0.5, "AR1": 0.4, "covering": {"ods": 0.6, "ois": 0.62, "best": 0.7},
                     "ods": {"f": 0.7, "threshold": 0.3}, "ap": 0.66},
        "human_ceiling": {"AP": 0.45, "covering": 0.72, "f": 0.8, "per_annotator": {"x": {"AP": 0.1}}},
    }  # fmt: skip
    headline = {name: human for name, _, human, _ in view.run_view(report, {})["headline"]}
    assert headline == {
        "AP": 0.45, "AR1": None, "covering ods": 0.72, "covering ois": 0.72, "covering best": None,
        "ods f": 0.8, "ods threshold": None, "ap": None,
    }  # fmt: skip
    # each figure's interval beside it, found by the figure's dotted name
    report["intervals"] = {"covering.ods": {"low": 0.55, "high": 0.65, "level": 0.95, "resamples": 9, "seed": 0,
                                            "method": "percentile bootstrap over images"}}  # fmt: skip
    shown = view.run_view(report, {})
    assert {name: bounds for name, _, _, bounds in shown["headline"] if bounds} == {"covering ods": [0.55, 0.65]}
    assert shown["intervals"] == "[low, high]: 95% intervals, percentile bootstrap over images (9 resamples, seed 0)"


def test_a_class_the_truth_lacks_is_marked_in_the_per_class_table() -> None:
    report = {"task": "semantic", "per_class_iou": {"fence": 0.0, "road": 0.9}, "predicted_not_in_truth": ["fence"]}
    rows = dict(view.run_view(report, {})["per_class"]["rows"])
    assert rows == {"fence (not in the truth, predicted: IoU 0 in the mean)": 0.0, "road": 0.9}
