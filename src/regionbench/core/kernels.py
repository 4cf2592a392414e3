"""The per-pixel loops of the features and relations, compiled by numba (docs/features.md).

One pass converts an image window to CIE-Lab; one pass per region over its bounding box
gathers everything its 27 features need. Compilation is cached on disk (``cache=True``), so
only the first process after an install pays for it.

Determinism across machines: the loops use IEEE-754 basic operations and square roots only,
never contracted into fused multiply-adds (numba's default), so every CPU gives the same bits.
Sums are numpy's pairwise summation, replicated operation for operation (``_pairwise``), and
the cube root is our own (``_cbrt_into``), because numpy's ``cbrt`` gives other bits on a CPU
with AVX-512 than without it (a different algorithm behind its SIMD dispatch).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from regionbench.core import tables

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}

# CIE-Lab (features.lab): RGB -> XYZ (rows X, Y, Z), the white point that normalises X and Z,
# and the matrix the kernel uses, already divided by 255 and the white point.
RGB_TO_XYZ = np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169], [0.019334, 0.119193, 0.950227]])
WHITE = np.array([0.950456, 1.0, 1.088754])
XYZ = RGB_TO_XYZ / (255.0 * WHITE[:, None])
EPS = 0.008856  # below it, f(t) and L are linear in t

# The features' columns: the shape block, then mean, std, skew of R, G, B, then of L, a, b.
N_FEATURES = len(tables.FEATURE_NAMES)


@njit(**_JIT)
def _block(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's sum of at most 128 values: eight running sums (one, under eight values)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    whole = n - n % 8
    while i < whole:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(**_JIT)
def _pairwise(a: np.ndarray, lo: int, n: int) -> float:
    """Sum of a[lo:lo + n] as numpy sums a contiguous float64 array, so the rounding is numpy's,
    bit for bit: blocks of at most 128 (``_block``), longer runs split in halves at a multiple
    of 8 and summed left + right. The recursion runs on an explicit stack: numba's on-disk
    cache does not reload recursive functions safely."""
    if n <= 128:
        return _block(a, lo, n)
    frames = np.empty((192, 3), dtype=np.int64)  # lo, n, 0 = to split / 1 = to add; depth <= 3 log2 n
    values = np.empty(64)
    top, depth = 0, 0
    frames[0, 0], frames[0, 1], frames[0, 2] = lo, n, 0
    while top >= 0:
        start, size, stage = frames[top, 0], frames[top, 1], frames[top, 2]
        top -= 1
        if stage == 1:
            depth -= 1
            values[depth - 1] = values[depth - 1] + values[depth]
        elif size <= 128:
            values[depth] = _block(a, start, size)
            depth += 1
        else:
            half = size // 2
            half -= half % 8
            frames[top + 1, 0], frames[top + 1, 1], frames[top + 1, 2] = start, size, 1
            frames[top + 2, 0], frames[top + 2, 1], frames[top + 2, 2] = start + half, size - half, 0
            frames[top + 3, 0], frames[top + 3, 1], frames[top + 3, 2] = start, half, 0
            top += 3
    return values[0]


def pairwise_sum(a: np.ndarray) -> float:
    """``_pairwise`` over a whole 1-D array (for tests: equals ``a.sum()`` bit for bit)."""
    return _pairwise(np.ascontiguousarray(a, dtype=np.float64), 0, len(a))


@njit(**_JIT)
def _cbrt_into(x: np.ndarray, out: np.ndarray) -> None:
    """Cube roots of x (flat, each 0 or within [2^-600, 2^600]: y^3 must not overflow; Lab
    needs [0, 1.1]) into out, within 0.67 ulp.

    The exponent divided by three gives a guess within a few per cent; two Halley steps
    y <- y (y^3 + 2x) / (2y^3 + x) bring it to ~45 bits; it is then cut to 20 significant bits
    and rounded up, so t^2 is exact, and a last Halley step in the form t + t (x/t^2 - t) /
    (2t + x/t^2) rounds it (the final step of fdlibm's cbrt). Each loop vectorises.
    """
    n = x.size
    xi = x.view(np.uint64)
    gi = out.view(np.uint64)
    for k in range(n):
        gi[k] = xi[k] // np.uint64(3) + np.uint64(0x2A9F76253119D328)  # exponent/3 of the bits
    for k in range(n):
        v = x[k]
        y = out[k]
        y3 = y * y * y
        y = y * (y3 + v + v) / (y3 + y3 + v)
        y3 = y * y * y
        out[k] = y * (y3 + v + v) / (y3 + y3 + v)
    for k in range(n):
        gi[k] = (gi[k] & np.uint64(0xFFFFFFFF00000000)) + np.uint64(0x100000000)
    for k in range(n):
        v = x[k]
        t = out[k]
        r = v / (t * t)
        r = (r - t) / (t + t + r)
        out[k] = t + t * r if v > 0.0 else 0.0


def cbrt(x: np.ndarray) -> np.ndarray:
    """``_cbrt_into`` of an array of values 0 or in [2^-600, 2^600] (for tests)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    _cbrt_into(x.reshape(-1), out.reshape(-1))
    return out


LAB_BLOCK = 1024  # pixels converted at a time: their XYZ and cube roots stay in the core's cache


@njit(**_JIT)
def lab_planes(rgb: np.ndarray, m: np.ndarray) -> np.ndarray:
    """CIE-Lab of an H x W x 3 uint8 image as (3, H, W) planes (``features.lab``'s formula,
    ``m`` its RGB -> XYZ matrix divided by 255 and the white point).

    Pixels go through in blocks of ``LAB_BLOCK``: over whole planes the passes of the cube root
    stream megabytes through memory and cost more than the arithmetic. Every value is computed
    by the same operations, so the blocks change no bit."""
    h, w, _ = rgb.shape
    n = h * w
    flat = rgb.reshape(n, 3)
    out = np.empty((3, h, w))
    L, A, B = out[0].reshape(n), out[1].reshape(n), out[2].reshape(n)
    xyz = np.empty((3, LAB_BLOCK))
    f = np.empty((3, LAB_BLOCK))
    X, Y, Z = xyz[0], xyz[1], xyz[2]
    FX, FY, FZ = f[0], f[1], f[2]
    for start in range(0, n, LAB_BLOCK):
        size = min(LAB_BLOCK, n - start)
        for q in range(size):
            p = start + q
            r, g, b = np.float64(flat[p, 0]), np.float64(flat[p, 1]), np.float64(flat[p, 2])
            X[q] = m[0, 0] * r + m[0, 1] * g + m[0, 2] * b
            Y[q] = m[1, 0] * r + m[1, 1] * g + m[1, 2] * b
            Z[q] = m[2, 0] * r + m[2, 1] * g + m[2, 2] * b
        if size < LAB_BLOCK:  # the last block: keep the unused values valid cube-root inputs
            xyz[:, size:] = 0.0
        _cbrt_into(xyz.reshape(3 * LAB_BLOCK), f.reshape(3 * LAB_BLOCK))
        for q in range(size):
            p = start + q
            x, y, z = X[q], Y[q], Z[q]
            fx = FX[q] if x > EPS else 7.787 * x + 16.0 / 116.0
            fy = FY[q] if y > EPS else 7.787 * y + 16.0 / 116.0
            fz = FZ[q] if z > EPS else 7.787 * z + 16.0 / 116.0
            L[p] = fy * 116.0 - 16.0 if y > EPS else 903.3 * y
            A[p] = (fx - fy) * 500.0
            B[p] = (fy - fz) * 200.0
    return out


@njit(**_JIT)
def _skew(m2: float, m3: float, mean: float) -> float:
    """m3 / m2^1.5, 0 when the spread is below 1e-10 of the values' scale (features._skew)."""
    scale = 1e-10 * max(abs(mean), 1.0)
    if m2 <= scale * scale:
        return 0.0
    return m3 / (m2 * np.sqrt(m2))


@njit(**_JIT)
def _std(m2: float, n: float) -> float:
    return np.sqrt(m2 * n / (n - 1.0)) if n > 1.0 else 0.0


@njit(**_JIT)
def _level_moments(levels: np.ndarray, counts: np.ndarray, n: float, out: np.ndarray, at: int, stride: int) -> None:
    """Mean, std, skew of samples given as ``counts`` per value of ``levels``, into
    out[at], out[at + stride], out[at + 2 stride]; as ``features._weighted_moments``."""
    total = 0.0
    for k in range(levels.size):
        total += counts[k] * levels[k]  # integers: exact in any order
    mean = total / n
    m = levels.size
    sq = np.empty(m)
    cu = np.empty(m)
    for k in range(m):
        c = levels[k] - mean
        s = c * c
        sq[k] = counts[k] * s
        cu[k] = counts[k] * s * c
    m2 = _pairwise(sq, 0, m) / n
    m3 = _pairwise(cu, 0, m) / n
    out[at] = mean
    out[at + stride] = _std(m2, n)
    out[at + 2 * stride] = _skew(m2, m3, mean)


@njit(**_JIT)
def _sample_moments(values: np.ndarray, n: int, out: np.ndarray, at: int, stride: int) -> None:
    """Mean, std, skew of values[:n] (``features._moments``), into out[at + k stride]."""
    mean = _pairwise(values, 0, n) / n
    sq = np.empty(n)
    cu = np.empty(n)
    for k in range(n):
        c = values[k] - mean
        s = c * c
        sq[k] = s
        cu[k] = s * c
    m2 = _pairwise(sq, 0, n) / n
    m3 = _pairwise(cu, 0, n) / n
    out[at] = mean
    out[at + stride] = _std(m2, float(n))
    out[at + 2 * stride] = _skew(m2, m3, mean)


@njit(**_JIT)
def _shape_features(
    row: np.ndarray, count: float, bw: int, bh: int, height: int, width: int, coords: np.ndarray,
    std_xy: np.ndarray, edge: int,
) -> None:  # fmt: skip
    """The first nine features of a region (once per region): area, width and height of its box,
    its mean x and y, their standard deviations, the share of its pixels on its edge, and the
    share of its box it leaves empty."""
    row[0] = count / (height * width)
    row[1] = bw / width
    row[2] = bh / height
    row[3] = coords[0] / width
    row[4] = coords[3] / height
    row[5] = coords[1] / std_xy[0]
    row[6] = coords[4] / std_xy[1]
    row[7] = edge / count
    row[8] = 1.0 - count / (bw * bh)


@njit(**_JIT)
def region_features(
    rgb: np.ndarray, lab: np.ndarray, origin: np.ndarray, masks: np.ndarray, boxes: np.ndarray, std_xy: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The 27 features (``features.FEATURE_NAMES``) and the pixel centroid (x, y from 0) of
    every region, one pass over each bounding box.

    ``rgb`` H x W x 3 uint8; ``lab`` (3, h, w) Lab of the window at ``origin`` (row, column);
    ``masks`` (k, H, W) bool; ``boxes`` (k, 4) x, y, width, height; ``std_xy`` the std of every
    pixel's x and y (``features._image_std``).
    """
    k = masks.shape[0]
    height, width = masks.shape[1], masks.shape[2]
    out = np.empty((k, N_FEATURES))
    centres = np.empty((k, 2))
    levels = np.arange(256).astype(np.float64)
    for r in range(k):
        x0, y0, bw, bh = boxes[r, 0], boxes[r, 1], boxes[r, 2], boxes[r, 3]
        mask = masks[r]
        per_column = np.zeros(bw)
        per_row = np.zeros(bh)
        hist = np.zeros((3, 256))
        gathered = np.empty((3, bw * bh))
        n = 0
        edge = 0
        for i in range(y0, y0 + bh):
            for j in range(x0, x0 + bw):
                if not mask[i, j]:
                    continue
                per_column[j - x0] += 1.0
                per_row[i - y0] += 1.0
                for c in range(3):
                    hist[c, rgb[i, j, c]] += 1.0
                    gathered[c, n] = lab[c, i - origin[0], j - origin[1]]
                n += 1
                inside = (
                    i > 0 and i < height - 1 and j > 0 and j < width - 1
                    and mask[i - 1, j] and mask[i + 1, j] and mask[i, j - 1] and mask[i, j + 1]
                )  # fmt: skip
                if not inside:
                    edge += 1
        count = float(n)
        coords = np.empty(6)
        _level_moments(np.arange(x0 + 1, x0 + bw + 1).astype(np.float64), per_column, count, coords, 0, 1)
        _level_moments(np.arange(y0 + 1, y0 + bh + 1).astype(np.float64), per_row, count, coords, 3, 1)
        row = out[r]
        _shape_features(row, count, bw, bh, height, width, coords, std_xy, edge)
        for c in range(3):
            _level_moments(levels, hist[c], count, row, 9 + c, 3)
            _sample_moments(gathered[c], n, row, 18 + c, 3)
        sx = 0.0
        for j in range(bw):
            sx += per_column[j] * (x0 + j)  # integers: exact
        sy = 0.0
        for i in range(bh):
            sy += per_row[i] * (y0 + i)
        centres[r, 0] = sx / count
        centres[r, 1] = sy / count
    return out, centres


@njit(**_JIT)
def near(a: np.ndarray, b: np.ndarray, window: np.ndarray, r: int) -> bool:
    """True when a pixel of mask ``b`` in ``window`` (r0, r1, c0, c1) has a pixel of mask
    ``a`` within Chebyshev distance ``r``."""
    h, w = a.shape
    for i in range(window[0], window[1]):
        for j in range(window[2], window[3]):
            if not b[i, j]:
                continue
            for u in range(max(i - r, 0), min(i + r + 1, h)):
                for v in range(max(j - r, 0), min(j + r + 1, w)):
                    if a[u, v]:
                        return True
    return False


# The boundary walk (geometry.mask_to_polygon): directions east, south, west, north in raster
# coordinates (y down), and for each the pixel ahead on the walker's right and on its left,
# as (row, column) offsets from the vertex reached. The region is always on the right.
_STEP_X = np.array([1, 0, -1, 0])
_STEP_Y = np.array([0, 1, 0, -1])
_RIGHT = np.array([[0, 0], [0, -1], [-1, -1], [-1, 0]])
_LEFT = np.array([[-1, 0], [0, 0], [0, -1], [-1, -1]])


@njit(**_JIT)
def _find(parent: np.ndarray, k: int) -> int:
    """Root of ``k`` in a union-find forest, halving the path on the way."""
    while parent[k] != k:
        parent[k] = parent[parent[k]]
        k = parent[k]
    return k


@njit(**_JIT)
def _row_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The mask's runs of pixels along each row and the 4-connected component of each run.

    Returns each run's first column and one past its last, where each row's runs begin
    (row r owns runs ``first[r]`` to ``first[r + 1]``), and the component of each run,
    numbered in raster order. Runs of adjacent rows that share a column are joined.
    """
    h, w = mask.shape
    start = np.empty(h * ((w + 1) // 2), dtype=np.int64)
    stop = np.empty_like(start)
    first = np.empty(h + 1, dtype=np.int64)
    n = 0
    for r in range(h):
        first[r] = n
        c = 0
        while c < w:
            if mask[r, c]:
                start[n] = c
                while c < w and mask[r, c]:
                    c += 1
                stop[n] = c
                n += 1
            c += 1
    first[h] = n
    parent = np.arange(n)
    for r in range(1, h):
        i, j = first[r - 1], first[r]
        while i < first[r] and j < first[r + 1]:
            if start[i] < stop[j] and start[j] < stop[i]:
                a, b = _find(parent, i), _find(parent, j)
                parent[max(a, b)] = min(a, b)
            if stop[i] < stop[j]:
                i += 1
            else:
                j += 1
    component = np.empty(n, dtype=np.int64)
    number = np.full(n, -1, dtype=np.int64)
    m = 0
    for k in range(n):
        root = _find(parent, k)
        if number[root] < 0:
            number[root] = m
            m += 1
        component[k] = number[root]
    return start[:n], stop[:n], first, component


@njit(**_JIT)
def _component_at(r: int, c: int, start: np.ndarray, stop: np.ndarray, first: np.ndarray, component: np.ndarray) -> int:
    """Component of pixel (r, c), or -1 outside the mask (and outside the array)."""
    if r < 0 or r >= len(first) - 1:
        return -1
    lo, hi = first[r], first[r + 1]
    while lo < hi:  # the last run starting at or before c
        mid = (lo + hi) // 2
        if start[mid] <= c:
            lo = mid + 1
        else:
            hi = mid
    return component[lo - 1] if lo > first[r] and c < stop[lo - 1] else -1


@njit(**_JIT)
def _inside(mask: np.ndarray, r: int, c: int) -> bool:
    return 0 <= r < mask.shape[0] and 0 <= c < mask.shape[1] and mask[r, c]


@njit(**_JIT)
def _ring_buffers(h: int, w: int, runs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What ``boundary_rings`` fills, sized by the ``runs`` of an h x w mask: corners (an end of
    a run's side each), ring ends, components and outer flags (a ring has two vertical edges at
    least), and the vertical edges (x, r)-(x, r+1) walked."""
    corners = np.empty((4 * runs, 2), dtype=np.int64)
    ends = np.empty(runs, dtype=np.int64)
    ring_component = np.empty(runs, dtype=np.int64)
    outer = np.empty(runs, dtype=np.bool_)
    seen = np.zeros((h, w + 1), dtype=np.bool_)
    return corners, ends, ring_component, outer, seen


@njit(**_JIT)
def boundary_rings(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rings of the boundary of the pixel squares of a boolean mask, by a crack-following walk.

    Pixel (r, c) is the square [c, c+1] x [r, r+1]. The walk keeps the region on its right.
    Where two region pixels meet only at a corner it turns around the pixel it follows when
    the other belongs to another component (corner-touching parts stay apart), and around the
    background pixel when both belong to one (a hole touching its shell at a point is its own
    ring), so every ring is simple: the minimal rings of GEOS's polygonize. A vertex is kept
    where the walk turns. Every ring has vertical edges, and those are the ends of the row
    runs, so the walks start there and the work follows the runs and the boundary, not the area.

    Returns the corners (n, 2) int64 as (x, y), one past each ring's last corner, each ring's
    4-connected component (numbered in raster order), and whether the ring is its component's
    outer boundary (positive shoelace area) rather than a hole.
    """
    start, stop, first, component = _row_runs(mask)
    corners, ends, ring_component, outer, seen = _ring_buffers(mask.shape[0], mask.shape[1], len(start))
    n = rings = 0
    for r in range(mask.shape[0]):
        for k in range(first[r], first[r + 1]):
            for side in range(2):
                # A run's left side is walked north, its right side south (the run on the right).
                x = start[k] if side == 0 else stop[k]
                if seen[r, x]:
                    continue
                d = 3 if side == 0 else 1
                sx, sy = x, (r + 1 if side == 0 else r)
                cx, cy = sx, sy
                ring_component[rings] = component[k]
                area = 0
                while True:
                    if d == 1:
                        seen[cy, cx] = True
                    elif d == 3:
                        seen[cy - 1, cx] = True
                    nx, ny = cx + _STEP_X[d], cy + _STEP_Y[d]
                    area += cx * ny - nx * cy
                    cx, cy = nx, ny
                    right = _inside(mask, cy + _RIGHT[d, 0], cx + _RIGHT[d, 1])
                    left = _inside(mask, cy + _LEFT[d, 0], cx + _LEFT[d, 1])
                    if right:
                        turn = d if not left else (d + 3) % 4
                    elif not left:
                        turn = (d + 1) % 4
                    else:  # a pinch: stay with the pixel followed unless the one ahead is of its component
                        b = (d + 1) % 4
                        ahead = _component_at(cy + _LEFT[d, 0], cx + _LEFT[d, 1], start, stop, first, component)
                        followed = _component_at(cy + _RIGHT[b, 0], cx + _RIGHT[b, 1], start, stop, first, component)
                        turn = (d + 3) % 4 if ahead == followed else (d + 1) % 4
                    if turn != d:
                        corners[n, 0] = cx
                        corners[n, 1] = cy
                        n += 1
                    d = turn
                    if cx == sx and cy == sy:
                        break
                ends[rings] = n
                outer[rings] = area > 0
                rings += 1
    return corners[:n], ends[:rings], ring_component[:rings], outer[:rings]
