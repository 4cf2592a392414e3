"""``instances``: a COCO results JSON of instance masks or boxes.

Instance masks or boxes scored as COCO's evaluation scores them (``regionbench.scoring.measures.average_precision``)
against one annotator's regions, every annotator's, and the human ceiling.

Predictions: a COCO results JSON, a list of ``{image_id, category_id | label, segmentation | bbox,
score}``; a detection's category is one of the truth's, by its id in the source file or by name (the
release's label or the source's own).

Measures: COCO's 12 figures over masks, boxes or mask boundaries (Boundary AP; AP, AP50, AP75, AP
small/medium/large, AR1/10/100, AR small/medium/large), per-category AP and the categories without
instances among the scored images.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.release.loader import Release
from regionbench.scoring import results
from regionbench.scoring.measures import average_precision as measures
from regionbench.scoring.measures import bootstrap, lvis_federated, resampled_ap
from regionbench.scoring.measures import tide_errors as tide_measures
from regionbench.scoring.runner import Shelf, Spilled, no_collection, stream
from regionbench.scoring.scope import Scope
from regionbench.scoring.tasks import _coco_truth as coco_truth
from regionbench.scoring.tasks import _masks as masks
from regionbench.scoring.tasks._base import (
    Method,
    Resampled,
    Run,
    Shape,
    TaskError,
    option,
    positive_int,
    unit_interval,
)


def area_range(text: str) -> tuple[str, float, float]:
    """``small=0:1024`` -> (small, 0, 1024): a COCO area range, bounds in pixels (``inf`` allowed)."""
    name, _, bounds = text.partition("=")
    low, _, high = bounds.partition(":")
    try:
        lo, hi = float(low), float(high)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=LO:HIGH (small=0:1024)") from None
    if name not in ("small", "medium", "large") or not 0 <= lo < hi:
        raise argparse.ArgumentTypeError(f"{text!r}: name small, medium or large, and 0 <= LOW < HIGH")
    return name, lo, min(hi, 1e10)


@dataclass(frozen=True)
class Settings(masks.MaskSettings, Resampled):
    """The instance task's settings, and the bootstrap's resamples."""

    iou_type: str = option(
        "segm",
        "--iou-type",
        "masks (segm), boxes (bbox), or mask boundaries (boundary: Boundary IoU)",
        choices=list(measures.IOU_TYPES),
    )
    dilation_ratio: float = option(
        measures.DILATION_RATIO, "--dilation-ratio",
        "--iou-type boundary: the band's width, a share of the image diagonal (0.02, as boundary-iou-api)",
        type=unit_interval, metavar="RATIO",
    )  # fmt: skip
    method: str = option(
        "coco", "--method", "how detections are counted", aliases=("--protocol",),
        choices=list(measures.METHODS),
    )  # fmt: skip
    max_dets: int | None = option(
        None, "--max-dets", "detections an image (COCO: 100 of each category; LVIS: 300 over all)",
        type=positive_int, metavar="N",
    )  # fmt: skip
    tide: bool = option(
        False, "--tide", "TIDE's error types at IoU 0.5 (Cls, Loc, Both, Dupe, Bkg, Miss): each type's dAP and the "
        "run's counts (view names every detection's type, with or without it)", action="store_true",
    )  # fmt: skip
    strict: bool = option(
        False, "--strict", "refuse a detection whose category_id names a category the truth lacks (without it, "
        "such detections are left out and counted, as COCOeval leaves them out)", action="store_true",
    )  # fmt: skip
    area_ranges: tuple[tuple[str, float, float], ...] = option(
        (), "--area-range", "an area range in pixels, small, medium or large (COCO: small=0:1024, medium=1024:9216)",
        type=area_range, action="append", metavar="NAME=LO:HI",
    )  # fmt: skip

    methods = (
        Method(
            measures.METHODS[0], "COCO's evaluation (pycocotools' COCOeval): 100 detections of each category an image"
        ),
        Method(
            lvis_federated.LVIS,
            "LVIS's federated evaluation: an image's neg_category_ids and not_exhaustive_category_ids decide what a "
            "detection counts as; 300 detections an image; APr/APc/APf",
        ),
    )

    def resolve(self, data: Release) -> Settings:
        """The reference annotator named where none is given; a band width without Boundary IoU
        is refused (it would change nothing)."""
        if self.method not in measures.METHODS:
            raise TaskError(f"--method {self.method}: the instances task's are {' and '.join(measures.METHODS)}")
        if self.iou_type != "boundary" and self.dilation_ratio != measures.DILATION_RATIO:
            raise TaskError(f"--dilation-ratio is a setting of --iou-type boundary, not of --iou-type {self.iou_type}")
        if self.iou_type == "boundary" and not self.dilation_ratio > 0:
            raise TaskError("--dilation-ratio 0: the band needs a width; use the default 0.02 or more")
        if self.lvis and self.tide:
            raise TaskError(
                "--tide follows COCO's evaluation (TIDE has no federated rules): drop --tide or --method lvis"
            )
        most = self.max_dets or (lvis_federated.LVIS_MAX_DETS if self.lvis else 100)
        resolved = dataclasses.replace(self, max_dets=most)
        return (
            resolved
            if self.annotator or self.all_annotators
            else dataclasses.replace(resolved, annotator=masks.reference(data))
        )

    @property
    def lvis(self) -> bool:
        return self.method == lvis_federated.LVIS

    @property
    def most(self) -> int:
        """Detections an image (``resolve`` has set them)."""
        return int(self.max_dets or 100)

    def max_dets_read(self) -> tuple[int, ...]:
        """The detection counts the figures read: COCO's 1, 10 and ``most``; LVIS's one."""
        return (self.most,) if self.lvis else (1, 10, self.most)

    def kept(self, detections: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The detections of a range the method scores: under LVIS each image's ``most`` best."""
        return lvis_federated.capped(detections, self.most) if self.lvis else detections

    def ranges(self) -> dict[str, tuple[float, float]]:
        """The area ranges given, by name (``measures.merged_area_ranges`` adds COCO's)."""
        return {name: (low, high) for name, low, high in self.area_ranges}

    def errors(self, r: int, document: dict[str, Any], detections: list[dict[str, Any]]) -> tide_measures.Part:
        """TIDE's part of range ``r`` (``client.tide.collect``): its truth instances and detections
        named (r, their index in the range), masks compared as masks (boxes under bbox)."""
        shape = "bbox" if self.iou_type == "bbox" else "segmentation"
        truth: dict[int, list[dict[str, Any]]] = {}
        for k, a in enumerate(document["annotations"]):
            truth.setdefault(a["image_id"], []).append(a | {"id": (r, k)})
        found: dict[int, list[dict[str, Any]]] = {}
        for n, d in enumerate(detections):
            found.setdefault(d["image_id"], []).append(d | {"id": (r, n)})
        images = sorted(e["id"] for e in document["images"])
        return tide_measures.collect(images, truth, found, shape, self.most)

    def evaluate(
        self, document: dict[str, Any], detections: list[dict[str, Any]], outcomes: bool = False
    ) -> measures.Evaluated:
        """``measures.Engine.evaluate`` of a range under these settings: the engine keeps the most
        detections any figure reads (10 for AR10, or more)."""
        most = self.most if self.lvis else max(10, self.most)
        engine = measures.Engine(
            self.iou_type, most, measures.area_bounds(self.ranges()), self.dilation_ratio, self.lvis
        )
        return engine.evaluate(document, detections, outcomes)


