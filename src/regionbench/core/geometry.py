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


def mask_to_polygon(mask: np.ndarray, box: tuple[int, int, int, int] | None = None) -> shapely.Geometry:
    """Exact polygon (or multipolygon) of the pixel squares of a non-empty boolean mask (``box``:
    its ``bbox``, when the caller has it).

    The boundary is walked ring by ring (``kernels.boundary_rings``); each 4-connected
    component of the mask is one polygon, its outer ring the shell and its other rings the
    holes. Components that touch only at a corner become separate parts of a valid
    multipolygon. The result is normalised so equal masks give equal WKB.
    """
    # Imported here: the compiled kernels belong to the build, the client reads geometry too.
    from regionbench.core import kernels

    x0, y0, w, h = bbox(mask) if box is None else box
    corners, ends, component, outer = kernels.boundary_rings(mask[y0 : y0 + h, x0 : x0 + w])
    corners = corners + np.array([x0, y0])
    if len(ends) == 1:  # one ring, the shell: most regions, built without the ring arrays
        return shapely.normalize(shapely.polygons(corners))
    ring = np.repeat(np.arange(len(ends)), np.diff(ends, prepend=0))
    rings = shapely.linearrings(corners, indices=ring)
    order = np.lexsort((~outer, component))  # per component, its shell first
    parts = shapely.polygons(rings[order], indices=component[order])
    geom = parts[0] if len(parts) == 1 else shapely.multipolygons(parts)
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


def rle(mask: np.ndarray) -> dict:
    """A boolean mask as COCO writes it: ``{"size": [height, width], "counts": <compressed RLE>}``."""
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": encode_rle(mask)}


def from_rle(value: dict) -> np.ndarray:
    """The boolean mask of a ``rle`` value."""
    height, width = value["size"]
    return decode_rle(value["counts"], height, width)


def encode_rle(mask: np.ndarray) -> str:
    """COCO compressed RLE counts string of a boolean mask (size is the mask's shape).

    pycocotools reads a column-major array; only the mask's bounding box is transposed into a
    zeroed one, as a region of a 2-megapixel map covers a small part of it (five times faster
    than converting the whole mask)."""
    rows = np.flatnonzero(mask.any(axis=1))
    columnar = np.zeros(mask.shape, dtype=np.uint8, order="F")
    if rows.size:
        cols = np.flatnonzero(mask.any(axis=0))
        box = slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)
        columnar[box] = mask[box]
    rle = coco_mask.encode(columnar)
    return rle["counts"].decode("ascii")


MAX_RUN_CHARS = 12  # 60 bits: no run of an image fits in more


def rle_runs(counts: str) -> np.ndarray:
    """The run lengths of a COCO compressed RLE counts string (pycocotools' ``rleFrString``: each
    run a little-endian base-32 number of characters '0'+v, 0x20 marking more, 0x10 the sign;
    from the third run on, a difference to the run two before), decoded with array operations
    (ingest checks every mask's counts). Raises ValueError for a string that is not one:
    pycocotools decodes such strings to masks of arbitrary pixels."""
    try:
        codes = np.frombuffer(counts.encode("ascii"), dtype=np.uint8).astype(np.int64) - 48
    except UnicodeEncodeError:
        raise ValueError("compressed RLE counts hold a character outside ASCII") from None
    if ((codes < 0) | (codes >= 64)).any():
        bad = counts[int(np.flatnonzero((codes < 0) | (codes >= 64))[0])]
        raise ValueError(f"compressed RLE counts hold {bad!r}, not a character of the encoding")
    if not codes.size:
        return codes
    last = (codes & 0x20) == 0  # the last character of each number
    if not last[-1]:
        raise ValueError("compressed RLE counts end inside a number")
    starts = np.flatnonzero(np.concatenate(([True], last[:-1])))
    number = np.cumsum(np.concatenate(([0], last[:-1].astype(np.int64))))  # each character's number
    place = np.arange(codes.size) - starts[number]  # its 5-bit digit within the number
    if place.max() >= MAX_RUN_CHARS:
        raise ValueError("compressed RLE counts hold a number too long for any image")
    raw = np.bincount(number, weights=(codes & 0x1F) << (5 * place)).astype(np.int64)
    ends = np.flatnonzero(last)
    negative = (codes[ends] & 0x10) != 0
    raw[negative] -= np.int64(1) << (5 * (place[ends[negative]] + 1))
    runs = raw.copy()  # from the fourth run on, each adds the run two before it
    runs[1::2] = np.cumsum(raw[1::2])
    runs[2::2] = np.cumsum(raw[2::2])
    if (runs < 0).any():
        raise ValueError("compressed RLE counts give a negative run")
    return runs


def decode_rle(counts: str, height: int, width: int) -> np.ndarray:
    """Boolean mask from a COCO compressed RLE counts string."""
    rle = {"size": [height, width], "counts": counts.encode("ascii")}
    return coco_mask.decode(rle).astype(bool)
