"""The BSDS500 boundary benchmark: boundary maps scored against several humans' boundaries
(docs/scoring.md, "Boundaries").

Source: D. Martin, C. Fowlkes, J. Malik, "Learning to Detect Natural Image Boundaries Using Local
Brightness, Color, and Texture Cues", IEEE TPAMI 26(5), 2004, and the code of the BIDS/BSDS500
repository (``bench/benchmarks/evaluation_bdry_image.m``, ``collect_eval_bdry.m``, ``seg2bdry.m``,
``correspondPixels``), followed step by step:

- a machine boundary map B_t per threshold t: a soft map ``pb`` (a probability PNG / 255, or a
  ``ucm2`` sampled at ``[2::2, 2::2]``) is cut at ``pb >= t`` (``thresholds(n)``); a segmentation
  gives its boundaries (``seg2bdry``) at each of its scales. B_t is thinned to one pixel
  (MATLAB's ``bwmorph(.., 'thin', inf)``: scikit-image's ``thin``, the same algorithm, compiled
  in ``core.thinning``);
- for each human j with boundaries G_j, B_t and G_j are matched one to one within
  d = 0.0075 of the image diagonal (``correspond``); cntR_t = Σ_j |matched G_j|,
  sumR = Σ_j |G_j|; cntP_t = |pixels of B_t matched to any human|, sumP_t = |B_t|;
- over images the counts are summed: R = cntR / sumR, P = cntP / sumP, F = 2PR / (P + R); ODS is
  the best F on the curve linearly interpolated between thresholds (100 steps each, ``max_f``),
  OIS sums each image's counts at its own best threshold (no interpolation), AP is the area under
  the precision-recall curve sampled at recall 0:0.01:1 (``average_precision``).

``correspondPixels`` finds a minimum-cost perfect matching (Goldberg's CSA) on a graph where a
pixel may also go to an "outlier" at 100 times d, the outliers wired sparsely at random. Here the
same cost is minimised exactly, per connected component of the pixel pairs within d, as an
assignment (``_cheapest_matching``). On the benchmark's own test data its published ODS, OIS and
AP come back within 0.0004, its curve within 0.0007 and each image's best within 0.0012; the
benchmark itself, run twice on the same boundary maps (its
``test_1`` and ``test_4``), differs from itself by up to 0.0001 (tests/test_boundaries_benchmark.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_DIST = 0.0075  # of the image diagonal: the benchmark's matching distance
STEPS = 100  # MATLAB's linspace(0, 1): the points between two thresholds where ODS is sought


def thresholds(n: int) -> np.ndarray:
    """The benchmark's ``n`` thresholds of a soft map: linspace(1/(n+1), 1 - 1/(n+1), n)."""
    return np.linspace(1 / (n + 1), 1 - 1 / (n + 1), n)


def seg2bdry(segmentation: np.ndarray) -> np.ndarray:
    """The boundary pixels of a label map, as ``seg2bdry(seg, 'imageSize')`` marks them: a pixel
    whose label differs from the one below or to its right, and a pixel at a corner where such
    edges meet (the double-size map sampled at the pixels)."""
    seg = np.asarray(segmentation)
    rows, cols = seg.shape
    vertical = np.zeros((rows, cols), dtype=bool)
    vertical[:-1, :] = seg[:-1, :] != seg[1:, :]
    horizontal = np.zeros((rows, cols), dtype=bool)
    horizontal[:, :-1] = seg[:, :-1] != seg[:, 1:]
    big = np.zeros((2 * rows + 1, 2 * cols + 1), dtype=bool)
    big[2::2, 1::2] = vertical
    big[1::2, 2::2] = horizontal
    big[2:-1:2, 2:-1:2] = np.maximum(
        np.maximum(horizontal[:-1, :-1], horizontal[1:, :-1]), np.maximum(vertical[:-1, :-1], vertical[:-1, 1:])
    )
    big[0, :], big[:, 0] = big[1, :], big[:, 1]
    big[-1, :], big[:, -1] = big[-2, :], big[:, -2]
    return big[2::2, 2::2]