scope_of = masks.scope_of  # the images of the split
default_split = masks.default_split  # the source's evaluation split, where the release has one

RANGE = 250  # images evaluated at a time: the engine's memory is that of a range (~25,000 detections)
TRUTH_COLUMNS = [
    "image_id", "annotator", "region_id", "label_id", "label", "category_id", "iscrowd", "mask", "area_px",
    "bbox_x", "bbox_y", "bbox_w", "bbox_h", "source_area", "source_bbox_x", "source_bbox_y", "source_bbox_w",
    "source_bbox_h",
]  # fmt: skip


def read(predictions: Path, data: Release, settings: Settings) -> results.ResultsItems:
    """The results file, opened once and its start checked (``results.ResultsItems``): its
    detections are streamed and checked against each truth when scored (``hold``), the file read
    once whatever the number of truths."""
    return results.ResultsItems(predictions, passes=len(settings.truths(data)))


def named_categories(data: Release) -> pd.DataFrame | None:
    """The release's ``source_categories`` (none in a release made before the table)."""
    return data.table("source_categories") if "source_categories" in data.manifest["tables"] else None


@dataclass(frozen=True)
class Truth:
    """One annotator's truth over the scored images, as COCO states it, read a range of images at
    a time: ``header`` (its ``images`` in its own ids, sorted, and ``categories``), ``names``
    (what a detection's ``label`` may say: ``coco_truth.category_names``), ``release_id`` (the
    truth's image id -> the release's) and ``ranges`` (the truth's image ids, ``RANGE`` at a
    time); ``numbering`` and ``coverage`` as ``coco_truth.ground_truth`` takes them."""

    data: Release
    who: str
    images: pd.DataFrame
    header: dict[str, Any]
    names: dict[str, int]
    numbering: dict[int, int]
    coverage: pd.DataFrame
    ranges: list[list[int]]
    federated: dict[int, dict[str, list[int]]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, data: Release, images: pd.DataFrame, who: str, size: int | None = None, lvis: bool = False) -> Truth:
        """``who``'s truth over ``images`` (rows of the images table), ``size`` images a range
        (``RANGE``); ``lvis``: with LVIS's facts (``lvis_facts``)."""
        size = size or RANGE
        named = named_categories(data)
        labels = (  # the distinct (annotator, category, label) of the regions: what names the categories
            data.arrow("regions", ["annotator", "category_id", "label"])
            .group_by(["annotator", "category_id", "label"], use_threads=False)
            .aggregate([])
            .sort_by([("annotator", "ascending"), ("category_id", "ascending"), ("label", "ascending")])
            .to_pandas()
        )
        categories = coco_truth.truth_categories(labels, data.vocabulary, who, named)
        coverage = data.table("coverage")
        numbering = coco_truth.numbering(coverage, who)
        header = {
            "images": coco_truth.truth_images(images, numbering),
            "categories": [{"id": c, "name": n} for c, n in categories.items()],
        }
        federated: dict[int, dict[str, list[int]]] = {}
        if lvis:
            header["categories"], federated = lvis_facts(coverage, named, who, categories, numbering)
        ids = [e["id"] for e in header["images"]]
        split_of = {
            numbering.get(int(i), int(i)): sp for i, sp in zip(images["image_id"], images["split"], strict=True)
        }
        return cls(
            data, who, images, header, coco_truth.category_names(categories, named, who), numbering, coverage,
            ranges_within_splits(ids, split_of, size), federated,
        )  # fmt: skip

    def split_of_range(self, r: int) -> str | None:
        """The source split (``images.split``) of range ``r``'s images: a range never crosses one."""
        first = self.release_id.get(self.ranges[r][0], self.ranges[r][0])
        found = self.images.loc[self.images["image_id"] == first, "split"]
        return None if found.empty or pd.isna(found.iloc[0]) else str(found.iloc[0])

    @functools.cached_property
    def release_id(self) -> dict[int, int]:
        """The truth's image id -> the release's."""
        return {v: k for k, v in self.numbering.items()}

    def range_of(self) -> dict[int, int]:
        """The truth's image id -> its range."""
        return {i: r for r, ids in enumerate(self.ranges) for i in ids}

    def document(self, r: int) -> dict[str, Any]:
        """Range ``r`` as a COCO instances document (a fresh one: the engine marks it)."""
        ids = [self.release_id.get(i, i) for i in self.ranges[r]]
        regions = self.data.image_regions(ids, self.who, TRUTH_COLUMNS)
        images = self.images[self.images["image_id"].isin(ids)]
        categories = {c["id"]: c["name"] for c in self.header["categories"]}
        document = coco_truth.ground_truth(regions, images, self.coverage, self.who, categories, self.numbering)
        if self.federated:  # LVIS: what the file verified of each image
            document["images"] = [e | self.federated.get(e["id"], NOTHING_VERIFIED) for e in document["images"]]
        return document | {"categories": self.header["categories"]}  # every range the run's categories

    def positions(self) -> dict[int, int]:
        """The truth's image id -> where the annotator's own files list the image
        (``coverage.source_position``): the order a tool walking that file meets the images in.
        Empty where a scored image has none (a layout without such files, a release made before
        the column): the images are then in id order, as ``export coco`` writes them."""
        if "source_position" not in self.coverage.columns:
            return {}
        own = self.coverage[self.coverage["annotator"] == self.who]
        given = {
            self.numbering.get(int(i), int(i)): int(n)
            for i, n in zip(own["image_id"], own["source_position"], strict=True)
            if not pd.isna(n)
        }
        scored = [e["id"] for e in self.header["images"]]
        return {i: given[i] for i in scored} if all(i in given for i in scored) else {}

    def others(self) -> set[int]:
        """The images of the release the truth leaves out, in the truth's ids."""
        chosen = set(self.images["image_id"].astype(int))
        return {self.numbering.get(i, i) for i in self.data.images["image_id"].astype(int) if i not in chosen}


