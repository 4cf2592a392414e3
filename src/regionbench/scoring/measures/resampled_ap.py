"""COCO's AP on every bootstrap resample over images (``measures.bootstrap``), re-accumulated from
what the engine already found per image: nothing is matched again (docs/scoring.md, "Intervals").

A resample draws ``n`` images with repetition. Its AP is COCOeval's ``accumulate`` of the per-image
results of the drawn images, in drawn order, as pycocotools computes it when ``evalImgs`` is read
for the drawn images: per category, every drawn image's detections (its ``max_det`` best) laid end
to end in drawn order, sorted by score (mergesort: tied scores stay in drawn order, an image's own
in the engine's order), tp and fp summed along them, precision made non-increasing from the end
and read at the 101 recall points; a category without an instance among the drawn images has no
AP and enters no mean.

What makes it cheap: a curve's 101 precisions depend only on each true positive's running counts
(``curves``). A resample takes each detection as often as its image is drawn. A detection whose
score no other of its category shares keeps its place in the run's order, its copies side by
side: it is one item of that weight, and the copies of a true positive raise precision up to the
last one, which the envelope then holds for every recall point the copies cross. What lies
between two true positives only counts: the copies up to each are one sum of the resamples'
draw counts by anchor (``Layout.gap``, ``bootstrap.summed_by``). Detections of a category that share a score (a tie)
follow one another in drawn order: a tie holding a true positive or an ignored detection is laid
out copy by copy for each resample and sorted, as pycocotools sorts it; the other ties only count.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from regionbench.scoring.measures import bootstrap
from regionbench.scoring.measures.average_precision import IOU_THRESHOLDS, RECALL_POINTS
from regionbench.scoring.measures.kept_detections import Accumulated

HEADLINE = ("AP", "AP50", "AP75")
CELLS = 4_000_000  # resamples x detections held at once: memory stays ~100 MB
ROWS = 150_000  # resamples x items that move a curve at once: their arrays stay in the cache (measured)
SEGMENTS = 4096  # curves whose envelope is taken at once: each lifted by 2 over the next, an error under 2e-12
THRESHOLDS = len(IOU_THRESHOLDS)


def within(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """The cumulative sums of ``values`` (rows x items) restarted at each segment (``segment``:
    each item's, ascending)."""
    total = np.cumsum(values, axis=1, dtype=np.int64)
    if not segment.size:
        return total
    starts = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]])
    before = np.zeros((len(total), len(starts)), dtype=np.int64)
    before[:, 1:] = total[:, starts[1:] - 1]
    found: np.ndarray = total - np.repeat(before, np.diff(np.r_[starts, segment.size]), axis=1)
    return found


def curves(
    weights: np.ndarray,
    copies: np.ndarray,
    hits: np.ndarray,
    ignored: np.ndarray,
    segment: np.ndarray,
    instances: np.ndarray,
) -> np.ndarray:
    """Each row's AP per IoU threshold and curve (rows x T x curves), from the items that move a
    curve (true positives at some threshold, or ignored there), in order, one curve after another
    (``segment``, ascending): each taken ``weights`` times (rows x items), with ``copies`` (rows x
    items) the detections of its curve up to it, its copies in, and its ``hits`` and ``ignored``
    bits (bit t: IoU threshold t); NaN where a row's ``instances`` (rows x curves) of the curve is 0.

    Precision is ``tp / (fp + tp + eps)`` and recall ``tp / instances``, as pycocotools computes
    them, at each true positive's last copy; a recall point takes the envelope at the first true
    positive whose recall reaches it, so each true positive adds its envelope once for each point
    its recall passes beyond the last one's; AP the mean over the 101 points."""
    rows, segments = instances.shape
    found = np.zeros((rows, THRESHOLDS, segments))
    total = np.maximum(instances, 1).astype(np.float64)  # none: the curve is left out below
    for t in range(THRESHOLDS):
        skipped = ((ignored >> t) & 1).astype(bool)
        true = ((hits >> t) & 1).astype(bool) & ~skipped
        columns = np.flatnonzero(true)  # the others are false positives or ignored here: ``copies`` counts them
        if not columns.size:
            continue
        place = segment[columns]
        tp = within(weights[:, columns], place)
        counted = copies[:, columns]
        if skipped.any():  # less the ignored copies up to each true positive, of its curve
            gone = np.flatnonzero(skipped)
            up_to = np.c_[np.zeros((len(weights), 1), dtype=np.int64), within(weights[:, gone], segment[gone])]
            before = np.searchsorted(gone, columns)  # ignored items before each true positive
            same = (before > 0) & (segment[gone[np.maximum(before - 1, 0)]] == place)
            counted = counted - np.where(same, up_to[:, before], 0)
        precision = tp / (counted.astype(np.float64) + np.spacing(1))  # tp + fp at each true positive
        lift = 2.0 * (segments - 1 - place)  # later curves lower: a running max from the end stops at each
        envelope = np.maximum.accumulate((precision + lift)[:, ::-1], axis=1)[:, ::-1] - lift
        reached = np.searchsorted(RECALL_POINTS, (tp / total[:, place]).ravel(), side="right").reshape(tp.shape)
        first = np.flatnonzero(np.diff(place, prepend=-1))  # each curve's first true positive
        gained = np.diff(reached, axis=1, prepend=0)
        gained[:, first] = reached[:, first]
        found[:, t, place[first]] = np.add.reduceat(envelope * gained, first, axis=1) / len(RECALL_POINTS)
    return np.where(instances[:, None, :] > 0, found, np.nan)