def thin(boundary: np.ndarray) -> np.ndarray:
    """``bwmorph(boundary, 'thin', inf)``: Guo and Hall's thinning to one-pixel lines, scikit-image's
    ``thin`` pixel for pixel, visiting only the set pixels a deletion touched
    (``core.thinning``, compiled: a ninth of its time on a boundary map)."""
    from regionbench.core.thinning import thin as thinned

    return thinned(boundary)


@dataclass(frozen=True)
class Located:
    """A boundary map's set pixels (row-major, as flatnonzero) and their k-d tree (None: no
    pixel), built once for every map it is matched against."""

    shape: tuple[int, int]
    points: np.ndarray
    tree: Any

    @classmethod
    def of(cls, boundary: np.ndarray) -> Located:
        from scipy.spatial import cKDTree

        points = np.argwhere(boundary)
        return cls((int(boundary.shape[0]), int(boundary.shape[1])), points, cKDTree(points) if points.size else None)


def correspond(machine: np.ndarray, human: np.ndarray, max_dist: float = MAX_DIST) -> tuple[np.ndarray, np.ndarray]:
    """The pixels of two boundary maps matched one to one within ``max_dist`` of the image
    diagonal (Euclidean, the bound included), as many as can be: the machine's matched pixels
    and the human's, as boolean maps (``correspondPixels``' match1 > 0, match2 > 0)."""
    return correspond_located(Located.of(machine), Located.of(human), max_dist)


def correspond_located(machine: Located, human: Located, max_dist: float = MAX_DIST) -> tuple[np.ndarray, np.ndarray]:
    """``correspond`` of two maps' ``Located`` pixels (each map's tree built once, however many
    maps it is matched against: a human's against 99 thresholds)."""
    rows, cols = machine.shape
    radius = max_dist * float(np.hypot(rows, cols))
    mine, theirs = machine.points, human.points
    matched_mine, matched_theirs = np.zeros(machine.shape, dtype=bool), np.zeros(human.shape, dtype=bool)
    if not mine.size or not theirs.size:
        return matched_mine, matched_theirs
    near = machine.tree.sparse_distance_matrix(human.tree, radius, output_type="ndarray")
    order = np.argsort(near["i"] * len(theirs) + near["j"])  # the tree's order is its own
    source, target = near["i"][order], near["j"][order]
    distance = np.hypot(*(mine[source] - theirs[target]).T)  # from the offsets, as the bound
    partner = _cheapest_matching(source, target, distance, len(mine), len(theirs), OUTLIER * radius)
    taken = partner >= 0
    matched_mine[tuple(mine[taken].T)] = True
    matched_theirs[tuple(theirs[partner[taken]].T)] = True
    return matched_mine, matched_theirs


OUTLIER = 100  # correspondPixels' cost of leaving a pixel unmatched, in matching distances


DENSE_UP_TO = 500  # pixels of a component solved as a dense assignment; a larger one, sparse


def _cheapest_matching(
    source: np.ndarray, target: np.ndarray, distance: np.ndarray, n1: int, n2: int, outlier: float
) -> np.ndarray:
    """The matching of ``correspondPixels``: n1 machine and n2 human pixels joined by the pairs
    (``source``, ``target``) at ``distance``; each pixel is matched to one of the other map's or
    left to an outlier at cost ``outlier``, the total cost least. Solved exactly per connected
    component of the pairs: a small one as a dense assignment (``linear_sum_assignment``) where a
    pair that is no edge costs two outliers (an assignment's cost is then the outlier graph's,
    less a constant), a large one (``DENSE_UP_TO``) as a sparse one (``_sparse_matching``).
    Returns each machine pixel's human pixel, or -1."""
    from scipy.optimize import linear_sum_assignment
    from scipy.sparse import coo_array
    from scipy.sparse.csgraph import connected_components

    graph = coo_array((np.ones(source.size), (source, n1 + target)), shape=(n1 + n2, n1 + n2))
    _, component = connected_components(graph, directed=False)
    partner = np.full(n1, -1, dtype=np.int64)
    order = np.argsort(component[source], kind="stable")
    bounds = np.flatnonzero(np.diff(component[source][order])) + 1
    for edges in np.split(order, bounds):
        left, right = np.unique(source[edges]), np.unique(target[edges])
        i, j = np.searchsorted(left, source[edges]), np.searchsorted(right, target[edges])
        if left.size + right.size > DENSE_UP_TO:
            found = _sparse_matching(i, j, distance[edges], left.size, right.size, outlier)
            partner[left[found >= 0]] = right[found[found >= 0]]
            continue
        cost = np.full((left.size, right.size), 2 * outlier)
        cost[i, j] = distance[edges]
        rows, cols = linear_sum_assignment(cost)
        real = cost[rows, cols] < 2 * outlier
        partner[left[rows[real]]] = right[cols[real]]
    return partner


