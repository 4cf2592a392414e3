"""Panoptic quality (Kirillov et al., "Panoptic Segmentation", CVPR 2019) counted as the COCO
panoptic API's ``pq_compute`` counts it, from one joint histogram per image.

Per image, segments are dense indices (0: VOID), each with a category; a truth segment may be a
crowd. A predicted and a truth segment of one category match when

    IoU = |p ∩ g| / (|p| + |g| - |p ∩ g| - |p ∩ VOID|) > 0.5,

which makes a match unique. Per category: TP the matches and the sum of their IoUs, FN the
unmatched truth segments (crowds aside), FP the unmatched predicted segments except those lying
more than half in VOID and the crowd segments of their category (all of them together: the API
takes one crowd segment per category). Then per category

    PQ = sum IoU / (TP + FP/2 + FN/2),  SQ = sum IoU / TP (0 without TP),  RQ = TP / (TP + FP/2 + FN/2),

averaged over the categories with TP + FP + FN > 0 (all, things, stuff).
"""

from __future__ import annotations

import mmap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

IOU, TP, FP, FN = range(4)  # the columns of a tally
MATCH = 0.5


@dataclass(frozen=True)
class Segments:
    """One image's segments: ``ids`` the map of dense indices (0 VOID, 1..n), ``category`` the
    category index of each (index 0 unused), ``crowd`` whether each is a crowd."""

    ids: np.ndarray
    category: np.ndarray
    crowd: np.ndarray

    @property
    def count(self) -> int:
        return len(self.category) - 1


@dataclass(frozen=True)
class Matched:
    """One image against one truth: per predicted segment (index 1..m; index 0 unused) its
    matched IoU (0 without a match) and whether it is a false positive; the image's ``tally``."""

    iou: np.ndarray
    false_positive: np.ndarray
    tally: np.ndarray


def joint(truth: Segments, predicted: Segments) -> np.ndarray:
    """The (n + 1) x (m + 1) histogram of (truth index, predicted index) over the pixels (one
    ``bincount``; both maps taken in the truth's memory order, painted column-major from runs)."""
    n, m = truth.count, predicted.count
    column_major = truth.ids.flags.f_contiguous and not truth.ids.flags.c_contiguous
    pairs = truth.ids.astype(np.int64, order="F" if column_major else "C")
    pairs *= m + 1
    pairs += np.asfortranarray(predicted.ids) if column_major else np.ascontiguousarray(predicted.ids)
    counts: np.ndarray = np.bincount(pairs.ravel(order="K"), minlength=(n + 1) * (m + 1)).reshape(n + 1, m + 1)
    return counts


def match(
    truth: Segments, predicted: Segments, categories: int, histogram: np.ndarray | None = None,
    truth_category: np.ndarray | None = None, predicted_category: np.ndarray | None = None,
) -> Matched:  # fmt: skip
    """``predicted`` scored against ``truth`` (module docstring) over ``categories`` category
    indices; ``histogram`` (``joint``) when already made; ``truth_category`` and
    ``predicted_category`` replace the segments' categories (a coarser level of a hierarchy)."""
    counts = joint(truth, predicted) if histogram is None else histogram
    t_cat = truth.category if truth_category is None else truth_category
    p_cat = predicted.category if predicted_category is None else predicted_category
    t_area, p_area = counts.sum(axis=1), counts.sum(axis=0)
    tally = np.zeros((categories, 4))
    g, p = np.nonzero(counts[1:, 1:])
    g, p = g + 1, p + 1
    keep = ~truth.crowd[g] & (t_cat[g] == p_cat[p])
    g, p = g[keep], p[keep]
    inter = counts[g, p]
    iou = inter / (p_area[p] + t_area[g] - inter - counts[0, p])
    hit = iou > MATCH
    g, p, iou = g[hit], p[hit], iou[hit]
    np.add.at(tally[:, IOU], t_cat[g], iou)
    np.add.at(tally[:, TP], t_cat[g], 1)
    matched_iou = np.zeros(predicted.count + 1)
    matched_iou[p] = iou
    truth_matched = np.zeros(truth.count + 1, dtype=bool)
    truth_matched[g] = True
    missed = ~truth_matched[1:] & ~truth.crowd[1:]
    np.add.at(tally[:, FN], t_cat[1:][missed], 1)
    # a predicted segment's pixels in VOID and in the crowds of its category
    crowd_of_category = truth.crowd[:, None] & (t_cat[:, None] == p_cat[None, :])
    covered = counts[0] + (counts * crowd_of_category).sum(axis=0)
    unmatched = matched_iou == 0
    unmatched[0] = False
    false_positive = unmatched & ~(covered > MATCH * np.maximum(p_area, 1))
    np.add.at(tally[:, FP], p_cat[false_positive], 1)
    return Matched(matched_iou, false_positive, tally)


