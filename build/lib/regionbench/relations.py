"""Spatial relations between the regions of one image (paper §3.3, Table 3; docs/relations.md).

For every ordered pair (i, j), i != j, exactly one value per group:

- topological: ``adjacent`` if the masks overlap or a pixel of i lies within Chebyshev
  distance r (``adjacency_px``) of a pixel of j, else ``disjoint``;
- horizontal: ``x_aligned`` if |c_i.x - c_j.x| <= tau W, else ``beside``;
- vertical: ``y_aligned`` if |c_i.y - c_j.y| <= tau H, else ``above`` when c_i.y < c_j.y
  (y grows downwards), else ``below``.

c is the centroid of a mask in pixels. Adjacency is computed on the raster rather than with
shapely: on pixel masks the raster test is exact by construction (Chebyshev distance between
pixel centres), while polygon distances would need care at the pixel-square boundaries. Mask
i is dilated by a (2r+1) square and intersected with j, only when their bounding boxes come
within r of each other and only inside that window. The relation is symmetric, so each
unordered pair is tested once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import ndimage

from regionbench import geometry, tables

TOPOLOGICAL = ("adjacent", "disjoint")
HORIZONTAL = ("beside", "x_aligned")
VERTICAL = ("above", "below", "y_aligned")
# Codes of the official spatial_rels/<id>.mat files (docs/relations.md).
CODES = {"adjacent": 1, "disjoint": 2, "beside": 3, "x_aligned": 4, "above": 5, "below": 6, "y_aligned": 7}


@dataclass(frozen=True)
class Pairs:
    """Relations of the ordered pairs of one image; index arrays into the regions given."""

    i: np.ndarray
    j: np.ndarray
    topological: np.ndarray  # values from TOPOLOGICAL
    horizontal: np.ndarray
    vertical: np.ndarray

    def matrices(self, n: int) -> dict[str, np.ndarray]:
        """The official n x n code matrices ``topo``, ``x_rels``, ``y_rels`` (0 on the diagonal)."""
        out = {}
        for name, values in (("topo", self.topological), ("x_rels", self.horizontal), ("y_rels", self.vertical)):
            m = np.zeros((n, n))
            m[self.i, self.j] = [CODES[v] for v in values]
            out[name] = m
        return out


def _boxes(masks: list[np.ndarray]) -> np.ndarray:
    """(n, 4) rows r0, r1, c0, c1 (ends exclusive) of each mask's bounding box."""
    out = np.empty((len(masks), 4), dtype=np.int64)
    for k, m in enumerate(masks):
        x, y, w, h = geometry.bbox(m)
        out[k] = y, y + h, x, x + w
    return out


def adjacency(masks: list[np.ndarray], adjacency_px: int = 1) -> np.ndarray:
    """Symmetric boolean n x n matrix: masks overlap or come within ``adjacency_px`` (Chebyshev)."""
    n = len(masks)
    adj = np.zeros((n, n), dtype=bool)
    if n < 2:
        return adj
    boxes = _boxes(masks)
    r = adjacency_px
    square = np.ones((2 * r + 1, 2 * r + 1), dtype=bool)
    for a in range(n):
        for b in range(a + 1, n):
            # Window where a dilated by r meets b; empty means they are farther apart.
            r0 = max(boxes[a, 0] - r, boxes[b, 0])
            r1 = min(boxes[a, 1] + r, boxes[b, 1])
            c0 = max(boxes[a, 2] - r, boxes[b, 2])
            c1 = min(boxes[a, 3] + r, boxes[b, 3])
            if r0 >= r1 or c0 >= c1:
                continue
            # Dilating a within the window needs a's pixels up to r beyond it.
            h, w = masks[a].shape
            pr0, pr1, pc0, pc1 = max(r0 - r, 0), min(r1 + r, h), max(c0 - r, 0), min(c1 + r, w)
            grown = (
                ndimage.binary_dilation(masks[a][pr0:pr1, pc0:pc1], structure=square)
                if r
                else masks[a][pr0:pr1, pc0:pc1]
            )
            near = grown[r0 - pr0 : r1 - pr0, c0 - pc0 : c1 - pc0] & masks[b][r0:r1, c0:c1]
            adj[a, b] = adj[b, a] = bool(near.any())
    return adj