def ranges_within_splits(ids: list[int], split_of: dict[int, Any], size: int) -> list[list[int]]:
    """``ids`` (in order) cut into ranges of at most ``size`` that never cross a source split, so
    that a split's figures accumulate from its own ranges (``per_source_split``); the order of
    the images, which ties between scores follow, is kept."""
    out: list[list[int]] = []
    for _, run in itertools.groupby(ids, key=lambda i: split_of.get(i)):
        chunk = list(run)
        out += [chunk[k : k + size] for k in range(0, len(chunk), size)]
    return out


NOTHING_VERIFIED: dict[str, list[int]] = {"neg_category_ids": [], "not_exhaustive_category_ids": []}


def lvis_facts(
    coverage: pd.DataFrame, named: pd.DataFrame | None, who: str, categories: dict[int, str], numbering: dict[int, int]
) -> tuple[list[dict[str, Any]], dict[int, dict[str, list[int]]]]:
    """What LVIS's evaluation needs of ``who``'s file: the truth's ``categories`` (id -> name) each
    with its ``frequency`` (``source_categories``), and each image's federated lists
    (``coverage``), by the truth's image id. A file without them is refused in one line."""
    own = coverage[coverage["annotator"] == who] if "neg_category_ids" in coverage.columns else coverage.iloc[:0]
    given = [isinstance(v, list | np.ndarray) for v in own.get("neg_category_ids", [])]
    if not any(given):
        raise TaskError(
            f"--method lvis: annotator {who}'s file lists no image's neg_category_ids (LVIS's federated lists); "
            "score it with --method coco, or build the release from its LVIS file"
        )
    lists = {}
    for image_id, negative, partial in zip(
        own["image_id"], own["neg_category_ids"], own["not_exhaustive_category_ids"], strict=True
    ):
        lists[numbering.get(int(image_id), int(image_id))] = {
            "neg_category_ids": [int(c) for c in negative] if isinstance(negative, list | np.ndarray) else [],
            "not_exhaustive_category_ids": [int(c) for c in partial] if isinstance(partial, list | np.ndarray) else [],
        }
    frequency: dict[int, str] = {}
    if named is not None and "frequency" in named.columns:
        mine = named[named["annotator"] == who]
        frequency = {int(c): str(f) for c, f in zip(mine["category_id"], mine["frequency"], strict=True) if f}
    if missing := [n for c, n in categories.items() if c not in frequency]:
        raise TaskError(
            f"--method lvis: {len(missing)} of annotator {who}'s categories have no frequency (r, c or f), e.g. "
            f"{missing[0]!r}: LVIS's evaluation groups every category by it (its file's categories give it)"
        )
    return [{"id": c, "name": n, "frequency": frequency[c]} for c, n in categories.items()], lists