def average(tally: np.ndarray, members: Sequence[int] | np.ndarray | None = None) -> dict[str, Any]:
    """PQ, SQ, RQ averaged over the categories (``members``: their indices; None: every one)
    with TP + FP + FN > 0, and their number ``n``; None for each figure when n is 0."""
    rows = tally if members is None else tally[np.asarray(members, dtype=np.int64)]
    counted = rows[rows[:, TP] + rows[:, FP] + rows[:, FN] > 0]
    if not len(counted):
        return {"pq": None, "sq": None, "rq": None, "n": 0}
    each = per_category(counted)
    return {"pq": float(np.mean(each[:, 0])), "sq": float(np.mean(each[:, 1])), "rq": float(np.mean(each[:, 2])),
            "n": len(counted)}  # fmt: skip


def per_category(tally: np.ndarray) -> np.ndarray:
    """(PQ, SQ, RQ) of each row of a tally (0 where the row counts nothing)."""
    iou, tp, fp, fn = tally.T
    denominator = tp + 0.5 * fp + 0.5 * fn
    safe = np.where(denominator > 0, denominator, 1)
    pq = np.where(denominator > 0, iou / safe, 0.0)
    sq = np.where(tp > 0, iou / np.where(tp > 0, tp, 1), 0.0)
    rq = np.where(denominator > 0, tp / safe, 0.0)
    return np.stack([pq, sq, rq], axis=1)


def summary(tally: np.ndarray, things: np.ndarray) -> dict[str, dict[str, Any]]:
    """``average`` over all categories, the things (``things``: a mask over the categories) and the stuff."""
    return {
        "all": average(tally),
        "things": average(tally, np.flatnonzero(things)),
        "stuff": average(tally, np.flatnonzero(~things)),
    }


def per_class(tally: np.ndarray, names: Sequence[str], things: np.ndarray) -> dict[str, dict[str, Any]]:
    """Per category counted (TP + FP + FP > 0): PQ, SQ, RQ, TP, FP, FN and whether a thing."""
    figures = per_category(tally)
    return {
        names[k]: {"pq": float(figures[k, 0]), "sq": float(figures[k, 1]), "rq": float(figures[k, 2]),
                   "tp": int(tally[k, TP]), "fp": int(tally[k, FP]), "fn": int(tally[k, FN]), "thing": bool(things[k])}
        for k in np.flatnonzero(tally[:, TP] + tally[:, FP] + tally[:, FN]).tolist()
    }  # fmt: skip


def image_quality(tally: np.ndarray) -> float | None:
    """One image's PQ: the mean over the categories it counts (None when it counts none)."""
    pq = average(tally)["pq"]
    return None if pq is None else float(pq)