def _sparse_matching(
    source: np.ndarray, target: np.ndarray, distance: np.ndarray, n1: int, n2: int, outlier: float
) -> np.ndarray:
    """``_cheapest_matching`` of one component as a sparse rectangular assignment (scipy's
    ``min_weight_full_bipartite_matching``, LAPJVsp; many times the dense one's speed on
    thousands of pixels). The outlier graph costs Σ_matched d + outlier (n1 + n2 - 2|M|), so the
    cheapest matching is the one least in Σ_matched (d - 2 outlier): each pixel of the smaller
    side is assigned a pixel of the other at d + 1, or a stand-in of its own at 2 outlier + 1
    (every weight shifted by the same 2 outlier + 1, which every full assignment pays alike)."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching

    flip = n2 < n1  # rows are the smaller side's pixels
    rows, cols, n_rows, n_cols = (target, source, n2, n1) if flip else (source, target, n1, n2)
    weights = np.concatenate([distance + 1.0, np.full(n_rows, 2 * outlier + 1.0)])
    graph = csr_array(
        (weights, (np.concatenate([rows, np.arange(n_rows)]), np.concatenate([cols, n_cols + np.arange(n_rows)]))),
        shape=(n_rows, n_cols + n_rows),
    )
    row, col = min_weight_full_bipartite_matching(graph)
    real = col < n_cols  # not the row's stand-in
    partner = np.full(n1, -1, dtype=np.int64)
    if flip:
        partner[col[real]] = row[real]
    else:
        partner[row[real]] = col[real]
    return partner


@dataclass
class ImageCounts:
    """One image's counts per threshold: cntR, sumR, cntP, sumP (``evaluation_bdry_image``)."""

    cnt_r: np.ndarray
    sum_r: np.ndarray
    cnt_p: np.ndarray
    sum_p: np.ndarray


def score_image(
    maps: Sequence[np.ndarray], humans: Sequence[np.ndarray], max_dist: float = MAX_DIST, thinned: bool = True
) -> ImageCounts:
    """An image's counts: each machine boundary map (one per threshold, thinned unless
    ``thinned`` is false) against every human boundary map. A map equal to the threshold's
    before takes its counts (a soft map of few levels, say a sweep of 15 edge thresholds, cut
    at 99 thresholds, is matched once per level it has)."""
    n = len(maps)
    counts = ImageCounts(*(np.zeros(n, dtype=np.int64) for _ in range(4)))
    located = [Located.of(human) for human in humans]  # each human's tree, once for every threshold
    for t, boundary in enumerate(maps):
        if t and np.array_equal(boundary, maps[t - 1]):
            for column in (counts.cnt_r, counts.sum_r, counts.cnt_p, counts.sum_p):
                column[t] = column[t - 1]
            continue
        bmap = thin(boundary) if thinned else np.asarray(boundary, dtype=bool)
        anyone = np.zeros(bmap.shape, dtype=bool)
        machine = Located.of(bmap)  # once, for every human
        for theirs_located in located:
            mine, theirs = correspond_located(machine, theirs_located, max_dist)
            anyone |= mine
            counts.sum_r[t] += len(theirs_located.points)
            counts.cnt_r[t] += int(theirs.sum())
        counts.sum_p[t] = int(bmap.sum())
        counts.cnt_p[t] = int(anyone.sum())
    return counts


def _ratio(count: np.ndarray, total: np.ndarray) -> np.ndarray:
    return count / (total + (total == 0))