class Held(Shelf[tuple[Any, ...]]):
    """A run's detections as read from its results file, by range of the truth, on the runner's
    ``Shelf`` (memory bounded, however the file orders them). Each detection is kept as (image,
    category, score, area, RLE counts, box, its place in the file)."""

    def __init__(self, truth: Truth) -> None:
        super().__init__("regionbench-detections-")
        self.truth = truth
        self.absent: dict[int, int] = {}  # detections left out, by the category id the truth lacks
        self.sizes = {e["id"]: [e["height"], e["width"]] for e in truth.header["images"]}  # an RLE's size

    def add(self, r: int, d: dict[str, Any], n: int = -1) -> None:
        """Detection ``d`` (checked) of range ``r``, the ``n``-th of the file."""
        rle = d.get("segmentation")
        self.put(r, (d["image_id"], d["category_id"], d["score"], d["area"], rle["counts"] if rle else None,
                     d.get("bbox"), n))  # fmt: skip

    def detections(self, r: int) -> list[dict[str, Any]]:
        """Range ``r``'s detections as the engine takes them."""
        out = []
        for image, category, score, area, counts, box, _ in self.items(r):
            d = {"image_id": image, "category_id": category, "score": score, "area": area}
            if counts is not None:
                d["segmentation"] = {"size": self.sizes[image], "counts": counts}
            if box is not None:
                d["bbox"] = box
            out.append(d)
        return out


def hold(
    run: Run[Settings], truth: Truth, settings: Settings, scoped: Scope, detections: Iterable[Any] | None = None
) -> Held:
    """The run's detections (``read``'s items, one pass of them), or ``detections`` (a human's
    regions, for the ceiling), checked against ``truth`` (``results.Checker``) and held by range. Detections
    outside the scored images (``scoped``) are refused in one line (``Scope.refuse``), as is a
    results file that cannot be scored."""
    checker = results.Checker(
        truth.header, truth.names, truth.others(), boxes=settings.iou_type == "bbox", strict=settings.strict,
        keep_absent=settings.tide,
    )  # fmt: skip
    range_of = truth.range_of()
    held = Held(truth)
    try:
        with no_collection():  # a million small objects, no cycle among them
            items = run.given if detections is None else detections
            for n, d in checker.checked(run.predictions, items):
                if settings.iou_type != "bbox" and "segmentation" not in d:
                    raise measures.InstancesError(
                        f"{run.predictions}: detection {n}: --iou-type {settings.iou_type}: every detection needs a "
                        "segmentation (or score boxes with --iou-type bbox)"
                    )
                held.add(range_of[d["image_id"]], d, n)
        held.absent = dict(sorted(checker.absent.items()))
    except measures.OutsideImages as exc:
        held.__exit__()
        raise scoped.refuse(run.predictions, exc.detections, exc.what) from None
    except BaseException:
        held.__exit__()
        raise
    return held


