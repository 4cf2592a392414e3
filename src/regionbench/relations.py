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
GROUPS = ("topological", "horizontal", "vertical")
# Codes of the official spatial_rels/<id>.mat files (docs/relations.md), and which matrix
# holds which group.
CODES = {"adjacent": 1, "disjoint": 2, "beside": 3, "x_aligned": 4, "above": 5, "below": 6, "y_aligned": 7}
MATRICES = {"topo": "topological", "x_rels": "horizontal", "y_rels": "vertical"}


def code_matrices(i: np.ndarray, j: np.ndarray, values: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """The official n x n code matrices ``topo``, ``x_rels``, ``y_rels``: entry [i, j] holds the
    code of the relation of region i + 1 to region j + 1 (``values``: group -> relation names,
    aligned with the 0-based ``i`` and ``j``); 0 on the diagonal and for absent pairs."""
    out = {}
    for name, group in MATRICES.items():
        m = np.zeros((n, n))
        m[np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)] = [CODES[v] for v in values[group]]
        out[name] = m
    return out


@dataclass(frozen=True)
class Pairs:
    """Relations of the ordered pairs of one image; index arrays into the regions given."""

    i: np.ndarray
    j: np.ndarray
    topological: np.ndarray  # values from TOPOLOGICAL
    horizontal: np.ndarray
    vertical: np.ndarray

    def matrices(self, n: int) -> dict[str, np.ndarray]:
        """The official n x n code matrices (``code_matrices``)."""
        values = {"topological": self.topological, "horizontal": self.horizontal, "vertical": self.vertical}
        return code_matrices(self.i, self.j, values, n)


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
        for group in GROUPS:
            for value, n in zip(*pc.value_counts(table.column(group)).flatten(), strict=True):
                counts[value.as_py()] += n.as_py()
    total = sum(counts.values())
    rows = [
        {"group": group, "relation": v, "count": counts[v], "share": counts[v] / total if total else 0.0}
        for group, values in (("topological", TOPOLOGICAL), ("horizontal", HORIZONTAL), ("vertical", VERTICAL))
        for v in values
    ]
    return pa.Table.from_pylist(rows, schema=tables.RELATION_STATS)


def image_matrices(relations: pa.Table, sizes: dict[int, int]) -> dict[int, dict[str, np.ndarray]]:
    """The official code matrices (``code_matrices``) of every image of ``sizes`` (image id ->
    its highest region id) from a relations table of one annotator; an image without pairs gets
    zero matrices."""
    rows = relations.select(["image_id", "region_id", "other_region_id", *GROUPS]).to_pydict()
    by_image: dict[int, list[int]] = {image_id: [] for image_id in sizes}
    for n, image_id in enumerate(rows["image_id"]):
        by_image[image_id].append(n)
    out = {}
    for image_id, members in sorted(by_image.items()):
        i = np.array([rows["region_id"][n] - 1 for n in members], dtype=np.int64)
        j = np.array([rows["other_region_id"][n] - 1 for n in members], dtype=np.int64)
        values = {group: [rows[group][n] for n in members] for group in GROUPS}
        out[image_id] = code_matrices(i, j, values, sizes[image_id])
    return out


def parity(official: dict[int, dict[str, np.ndarray]], computed: pa.Table, worst: int = 5) -> dict:
    """Computed relations against the official ``spatial_rels`` matrices, per relation group.

    ``official``: image id -> ``{"topo", "x_rels", "y_rels"}`` n x n code matrices (entry
    [i - 1, j - 1] for the pair (i, j)); ``computed``: a relations table of one annotator.
    Returns the pairs compared, found on one side only, and per group the share of compared
    pairs with the same relation (``agreement``) and the (official, computed) confusion counts;
    codes outside the official ones read as ``code <v>``. ``worst_images`` lists the images with
    the most disagreeing values (ties by id).
    """
    names = {code: name for name, code in CODES.items()}
    rows = computed.select(["image_id", "region_id", "other_region_id", *GROUPS]).to_pydict()
    confusion: dict[str, dict[tuple[str, str], int]] = {group: {} for group in GROUPS}
    wrong: dict[int, int] = {}
    compared = only_computed = 0
    images = set()
    for n, image_id in enumerate(rows["image_id"]):
        i, j = rows["region_id"][n] - 1, rows["other_region_id"][n] - 1
        matrices = official.get(image_id)
        size = len(matrices["topo"]) if matrices else 0
        if i >= size or j >= size:
            only_computed += 1
            continue
        compared += 1
        images.add(image_id)
        for matrix, group in MATRICES.items():
            code = float(matrices[matrix][i, j])
            theirs = names.get(int(code), f"code {code:g}") if code.is_integer() else f"code {code:g}"
            pair = (theirs, rows[group][n])
            confusion[group][pair] = confusion[group].get(pair, 0) + 1
            if pair[0] != pair[1]:
                wrong[image_id] = wrong.get(image_id, 0) + 1
    official_pairs = sum(len(m["topo"]) * (len(m["topo"]) - 1) for m in official.values())
    return {
        "images_compared": len(images),
        "pairs_compared": compared,
        "pairs_only_computed": only_computed,
        "pairs_only_official": official_pairs - compared,
        "groups": {
            group: {
                "agreement": sum(c for (a, b), c in confusion[group].items() if a == b) / compared if compared else 0.0,
                "confusion": [
                    {"official": a, "computed": b, "pairs": c} for (a, b), c in sorted(confusion[group].items())
                ],
            }
            for group in GROUPS
        },
        "worst_images": [
            {"image_id": image_id, "disagreements": count}
            for image_id, count in sorted(wrong.items(), key=lambda kv: (-kv[1], kv[0]))[:worst]
        ],
    }