def paint(shape: tuple[int, int], runs: Sequence[Sequence[int]]) -> np.ndarray:
    """The map of dense indices 1..n of regions given as uncompressed COCO RLE counts (``runs``:
    per region, column-major run lengths alternating background and region), a later region over
    an earlier one, 0 where none lies.

    Segments that do not overlap (a panoptic truth) are one ``np.repeat`` of the sorted runs,
    without a mask per region; overlapping ones are painted run by run, in region order."""
    height, width = shape
    starts, ends, index = [], [], []
    for k, counts in enumerate(runs, start=1):
        edges = np.cumsum(np.asarray(counts, dtype=np.int64))
        begin, end = edges[0::2][: len(edges) // 2], edges[1::2]  # run 2j + 1 is the region's
        kept = end > begin
        starts.append(begin[kept])
        ends.append(end[kept])
        index.append(np.full(int(kept.sum()), k, dtype=np.int32))
    if not runs:
        return np.zeros(shape, dtype=np.int32)
    start, end, value = np.concatenate(starts), np.concatenate(ends), np.concatenate(index)
    order = np.argsort(start, kind="stable")
    start, end, value = start[order], end[order], value[order]
    if np.all(start[1:] >= end[:-1]):
        lengths = np.empty(2 * len(start) + 1, dtype=np.int64)
        lengths[0:-1:2] = start - np.concatenate([[0], end[:-1]])  # the background before each run
        lengths[1::2] = end - start
        lengths[-1] = height * width - (end[-1] if len(end) else 0)
        values = np.zeros(2 * len(start) + 1, dtype=np.int32)
        values[1::2] = value
        flat = np.repeat(values, lengths)
    else:
        flat = np.zeros(height * width, dtype=np.int32)
        for k in np.argsort(value, kind="stable"):  # region order: a later region over an earlier
            flat[start[k] : end[k]] = value[k]
    painted: np.ndarray = flat.reshape(width, height).T
    return painted


IDS = 1 << 24  # segment ids are R + 256 G + 256^2 B
_pages: mmap.mmap | None = None  # the table's memory: anonymous, private, a page made only when written
_table: np.ndarray | None = None  # segment id -> dense index + 1 (0: no segment), over the pages


def _id_table() -> tuple[mmap.mmap, np.ndarray]:
    """The table of every segment id (2^24 uint16, 32 MiB of address space): zero until written,
    and only the pages a map's few ids fall in are ever made (``dense`` gives them back)."""
    global _pages, _table
    if _pages is None or _table is None:
        _pages = mmap.mmap(-1, 2 * IDS, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # private: a fork writes its own
        _table = np.frombuffer(_pages, dtype=np.uint16)
    return _pages, _table


def dense(ids: np.ndarray, segments: Mapping[int, tuple[int, bool]]) -> Segments:
    """``Segments`` of a map of segment ids (0 VOID, ids below 2^24) and ``segments``: id ->
    (category index, crowd), in id order; a ValueError names the ids of the map that
    ``segments`` lacks.

    One gather from a table of every possible id, its few entries set per map and their pages
    given back after it (``madvise``: they read as zero again): the map's pixels hold a few tens
    of ids, so the gather stays in cache (a ``searchsorted`` costs log m comparisons a pixel),
    and the table holds a few pages, not 32 MiB."""
    order = sorted(segments)
    if len(order) >= 65535 or (order and order[-1] >= IDS) or (order and order[0] <= 0):
        raise ValueError("segment ids are 1 .. 2^24 - 1, at most 65534 an image")
    pages, table = _id_table()
    keys = np.array([0, *order], dtype=np.int64)
    table[keys] = np.arange(1, len(keys) + 1, dtype=np.uint16)
    try:
        position = table[ids]
    finally:
        table[keys] = 0
        if hasattr(mmap, "MADV_DONTNEED"):
            for page in np.unique(keys * 2 // mmap.PAGESIZE).tolist():
                pages.madvise(mmap.MADV_DONTNEED, page * mmap.PAGESIZE, mmap.PAGESIZE)
    if not position.all():
        missing = sorted(set(np.unique(ids[position == 0]).tolist()))
        raise ValueError(f"segment ids {missing[:5]} are in the map but not in its segments")
    position -= 1
    category = np.array([0, *(segments[i][0] for i in order)], dtype=np.int64)
    crowd = np.array([False, *(segments[i][1] for i in order)], dtype=bool)
    return Segments(position, category, crowd)
