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
