"""Agreement between annotators of the same images (docs/agreement.md).

Per image and pair of annotators: regions are matched one to one by the assignment that
maximises the total mask IoU (Hungarian, ``scipy.optimize.linear_sum_assignment``); pairs with
IoU >= ``min_iou`` count as matched. Of the matched pairs: mean IoU, mean Dice, the share with
the same label (exact) and with e_hierarchy < 1 (hierarchical). Over the pixels: Cohen's kappa
of the two label maps (``cohen_kappa``; the tests check it against scikit-learn's). Across every annotator of the collection: Fleiss' kappa
(``fleiss_kappa``, for units rated by varying numbers of annotators) and Krippendorff's alpha, nominal (``krippendorff_alpha_nominal``), on the
pixels' labels, sampled on a regular grid (every ``PIXEL_STRIDE``-th row and column). Per
label: the specific (positive) agreement of the pairs. Label-free, on the segmentations alone
(the Berkeley benchmarks' measures, for collections whose segments carry no labels): the Rand
index, the variation of information (bits) and the segmentation covering of each by the other.

A label map gives each pixel the label id of the last region (in region order) that covers it,
0 where none does; regions may overlap, so later regions (members of a group) are on top.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regionbench.core import geometry, tables
from regionbench.core.hierarchy import Hierarchy

PIXEL_STRIDE = 4
NOT_COVERED = -1  # the code of a sampled pixel in the units of an annotator who did not cover its image
Region = tuple[str, np.ndarray]  # (label, boolean mask)

MIN_IOU = 0.5  # regions of two annotators match at this IoU or more (the config's agreement.min_iou)


def iou_matrix(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> np.ndarray:
    """IoU = |A and B| / |A or B| (pixel counts) of every mask of ``a`` against every mask of ``b``."""
    if not a or not b:
        return np.zeros((len(a), len(b)))
    fa = np.stack([m.ravel() for m in a]).astype(np.float64)
    fb = np.stack([m.ravel() for m in b]).astype(np.float64)
    inter = fa @ fb.T
    union = fa.sum(axis=1)[:, None] + fb.sum(axis=1)[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def match(a: Sequence[np.ndarray], b: Sequence[np.ndarray], min_iou: float = MIN_IOU) -> list[tuple[int, int, float]]:
    """(i, j, IoU) of the one-to-one assignment maximising the total IoU, kept when IoU >= min_iou."""
    iou = iou_matrix(a, b)
    if iou.size == 0:
        return []
    # Imported here: scipy.optimize takes 0.6 s to import, which every ingest and agreement job
    # of a one-annotator build (nothing to match) would otherwise pay.
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(iou, maximize=True)
    return [(int(i), int(j), float(iou[i, j])) for i, j in zip(rows, cols, strict=True) if iou[i, j] >= min_iou]


def label_map(regions: Sequence[Region], codes: Mapping[str, int], shape: tuple[int, int]) -> np.ndarray:
    """Each pixel's label code (the last region covering it; 0 where none does)."""
    out = np.zeros(shape, dtype=np.int32)
    for label, mask in regions:
        out[mask] = codes[label]
    return out


def pair_agreement(
    a: Sequence[Region],
    b: Sequence[Region],
    hierarchy: Hierarchy,
    codes: Mapping[str, int],
    min_iou: float = MIN_IOU,
    pairs: list[tuple[int, int, float]] | None = None,
) -> dict[str, float | int]:
    """The agreement of two annotators' regions of one image (see the module docstring).

    ``pairs`` is ``match(a, b, min_iou)`` when the caller already has it. Returns matched,
    unmatched_a, unmatched_b, mean_iou, mean_dice, exact_label, hierarchical_label (ratios over
    matched pairs, 0 when none), pixel_kappa, and the label-free rand_index, vi_bits,
    covering_of_a (a's segmentation covered by b's) and covering_of_b.
    """
    if pairs is None:
        pairs = match([m for _, m in a], [m for _, m in b], min_iou)
    ious = np.array([iou for _, _, iou in pairs])
    same = [a[i][0] == b[j][0] for i, j, _ in pairs]
    soft: np.ndarray | list[float] = (
        hierarchy.e_hierarchy([a[i][0] for i, _, _ in pairs], [b[j][0] for _, j, _ in pairs]) if pairs else []
    )
    shape = (a or b)[0][1].shape
    map_a, map_b = label_map(a, codes, shape).ravel(), label_map(b, codes, shape).ravel()
    kappa = cohen_kappa(map_a, map_b)
    table = _contingency(segment_map([m for _, m in a], shape), segment_map([m for _, m in b], shape))
    return {
        "matched": len(pairs),
        "unmatched_a": len(a) - len(pairs),
        "unmatched_b": len(b) - len(pairs),
        "mean_iou": float(ious.mean()) if pairs else 0.0,
        "mean_dice": float((2 * ious / (1 + ious)).mean()) if pairs else 0.0,
        "exact_label": float(np.mean(same)) if pairs else 0.0,
        "hierarchical_label": float((np.asarray(soft) < 1).mean()) if pairs else 0.0,
        "pixel_kappa": kappa,
        "rand_index": _rand_index(table),
        "vi_bits": _variation_of_information(table),
        "covering_of_a": _covering(table),
        "covering_of_b": _covering(table.T),
    }