@dataclass
class Ranges:
    """COCOeval of a run against one truth as the runner streams it (``runner.Measure``): a
    batch is a range of the truth's images, evaluated by the engine with its truth read in the
    worker (the parent reads no truth: its memory stays that of the held detections); the
    ranges' evaluations are spilled (``Spilled``) and accumulated at the end (``measures.
    report``), with each image's F1 at IoU 0.5 and, with ``--tide``, TIDE's errors."""

    held: Held
    settings: Settings
    categories: dict[int, str]
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    scored: list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=list)  # ids, F1 per range
    errors: tide_measures.Part = dataclasses.field(default_factory=tide_measures.Part)

    def __post_init__(self) -> None:
        self.counts = {"images": len(self.held.truth.header["images"]), "ground_truth": 0, "crowd": 0}
        self.resampling = bool(self.settings.resamples)
        self.parts = Spilled(self.held.folder, len(self.categories), len(measures.area_bounds(self.settings.ranges())))

    def process(self, r: int) -> tuple[dict[str, int], measures.Evaluated, tide_measures.Part | None]:
        """Range ``r`` evaluated: its truth's counts, the engine's evaluation, TIDE's part."""
        settings, held = self.settings, self.held
        document = held.truth.document(r)
        annotations = document["annotations"]
        counts = {"ground_truth": len(annotations), "crowd": sum(a["iscrowd"] for a in annotations)}
        with no_collection():
            detections = settings.kept(held.detections(r))
            errors = settings.errors(r, document, detections) if settings.tide else None
            found = settings.evaluate(document, of_the_truth(detections, document, settings))
        if settings.iou_type == "boundary":  # after the engine: its bands of the truth serve again
            counts["band_covers_mask"] = measures.band_covers_mask(annotations, settings.dilation_ratio)
        return counts, found, errors

    def add(self, part: tuple[dict[str, int], measures.Evaluated, tide_measures.Part | None]) -> None:
        found, evaluated, errors = part
        for key, value in found.items():
            self.counts[key] = self.counts.get(key, 0) + value
        if errors is not None:
            self.errors.add(errors)
        f1 = measures.per_image_f1(evaluated.per_image)
        self.scored.append((np.fromiter(f1, dtype=np.int64, count=len(f1)), np.fromiter(f1.values(), float, len(f1))))
        self.parts.add(evaluated)

    def compute(self) -> dict[str, Any]:
        """The figures (``measures.report``), per source split, TIDE's, the detections left out."""
        settings, truth = self.settings, self.held.truth
        # Of the truth's categories: the held detections, less those of categories the truth lacks
        # where they were held too (TIDE counts them; otherwise the checker left them out already).
        absent = sum(self.held.absent.values()) if settings.tide else 0
        self.counts["detections"] = self.held.count - absent
        groups = lvis_federated.frequency_groups(truth.header["categories"]) if settings.lvis else None
        figures = measures.report(
            self.parts, self.categories, settings.iou_type, settings.max_dets_read(), settings.ranges(), self.counts,
            groups,
        )  # fmt: skip
        figures["per_source_split"] = per_source_split(truth, self.parts, len(self.categories), settings, groups)
        if settings.tide:  # TIDE's AP50 is its own (client.tide); COCOeval's beside it, in TIDE's percent
            coco = figures["stats"]["AP50"]  # -1: no instance to score
            tide = tide_measures.summarize(self.errors, truth.positions())  # ties as in the truth's own file
            figures["tide"] = tide | {"coco_ap50": 100 * coco if coco >= 0 else None}
        figures["detections_left_out"] = {str(c): n for c, n in self.held.absent.items()}  # by the lacking id
        if self.resampling:  # over the truth's images by their ids, what a COCO results file names them by;
            # against every annotator, by the release's, so that each truth's resamples draw the same images
            order, keys = None, [e["id"] for e in truth.header["images"]]
            if settings.all_annotators:
                keys = [truth.release_id.get(i, i) for i in keys]
                order = np.argsort(keys, kind="stable")
                keys = sorted(keys)
            values = resampled_ap.resampled(
                self.parts, len(self.categories), settings.most, settings.resamples, settings.seed, groups, order
            )
            figures |= bootstrap.report(values, [str(k) for k in keys], settings.resamples, settings.seed)
        return figures


def of_the_truth(
    detections: list[dict[str, Any]], document: dict[str, Any], settings: Settings
) -> list[dict[str, Any]]:
    """The detections of the truth's categories: with ``--tide`` the range holds those of others
    too (TIDE counts them, as tidecv does), which COCOeval leaves out; without it, every one is
    (the reading left the others out), so nothing is copied."""
    if not settings.tide:
        return detections
    known = {c["id"] for c in document["categories"]}
    return [d for d in detections if d["category_id"] in known]


def scored_against(run: Run[Settings], scored: masks.ScoredSide, who: str) -> tuple[dict[str, Any], dict[int, float]]:
    """The run scored against ``who``'s regions of the scored images (``ranged``): the figures and
    each image's F1 at IoU 0.5, by release id."""
    truth = Truth.of(run.data, scored.images, who, lvis=run.settings.lvis)
    figures, measure = ranged(run, truth, run.settings, scored.scope)
    release_id = truth.release_id
    per_image = {
        release_id.get(int(i), int(i)): float(f)
        for ids, values in measure.scored
        for i, f in zip(ids, values, strict=True)
    }
    return figures, per_image


