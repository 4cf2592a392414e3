"""Thinning a binary map to one-pixel lines, as MATLAB's ``bwmorph(.., 'thin', inf)`` and
scikit-image's ``thin`` do (Guo and Hall's two-subiteration algorithm), compiled by numba.

Z. Guo, R. W. Hall, "Parallel thinning with two-subiteration algorithms", Comm. ACM 32(3), 1989;
Lam, Lee and Suen's survey, IEEE TPAMI 14(9), 1992, states the conditions G1, G2 and G3 (G3' in
the second subiteration). A subiteration deletes, at once, every set pixel whose eight
neighbours meet its conditions; the two alternate until a pass deletes nothing.

scikit-image correlates the whole map with the neighbourhood weights at every subiteration.
Here only the set pixels are visited, and after the first pass only those beside a pixel deleted
in the pass before: a pixel's deletion depends on its neighbours alone, so one whose neighbours
did not change is decided as before. Same result, pixel for pixel (a property test holds it to
scikit-image's), in a fraction of the time: a boundary map holds a few percent of set pixels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# The neighbours' weights: the one above-left 8, above 4, above-right 2, left 16, right 1,
# below-left 32, below 64, below-right 128 (scikit-image's correlation mask).
OFFSETS = ((-1, -1, 8), (-1, 0, 4), (-1, 1, 2), (0, -1, 16), (0, 1, 1), (1, -1, 32), (1, 0, 64), (1, 1, 128))


def _luts() -> tuple[np.ndarray, np.ndarray]:
    """Whether a pixel whose neighbourhood code is n (0-255; bit i the i-th neighbour, counter-
    clockwise from the right: right, above-right, above, above-left, left, below-left, below,
    below-right) is deleted in the first and in the second subiteration."""

    def bits(n: int) -> list[bool]:
        return [bool(n >> i & 1) for i in range(8)]

    def g1(b: list[bool]) -> bool:  # exactly one 8-connected run of set neighbours
        return sum(1 for i in (0, 2, 4, 6) if not b[i] and (b[i + 1] or b[(i + 2) % 8])) == 1

    def g2(b: list[bool]) -> bool:
        n1 = sum(1 for k in (1, 3, 5, 7) if b[k] or b[k - 1])
        n2 = sum(1 for k in (1, 3, 5, 7) if b[k] or b[(k + 1) % 8])
        return min(n1, n2) in (2, 3)

    def g3(b: list[bool]) -> bool:
        return not ((b[1] or b[2] or not b[7]) and b[0])

    def g3p(b: list[bool]) -> bool:
        return not ((b[5] or b[6] or not b[3]) and b[4])

    first = np.array([g1(b) and g2(b) and g3(b) for b in map(bits, range(256))])
    second = np.array([g1(b) and g2(b) and g3p(b) for b in map(bits, range(256))])
    return first, second


FIRST, SECOND = _luts()


@njit(cache=True, nogil=True)
def _code(skel: np.ndarray, r: int, c: int) -> int:
    height, width = skel.shape
    code = 0
    for dr, dc, weight in (
        (-1, -1, 8),
        (-1, 0, 4),
        (-1, 1, 2),
        (0, -1, 16),
        (0, 1, 1),
        (1, -1, 32),
        (1, 0, 64),
        (1, 1, 128),
    ):
        rr, cc = r + dr, c + dc
        if 0 <= rr < height and 0 <= cc < width and skel[rr, cc]:
            code += weight
    return code


@njit(cache=True, nogil=True)
def _thin(skel: np.ndarray, first: np.ndarray, second: np.ndarray) -> None:
    """Thin ``skel`` (uint8, 0 or 1) in place: the two subiterations until a pass deletes nothing.
    A set pixel is decided again by a subiteration only when a neighbour was deleted since that
    subiteration last decided it (``touched``, one map a subiteration)."""
    height, width = skel.shape
    rows, cols = np.nonzero(skel)
    touched = np.zeros((2, height, width), dtype=np.uint8)
    gone = np.empty(rows.size, dtype=np.int64)
    everything = True
    while True:
        deleted = 0
        for s in range(2):
            lut = first if s == 0 else second
            n = 0
            for k in range(rows.size):
                r, c = rows[k], cols[k]
                if skel[r, c] and (everything or touched[s, r, c]):
                    touched[s, r, c] = 0
                    if lut[_code(skel, r, c)]:
                        gone[n] = k
                        n += 1
            for j in range(n):  # at once: the decisions above saw the map before any of them
                r, c = rows[gone[j]], cols[gone[j]]
                skel[r, c] = 0
                for rr in range(max(r - 1, 0), min(r + 2, height)):
                    for cc in range(max(c - 1, 0), min(c + 2, width)):
                        touched[0, rr, cc] = 1
                        touched[1, rr, cc] = 1
            deleted += n
        everything = False
        if deleted == 0:
            return


def thin(boundary: np.ndarray) -> np.ndarray:
    """``boundary`` (H x W, any truthy values) thinned to one-pixel lines: a boolean map."""
    skel = np.ascontiguousarray(np.asarray(boundary, dtype=bool), dtype=np.uint8)
    _thin(skel, FIRST, SECOND)
    return skel.astype(bool)
