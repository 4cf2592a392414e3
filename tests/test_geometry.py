import numpy as np
import pytest
import reference_geometry
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core import geometry


def assert_exact(mask: np.ndarray) -> None:
    geom = geometry.mask_to_polygon(mask)
    assert geom.is_valid, shapely.is_valid_reason(geom)
    assert geom.area == mask.sum()
    np.testing.assert_array_equal(geometry.polygon_to_mask(geom, *mask.shape), mask)
    np.testing.assert_array_equal(geometry.decode_rle(geometry.encode_rle(mask), *mask.shape), mask)


def test_random_masks_round_trip() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        mask = rng.random((9, 13)) < rng.uniform(0.1, 0.9)
        if mask.any():
            assert_exact(mask)


@pytest.mark.parametrize(
    "case",
    ["single", "full", "hline", "vline", "hole", "diagonal", "border", "ring_with_pinch"],
)
def test_edge_cases(case: str) -> None:
    m = np.zeros((7, 8), dtype=bool)
    if case == "single":
        m[3, 4] = True
    elif case == "full":
        m[:] = True
    elif case == "hline":
        m[2, 1:7] = True
    elif case == "vline":
        m[:, 5] = True
    elif case == "hole":
        m[1:6, 1:7] = True
        m[3, 3:5] = False
    elif case == "diagonal":
        m[np.arange(5), np.arange(5)] = True
    elif case == "border":
        m[0, :] = m[:, -1] = True
    elif case == "ring_with_pinch":  # background leaks out of the ring only through a corner
        m[1:6, 1:6] = True
        m[2:5, 2:5] = False
        m[1, 1] = False
    assert_exact(m)


def test_corner_touching_parts_make_a_multipolygon() -> None:
    m = np.zeros((4, 4), dtype=bool)
    m[0, 0] = m[1, 1] = True
    geom = geometry.mask_to_polygon(m)
    assert geom.geom_type == "MultiPolygon" and len(geom.geoms) == 2


def test_hole_is_an_interior_ring() -> None:
    m = np.ones((5, 5), dtype=bool)
    m[2, 2] = False
    geom = geometry.mask_to_polygon(m)
    assert geom.geom_type == "Polygon" and len(geom.interiors) == 1 and geom.area == 24


def test_polygon_is_in_image_coordinates() -> None:
    m = np.zeros((10, 20), dtype=bool)
    m[2:4, 5:9] = True  # rows 2-3, columns 5-8
    assert geometry.mask_to_polygon(m).bounds == (5.0, 2.0, 9.0, 4.0)
    assert geometry.bbox(m) == (5, 2, 4, 2)


def test_equal_masks_give_equal_wkb() -> None:
    m = np.zeros((6, 6), dtype=bool)
    m[1:4, 2:5] = True
    assert shapely.to_wkb(geometry.mask_to_polygon(m)) == shapely.to_wkb(geometry.mask_to_polygon(m.copy()))


def test_empty_mask_has_no_box() -> None:
    with pytest.raises(ValueError):
        geometry.bbox(np.zeros((3, 3), dtype=bool))


@settings(max_examples=400, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda h: st.integers(1, 12).flatmap(
            lambda w: st.lists(st.booleans(), min_size=h * w, max_size=h * w).map(
                lambda cells: np.array(cells, dtype=bool).reshape(h, w)
            )
        )
    )
)
def test_the_boundary_walk_gives_the_polygon_of_polygonize(mask: np.ndarray) -> None:
    """Pinches, holes touching shells, islands in holes: the same normalised WKB as GEOS's faces."""
    if not mask.any():
        return
    assert shapely.to_wkb(geometry.mask_to_polygon(mask)) == shapely.to_wkb(reference_geometry.mask_to_polygon(mask))
    assert_exact(mask)


def test_checkerboards_and_nested_rings_give_the_polygon_of_polygonize() -> None:
    yy, xx = np.mgrid[:15, :17]
    board = (yy + xx) % 2 == 0
    nested = np.maximum(np.abs(yy - 7), np.abs(xx - 8)) % 2 == 0  # rings in holes in rings
    nested[7, 9] = True  # a bridge of one pixel
    for mask in (board, nested, ~nested, board[:1], board[:, :1]):
        assert shapely.to_wkb(geometry.mask_to_polygon(mask)) == shapely.to_wkb(
            reference_geometry.mask_to_polygon(mask)
        )


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**32 - 1), st.floats(0, 1))
def test_rle_runs_are_the_masks_runs(height: int, width: int, seed: int, density: float) -> None:
    """Any mask's compressed counts decode to its runs: column-major, zeros first."""
    mask = np.random.default_rng(seed).random((height, width)) < density
    flat = mask.flatten(order="F")
    edges = np.concatenate(([0], np.flatnonzero(np.diff(flat)) + 1, [flat.size]))
    runs = [0, *np.diff(edges)] if flat[0] else list(np.diff(edges))
    assert geometry.rle_runs(geometry.encode_rle(mask)).tolist() == runs


@given(st.text(max_size=12))
def test_rle_runs_of_any_text_are_runs_or_a_reason(counts: str) -> None:
    """Any string: non-negative runs, or a ValueError saying why it is no counts string."""
    try:
        runs = geometry.rle_runs(counts)
    except ValueError as exc:
        assert str(exc).startswith("compressed RLE counts")
        return
    assert (runs >= 0).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.integers(1, 30), st.integers(0, 2**32 - 1), st.floats(0, 1))
def test_rle_of_a_mask_in_part_of_the_image_is_pycocotools(height: int, width: int, seed: int, density: float) -> None:
    """The counts of a mask that fills any box of the image (encoded from its bounding box
    alone) are pycocotools' of the whole mask."""
    from pycocotools import mask as coco_mask

    rng = np.random.default_rng(seed)
    y0, x0 = rng.integers(0, height), rng.integers(0, width)
    y1, x1 = rng.integers(y0, height) + 1, rng.integers(x0, width) + 1
    mask = np.zeros((height, width), dtype=bool)
    mask[y0:y1, x0:x1] = rng.random((y1 - y0, x1 - x0)) < density
    whole = coco_mask.encode(np.asfortranarray(mask, dtype=np.uint8))["counts"].decode("ascii")
    assert geometry.encode_rle(mask) == whole