def ranged(
    run: Run[Settings], truth: Truth, settings: Settings, scoped: Scope, detections: Iterable[Any] | None = None
) -> tuple[dict[str, Any], Ranges]:
    """The run's detections (or ``detections``: ``hold``) scored against ``truth`` a range of
    images at a time (``Ranges``, streamed by the runner): the figures, and the measure."""
    categories = {c["id"]: c["name"] for c in truth.header["categories"]}
    with hold(run, truth, settings, scoped, detections) as held:
        measure = Ranges(held, settings, categories)
        try:
            figures = stream(measure, range(len(truth.ranges)), run.cores, forked=True)
        except measures.InstancesError as exc:  # a detection the engine could not read, named with the file
            raise measures.InstancesError(f"{run.predictions}: {exc}") from None
    return figures, measure


def per_source_split(
    truth: Truth, parts: Spilled, categories: int, settings: Settings, groups: list[list[int]] | None
) -> dict[str, dict[str, Any]]:
    """The figures of each source split (``images.split``: COCO's val2017, a folder's train)
    among the scored images, from the ranges already evaluated (none cross a split): nothing is
    evaluated again. Empty where the scored images are of one split or none."""
    by_split: dict[str, list[int]] = {}
    for r in range(len(truth.ranges)):
        if (split := truth.split_of_range(r)) is not None:
            by_split.setdefault(split, []).append(r)
    if len(by_split) < 2:
        return {}
    out = {}
    areas = len(measures.area_bounds(settings.ranges()))
    for split, chosen in sorted(by_split.items()):
        precision, recall = measures.accumulate(parts.only(chosen), categories, areas, settings.max_dets_read())
        stats = (
            measures.summary(precision, recall, settings.max_dets_read())
            if groups is None
            else lvis_federated.lvis_summary(precision, recall, groups, settings.most)
        )
        out[split] = {"images": sum(len(truth.ranges[r]) for r in chosen)} | stats
    return out


def score(run: Run[Settings]) -> dict[str, Any]:
    """COCOeval of the run against each truth (``masks.MaskSettings.truths``), per image F1 at IoU
    0.5 against the first, and the human ceiling."""
    data, settings = run.data, run.settings
    scored = masks.ScoredSide.of(data, settings)
    truths = scored.truths
    against, per_image = {}, {}
    for who in truths:
        against[who], f1 = scored_against(run, scored, who)
        if who == truths[0]:  # per image, against the first truth, by the release's ids
            per_image = f1
    first = against[truths[0]]
    report: dict[str, Any] = {"truth": truths if settings.all_annotators else truths[0]}
    if settings.all_annotators:
        report["per_annotator"] = {a: r["stats"] for a, r in against.items()}
        if settings.tide:  # why the run fails, against each human
            report["per_annotator_tide"] = {a: r["tide"] for a, r in against.items()}
        report["spread"] = masks.spread(list(report["per_annotator"].values()), list(first["stats"]))
    report |= {k: v for k, v in first.items() if k not in WHOLE}  # TIDE's errors among them, against the first truth
    if settings.all_annotators:  # the headline: the mean over the annotators, each's resamples averaged
        report["measures"] = {k: v["mean"] for k, v in report["spread"].items()}
        if settings.resamples:
            report |= mean_resampled([against[who] for who in truths], scored.images["image_id"], settings)
    else:
        report |= {k: first[k] for k in ("per_category_ap", "categories_absent")} | {"measures": first["stats"]}
        report |= {"ground_truth": first["ground_truth"], "crowd": first["crowd"]}
    report["per_image"] = per_image  # F1 at IoU 0.5 (measures.per_image_f1)
    if "per_category_ap" in report:
        report["per_level_ap"] = level_ap(data, run, str(truths[0]), report["per_category_ap"])
    report["conventions"] = conventions(settings, truths)
    report["human_ceiling"] = instances_ceiling(run, scored)
    report["notes"] = notes(settings, first, report)
    return report


def mean_resampled(figures: list[dict[str, Any]], images: Iterable[int], settings: Settings) -> dict[str, Any]:
    """The bootstrap of a run scored against every annotator: each truth's resampled figures
    (the same ``images`` drawn, by the release's ids) averaged, resample by resample."""
    mean = bootstrap.averaged([f["resampled"]["values"] for f in figures])
    keys = [str(i) for i in sorted(int(k) for k in images)]
    return bootstrap.report(mean, keys, settings.resamples, settings.seed)


# What a report takes of the first truth's figures only where it scores against one truth.
WHOLE = ("stats", "per_category_ap", "categories_absent", "ground_truth", "crowd")


def conventions(settings: Settings, truths: list[str]) -> list[str]:
    """How the run was scored, as its report says it."""
    return [
        f"the truth: {truths[0] if not settings.all_annotators else 'each human'}'s regions, crowd regions as COCO's "
        "ignore regions",
        "an instance's area (the area ranges) is its source's area where the source gives one, else its pixels",
        "a category without an instance among the scored images has no AP and enters no mean",
        f"IoU: {settings.iou_type}"
        + (f", the band {settings.dilation_ratio:g} of the diagonal" if settings.iou_type == "boundary" else ""),
        "per_level_ap: the mean AP of the categories under each node of the release's hierarchy, by depth",
        (
            f"method: LVIS's federated evaluation: each image's {settings.most} best detections over all categories; "
            "a detection of a category the image's file neither annotates nor lists in neg_category_ids is dropped, "
            "an unmatched one of a category in its not_exhaustive_category_ids is ignored; APr/APc/APf: the mean AP "
            "of the rare, common and frequent categories (source_categories.frequency)"
            if settings.lvis
            else f"method: COCO's: each image's {settings.most} best detections of each category"
        ),
    ]


