"""Instance masks and boxes scored as COCO's evaluation scores them (docs/scoring.md, "Instances").

The engine is faster-coco-eval's ``COCOeval_faster``, pycocotools' ``COCOeval`` in C++ (its
figures equal pycocotools' to the last bit, tested; two to four times faster): IoU
thresholds .50:.05:.95, 101 recall points, ``maxDets`` 1/10/100 (any three), the area ranges
small < 32², medium < 96², large; ``iscrowd`` regions are ignore regions (a detection matched to
one is neither a true nor a false positive, and its IoU takes the detection's area as the
union). This module only states the ground truth as COCO does and reads the results file:

- the truth is one annotator's regions of the chosen images, each image under the id that
  annotator's source file gave it (``coverage.source_image_id``; for the consensus, the id the
  files agree on; else the release's), each region under its source category id
  (``regions.category_id``; for the consensus, the id the files give its label; else its label
  id), with the
  source's ``area`` and ``bbox`` where it gave them (COCO's area ranges use them), else the
  ones measured on the mask;
- a detection is ``{image_id, category_id | label, segmentation (RLE or polygons) | bbox,
  score}``; a polygon is rasterised by pycocotools as COCO's own tools do.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from regionbench.core.errors import InputError
from regionbench.scoring.measures import lvis_federated
from regionbench.scoring.measures.kept_detections import Accumulated, InMemory

STATS = (
    "AP", "AP50", "AP75", "AP_small", "AP_medium", "AP_large",
    "AR1", "AR10", "AR100", "AR_small", "AR_medium", "AR_large",
)  # fmt: skip
AREA_RANGES = {"small": (0.0, 32.0**2), "medium": (32.0**2, 96.0**2), "large": (96.0**2, 1e10)}


class InstancesError(InputError):
    """A results file or setting that cannot be scored; one line per problem."""


class OutsideImages(InstancesError):
    """Detections on images of the release that the truth leaves out: ``detections`` of them,
    ``what`` they are in words."""

    def __init__(self, detections: int, images: int) -> None:
        self.detections, self.what = detections, f"detections on {images} images"
        super().__init__(f"{detections} {self.what} outside the scored images")


def merged_area_ranges(given: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """The three area ranges: those ``given`` (name -> (low, high) in pixels), COCO's for the
    others. They may touch (COCOeval counts a bound in both) but not overlap, so an instance
    is small, medium or large, never two of them; an overlap is one line naming both ranges."""
    unknown = sorted(set(given) - set(AREA_RANGES))
    if unknown:
        raise InstancesError(f"area range {unknown[0]!r}: name small, medium or large")
    ranges = AREA_RANGES | given
    names = list(AREA_RANGES)
    for a, b in itertools.pairwise(names):
        if ranges[a][1] > ranges[b][0]:

            def said(name: str) -> str:
                origin = "given" if name in given else "COCO's, as none was given"
                return f"{name} {ranges[name][0]:g}:{ranges[name][1]:g} ({origin})"

            raise InstancesError(
                f"--area-range: {said(a)} overlaps {said(b)}; give ranges that only touch, e.g. "
                f"--area-range {a}={ranges[a][0]:g}:{ranges[b][0]:g} or --area-range {b}={ranges[a][1]:g}:{ranges[b][1]:g}"
            )
    return ranges


IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)  # COCOeval's .50:.05:.95 (bit t of ``Evaluated.hits``)
RECALL_POINTS = np.linspace(0.0, 1.0, 101)
OUTCOMES = ("matched", "unmatched", "crowd", "dropped")


@dataclass
class Evaluated:
    """What the engine found on a range of images, kept small (26 bytes a detection) so that the
    ranges of a run accumulate as one (``accumulate``). Per category index ``k`` (of the run's
    sorted category ids), the range's detections the engine kept (at most the largest
    ``max_dets`` an image), its images in id order, each image's best score first:

    - ``scores[k]``: their scores; ``ranks[k]``: their places in their image (for fewer
      ``max_dets``);
    - ``hits[k]``, ``ignored[k]`` (area range x detection, uint16): bit t set where the detection
      took an instance at IoU threshold t (``IOU_THRESHOLDS``), where it is ignored there (it
      took a crowd or an instance outside the area range, or took none and lies outside it);

    ``instances`` (category x area range) the instances not ignored; ``per_image`` the truth's
    image id -> (instances, detections counted, detections matched) at IoU 0.5 over all areas,
    crowds aside; ``outcomes`` (asked for) detection index -> (``OUTCOMES``, IoU), and ``taken``
    the truth annotation id each matched detection took. What the bootstrap over images redraws
    (``resampled_ap``): ``image[k]`` each kept detection's image (its index among the range's
    ``image_count`` images, id order) and ``image_instances`` the rows (image index, category
    index, instances not ignored over all areas)."""

    scores: dict[int, np.ndarray] = field(default_factory=dict)
    ranks: dict[int, np.ndarray] = field(default_factory=dict)
    hits: dict[int, np.ndarray] = field(default_factory=dict)
    ignored: dict[int, np.ndarray] = field(default_factory=dict)
    instances: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    per_image: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    outcomes: dict[int, tuple[str, float]] = field(default_factory=dict)
    taken: dict[int, int] = field(default_factory=dict)
    image: dict[int, np.ndarray] = field(default_factory=dict)
    image_count: int = 0
    image_instances: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int64))


IOU_TYPES = ("segm", "bbox", "boundary")
DILATION_RATIO = 0.02  # Boundary IoU's band: this share of the image diagonal (boundary-iou-api's default)

METHODS = ("coco", "lvis")
STATES = 100_000  # the engine's states (category x area range x image) one run holds: ~500 bytes each


@dataclass(frozen=True)
class Engine:
    """faster-coco-eval's ``COCOeval_faster`` under one run's rules: ``iou_type`` (segm, bbox or
    boundary: Boundary IoU, Cheng et al., CVPR 2021, each mask's pixels within ``dilation_ratio``
    of the image diagonal of its contour, the IoU the smaller of mask and boundary IoU, crowds the
    mask's, as boundary-iou-api computes it), at most ``max_det`` detections per image and
    category (best first), ``areas`` (low, high) in pixels, all areas first, and ``lvis``: LVIS's
    federated rules (``LVIS``; the truth's images carry its lists, its categories their
    ``frequency``)."""

    iou_type: str
    max_det: int
    areas: Sequence[Sequence[float]]
    dilation_ratio: float = DILATION_RATIO
    lvis: bool = False

    def _runs(self, truth: dict, detections: Sequence[dict], images: int) -> Iterator[Any]:
        """The engine run on the categories with an instance or a detection here, ``STATES //
        (areas x images)`` of them at a time (each run's truth and detections those of its
        categories): the engine keeps a state per category, area range and image, so memory
        holds one run's. A category's figures do not depend on the others'."""
        # grouped by category once (each in its file order): a run takes its categories' groups
        named = {c["id"]: c for c in truth["categories"]}
        instances: dict[int, list[dict]] = defaultdict(list)
        found: dict[int, list[dict]] = defaultdict(list)
        for a in truth["annotations"]:
            instances[a["category_id"]].append(a)
        for d in detections:
            found[d["category_id"]].append(d)
        present = sorted(instances.keys() | found.keys())
        step = max(1, STATES // (len(self.areas) * images))
        for start in range(0, len(present), step):
            chosen = present[start : start + step]
            part = {
                "images": truth["images"],
                "categories": [named[c] for c in chosen],
                "annotations": [a for c in chosen for a in instances[c]],
            }
            yield self.run(part, [d for c in chosen for d in found[c]])

    def run(self, truth: dict, detections: Sequence[dict]) -> Any:
        """The engine evaluated on ``truth`` and ``detections`` (each with its ``id``, ``area``
        and shape), the per-image results kept for reading (``separate_eval``)."""
        from faster_coco_eval import COCO, COCOeval_faster

        gt = COCO()
        gt.dataset = truth
        gt.createIndex()
        if self.lvis:  # LVIS's rules, applied here: the engine fails on a dropped detection's image
            detections = lvis_federated.federated(truth, detections)  # when nothing else of that image is in the run
        dt = COCO()
        dt.dataset = {"images": truth["images"], "categories": truth["categories"], "annotations": list(detections)}
        dt.createIndex()
        quiet = lambda *args, **kwargs: None  # noqa: E731  the engine reports its progress
        evaluation = COCOeval_faster(
            gt, dt, self.iou_type, print_function=quiet, separate_eval=True, rle_iou_max_workers=1,
            boundary_dilation_ratio=self.dilation_ratio, boundary_cpu_count=1, lvis_style=self.lvis,
        )  # fmt: skip
        evaluation.params.catIds = sorted(c["id"] for c in truth["categories"])
        evaluation.params.imgIds = sorted(e["id"] for e in truth["images"])
        evaluation.params.maxDets = [self.max_det]
        evaluation.params.areaRng = [list(a) for a in self.areas]
        evaluation.params.areaRngLbl = [str(k) for k in range(len(self.areas))]
        with contextlib.redirect_stdout(io.StringIO()):
            evaluation.evaluate()
        return evaluation

    def evaluate(self, truth: dict, detections: Sequence[dict], outcomes: bool = False) -> Evaluated:
        """The per-image evaluation of a range of images (``truth``, a COCO instances document,
        taken by the engine: give it a fresh one) and its ``detections`` (checked by ``Checker``,
        their ``id`` set here), read into an ``Evaluated``: what COCOeval's ``evaluateImg`` gives
        (matches and ignore flags per IoU threshold and area range). ``outcomes``: each
        detection's at IoU 0.5 too (``Evaluated``)."""
        areas = self.areas
        for k, d in enumerate(detections, start=1):
            d["id"] = k
        empty: list[int] = []
        if self.lvis:  # LVISEval takes only what covers a pixel (its get_ann_ids: area > 0), truth and detections
            truth = truth | {"annotations": [a for a in truth["annotations"] if a["area"] > 0]}
            empty = [n for n, d in enumerate(detections) if d["area"] <= 0]
        if not detections:  # nothing for the engine to match: the instances alone
            ids = sorted(e["id"] for e in truth["images"])
            cat_index = {c: k for k, c in enumerate(sorted(c["id"] for c in truth["categories"]))}
            return Evaluated(
                instances=_instances(truth, cat_index, areas), per_image=_per_image(truth, ids, Evaluated(), {}),
                image_count=len(ids), image_instances=_image_instances(truth, ids, cat_index, areas[0]),
            )  # fmt: skip
        cats, thresholds = sorted(c["id"] for c in truth["categories"]), len(IOU_THRESHOLDS)
        images = sorted(e["id"] for e in truth["images"])
        n_areas, n_images = len(areas), len(images)
        cat_index, image_index = {c: k for k, c in enumerate(cats)}, {i: n for n, i in enumerate(images)}
        groups: dict[tuple[int, int], list[int]] = defaultdict(list)  # (image, category index) -> detections
        left_out = set(empty)
        for n, d in enumerate(detections):
            if n not in left_out:
                groups[(image_index[d["image_id"]], cat_index[d["category_id"]])].append(n)
        sizes: dict[int, list[int]] = defaultdict(list)  # category index -> detections kept per group
        scores: dict[int, list[float]] = defaultdict(list)
        hits: dict[tuple[int, int], list[int]] = defaultdict(list)  # (category index, area) -> T x kept, per group
        ignored: dict[tuple[int, int], list[int]] = defaultdict(list)
        images_of: dict[int, list[int]] = defaultdict(list)  # category index -> each group's image index
        found = Evaluated()
        if outcomes:  # what LVIS left out is nobody's to match
            found.outcomes |= {n: ("dropped", 0.0) for n in empty}
        collecting = gc.isenabled()
        gc.disable()  # the engine's states are many small lists: a collection per thousand would triple the time
        try:
            kept = [d for n, d in enumerate(detections) if n not in left_out] if left_out else detections
            for evaluation in self._runs(truth, kept, n_images):
                states = evaluation._evalImgs_cpp  # k * A * I + a * I + i, as COCOeval's evalImgs
                place = {cat_index[c]: k * n_areas * n_images for k, c in enumerate(evaluation.params.catIds)}
                for i, k in sorted(g for g in groups if g[1] in place):
                    state = states[place[k] + i].__getstate__()
                    count = len(state[2])
                    sizes[k].append(count)
                    images_of[k].append(i)
                    scores[k] += state[2]
                    hits[(k, 0)] += state[0]
                    ignored[(k, 0)] += state[4]
                    if outcomes:
                        ranked = sorted(groups[(i, k)], key=lambda n: -detections[n]["score"])  # stable, as the engine
                        _outcomes(evaluation, state, ranked, (images[i], cats[k]), truth, found)
                    for a in range(1, n_areas):
                        state = states[place[k] + a * n_images + i].__getstate__()
                        hits[(k, a)] += state[0]
                        ignored[(k, a)] += state[4]
                del evaluation, states  # one run's states at a time
        finally:
            if collecting:
                gc.enable()
        found.instances = _instances(truth, cat_index, areas)
        found.outcomes, found.taken = dict(sorted(found.outcomes.items())), dict(sorted(found.taken.items()))
        sizes = {k: sizes[k] for k in sorted(sizes, key=lambda k: (images_of[k][0], k))}  # as one engine run adds them
        for k, counts in sizes.items():
            found.scores[k] = np.asarray(scores[k], dtype=np.float64)
            index, found.ranks[k] = _layout(np.asarray(counts, dtype=np.int64), thresholds)
            found.hits[k] = np.stack([_bits(np.asarray(hits[(k, a)]), index) for a in range(n_areas)])
            found.ignored[k] = np.stack([_bits(np.asarray(ignored[(k, a)]), index) for a in range(n_areas)])
        found.image = {k: np.repeat(np.asarray(images_of[k], dtype=np.uint32), sizes[k]) for k in sizes}
        found.per_image = _per_image(truth, images, found, found.image)
        found.image_count, found.image_instances = n_images, _image_instances(truth, images, cat_index, areas[0])
        return found


def _layout(counts: np.ndarray, thresholds: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each detection's T values lie in the groups' states laid end to end (each group
    T x its count, threshold-major): a T x detections index, and each detection's place in its
    group."""
    starts = np.cumsum(counts) - counts
    group = np.repeat(np.arange(len(counts)), counts)
    place = np.arange(int(counts.sum())) - starts[group]
    index = thresholds * starts[group][None, :] + np.arange(thresholds)[:, None] * counts[group][None, :] + place
    return index, place.astype(np.uint16)


def _bits(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """A detection's T flags (nonzero values at ``index``) as one uint16, bit t for threshold t."""
    if not index.size:
        return np.zeros(0, dtype=np.uint16)
    flags = values[index] != 0
    return (flags.astype(np.uint16) << np.arange(index.shape[0], dtype=np.uint16)[:, None]).sum(axis=0, dtype=np.uint16)


def _instances(truth: dict, cat_index: Mapping[int, int], areas: Sequence[Sequence[float]]) -> np.ndarray:
    """Category x area range: the instances COCOeval does not ignore (not crowd, its area within
    the range, both bounds included)."""
    out = np.zeros((len(cat_index), len(areas)), dtype=np.int64)
    for a in truth["annotations"]:
        if not a["iscrowd"]:
            for r, (low, high) in enumerate(areas):
                out[cat_index[a["category_id"]], r] += low <= a["area"] <= high
    return out


def _image_instances(
    truth: dict, images: Sequence[int], cat_index: Mapping[int, int], area: Sequence[float]
) -> np.ndarray:
    """Rows (image index, category index, instances) of the instances COCOeval does not ignore in
    the ``area`` range (``_instances``), by image (``images``: the range's ids in order)."""
    image_index = {i: n for n, i in enumerate(images)}
    low, high = area
    found = Counter(
        (image_index[a["image_id"]], cat_index[a["category_id"]])
        for a in truth["annotations"]
        if not a["iscrowd"] and low <= a["area"] <= high
    )
    rows = sorted((i, k, n) for (i, k), n in found.items())
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), 3)


def _per_image(
    truth: dict, images: Sequence[int], found: Evaluated, image_of: Mapping[int, np.ndarray]
) -> dict[int, tuple[int, int, int]]:
    """Truth image id -> (instances, detections counted, detections matched) at IoU 0.5 over all
    areas (``image_of``: category index -> each kept detection's image index): counted = matched
    or unmatched, not on a crowd; detections beyond ``max_det`` are not counted."""
    instances = Counter(a["image_id"] for a in truth["annotations"] if not a["iscrowd"])
    counted, matched = np.zeros(len(images), dtype=np.int64), np.zeros(len(images), dtype=np.int64)
    for k, image in image_of.items():
        hit, ignore = (found.hits[k][0] & 1).astype(bool), (found.ignored[k][0] & 1).astype(bool)
        counted += np.bincount(image[~ignore], minlength=len(images))
        matched += np.bincount(image[hit & ~ignore], minlength=len(images))
    return {i: (instances[i], int(counted[n]), int(matched[n])) for n, i in enumerate(images)}


def _outcomes(
    evaluation: Any, state: tuple, ranked: Sequence[int], pair: tuple[int, int], truth: dict, found: Evaluated
) -> None:
    """One image and category's detections (``ranked``: indices, best first, as the engine
    ranks them) -> (outcome, IoU) at IoU 0.5 over all areas, from the engine's ``state``, into
    ``found``: the IoU with the instance taken (its id in ``found.taken``), else the best with any
    instance of the category (crowds aside)."""
    count = len(state[2])
    gts = [a for a in truth["annotations"] if (a["image_id"], a["category_id"]) == pair]
    ious = np.asarray(evaluation.ious.get(pair, []), dtype=float).reshape(count, len(gts)) if gts else None
    column = {a["id"]: c for c, a in enumerate(gts)}
    plain = np.array([not a["iscrowd"] for a in gts], dtype=bool)
    found.outcomes |= {n: ("dropped", 0.0) for n in ranked[count:]}
    for j, n in enumerate(ranked[:count]):
        taken, ignore = state[0][j], state[4][j]  # threshold 0 (IoU 0.5) comes first
        best = float(ious[j][plain].max()) if ious is not None and plain.any() else 0.0
        if taken and not ignore:
            found.outcomes[n] = ("matched", float(ious[j][column[taken]]) if ious is not None else 0.0)
            found.taken[n] = int(taken)
        else:
            found.outcomes[n] = ("crowd" if ignore else "unmatched", best)


def accumulate(
    ranges: Accumulated, categories: int, areas: int, max_dets: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """COCOeval's ``accumulate`` over a run's evaluated ``ranges``, as pycocotools computes it:
    per category, area range and ``max_dets`` m, the detections of every image (its m best)
    sorted by score (stable), tp and fp summed along them per IoU threshold, recall =
    tp / instances, precision = tp / (tp + fp + eps) made non-increasing from the end and read at
    the 101 recall points. Returns precision (T x R x K x A x M) and recall (T x K x A x M),
    -1 where a category has no instance in the area range. One category's detections are read
    at a time."""
    thresholds, points = len(IOU_THRESHOLDS), len(RECALL_POINTS)
    precision = -np.ones((thresholds, points, categories, areas, len(max_dets)))
    recall = -np.ones((thresholds, categories, areas, len(max_dets)))
    instances = ranges.instances
    bit = (np.uint16(1) << np.arange(thresholds, dtype=np.uint16))[:, None]
    for k in range(categories):
        if not instances[k].any():
            continue
        kept = ranges.kept(k)
        if kept is None:  # instances, no detection: recall 0, precision 0
            for a in np.flatnonzero(instances[k]):
                precision[:, :, k, a, :], recall[:, k, a, :] = 0.0, 0.0
            continue
        for m, most in enumerate(max_dets):
            keep = np.flatnonzero(kept.ranks < most)
            order = keep[np.argsort(-kept.scores[keep], kind="mergesort")]
            for a in np.flatnonzero(instances[k]):
                matched, ignore = (kept.hits[a][order] & bit) != 0, (kept.ignored[a][order] & bit) != 0
                tp = np.cumsum(matched & ~ignore, axis=1).astype(float)
                fp = np.cumsum(~matched & ~ignore, axis=1).astype(float)
                precision[:, :, k, a, m], recall[:, k, a, m] = _curve(tp, fp, int(instances[k, a]))
    return precision, recall


def _curve(tp: np.ndarray, fp: np.ndarray, instances: int) -> tuple[np.ndarray, np.ndarray]:
    """Precision at the recall points (T x R) and recall (T) of cumulated tp, fp (T x detections)."""
    count = tp.shape[1]
    if not count:
        return np.zeros((tp.shape[0], len(RECALL_POINTS))), np.zeros(tp.shape[0])
    rc = tp / instances
    pr = np.maximum.accumulate((tp / (fp + tp + np.spacing(1)))[:, ::-1], axis=1)[:, ::-1]
    out = np.zeros((tp.shape[0], len(RECALL_POINTS)))
    for t in range(tp.shape[0]):
        at = np.searchsorted(rc[t], RECALL_POINTS, side="left")
        valid = at < count
        out[t, valid] = pr[t, at[valid]]
    return out, rc[:, -1]


def summary(precision: np.ndarray, recall: np.ndarray, max_dets: Sequence[int]) -> dict[str, float]:
    """COCOeval's 12 figures (``STATS``) of accumulated ``precision`` and ``recall``: the mean of
    the entries that are not -1 (-1 where none), all areas or one, IoU .50:.95, .50 or .75, at the
    largest ``max_dets`` (AR also at the others); each AR at a detection count is named for it
    (AR1, AR10, AR100 at COCO's)."""
    last = len(max_dets) - 1

    def mean(values: np.ndarray) -> float:
        values = values[values > -1]
        return float(values.mean()) if values.size else -1.0

    ap = [mean(precision[:, :, :, 0, last]), mean(precision[:1, :, :, 0, last]), mean(precision[5:6, :, :, 0, last])]
    ap += [mean(precision[:, :, :, a, last]) for a in (1, 2, 3)]
    ar = [mean(recall[:, :, 0, m]) for m in range(len(max_dets))] + [mean(recall[:, :, a, last]) for a in (1, 2, 3)]
    names = [*STATS[:6], *(f"AR{m}" for m in max_dets), *STATS[9:]]
    return dict(zip(names, ap + ar, strict=True))


def per_category(
    precision: np.ndarray, categories: Mapping[int, str], groups: Sequence[Sequence[int]] | None = None
) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """Every category's AP (IoU .50:.95, all areas, the largest ``max_dets``; None without an
    instance to find), keyed by its id with its name beside (two categories of one name stay
    two), and the names of those without an instance (no AP, in no mean). ``categories``: id ->
    name in the order of the precision's category axis; ``groups``: LVIS's frequency groups
    (``frequency_groups``), each category's ``frequency`` then given too."""
    frequency = {k: f for f, members in zip(lvis_federated.FREQUENCIES, groups or (), strict=False) for k in members}
    out, absent = {}, []
    for k, (c, name) in enumerate(categories.items()):
        values = precision[:, :, k, 0, -1]
        values = values[values > -1]
        out[c] = {"name": name, "ap": float(values.mean()) if values.size else None}
        if groups is not None:
            out[c]["frequency"] = frequency.get(k)
        if not values.size:
            absent.append(name)
    return out, sorted(absent)


def per_image_f1(counts: Mapping[int, tuple[int, int, int]]) -> dict[int, float]:
    """Per image, the F1 at IoU 0.5 of (instances, counted detections, matched) (``Evaluated.
    per_image``): 2 matched / (instances + counted), 1 for an image with neither."""
    return {i: 2 * m / (n + c) if n + c else 1.0 for i, (n, c, m) in counts.items()}


def area_bounds(area_ranges: dict[str, tuple[float, float]] | None) -> list[list[float]]:
    """The engine's area ranges: all areas, then small, medium, large (``merged_area_ranges``)."""
    ranges = merged_area_ranges(area_ranges or {})
    return [[0.0, 1e10]] + [list(ranges[k]) for k in ("small", "medium", "large")]


@functools.cache
def engine_masks() -> Any:
    """faster-coco-eval's mask module, imported once."""
    from faster_coco_eval import mask_api_new_cpp

    return mask_api_new_cpp


def band_covers_mask(annotations: Sequence[dict], dilation_ratio: float) -> int:
    """How many of the (non-crowd) truth ``annotations`` (their ``segmentation`` RLEs) lie wholly in
    their own boundary band (``dilation_ratio`` of the diagonal): objects so thin that their
    boundary IoU is their mask IoU, which users of Boundary AP ask to know. The bands the engine
    already made (each annotation's ``boundary``, after an evaluation) are taken as they are."""
    mask_api_new_cpp = engine_masks()
    plain = [a for a in annotations if not a["iscrowd"] and isinstance(a.get("segmentation"), dict)]
    if not plain:
        return 0
    rles = [{"size": list(a["segmentation"]["size"]), "counts": _text(a["segmentation"]["counts"])} for a in plain]
    if all(isinstance(a.get("boundary"), dict) for a in plain):
        bands = [{"size": list(a["boundary"]["size"]), "counts": _text(a["boundary"]["counts"])} for a in plain]
    else:
        bands = mask_api_new_cpp.toBoundary(rles, dilation_ratio)
    return int(np.count_nonzero(mask_api_new_cpp.area(bands) == mask_api_new_cpp.area(rles)))


def _text(counts: str | bytes) -> str:
    return counts.decode("ascii") if isinstance(counts, bytes) else counts


def report(
    evaluated: Accumulated | Sequence[Evaluated],
    categories: Mapping[int, str],
    iou_type: str,
    max_dets: Sequence[int],
    area_ranges: dict[str, tuple[float, float]] | None,
    counts: Mapping[str, int],
    groups: Sequence[Sequence[int]] | None = None,
) -> dict:
    """The figures of a run evaluated range by range (``evaluated``: the ranges, or their
    ``Evaluated`` in image order) against a truth of ``categories`` (id -> name, sorted by id): the 12 figures
    (``summary``; LVIS's 13, ``lvis_summary``, where the frequency ``groups`` are given),
    per-category AP, the categories absent, the settings and ``counts`` (images, ground_truth,
    crowd, detections)."""
    if isinstance(evaluated, Sequence):
        evaluated = InMemory(evaluated, len(categories), 4)
    precision, recall = accumulate(evaluated, len(categories), 4, max_dets)
    found, absent = per_category(precision, categories, groups)
    ranges = merged_area_ranges(area_ranges or {})
    return {
        "iou_type": iou_type,
        "max_dets": list(max_dets),
        "area_ranges": {k: list(v) for k, v in ranges.items()},
        **counts,
        "stats": summary(precision, recall, max_dets)
        if groups is None
        else lvis_federated.lvis_summary(precision, recall, groups, max_dets[-1]),
        "per_category_ap": found,
        "categories_absent": absent,
        "pr_curves": pr_curves(precision),
    }


def pr_curves(precision: np.ndarray) -> dict[str, list[float]]:
    """The run's precision-recall curves as COCO draws them (``COCOeval.accumulate``'s precision,
    all areas, the largest ``max_dets``): precision at the 101 recall points, the mean over the
    categories with an instance, at IoU 0.5 (``AP50``), 0.75 (``AP75``) and over the ten
    thresholds (``AP``); each curve's mean is that figure. Empty without an instance."""
    values = precision[:, :, :, 0, -1]  # T x R x K
    present = (values > -1).all(axis=(0, 1))
    if not present.any():
        return {}
    kept = values[:, :, present]
    curves = {"AP": kept.mean(axis=(0, 2)), "AP50": kept[0].mean(axis=1), "AP75": kept[5].mean(axis=1)}
    return {"recall": [round(float(r), 2) for r in RECALL_POINTS]} | {
        name: [float(p) for p in curve] for name, curve in curves.items()
    }


def score(
    truth: dict,
    detections: Sequence[dict],
    iou_type: str = "segm",
    max_dets: Sequence[int] = (1, 10, 100),
    area_ranges: dict[str, tuple[float, float]] | None = None,
    dilation_ratio: float = DILATION_RATIO,
    method: str = "coco",
) -> dict:
    """COCOeval of ``detections`` (checked: ``check_results``) against ``truth`` (a COCO
    instances document) in one range: the 12 summary figures (``STATS``, -1 where a figure has
    no ground truth, as COCOeval gives it), per-category AP (over IoU .50:.95, all areas, the
    last ``max_dets``), the categories absent and the settings. ``method`` ``lvis``: LVISEval's
    (``LVIS``; ``max_dets`` its one count, its 13 figures ``lvis_stats``)."""
    if iou_type not in IOU_TYPES:
        raise InstancesError(f"--iou-type {iou_type}: use {', '.join(IOU_TYPES)}")
    if iou_type != "bbox" and any("segmentation" not in d for d in detections):
        raise InstancesError(
            f"--iou-type {iou_type}: every detection needs a segmentation (or score boxes with --iou-type bbox)"
        )
    areas, lvis = area_bounds(area_ranges), method == lvis_federated.LVIS
    fresh = truth | {"annotations": [dict(a) for a in truth["annotations"]]}  # the engine marks them
    chosen = lvis_federated.capped(detections, max_dets[-1]) if lvis else detections
    part = Engine(iou_type, max(max_dets), areas, dilation_ratio, lvis).evaluate(fresh, [dict(d) for d in chosen])
    categories = {c["id"]: c["name"] for c in sorted(truth["categories"], key=lambda c: c["id"])}
    counts = {
        "images": len(truth["images"]),
        "ground_truth": len(truth["annotations"]),
        "crowd": sum(a["iscrowd"] for a in truth["annotations"]),
        "detections": len(detections),
    }
    groups = lvis_federated.frequency_groups(truth["categories"]) if lvis else None
    return report([part], categories, iou_type, max_dets, area_ranges, counts, groups)