def f_measure(r: np.ndarray | float, p: np.ndarray | float) -> np.ndarray:
    """F = 2PR / (P + R), 0 where both are 0."""
    r, p = np.asarray(r, dtype=float), np.asarray(p, dtype=float)
    return 2 * p * r / (p + r + ((p + r) == 0))


def max_f(levels: np.ndarray, r: np.ndarray, p: np.ndarray) -> tuple[float, float, float, float]:
    """(threshold, recall, precision, F) of the best F on the curve interpolated linearly between
    consecutive thresholds at 100 points each (``maxF`` of ``collect_eval_bdry.m``), the first
    on ties."""
    best = (float(levels[0]), float(r[0]), float(p[0]), float(f_measure(r[0], p[0])))
    d = np.linspace(0, 1, STEPS)
    for i in range(1, len(levels)):
        t = levels[i] * d + levels[i - 1] * (1 - d)
        rr = r[i] * d + r[i - 1] * (1 - d)
        pp = p[i] * d + p[i - 1] * (1 - d)
        f = f_measure(rr, pp)
        k = int(np.argmax(f))
        if f[k] > best[3]:
            best = (float(t[k]), float(rr[k]), float(pp[k]), float(f[k]))
    return best


def average_precision(r: np.ndarray, p: np.ndarray) -> float:
    """The area under the precision-recall curve as ``collect_eval_bdry.m`` takes it: precision
    at each distinct recall (the first threshold giving it), interpolated linearly at recall
    0:0.01:1, 0 outside the recalls reached, summed times 0.01; 0 with one distinct recall."""
    distinct, first = np.unique(r, return_index=True)
    if distinct.size < 2:
        return 0.0
    at = np.linspace(0, 1, 101)
    values = np.interp(at, distinct, p[first], left=np.nan, right=np.nan)
    return float(np.nansum(values) * 0.01)


@dataclass
class Benchmark:
    """The collected figures: ``ods`` and ``ois`` (threshold, recall, precision, F), ``ap``,
    the curve (``recall``, ``precision``, ``f`` per threshold) and each image's best
    (``per_image``: threshold, recall, precision, F)."""

    thresholds: list[float]
    ods: dict[str, float]
    ois: dict[str, float]
    ap: float
    curve: dict[str, list[float]] = field(default_factory=dict)
    per_image: list[dict[str, float]] = field(default_factory=list)


def collect(levels: Sequence[float], images: Sequence[ImageCounts]) -> Benchmark:
    """``collect_eval_bdry``: the counts of ``images`` summed; ODS on the interpolated curve,
    OIS from each image's best threshold, AP under the curve."""
    levels_ = np.asarray(levels, dtype=float)
    n = len(levels_)
    total = [np.zeros(n, dtype=np.int64) for _ in range(4)]
    best_counts = np.zeros(4, dtype=np.int64)
    per_image = []
    for image in images:
        parts = (image.cnt_r, image.sum_r, image.cnt_p, image.sum_p)
        for k, part in enumerate(parts):
            total[k] += part
        r, p = _ratio(image.cnt_r, image.sum_r), _ratio(image.cnt_p, image.sum_p)
        t, br, bp, bf = max_f(levels_, r, p)
        per_image.append({"threshold": t, "recall": br, "precision": bp, "f": bf})
        at = int(np.argmax(f_measure(r, p)))
        best_counts += [int(part[at]) for part in parts]
    r, p = _ratio(total[0], total[1]), _ratio(total[2], total[3])
    t, br, bp, bf = max_f(levels_, r, p)
    cr, cp = _ratio(best_counts[0], best_counts[1]), _ratio(best_counts[2], best_counts[3])
    return Benchmark(
        thresholds=[float(v) for v in levels_],
        ods={"threshold": t, "recall": br, "precision": bp, "f": bf},
        ois={"recall": float(cr), "precision": float(cp), "f": float(f_measure(cr, cp))},
        ap=average_precision(r, p),
        curve={"recall": r.tolist(), "precision": p.tolist(), "f": f_measure(r, p).tolist()},
        per_image=per_image,
    )