def notes(settings: Settings, first: dict[str, Any], report: dict[str, Any]) -> list[str]:
    """What a reader of the figures should know: Boundary IoU's band, the area ranges, TIDE's AP50
    beside COCOeval's, detections of categories the truth lacks, categories without instances
    (``first``: the figures against the first truth; ``report``: the report so far)."""
    said = []
    if settings.iou_type == "boundary":
        thin = report.get("band_covers_mask", 0)
        said.append(
            f"Boundary IoU, the band {settings.dilation_ratio:g} of each image's diagonal: {thin} of the "
            f"{report.get('ground_truth', 0) - report.get('crowd', 0)} truth instances lie wholly within their band "
            "(thin or small objects), for them boundary IoU is mask IoU"
        )
    if settings.area_ranges:
        given = {name for name, _, _ in settings.area_ranges}
        origin = {name: "given" if name in given else "COCO's" for name in first["area_ranges"]}
        ranges = [f"{name} {low:g}:{high:g} ({origin[name]})" for name, (low, high) in first["area_ranges"].items()]
        said.append("area ranges in pixels: " + ", ".join(ranges))
    if (tide := first.get("tide")) and tide["coco_ap50"] is not None and abs(tide["ap"] - tide["coco_ap50"]) > 1e-6:
        said.append(
            f"TIDE's AP50 {tide['ap']:.2f} is TIDE's own, as tidecv computes it (a class with detections and no "
            "instance counts as AP 0; tied scores fall in the truth's image order); COCOeval's AP50 is "
            f"{tide['coco_ap50']:.2f} (tide.coco_ap50)"
        )
    if left_out := first["detections_left_out"]:
        shown = masks.few([f"{c} ({n})" for c, n in left_out.items()])
        said.append(
            f"{sum(left_out.values())} detections of {len(left_out)} categories the truth lacks are left out, as COCOeval "
            f"leaves them out (detections_left_out in the report; --strict refuses them): category_id {shown}"
        )
    if absent := first["categories_absent"]:
        said.append(
            f"{len(absent)} of the truth's categories have no instance among the scored images (no AP, in no "
            f"mean; categories_absent in the report): {masks.few(absent)}"
        )
    return said


def level_ap(
    data: Release, run: Run[Settings], who: str, per_category: Mapping[int, Mapping[str, Any]]
) -> dict[str, dict[str, float]]:
    """Per depth of the hierarchy above the deepest label's, the mean of the per-category APs of the
    categories under each node (a category by its label: the source's names mapped through
    ``source_categories``; categories of one name each count), from the figures already
    accumulated: no second evaluation."""
    from regionbench.scoring.measures.confusion import at_level

    named = named_categories(data)
    label_of = {}
    if named is not None:
        mine = named[named["annotator"] == who] if (named["annotator"] == who).any() else named
        label_of = {
            str(n): str(label) for n, label in zip(mine["name"], mine["label"], strict=True) if label is not None
        }
    scored = [(label_of.get(c["name"], c["name"]), c["ap"]) for c in per_category.values() if c["ap"] is not None]
    tree = run.tree
    deepest = max((tree.depth(label) for label, _ in scored if label in tree.nodes), default=0)
    out: dict[str, dict[str, float]] = {}
    for depth in range(1, deepest):
        groups: dict[str, list[float]] = {}
        for (_, ap), node in zip(scored, at_level(tree, [label for label, _ in scored], depth), strict=True):
            groups.setdefault(node, []).append(ap)
        out[str(depth)] = {node: float(np.mean(values)) for node, values in sorted(groups.items())}
    return out


def whole_truth(data: Release, images: pd.DataFrame, who: str, lvis: bool = False) -> tuple[Truth, dict[str, Any]]:
    """``who``'s truth over ``images`` and its COCO document in one piece (``lvis``: with LVIS's
    facts)."""
    truth = Truth.of(data, images, who, lvis=lvis)
    documents = [truth.document(r) for r in range(len(truth.ranges))]
    annotations = [a for d in documents for a in d["annotations"]]
    for k, a in enumerate(annotations, start=1):
        a["id"] = k
    entries = sorted((e for d in documents for e in d["images"]), key=lambda e: e["id"])
    return truth, truth.header | {"images": entries, "annotations": annotations}


