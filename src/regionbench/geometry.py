"""Exact region geometry: pixel masks as polygons and as COCO run-length encodings.

Coordinates follow the image raster: x is the column, y the row, and pixel (row r, column c)
is the unit square [c, c+1] x [r, r+1]. A region's polygon is the union of its pixel squares,
so rasterising it at pixel centres (c + 0.5, r + 0.5) gives the mask back and its area equals
the pixel count (docs/features.md).
"""

from __future__ import annotations

import numpy as np
import shapely
from pycocotools import mask as coco_mask


def bbox(mask: np.ndarray) -> tuple[int, int, int, int]:
    """COCO box ``(x, y, width, height)`` in pixels of a non-empty boolean mask."""
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        raise ValueError("empty mask has no bounding box")
    return int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)


def bboxes(masks: list[np.ndarray], known: np.ndarray | None = None) -> np.ndarray:
    """(n, 4) int64 rows ``bbox`` of each mask, or ``known`` (the same boxes, from a table) as such."""
    return np.array([bbox(m) for m in masks] if known is None else known, dtype=np.int64).reshape(-1, 4)


def _runs(code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of equal non-zero values along the last axis of a 2-D array.

    The first and last columns of ``code`` must be zero so runs never cross rows.
    Returns (row, first column, one past the last column) of every run.
    """
    flat = code.ravel()
    prev = np.concatenate(([0], flat[:-1]))
    nxt = np.concatenate((flat[1:], [0]))
    starts = np.flatnonzero((flat != 0) & (flat != prev))
    ends = np.flatnonzero((flat != 0) & (flat != nxt)) + 1
    width = code.shape[1]
    return starts // width, starts % width, ends - (starts // width) * width


def boundary_segments(mask: np.ndarray) -> np.ndarray:
    """Boundary of the pixel squares of ``mask`` as maximal axis-parallel segments.

    Returns an array (n, 2, 2) of segment end points (x, y). Segments meet only at their
    end points, so the set is noded and can be polygonised directly.
    """
    padded = np.pad(mask.astype(np.int8), 1)
    # Horizontal edges at y = i lie between padded rows i and i + 1; +1 / -1 say which side
    # is inside, so a run never spans a pinch point where the sides swap.
    horizontal = padded[1:, :] - padded[:-1, :]
    row, c0, c1 = _runs(horizontal)
    h = np.stack([np.stack([c0 - 1, row], axis=1), np.stack([c1 - 1, row], axis=1)], axis=1)
    vertical = (padded[:, 1:] - padded[:, :-1]).T
    col, r0, r1 = _runs(vertical)
    v = np.stack([np.stack([col, r0 - 1], axis=1), np.stack([col, r1 - 1], axis=1)], axis=1)
    return np.concatenate([h, v]).astype(np.float64)


def mask_to_polygon(mask: np.ndarray) -> shapely.Geometry:
    """Exact polygon (or multipolygon) of the pixel squares of a non-empty boolean mask.

    The boundary segments are polygonised into faces; the faces whose interior lies on mask
    pixels form the region. Components that touch only at a corner become separate parts of
    a valid multipolygon. The result is normalised so equal masks give equal WKB.
    """
    x0, y0, w, h = bbox(mask)
    crop = mask[y0 : y0 + h, x0 : x0 + w]
    segments = boundary_segments(crop)
    faces = shapely.get_parts(shapely.polygonize(shapely.linestrings(segments)))
    probe = shapely.get_coordinates(shapely.point_on_surface(faces))
    inside = crop[probe[:, 1].astype(np.intp), probe[:, 0].astype(np.intp)]
    parts = faces[inside]
    geom = parts[0] if len(parts) == 1 else shapely.multipolygons(parts)
    geom = shapely.transform(geom, lambda xy: xy + np.array([x0, y0], dtype=np.float64))
    return shapely.normalize(geom)


def polygon_to_mask(geom: shapely.Geometry, height: int, width: int) -> np.ndarray:
    """Rasterise a geometry at pixel centres: pixel (r, c) is in when (c+.5, r+.5) is inside."""
    mask = np.zeros((height, width), dtype=bool)
    minx, miny, maxx, maxy = shapely.bounds(geom)
    c0, r0 = max(int(np.floor(minx)), 0), max(int(np.floor(miny)), 0)
    c1, r1 = min(int(np.ceil(maxx)), width), min(int(np.ceil(maxy)), height)
    ys, xs = np.mgrid[r0:r1, c0:c1]
    mask[r0:r1, c0:c1] = shapely.contains_xy(geom, xs + 0.5, ys + 0.5)
    return mask


def encode_rle(mask: np.ndarray) -> str:
    """COCO compressed RLE counts string of a boolean mask (size is the mask's shape)."""
    rle = coco_mask.encode(np.asfortranarray(mask, dtype=np.uint8))
    return rle["counts"].decode("ascii")


def decode_rle(counts: str, height: int, width: int) -> np.ndarray:
    """Boolean mask from a COCO compressed RLE counts string."""
    rle = {"size": [height, width], "counts": counts.encode("ascii")}
    return coco_mask.decode(rle).astype(bool)