@dataclass(frozen=True)
class Layout:
    """The run's kept detections of the categories scored (curve ``segment[j]`` for category
    ``present[j]``), in COCOeval's order over the whole run (category, score, image, the engine's
    order): each one's ``image``, ``rank`` (its place among its image's), ``hits`` and ``ignored``
    bits over all areas, ``tie`` (its first position where its score is shared, else -1) and
    ``laid`` (in a tie that holds an item that moves a curve). ``gaps`` (images x anchors) counts
    the detections of each image that lie up to each anchor (an item that moves a curve and is in
    no such tie, a laid tie's first position, counting what lies before it, and each curve's end)
    and after the one before; ``anchor_segment`` each anchor's curve."""

    segment: np.ndarray
    image: np.ndarray
    rank: np.ndarray
    hits: np.ndarray
    ignored: np.ndarray
    tie: np.ndarray
    laid: np.ndarray
    anchor_of: np.ndarray  # each detection's anchor: its own, or its laid tie's (-1: none)
    gap: np.ndarray  # each detection's anchor among those that count it
    anchor_segment: np.ndarray
    by_image: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # ``laid_by_image``

    @classmethod
    def of(cls, ranges: Accumulated, present: np.ndarray, max_det: int) -> Layout:
        """The layout of ``ranges``' detections of the categories ``present``, each image's
        ``max_det`` best."""
        parts: list[tuple[np.ndarray, ...]] = []
        for j, k in enumerate(present):
            kept = ranges.kept(int(k))
            if kept is None:
                continue
            keep = np.flatnonzero(kept.ranks < max_det)
            order = keep[np.argsort(-np.asarray(kept.scores[keep]), kind="mergesort")]
            parts.append((np.full(len(order), j, dtype=np.int64), np.asarray(kept.image[order], dtype=np.int64),
                          np.asarray(kept.ranks[order], dtype=np.int64), np.asarray(kept.scores[order]),
                          np.asarray(kept.hits[0][order]), np.asarray(kept.ignored[0][order])))  # fmt: skip
        columns = [np.concatenate(c) for c in zip(*parts, strict=True)] if parts else [np.zeros(0, dtype=np.int64)] * 6
        segment, image, rank, scores, hits, ignored = columns
        hits, ignored = hits.astype(np.uint16), ignored.astype(np.uint16)
        moves = (hits | ignored) != 0
        # ties: runs of one curve and one score; a tie with an item that moves a curve is laid out
        starts = np.flatnonzero(np.r_[True, (segment[1:] != segment[:-1]) | (scores[1:] != scores[:-1])])[
            : len(segment)
        ]
        sizes = np.diff(np.r_[starts, len(segment)])
        first = np.repeat(starts, sizes)
        shared = np.repeat(sizes > 1, sizes)
        moving_tie = np.repeat(np.add.reduceat(moves.astype(np.int64), starts) > 0, sizes) if len(starts) else moves
        laid = shared & moving_tie
        tie = np.where(shared, first, -1)
        # anchors, by the last position they count: an item that moves a curve (itself included),
        # a laid tie (what lies before it), a curve's end
        alone = np.flatnonzero(moves & ~laid)
        ties = np.unique(first[laid])
        ends = np.r_[np.flatnonzero(segment[1:] != segment[:-1]), len(segment) - 1] if len(segment) else starts
        last = np.r_[alone, ties - 1, ends]
        anchored = np.r_[segment[alone], segment[ties], segment[ends]]
        kind = np.r_[np.zeros(len(alone)), np.ones(len(ties)), np.full(len(ends), 2)]
        order = np.lexsort((kind, anchored, last))
        last, anchored = last[order], anchored[order]
        place = np.empty(len(order), dtype=np.int64)
        place[order] = np.arange(len(order))
        anchor_of = np.full(len(segment), -1, dtype=np.int64)
        anchor_of[alone] = place[: len(alone)]
        anchor_of[laid] = place[len(alone) + np.searchsorted(ties, first[laid])]
        # each detection counts toward the first anchor, in that order, that counts its position
        key = last * (len(present) + 1) + anchored
        gap = np.searchsorted(key, np.arange(len(segment)) * (len(present) + 1) + segment, side="left")
        by_image = laid_by_image(image, tie, laid, ranges.image_count)
        return cls(segment, image, rank, hits, ignored, tie, laid, anchor_of, gap, anchored, by_image)

    def copies_at_anchors(self, counts: np.ndarray, segments: int) -> np.ndarray:
        """(rows x anchors): each resample's detections of a curve up to each anchor, copies in."""
        per_gap = bootstrap.summed_by(counts, self.image, self.gap, len(self.anchor_segment))
        return within(per_gap, self.anchor_segment)

    def resampled(self, drawn: Sequence[np.ndarray], counts: np.ndarray, instances: np.ndarray) -> np.ndarray:
        """AP per resample, threshold and category (rows x T x categories) of the resamples
        ``drawn`` (their draw ``counts``, rows x n; ``instances``, rows x categories)."""
        rows, segments = instances.shape
        anchors = self.copies_at_anchors(counts, segments)
        alone = np.flatnonzero(((self.hits | self.ignored) != 0) & ~self.laid)
        if not self.laid.any():  # every resample in one matrix: the items are the same
            weights = counts[:, self.image[alone]]
            segment = self.segment[alone]
            return curves(weights, anchors[:, self.anchor_of[alone]], self.hits[alone], self.ignored[alone],
                          segment, instances)  # fmt: skip
        out = np.empty((rows, THRESHOLDS, segments))
        step = max(1, SEGMENTS // max(1, segments))  # resamples side by side, each its own curves
        for low in range(0, rows, step):
            high = min(rows, low + step)
            out[low:high] = self.side_by_side(drawn[low:high], counts[low:high], anchors[low:high], instances[low:high])
        return out

    def side_by_side(
        self, drawn: Sequence[np.ndarray], counts: np.ndarray, anchors: np.ndarray, instances: np.ndarray
    ) -> np.ndarray:
        """``resampled`` of a few resamples as one row of curves (resample ``b``'s category ``k``
        is curve ``b * categories + k``): the items alone weighted by their image's draws, each
        laid tie's detections copy by copy in drawn order, all in the order pycocotools sorts them."""
        rows, segments = instances.shape
        n = counts.shape[1]
        alone = np.flatnonzero(((self.hits | self.ignored) != 0) & ~self.laid)
        laid, starts, sizes, tie_rank = self.by_image
        # every copy of a laid tie's detections, in drawn order: resample by resample, position by
        # position, an image's in the run's order; then, stably, by tie (a radix sort: linear)
        stacked = np.stack(drawn)
        per = sizes[stacked].ravel()
        copy = laid[ragged(starts[stacked].ravel(), per)]
        row = np.repeat(np.arange(rows), per.reshape(rows, n).sum(axis=1))
        order = radix(row * (int(tie_rank.max(initial=0)) + 1) + tie_rank[copy])
        row, copy = row[order], copy[order]
        tie = self.tie[copy]
        group = np.flatnonzero(np.r_[True, (row[1:] != row[:-1]) | (tie[1:] != tie[:-1])])
        place_in_tie = np.arange(len(copy)) - np.repeat(group, np.diff(np.r_[group, len(copy)])) + 1
        moving = (self.hits[copy] | self.ignored[copy]) != 0
        row, copy, tie, place_in_tie = row[moving], copy[moving], tie[moving], place_in_tie[moving]
        # the items alone of every resample beside them, merged in the run's order (a tie at its
        # first position, where no item alone stands)
        rows_alone = np.repeat(np.arange(rows), len(alone))
        span = len(self.image) + 1
        key_alone, key_laid = rows_alone * span + np.tile(alone, rows), row * span + tie
        to_alone = np.arange(len(key_alone)) + np.searchsorted(key_laid, key_alone)
        to_laid = np.arange(len(key_laid)) + np.searchsorted(key_alone, key_laid)
        size = len(key_alone) + len(key_laid)
        index, every_row = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        weights, copies = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        index[to_alone], index[to_laid] = np.tile(alone, rows), copy
        every_row[to_alone], every_row[to_laid] = rows_alone, row
        weights[to_alone], weights[to_laid] = counts[:, self.image[alone]].ravel(), 1
        copies[to_alone] = anchors[:, self.anchor_of[alone]].ravel()
        copies[to_laid] = anchors[row, self.anchor_of[copy]] + place_in_tie
        segment = every_row * segments + self.segment[index]
        found = curves(weights[None, :], copies[None, :], self.hits[index], self.ignored[index],
                       segment, instances.reshape(1, -1))[0]  # fmt: skip
        return found.reshape(THRESHOLDS, rows, segments).transpose(1, 0, 2)


def laid_by_image(
    image: np.ndarray, tie: np.ndarray, laid: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ``laid`` detections by image (each image's in the run's order), where each of the
    ``n`` images' start and how many it has, and each detection's tie as a dense rank."""
    chosen = np.flatnonzero(laid)
    chosen = chosen[np.argsort(image[chosen], kind="stable")]
    sizes = np.bincount(image[chosen], minlength=n)
    tie_rank = np.zeros(len(image), dtype=np.int64)
    tie_rank[laid] = np.unique(tie[laid], return_inverse=True)[1]
    return chosen, np.cumsum(sizes) - sizes, sizes, tie_rank


def radix(key: np.ndarray) -> np.ndarray:
    """The stable order of non-negative integer ``key``, 16 bits a pass (numpy's stable sort of
    16-bit integers is a radix sort: each pass linear)."""
    order = np.arange(len(key))
    top = int(key.max(initial=0))
    shift = 0
    while shift == 0 or top >> shift:
        part = ((key[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(part, kind="stable")]
        shift += 16
    return order


def ragged(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + k) for s, k in zip(starts, sizes)])``, without the loop."""
    total = int(sizes.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(sizes)
    return np.arange(total) - np.repeat(ends - sizes, sizes) + np.repeat(starts, sizes)


def chunks(
    n: int, resamples: int, seed: int, rows: int, order: np.ndarray | None = None
) -> Iterator[tuple[list[np.ndarray], np.ndarray]]:
    """The resamples ``rows`` at a time: their index arrays and draw counts (rows x n). ``order``:
    the images are drawn in another order, ``order[p]`` the image at its place ``p``."""
    batch: list[np.ndarray] = []
    for drawn in bootstrap.draws(n, resamples, seed):
        batch.append(drawn if order is None else order[drawn])
        if len(batch) == rows:
            yield batch, np.stack([np.bincount(d, minlength=n) for d in batch])
            batch = []
    if batch:
        yield batch, np.stack([np.bincount(d, minlength=n) for d in batch])


def resampled(
    ranges: Accumulated,
    categories: int,
    max_det: int,
    resamples: int,
    seed: int,
    groups: Sequence[Sequence[int]] | None = None,
    order: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """AP, AP50 and AP75 (with LVIS's frequency ``groups``, APr, APc and APf too) on each of
    ``resamples`` resamples of the run's images (``ranges``, evaluated by the engine), as
    COCOeval's ``summarize`` means them: over the IoU thresholds and the categories with an
    instance among the drawn images. NaN where a resample drew none. The images are drawn in
    their id order, or in ``order`` (``order[p]``: the image at place ``p``)."""
    n, found = ranges.image_count, ranges.image_instances
    present = np.flatnonzero(np.bincount(found[:, 1], weights=found[:, 2], minlength=categories) > 0)
    column = np.full(categories, -1)
    column[present] = np.arange(len(present))
    per_image = np.zeros((n, len(present)), dtype=np.int64)  # instances, image x category scored
    np.add.at(per_image, (found[:, 0], column[found[:, 1]]), found[:, 2])
    layout = Layout.of(ranges, present, max_det)
    ap = np.full((resamples, THRESHOLDS, len(present)), np.nan)
    moving = int(np.count_nonzero(layout.hits | layout.ignored))
    rows = min(bootstrap.CHUNK, CELLS // max(len(layout.image), 1), ROWS // max(moving, 1))
    start = 0
    for drawn, counts in chunks(n, resamples, seed, max(1, rows), order):
        ap[start : start + len(drawn)] = layout.resampled(drawn, counts, counts @ per_image)
        start += len(drawn)
    figures = {"AP": mean(ap), "AP50": mean(ap[:, :1]), "AP75": mean(ap[:, 5:6])}
    if groups is not None:
        for name, members in zip(("APr", "APc", "APf"), groups, strict=True):
            figures[name] = mean(ap[:, :, [column[k] for k in members if column[k] >= 0]])
    return figures


def mean(values: np.ndarray) -> np.ndarray:
    """Per resample (first axis), the mean of the values that are not NaN; NaN where none is."""
    flat = values.reshape(len(values), -1)
    kept = ~np.isnan(flat)
    count = kept.sum(axis=1)
    total = np.where(kept, flat, 0.0).sum(axis=1)
    return np.divide(total, count, out=np.full(len(values), np.nan), where=count > 0)