def label_tally(a: Sequence[Region], b: Sequence[Region], pairs: Sequence[tuple[int, int, float]]) -> Counter:
    """Per label, over one image pair: ``(label, "regions")`` the regions of either annotator
    with the label and ``(label, "agreed")`` twice the matched pairs where both chose it, so that
    agreed / regions is the label's specific (positive) agreement (Fleiss 1975; Cicchetti and
    Feinstein 1990), 2 n_LL / (n_L. + n_.L)."""
    tally = Counter((label, "regions") for label, _ in (*a, *b))
    for i, j, _ in pairs:
        if a[i][0] == b[j][0]:
            tally[(a[i][0], "agreed")] += 2
    return tally


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa (1960) of two label maps of non-negative codes: (p_o - p_e) / (1 - p_e),
    p_o the share of pixels with the same code, p_e = sum_k p_a(k) p_b(k). Identical maps give 1
    (p_e = 1 when one code fills both). One bincount over joint codes: scikit-learn's
    ``cohen_kappa_score`` maps every pixel through a Python dict, 30 times slower here."""
    a, b = a.ravel().astype(np.int64), b.ravel().astype(np.int64)
    if np.array_equal(a, b):
        return 1.0
    k = int(max(a.max(), b.max())) + 1
    confusion = np.bincount(a * k + b, minlength=k * k).reshape(k, k).astype(np.float64)
    n = confusion.sum()
    observed = np.trace(confusion) / n
    expected = float(confusion.sum(axis=1) @ confusion.sum(axis=0)) / n**2
    return float((observed - expected) / (1 - expected))


MAX_UNITS = 200_000  # pixel units in the collection measures, evenly subsampled beyond this


@dataclass(frozen=True)
class Ratings:
    """Codes given to sampled pixel units, one entry per unit and annotator who covered the
    unit's image: entry k says that annotator ``names[annotator[k]]`` gave unit ``unit[k]`` the
    code ``code[k]`` (entries in unit, then annotator, order); units are numbered 0 to
    ``size - 1``. An annotator absent from an image has no entry for its units, so the entries
    grow with the coverage, not with annotators x units: a crowd of 1,000 annotators who each
    covered a few images, held as an annotators x units matrix, is 1,000 rows of absences."""

    unit: np.ndarray  # int64, non-decreasing
    annotator: np.ndarray  # int32, an index into names
    code: np.ndarray  # int32
    names: tuple[str, ...]
    size: int

    @classmethod
    def from_matrix(cls, units: np.ndarray, names: Sequence[str] | None = None) -> Ratings:
        """The ratings of an annotators x units code matrix (rows in ``names`` order, default
        ``r0``, ``r1``, ...), where ``NOT_COVERED`` says an annotator did not cover the unit."""
        names = tuple(names) if names is not None else tuple(f"r{k}" for k in range(units.shape[0]))
        unit, annotator = np.nonzero((units != NOT_COVERED).T)
        code = units[annotator, unit].astype(np.int32)
        return cls(unit.astype(np.int64), annotator.astype(np.int32), code, names, units.shape[1])

    @classmethod
    def from_table(cls, table: pa.Table) -> Ratings:
        """The ratings a shard wrote (``table``): its units are those its entries name."""
        names = table.column("annotator").combine_chunks().cast(pa.string()).dictionary_encode()
        unit = table.column("unit").to_numpy().astype(np.int64)
        return cls(
            unit,
            names.indices.to_numpy(zero_copy_only=False).astype(np.int32),
            table.column("code").to_numpy().astype(np.int32),
            tuple(names.dictionary.to_pylist()),
            int(unit[-1]) + 1 if len(unit) else 0,
        )

    def table(self) -> pa.Table:
        """The ratings as a table: ``unit``, ``annotator`` (by name) and ``code``. A table of no
        entries names no annotator."""
        names = pa.array(self.names, pa.string())
        return pa.table(
            {
                "unit": pa.array(self.unit, pa.int64()),
                "annotator": names.take(pa.array(self.annotator, pa.int32())),
                "code": pa.array(self.code, pa.int32()),
            }
        )

    def rated(self) -> np.ndarray:
        """The units two or more annotators rated, in order."""
        return np.flatnonzero(np.bincount(self.unit, minlength=self.size) >= 2)

    def restricted(self, units: np.ndarray) -> Ratings:
        """The entries of ``units`` (sorted, distinct), the units renumbered 0, 1, ... in order."""
        keep = np.zeros(self.size, dtype=bool)
        keep[units] = True
        entries = keep[self.unit]
        number = np.cumsum(keep) - 1
        return Ratings(number[self.unit[entries]], self.annotator[entries], self.code[entries], self.names, len(units))

    @classmethod
    def concatenate(cls, parts: Sequence[Ratings], names: Sequence[str]) -> Ratings:
        """The units of ``parts`` one after another, their annotators renumbered in ``names``."""
        index = {name: k for k, name in enumerate(names)}
        offsets = np.cumsum([0, *(p.size for p in parts)])
        renumbered = [np.array([index[n] for n in p.names], np.int32)[p.annotator] for p in parts]
        return cls(
            np.concatenate([np.zeros(0, np.int64), *(p.unit + o for p, o in zip(parts, offsets[:-1], strict=True))]),
            np.concatenate([np.zeros(0, np.int32), *renumbered]),
            np.concatenate([np.zeros(0, np.int32), *(p.code for p in parts)]),
            tuple(names),
            int(offsets[-1]),
        )


def image_ratings(maps: Sequence[np.ndarray], annotators: np.ndarray, first: int) -> tuple[np.ndarray, ...]:
    """Unit, annotator and code entries of one image: each covering annotator's label map (in
    ``maps``, annotators' indices ``annotators`` in order) on the pixel grid, its units numbered
    from ``first``."""
    codes = np.stack([m[::PIXEL_STRIDE, ::PIXEL_STRIDE].ravel() for m in maps], axis=1)  # units x annotators
    units = codes.shape[0]
    unit = np.repeat(np.arange(first, first + units, dtype=np.int64), len(maps))
    return unit, np.tile(annotators.astype(np.int32), units), codes.ravel().astype(np.int32)


@dataclass(frozen=True)
class ValueCounts:
    """Units x values counts, held as each unit's distinct values: entry k says that
    ``count[k]`` annotators gave value ``value[k]`` to unit ``unit[k]`` (entries in unit, then
    value, order). A unit has at most as many entries as annotators, so memory grows with the
    units and the annotators, not with the values: the dense matrix of 200,000 sampled pixels
    over LVIS's 1,203 categories alone would be 1.9 GB."""

    unit: np.ndarray
    value: np.ndarray
    count: np.ndarray
    shape: tuple[int, int]  # (units, values)

    def dense(self) -> np.ndarray:
        """The units x values matrix (as statsmodels' ``fleiss_kappa`` takes it)."""
        matrix = np.zeros(self.shape, dtype=np.int64)
        matrix[self.unit, self.value] = self.count
        return matrix

    @cached_property
    def raters(self) -> np.ndarray:
        """Per unit, how many annotators rated it (n_i, m_u), as floats."""
        return self._per_unit(self.count.astype(np.float64))

    @cached_property
    def same_value_pairs(self) -> np.ndarray:
        """Per unit, sum over its values of c (c - 1): the ordered pairs of annotators who gave
        it the same value, as floats (an integer, so exact)."""
        c = self.count.astype(np.float64)
        return self._per_unit(c * (c - 1))

    def _per_unit(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.unit, weights=weights, minlength=self.shape[0])

    def per_value(self, entries: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Per value, the annotators' count summed over the ``entries`` chosen."""
        return np.bincount(self.value[entries], weights=self.count[entries], minlength=self.shape[1])


def value_counts(ratings: Ratings) -> ValueCounts:
    """How many annotators gave each (densely renumbered) value to each unit of ``ratings``.
    The entries are sorted by unit and value, so that equal values of a unit are neighbours
    and a run of them is one entry."""
    values, value = np.unique(ratings.code, return_inverse=True)
    order = np.lexsort((value, ratings.unit))
    unit, value = ratings.unit[order], value[order]
    starts = np.flatnonzero(np.r_[True, (unit[1:] != unit[:-1]) | (value[1:] != value[:-1])][: len(unit)])
    count = np.diff(np.r_[starts, len(unit)])
    return ValueCounts(
        unit[starts], value[starts].astype(np.int64), count.astype(np.int64), (ratings.size, len(values))
    )


def fleiss_kappa(counts: ValueCounts) -> float:
    """Fleiss' kappa (Fleiss 1971) from units x values counts, each unit rated by n_i >= 2
    annotators, n_i free to vary (Fleiss, Levin and Paik 2003, section 18.1):
    P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)), P = mean P_i, p_j = sum_i n_ij / sum_i n_i,
    P_e = sum_j p_j^2, kappa = (P - P_e) / (1 - P_e). With one n for every unit it is Fleiss'
    statistic itself (the tests check it against statsmodels' ``fleiss_kappa``). Every sum
    before the mean is of integers, so exact in any order."""
    n = counts.raters
    agreement = (counts.same_value_pairs / (n * (n - 1))).mean()
    shares = counts.per_value() / n.sum()
    expected = float((shares**2).sum())
    return 1.0 if expected == 1 else float((agreement - expected) / (1 - expected))


def krippendorff_alpha_nominal(counts: ValueCounts) -> float:
    """Krippendorff's alpha, nominal, from units x values counts (Krippendorff 2011).

    Coincidences o = sum over units of (c c^T - diag c) / (m_u - 1), for units with m_u >= 2
    values; alpha = 1 - (n - 1) sum_{c != k} o_ck / (n^2 - sum_c n_c^2), n_c = sum_k o_ck.
    Only sums of o enter: a unit's row of o sums to its counts, so n_c = sum_u c_uc, n = sum_c n_c
    = sum of o, and sum_{c != k} o_ck = n - trace o, trace o = sum_u sum_c c_uc (c_uc - 1) / (m_u - 1).
    The trace is summed in integers per m_u and divided once per m_u: memory grows with the
    counts, not with values x values, and the result does not depend on a summation order. The
    ``krippendorff`` package (the reference in the tests) holds units x values x values.
    """
    m, same = counts.raters, counts.same_value_pairs
    n_c = counts.per_value(m[counts.unit] >= 2)
    n = n_c.sum()
    trace = sum(same[m == pairable].sum() / (pairable - 1) for pairable in np.unique(m[m >= 2]))
    expected = n**2 - (n_c**2).sum()
    if expected == 0:
        return 1.0
    return float(1.0 - (n - 1) * (n - trace) / expected)


def collection_agreement(units: np.ndarray | Ratings) -> dict[str, float | str | int]:
    """Fleiss' kappa (``fleiss_kappa``) and Krippendorff's alpha (nominal) of ``units``: ratings,
    or an annotators x units code matrix (``NOT_COVERED`` marks an annotator's absence), over
    the units that two or more annotators covered, evenly subsampled to at most ``MAX_UNITS``."""
    ratings = units if isinstance(units, Ratings) else Ratings.from_matrix(units)
    rated = ratings.rated()
    step = _stride(len(rated))
    return measure_units(ratings.restricted(rated[::step]), step)


def _stride(rated: int) -> int:
    """Every how-many-th rated unit is measured, so that at most ``MAX_UNITS`` are."""
    return max(1, -(-rated // MAX_UNITS))


def sampled_units(pixels: Sequence[pa.Table]) -> tuple[Ratings, int]:
    """What ``collection_agreement`` measures of the whole collection, taken one shard at a time
    from the shards' samples (``Ratings.table`` tables): every ``step``-th of the rated units,
    with annotators named in sorted order (every annotator of any shard), and ``step``. Memory
    holds one shard and the sample; ``pixels`` is iterated twice (a ``tables.ParquetParts``
    reads each file as it comes)."""
    found: set[str] = set()
    rated = []
    for table in pixels:
        found.update(pc.unique(table.column("annotator")).to_pylist())
        rated.append(int((np.bincount(table.column("unit").to_numpy()) >= 2).sum()) if table.num_rows else 0)
    step = _stride(sum(rated))
    parts, seen = [], 0
    for table, count in zip(pixels, rated, strict=True):
        if count:
            shard = Ratings.from_table(table)
            parts.append(shard.restricted(shard.rated()[(-seen) % step :: step]))  # the whole's every step-th
        seen += count
    return Ratings.concatenate(parts, sorted(found)), step


def measure_units(ratings: Ratings, step: int = 1) -> dict[str, float | str | int]:
    """Fleiss' kappa and Krippendorff's alpha of rated units already subsampled 1 in ``step``,
    with the method named."""
    method = (
        f"pixels on a grid of every {PIXEL_STRIDE}th row and column"
        + (f", 1 in {step} of them" if step > 1 else "")
        + ", each rated by the annotators who covered its image"
    )
    counts = value_counts(ratings)
    if len(ratings.names) < 2 or ratings.size == 0 or counts.shape[1] == 1:
        return {"method": method, "units": ratings.size, "fleiss_kappa": 1.0, "krippendorff_alpha": 1.0}
    return {
        "method": method,
        "units": ratings.size,
        "fleiss_kappa": fleiss_kappa(counts),
        "krippendorff_alpha": krippendorff_alpha_nominal(counts),
    }


def quorum(covering: int) -> int:
    """Votes a consensus region needs when ``covering`` annotators covered the image: more than
    half of them (``regionbench.pipeline.consensus``)."""
    return covering // 2 + 1


def coverage_summary(coverage: Sequence[pa.Table], derived: frozenset[str] = frozenset({"consensus"})) -> dict:
    """Who covered what, from ``tables.COVERAGE`` tables: the images, how many images each
    annotator covered, how many images were covered by n annotators, and the consensus quorum
    at each n (``quorum``)."""
    images: Counter = Counter()
    per_annotator: Counter = Counter()
    for table in coverage:
        for image_id, present in covering_annotators(table, derived).items():
            images[image_id] += len(present)
            per_annotator.update(present)
    by_count = Counter(images.values())
    return {
        "images": len(images),
        "per_annotator": dict(sorted(per_annotator.items())),
        "images_by_annotators": {str(n): by_count[n] for n in sorted(by_count)},
        "quorum": {str(n): quorum(n) for n in sorted(by_count)},
        "complete": len(set(per_annotator.values()) | {len(images)}) == 1,
    }


def covering_annotators(coverage: pa.Table, derived: frozenset[str] = frozenset({"consensus"})) -> dict[int, list[str]]:
    """Image id -> the annotators who covered it (name order), from a ``tables.COVERAGE`` table."""
    out: dict[int, list[str]] = {}
    for image_id, annotator in zip(*(coverage.column(c).to_pylist() for c in ("image_id", "annotator")), strict=True):
        if annotator not in derived:
            out.setdefault(image_id, []).append(annotator)
    return {image_id: sorted(names) for image_id, names in out.items()}


def _annotators(covering: Mapping[int, list[str]]) -> list[str]:
    """Every annotator of ``covering_annotators``' answer, sorted."""
    return sorted({a for present in covering.values() for a in present})


def shard_agreement(
    images: pa.Table,
    regions: pa.Table,
    coverage: pa.Table,
    hierarchy: Hierarchy,
    codes: Mapping[str, int],
    min_iou: float = MIN_IOU,
    derived: frozenset[str] = frozenset({"consensus"}),
) -> tuple[pa.Table, Ratings, pa.Table]:
    """Per (image, annotator pair) agreement rows of an ingest shard, the shard's sampled pixel
    codes (``Ratings``, for ``collection_agreement``) and the per-label tally (``label_tally``
    summed, a ``tables.AGREEMENT_LABELS`` table).

    Only annotators who both covered an image (``coverage``, a ``tables.COVERAGE`` table) are
    compared on it, and a pair of them who both drew nothing there has nothing to compare; an
    annotator who covered an image and drew nothing on it disagrees with one who drew. Only they
    rate its sampled pixels, so the work follows the coverage, not the annotators x the images.
    The ``derived`` annotators (the consensus) are not compared. With fewer than two annotators
    there is nothing to compare and nothing is decoded; otherwise masks are decoded one image
    at a time.
    """
    columns = (images.column(c).to_pylist() for c in ("image_id", "height", "width"))
    sizes = {i: (h, w) for i, h, w in zip(*columns, strict=True)}
    covering = covering_annotators(coverage, derived)
    names = _annotators(covering)
    if len(names) < 2:
        nothing = Ratings(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32), tuple(names), 0)
        return tables.AGREEMENT.empty_table(), nothing, tables.AGREEMENT_LABELS.empty_table()
    index = {name: k for k, name in enumerate(names)}
    by_image: dict[int, dict[str, list[tuple[str, dict[str, Any]]]]] = {}
    for image_id, annotator, label, rle in zip(
        *(regions.column(c).to_pylist() for c in ("image_id", "annotator", "label", "mask")), strict=True
    ):
        if annotator not in derived:
            by_image.setdefault(image_id, {}).setdefault(annotator, []).append((label, rle))
    rows: list[dict[str, Any]] = []
    samples: list[tuple[np.ndarray, ...]] = []
    tally: Counter[Any] = Counter()
    units = 0
    for image_id in sorted(sizes):
        shape, present = sizes[image_id], covering.get(image_id, [])
        if not present:
            continue
        drawn = by_image.get(image_id, {})
        readings = {a: [(label, geometry.from_rle(rle)) for label, rle in drawn.get(a, [])] for a in present}
        rows += _pairs(image_id, present, readings, hierarchy, codes, min_iou, tally)
        maps = [label_map(readings[a], codes, shape) for a in present]
        samples.append(image_ratings(maps, np.array([index[a] for a in present]), units))
        units += len(samples[-1][0]) // len(present)
    unit, annotator, code = (
        np.concatenate([np.zeros(0, t), *(s[k] for s in samples)]) for k, t in enumerate((np.int64, np.int32, np.int32))
    )
    labels = sorted({label for label, _ in tally})
    label_rows = [{"label": x, "regions": tally[(x, "regions")], "agreed": tally[(x, "agreed")]} for x in labels]
    return (
        pa.Table.from_pylist(rows, schema=tables.AGREEMENT),
        Ratings(unit, annotator, code, tuple(names), units),
        pa.Table.from_pylist(label_rows, schema=tables.AGREEMENT_LABELS),
    )


def _pairs(
    image_id: int,
    present: list[str],
    readings: dict[str, list[tuple[str, np.ndarray]]],
    hierarchy: Hierarchy,
    codes: Mapping[str, int],
    min_iou: float,
    tally: Counter[Any],
) -> list[dict[str, Any]]:
    """The agreement rows of every pair of the annotators ``present`` on one image (a pair who
    both drew nothing has nothing to compare); each pair's label tally is added to ``tally``."""
    rows = []
    for i, first in enumerate(present):
        for second in present[i + 1 :]:
            a, b = readings[first], readings[second]
            if a or b:
                pairs = match([m for _, m in a], [m for _, m in b], min_iou)
                row = pair_agreement(a, b, hierarchy, codes, min_iou, pairs)
                tally.update(label_tally(a, b, pairs))
                rows.append({"image_id": image_id, "annotator_a": first, "annotator_b": second, **row})
    return rows


PAIR_MEASURES = ("mean_iou", "mean_dice", "exact_label", "hierarchical_label", "pixel_kappa")
LABEL_FREE_MEASURES = ("rand_index", "vi_bits")
WORST_IMAGES = 10


def _label_free(rows: pa.Table) -> dict:
    """Means over image pairs (PRI is the mean Rand index against the other annotators), overall
    and per annotator; an annotator's covering is that of the others' segmentations by its own.
    Grouped in one pass over the rows, whatever the number of annotators."""
    cols = {c: rows.column(c).to_numpy() for c in (*LABEL_FREE_MEASURES, "covering_of_a", "covering_of_b")}
    # Each row twice: once for its first annotator, once for its second.
    who = np.concatenate([np.asarray(rows.column(c).to_pylist(), dtype=object) for c in ("annotator_a", "annotator_b")])
    names, index = np.unique(who, return_inverse=True)
    rows_of = np.bincount(index, minlength=len(names))

    def per_annotator(values: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights=values, minlength=len(names)) / rows_of

    pri = per_annotator(np.tile(cols["rand_index"], 2))
    vi = per_annotator(np.tile(cols["vi_bits"], 2))
    covering = per_annotator(np.concatenate([cols["covering_of_b"], cols["covering_of_a"]]))
    return {
        "pri": float(cols["rand_index"].mean()),
        "vi_bits": float(cols["vi_bits"].mean()),
        "covering": float(np.concatenate([cols["covering_of_a"], cols["covering_of_b"]]).mean()),
        "per_annotator": {
            str(name): {"pri": float(pri[k]), "vi_bits": float(vi[k]), "covering": float(covering[k])}
            for k, name in enumerate(names)
        },
    }


def _per_label(labels: Sequence[pa.Table]) -> list[dict]:
    """Per label, most regions first: its regions over all image pairs and specific agreement."""
    tally: Counter = Counter()
    for table in labels:
        for row in table.to_pylist():
            tally[(row["label"], "regions")] += row["regions"]
            tally[(row["label"], "agreed")] += row["agreed"]
    names = sorted({label for label, _ in tally}, key=lambda x: (-tally[(x, "regions")], x))
    return [
        {
            "label": x,
            "regions": tally[(x, "regions")],
            "specific_agreement": tally[(x, "agreed")] / tally[(x, "regions")],
        }
        for x in names
    ]


def _worst_images(rows: pa.Table, measure: str) -> list[dict]:
    """The ``WORST_IMAGES`` images with the lowest ``measure``, averaged over their pairs."""
    per_image: dict[int, list[float]] = {}
    for image_id, value in zip(rows.column("image_id").to_pylist(), rows.column(measure).to_pylist(), strict=True):
        per_image.setdefault(image_id, []).append(value)
    means = sorted((float(np.mean(v)), image_id) for image_id, v in per_image.items())
    return [{"image_id": image_id, measure: value} for value, image_id in means[:WORST_IMAGES]]


def summary(
    pairs: Sequence[pa.Table],
    pixels: Sequence[pa.Table],
    labels: Sequence[pa.Table] = (),
    min_iou: float = MIN_IOU,
    coverage: Sequence[pa.Table] = (),
) -> dict:
    """The collection's agreement: the mean of every pair measure over (image, pair) rows, the
    share of regions matched, Fleiss' kappa and Krippendorff's alpha over the sampled pixels
    (``collection_agreement``), the specific agreement per label, the label-free measures and
    the images agreed on least (by pixel kappa; by Rand index when the segments carry one label
    only, ``labelled`` false), and with ``coverage`` (``tables.COVERAGE`` tables) who covered
    what (``coverage_summary``). Every figure is over the annotators who covered each image: the
    pair rows exist only for them, and an annotator absent from a shard or image is no rater of
    its pixels. The annotators are those of ``pixels`` and ``coverage`` (an annotator alone in
    its shards has no sampled pixel)."""
    units, step = sampled_units(pixels)
    names = sorted({*units.names, *(a for table in coverage for a in _annotators(covering_annotators(table)))})
    rows = pa.concat_tables(pairs) if pairs else tables.AGREEMENT.empty_table()
    out: dict = {"annotators": names, "image_pairs": rows.num_rows, "min_iou": min_iou}
    if coverage:
        out["coverage"] = coverage_summary(coverage)
    if len(names) < 2 or not rows.num_rows:
        return out | {"note": "fewer than two annotators: nothing to compare"}
    matched = int(np.sum(rows.column("matched").to_numpy()))
    unmatched = int(np.sum(rows.column("unmatched_a").to_numpy()) + np.sum(rows.column("unmatched_b").to_numpy()))
    out["matched_regions"] = matched
    out["unmatched_regions"] = unmatched
    out["matched_share"] = 2 * matched / (2 * matched + unmatched) if matched or unmatched else 1.0
    out |= {name: float(np.mean(rows.column(name).to_numpy())) for name in PAIR_MEASURES}
    out |= measure_units(units, step)
    out["per_label"] = _per_label(labels)
    out["labelled"] = len(out["per_label"]) > 1
    out["label_free"] = _label_free(rows)
    out["worst_images"] = _worst_images(rows, "pixel_kappa" if out["labelled"] else "rand_index")
    return out


# --- Label-free measures (segmentations without labels, Berkeley benchmark family) ------------


def segment_map(masks: Sequence[np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """A segmentation as segment ids: region k (1-based) where it is the last region covering the
    pixel, 0 where no region does (the unlabelled rest is one segment)."""
    out = np.zeros(shape, dtype=np.int64)
    for k, mask in enumerate(masks, start=1):
        out[mask] = k
    return out


def _contingency(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Counts of pixels per (segment of a, segment of b), over the segments present."""
    a, b = a.ravel(), b.ravel()
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu" or min(a.min(), b.min()) < 0:
        a, b = np.unique(a, return_inverse=True)[1], np.unique(b, return_inverse=True)[1]
    # One bincount over joint codes (segment maps are small non-negative ints: no sort needed).
    columns = int(b.max()) + 1
    table = np.bincount(a.astype(np.int64) * columns + b, minlength=(int(a.max()) + 1) * columns)
    table = table.reshape(-1, columns)
    return table[table.any(axis=1)][:, table.any(axis=0)]


def _rand_index(table: np.ndarray) -> float:
    table = table.astype(np.float64)
    n = table.sum()
    pairs = n * (n - 1) / 2
    if pairs == 0:
        return 1.0
    disagree = ((table.sum(axis=1) ** 2).sum() + (table.sum(axis=0) ** 2).sum()) / 2 - (table**2).sum()
    return float(1.0 - disagree / pairs)


def _variation_of_information(table: np.ndarray) -> float:
    joint = table.astype(np.float64) / table.sum()

    def entropy(p: np.ndarray) -> float:
        p = p[p > 0]
        return float(-(p * np.log2(p)).sum())

    return 2 * entropy(joint.ravel()) - entropy(joint.sum(axis=1)) - entropy(joint.sum(axis=0))


def _covering(table: np.ndarray) -> float:
    """Covering of the rows' segments by the columns'."""
    table = table.astype(np.float64)
    sizes_r, sizes_s = table.sum(axis=1), table.sum(axis=0)
    iou = table / (sizes_r[:, None] + sizes_s[None, :] - table)
    return float((sizes_r * iou.max(axis=1)).sum() / table.sum())


def rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Rand index: the share of pixel pairs on which two segmentations agree (same segment in
    both or in neither), from the contingency table n_ij with rows a_i and columns b_j:
    RI = 1 - (sum a_i^2 / 2 + sum b_j^2 / 2 - sum n_ij^2) / C(N, 2)."""
    return _rand_index(_contingency(a, b))


def probabilistic_rand_index(segmentation: np.ndarray, others: Sequence[np.ndarray]) -> float:
    """PRI (Unnikrishnan et al. 2007): the mean over pixel pairs of c p + (1 - c)(1 - p), c the
    pair's co-membership in ``segmentation`` and p its share among ``others``; equal to the mean
    Rand index against each of them."""
    return float(np.mean([rand_index(segmentation, other) for other in others]))


def variation_of_information(a: np.ndarray, b: np.ndarray) -> float:
    """VI (Meila 2007) = H(A|B) + H(B|A) = H(A) + H(B) - 2 I(A; B), in bits (log base 2)."""
    return _variation_of_information(_contingency(a, b))


def covering(segmentation: np.ndarray, reference: np.ndarray) -> float:
    """Segmentation covering of ``reference`` by ``segmentation`` (Arbelaez et al. 2011):
    (1/N) sum over reference segments R of |R| max over segments S of IoU(R, S)."""
    return _covering(_contingency(reference, segmentation))