def instances_ceiling(run: Run[Settings], scored: masks.ScoredSide) -> dict[str, Any]:
    """Each human's regions as detections (score 1) against each other human's, scored as the run
    is (``ranged``: a range of images at a time, on the runner; COCO's area ranges, no TIDE): the
    mean AP of each, and over them. Under LVIS's only a human whose file gives its federated
    lists is a truth."""
    people, images, data = scored.ceiling_humans, scored.images, run.data
    if not people:
        return {}
    settings = dataclasses.replace(run.settings, tide=False, strict=False, area_ranges=(), resamples=0)
    chosen = [int(i) for i in images["image_id"]]
    truths = {}
    for b in people:
        with contextlib.suppress(TaskError):  # LVIS: a file without the lists judges no one
            truths[b] = Truth.of(data, images, b, lvis=settings.lvis)
    each = {}
    for a in people:
        regions = data.image_regions(chosen, a, TRUTH_COLUMNS)
        runs = []
        for b, truth in truths.items():
            if b != a:
                detections = coco_truth.as_detections(regions, a, truth.header, truth.numbering)
                runs.append(ranged(run, truth, settings, scored.scope, detections)[0]["stats"])
        if runs:
            each[a] = {k: float(np.mean([r[k] for r in runs])) for k in ("AP", "AP50", "AP75")}
    return masks.ceiling(each)


# What became of a detection, as TIDE names it (``client.tide``), or of a truth instance.
OUTCOME_NAMES = {
    "match": "true positive", "Cls": "right place, wrong label", "Loc": "poorly placed",
    "Both": "wrong label, poorly placed", "Dupe": "duplicate", "Bkg": "background",
    "ignored": "on a crowd: not counted", "dropped": "beyond the detections an image", "missed": "missed",
}  # fmt: skip


def shapes(run: Run[Settings], report: dict[str, Any]) -> Iterator[tuple[int, list[Shape]]]:
    """(image id, its shapes) for every scored image, in id order: each detection (its mask or
    box, label, score), the best first (the page draws it on top), then each truth instance no
    detection took (``outcome`` missed, its ``region``).

    A detection's ``counted`` is what the figures count of it at IoU 0.5 (the engine's own
    matches: ``measures.Evaluated.outcomes``); its ``outcome`` is TIDE's type (``client.tide``:
    match, Cls, Loc, Both, Dupe, Bkg; under LVIS's evaluation, which TIDE does not follow, Cls for
    an uncounted detection on another label's instance at IoU >= 0.5); ``iou`` and ``truth`` the
    truth instance it overlaps most, whatever its label (crowds aside)."""
    settings = run.settings
    images = masks.scored_images(run.data, settings.split)
    scoped = masks.mask_scope(run.data, settings.split, images)
    truth = Truth.of(run.data, images, str(settings.annotator), lvis=settings.lvis)
    category = {c["id"]: c["name"] for c in truth.header["categories"]}
    release_id = truth.release_id
    out: dict[int, list[Shape]] = {}
    missed: dict[int, list[Shape]] = {}
    with hold(run, truth, run.settings, scoped) as held:
        for r in range(len(truth.ranges)):
            document = truth.document(r)
            detections = of_the_truth(settings.kept(held.detections(r)), document, settings)  # those scored
            instances = [dict(a) for a in document["annotations"]]  # before the engine marks them
            tide = settings.errors(r, document, detections)
            found = settings.evaluate(document, detections, outcomes=True)
            for n, (counted, _) in sorted(found.outcomes.items()):
                d = detections[n]
                iou, j = tide.nearest.get((r, n), (0.0, None))
                near = instances[j[1]] if j is not None else None
                outcome = tide.outcomes.get((r, n), "dropped")
                if settings.lvis:  # TIDE's types are COCO's; the one that needs no matching of its own
                    on_other = near is not None and near["category_id"] != d["category_id"] and iou >= 0.5
                    outcome = "match" if counted == "matched" else "Cls" if on_other else counted
                facts = {
                    "score": d["score"], "outcome": outcome, "counted": counted, "iou": round(iou, 4),
                    "truth": f"{category.get(near['category_id'])}, region {near['region_id']}" if near else None,
                }  # fmt: skip
                rle, box = d.get("segmentation"), tuple(d["bbox"]) if "segmentation" not in d else None
                out.setdefault(release_id.get(d["image_id"], d["image_id"]), []).append(
                    Shape(category.get(d["category_id"]), rle=rle, box=box, facts=facts)
                )
            taken = set(found.taken.values())
            for a in instances:
                if not a["iscrowd"] and a["id"] not in taken:
                    facts = {"outcome": "missed", "region": a["region_id"]}
                    missed.setdefault(release_id.get(a["image_id"], a["image_id"]), []).append(
                        Shape(category.get(a["category_id"]), rle=a["segmentation"], facts=facts)
                    )
    for image_id in images["image_id"].astype(int):
        drawn = out.get(int(image_id), [])
        drawn.sort(key=lambda s: -s.facts["score"])
        yield int(image_id), drawn + missed.get(int(image_id), [])
