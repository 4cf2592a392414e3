"""The polygon of a mask by GEOS polygonize: the reference geometry.mask_to_polygon is tested against."""

from __future__ import annotations

import numpy as np
import shapely

from regionbench.core import geometry


def _runs(code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, first column, one past the last column) of the maximal runs of equal non-zero
    values along the rows of ``code``, whose first and last columns are zero."""
    flat = code.ravel()
    prev = np.concatenate(([0], flat[:-1]))
    nxt = np.concatenate((flat[1:], [0]))
    starts = np.flatnonzero((flat != 0) & (flat != prev))
    ends = np.flatnonzero((flat != 0) & (flat != nxt)) + 1
    width = code.shape[1]
    return starts // width, starts % width, ends - (starts // width) * width


def boundary_segments(mask: np.ndarray) -> np.ndarray:
    """Boundary of the pixel squares as maximal axis-parallel segments (n, 2, 2), noded."""
    padded = np.pad(mask.astype(np.int8), 1)
    # +1 / -1 say which side is inside, so a run never spans a pinch point where they swap.
    horizontal = padded[1:, :] - padded[:-1, :]
    row, c0, c1 = _runs(horizontal)
    h = np.stack([np.stack([c0 - 1, row], axis=1), np.stack([c1 - 1, row], axis=1)], axis=1)
    vertical = (padded[:, 1:] - padded[:, :-1]).T
    col, r0, r1 = _runs(vertical)
    v = np.stack([np.stack([col, r0 - 1], axis=1), np.stack([col, r1 - 1], axis=1)], axis=1)
    return np.concatenate([h, v]).astype(np.float64)


def mask_to_polygon(mask: np.ndarray) -> shapely.Geometry:
    """The faces of the polygonised boundary whose interior lies on mask pixels, normalised."""
    x0, y0, w, h = geometry.bbox(mask)
    crop = mask[y0 : y0 + h, x0 : x0 + w]
    faces = shapely.get_parts(shapely.polygonize(shapely.linestrings(boundary_segments(crop))))
    probe = shapely.get_coordinates(shapely.point_on_surface(faces))
    parts = faces[crop[probe[:, 1].astype(np.intp), probe[:, 0].astype(np.intp)]]
    geom = parts[0] if len(parts) == 1 else shapely.multipolygons(parts)
    geom = shapely.transform(geom, lambda xy: xy + np.array([x0, y0], dtype=np.float64))
    return shapely.normalize(geom)