def centroids(masks: list[np.ndarray]) -> np.ndarray:
    """(n, 2) mean x (column) and mean y (row) of each mask, in pixels."""
    out = np.empty((len(masks), 2))
    for k, m in enumerate(masks):
        rows, cols = np.nonzero(m)
        out[k] = cols.mean(), rows.mean()
    return out


def pairwise(masks: list[np.ndarray], image_shape: tuple[int, int], tau: float = 0.1, adjacency_px: int = 1) -> Pairs:
    """Relations of every ordered pair of regions of one image (rows ordered by i, then j)."""
    n = len(masks)
    height, width = image_shape[:2]
    i, j = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), indexing="ij"))
    keep = i != j
    i, j = i[keep], j[keep]
    if n < 2:
        empty = np.array([], dtype=object)
        return Pairs(i, j, empty, empty, empty)
    adj = adjacency(masks, adjacency_px)
    c = centroids(masks)
    dx = np.abs(c[i, 0] - c[j, 0])
    dy = c[i, 1] - c[j, 1]
    topological = np.where(adj[i, j], "adjacent", "disjoint").astype(object)
    horizontal = np.where(dx <= tau * width, "x_aligned", "beside").astype(object)
    vertical = np.where(np.abs(dy) <= tau * height, "y_aligned", np.where(dy < 0, "above", "below")).astype(object)
    return Pairs(i, j, topological, horizontal, vertical)


def shard_relations(images: pa.Table, regions: pa.Table, tau: float = 0.1, adjacency_px: int = 1) -> pa.Table:
    """Relations of every ordered pair of regions of each (image, annotator) in an ingest shard."""
    sizes = {
        i: (h, w)
        for i, h, w in zip(*(images.column(c).to_pylist() for c in ("image_id", "height", "width")), strict=True)
    }
    groups: dict[tuple[int, str], list[tuple[int, str]]] = {}
    for image_id, annotator, region_id, rle in zip(
        *(regions.column(c).to_pylist() for c in (*tables.REGION_KEY, "mask_rle")), strict=True
    ):
        groups.setdefault((image_id, annotator), []).append((region_id, rle))
    out: dict[str, list] = {name: [] for name in tables.RELATIONS.names}
    for (image_id, annotator), members in sorted(groups.items()):
        h, w = sizes[image_id]
        pairs = pairwise([geometry.decode_rle(rle, h, w) for _, rle in members], (h, w), tau, adjacency_px)
        ids = np.array([region_id for region_id, _ in members])
        out["image_id"] += [image_id] * len(pairs.i)
        out["annotator"] += [annotator] * len(pairs.i)
        out["region_id"] += ids[pairs.i].tolist()
        out["other_region_id"] += ids[pairs.j].tolist()
        out["topological"] += pairs.topological.tolist()
        out["horizontal"] += pairs.horizontal.tolist()
        out["vertical"] += pairs.vertical.tolist()
    return pa.table(out, schema=tables.RELATIONS)


def relation_stats(shards: list[pa.Table]) -> pa.Table:
    """Paper Table 3: count of ordered pairs per relation and its share of all relation values."""
    counts = {v: 0 for v in (*TOPOLOGICAL, *HORIZONTAL, *VERTICAL)}
    for table in shards:
        for group in ("topological", "horizontal", "vertical"):
            for value, n in zip(*pc.value_counts(table.column(group)).flatten(), strict=True):
                counts[value.as_py()] += n.as_py()
    total = sum(counts.values())
    rows = [
        {"group": group, "relation": v, "count": counts[v], "share": counts[v] / total if total else 0.0}
        for group, values in (("topological", TOPOLOGICAL), ("horizontal", HORIZONTAL), ("vertical", VERTICAL))
        for v in values
    ]
    return pa.Table.from_pylist(rows, schema=tables.RELATION_STATS)
