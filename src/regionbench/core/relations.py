"""Spatial relations between the regions of one image (paper §3.3, Table 3; docs/relations.md).

For every ordered pair (i, j), i != j, exactly one value per group:

- topological: ``adjacent`` if the masks overlap or a pixel of i lies within Chebyshev
  distance r (``adjacency_px``) of a pixel of j, else ``disjoint``;
- horizontal: ``x_aligned`` if |c_i.x - c_j.x| <= tau W, else ``beside``;
- vertical: ``y_aligned`` if |c_i.y - c_j.y| <= tau H, else ``above`` when c_i.y < c_j.y
  (y grows downwards), else ``below``.

c is the centroid of a mask in pixels. Adjacency is computed on the raster rather than with
shapely: on pixel masks the raster test is exact by construction (Chebyshev distance between
pixel centres), while polygon distances would need care at the pixel-square boundaries. A
pair is tested only when their bounding boxes come within r of each other and only inside
that window, by a compiled loop that stops at the first pixel of j with a pixel of i within
r (the same answer as dilating i by a (2r+1) square). The relation is symmetric, so each
unordered pair is tested once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regionbench.core import geometry, tables

TOPOLOGICAL = ("adjacent", "disjoint")
HORIZONTAL = ("beside", "x_aligned")
VERTICAL = ("above", "below", "y_aligned")
GROUPS = ("topological", "horizontal", "vertical")


@dataclass(frozen=True)
class Pairs:
    """Relations of the ordered pairs of one image; index arrays into the regions given."""

    i: np.ndarray
    j: np.ndarray
    topological: np.ndarray  # values from TOPOLOGICAL
    horizontal: np.ndarray
    vertical: np.ndarray


@dataclass(frozen=True)
class RelationSettings:
    """The ``relations`` settings of a build: centroids closer than ``tau`` times the image's
    width (height) are x- (y-) aligned; regions within ``adjacency_px`` pixels (Chebyshev) are
    adjacent; an image (one annotator's regions) with more than ``max_regions`` regions relates
    only its near pairs (``near_pairs``; None: every pair, however many regions)."""

    tau: float = 0.1
    adjacency_px: int = 1
    max_regions: int | None = 100

    @classmethod
    def from_config(cls, relations: Mapping[str, Any]) -> RelationSettings:
        """From the ``relations`` settings of a validated build configuration."""
        return cls(relations["tau"], relations["adjacency_px"], relations["max_regions"])


def _box_edges(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Top, bottom (exclusive), left and right (exclusive) of (n, 4: x, y, width, height) boxes."""
    top, left = boxes[:, 1], boxes[:, 0]
    return top, top + boxes[:, 3], left, left + boxes[:, 2]


def near_pairs(boxes: np.ndarray, adjacency_px: int) -> tuple[np.ndarray, np.ndarray]:
    """The unordered pairs a < b whose boxes come within ``adjacency_px`` (Chebyshev) of each
    other, in order: the only pairs that can be adjacent. Distant pairs are ruled out a box row
    at a time in numpy (n steps of O(n) each, no n x n matrix), so an image of many small
    regions costs the masks of its near pairs only."""
    n, r = len(boxes), adjacency_px
    top, bottom, left, right = _box_edges(np.asarray(boxes, dtype=np.int64))
    firsts, seconds = [], []
    for a in range(n - 1):
        rest = slice(a + 1, n)
        rows = np.maximum(top[a] - r, top[rest]) < np.minimum(bottom[a] + r, bottom[rest])
        cols = np.maximum(left[a] - r, left[rest]) < np.minimum(right[a] + r, right[rest])
        others = np.flatnonzero(rows & cols) + a + 1
        firsts.append(np.full(len(others), a))
        seconds.append(others)
    if not firsts:
        return np.array([], dtype=np.int64), np.array([], dtype=np.int64)
    return np.concatenate(firsts).astype(np.int64), np.concatenate(seconds).astype(np.int64)


def adjacency(
    masks: list[np.ndarray], adjacency_px: int = RelationSettings.adjacency_px, boxes: np.ndarray | None = None
) -> np.ndarray:
    """Symmetric boolean n x n matrix: masks overlap or come within ``adjacency_px`` (Chebyshev).

    Only the near pairs (``near_pairs``) are looked at, and only where the box of one, grown by
    r, meets the box of the other (``kernels.near``); ``boxes`` (``geometry.bboxes``), when
    known, save finding them."""
    from regionbench.core import kernels  # numba's import (0.3 s) is paid where a kernel runs

    n = len(masks)
    adj = np.zeros((n, n), dtype=bool)
    if n < 2:
        return adj
    boxes = geometry.bboxes(masks, boxes)
    top, bottom, left, right = _box_edges(boxes)
    r = adjacency_px
    for a, b in zip(*near_pairs(boxes, r), strict=True):
        window = np.array(
            [max(top[a] - r, top[b]), min(bottom[a] + r, bottom[b]), max(left[a] - r, left[b]), min(right[a] + r, right[b])]
        )  # fmt: skip
        adj[a, b] = adj[b, a] = kernels.near(masks[a], masks[b], window, r)
    return adj


def centroids(masks: list[np.ndarray]) -> np.ndarray:
    """(n, 2) mean x (column) and mean y (row) of each mask, in pixels."""
    out = np.empty((len(masks), 2))
    for k, m in enumerate(masks):
        rows, cols = np.nonzero(m)
        out[k] = cols.mean(), rows.mean()
    return out


def pairwise(
    masks: list[np.ndarray],
    image_shape: tuple[int, int],
    tau: float = RelationSettings.tau,
    adjacency_px: int = RelationSettings.adjacency_px,
    boxes: np.ndarray | None = None,
    centres: np.ndarray | None = None,
    max_regions: int | None = RelationSettings.max_regions,
) -> Pairs:
    """Relations of every ordered pair of regions of one image (rows ordered by i, then j).

    With more than ``max_regions`` regions, only the ordered near pairs (``near_pairs``, both
    ways): a crowded image's n(n - 1) pairs would outweigh the rest of its shard, and its
    distant pairs are all ``disjoint``. ``boxes`` (n, 4: x, y, width, height) and ``centres``
    (``centroids``), when the caller has them (``features.measure``), are not computed again."""
    n = len(masks)
    height, width = image_shape[:2]
    if n < 2:
        empty = np.array([], dtype=object)
        return Pairs(np.array([], dtype=np.int64), np.array([], dtype=np.int64), empty, empty, empty)
    boxes = geometry.bboxes(masks, boxes)
    if max_regions is not None and n > max_regions:
        a, b = near_pairs(boxes, adjacency_px)
        order = np.lexsort((np.concatenate([b, a]), np.concatenate([a, b])))
        i, j = np.concatenate([a, b])[order], np.concatenate([b, a])[order]
    else:
        i, j = (x.ravel() for x in np.meshgrid(np.arange(n), np.arange(n), indexing="ij"))
        keep = i != j
        i, j = i[keep], j[keep]
    adj = adjacency(masks, adjacency_px, boxes)
    c = centroids(masks) if centres is None else centres
    dx = np.abs(c[i, 0] - c[j, 0])
    dy = c[i, 1] - c[j, 1]
    topological = np.where(adj[i, j], "adjacent", "disjoint").astype(object)
    horizontal = np.where(dx <= tau * width, "x_aligned", "beside").astype(object)
    vertical = np.where(np.abs(dy) <= tau * height, "y_aligned", np.where(dy < 0, "above", "below")).astype(object)
    return Pairs(i, j, topological, horizontal, vertical)


def relation_stats(shards: Iterable[pa.Table]) -> pa.Table:
    """Paper Table 3: count of ordered pairs per relation, its share of all relation values of
    the three groups (``share``, the paper's normalised frequency) and of its group's pairs
    (``share_of_pairs``: each group gives every pair one value). ``shards`` need only the
    ``GROUPS`` columns, and are counted one at a time."""
    counts = {v: 0 for v in (*TOPOLOGICAL, *HORIZONTAL, *VERTICAL)}
    for table in shards:
        for group in GROUPS:
            for value, n in zip(*pc.value_counts(table.column(group)).flatten(), strict=True):
                counts[value.as_py()] += n.as_py()
    total = sum(counts.values())
    rows = []
    for group, values in (("topological", TOPOLOGICAL), ("horizontal", HORIZONTAL), ("vertical", VERTICAL)):
        pairs = sum(counts[v] for v in values)  # every ordered pair has one value per group
        rows += [
            {"group": group, "relation": v, "count": counts[v], "share": counts[v] / total if total else 0.0,
             "share_of_pairs": counts[v] / pairs if pairs else 0.0}
            for v in values
        ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=tables.RELATION_STATS)
