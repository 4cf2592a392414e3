"""GeoParquet 1.1 metadata for the regions' WKB ``geometry`` column (pixel space, no CRS)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import shapely

GEOMETRY_TYPES = {3: "Polygon", 6: "MultiPolygon"}  # shapely type ids a mask outline can take


def geo_extent(geometry: pa.ChunkedArray) -> tuple[set[int], list[float]]:
    """Shapely type ids and total bounds of a WKB column's polygons, nulls (regions without a
    mask) left out (no bounds when none is left)."""
    geometry = geometry.drop_null()
    if not len(geometry):
        return set(), []
    shapes = shapely.from_wkb(geometry.to_numpy(zero_copy_only=False))
    return set(shapely.get_type_id(shapes).tolist()), shapely.total_bounds(shapes).tolist()


def geo_metadata(extents: Iterable[tuple[set[int], list[float]]]) -> dict[bytes, bytes]:
    """GeoParquet 1.1 file metadata for the WKB ``geometry`` column (pixel space, no CRS),
    from the ``geo_extent`` of each part."""
    type_ids: set[int] = set()
    boxes = []
    for ids, box in extents:
        type_ids |= ids
        if box:
            boxes.append(box)
    bounds = []
    if boxes:
        bounds = [
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        ]
    column: dict[str, Any] = {
        "encoding": "WKB",
        "geometry_types": sorted(GEOMETRY_TYPES[t] for t in type_ids),
        "crs": None,  # image pixel coordinates: x to the right, y down
        "edges": "planar",
    }
    if bounds:
        column["bbox"] = bounds
    meta = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": column}}
    return {b"geo": json.dumps(meta, sort_keys=True).encode()}
