"""``instances``: instance masks or boxes scored with COCO's protocol (``regionbench.client.
instances``) against one annotator's regions, every annotator's, and the human ceiling.

Predictions: a COCO results JSON, a list of ``{image_id, category_id | label, segmentation |
bbox, score}``; a detection's category is one of the truth's, by its id in the source file or
by name (the release's label or the source's own).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.client import instances as measures
from regionbench.client.loader import Release
from regionbench.client.tasks._base import Run, Shape, option, positive_int
from regionbench.client.tasks._masks import MaskSettings, ceiling, humans, mask_scope, reference, scored_images, spread
from regionbench.client.tasks._masks import scope_of as masks_scope_of

NAME = "instances"
SUMMARY = "a COCO results JSON of instance masks or boxes"
PREDICTIONS = "a COCO results JSON: a list of `{image_id, category_id` or `label, segmentation` (RLE or polygons) or `bbox, score}`"
MEASURES = "COCO's 12 figures (AP, AP50, AP75, AP small/medium/large, AR1/10/100, AR small/medium/large), per-category AP and the categories without instances among the scored images"


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
class Settings(MaskSettings):
    """The instance task's settings."""

    iou_type: str = option("segm", "--iou-type", "masks (segm) or boxes (bbox)", choices=["segm", "bbox"])
    max_dets: int = option(
        100, "--max-dets", "detections an image (100; LVIS uses 300)", type=positive_int, metavar="N"
    )
    area_ranges: tuple[tuple[str, float, float], ...] = option(
        (), "--area-range", "an area range in pixels, small, medium or large (COCO: small=0:1024, medium=1024:9216)",
        type=area_range, action="append", metavar="NAME=LO:HI",
    )  # fmt: skip

    def resolve(self, data: Release) -> Settings:
        """The reference annotator named where none is given."""
        return self if self.annotator or self.all_annotators else dataclasses.replace(self, annotator=reference(data))


scope_of = masks_scope_of  # the images of the split


def read(predictions: Path, data: Release, settings: Settings) -> list[Any]:
    """The results file's items (checked against each truth when scored)."""
    return measures.read_items(predictions)


@dataclass(frozen=True)
class InstanceRun:
    """A run's detections against one annotator's regions, as COCO states them: ``truth`` (the
    COCO document, images under the ids the source gave them), ``detections`` (read against
    it), ``category`` (category id -> label) and ``release_id`` (the truth's image id -> the
    release's)."""

    truth: dict[str, Any]
    detections: list[dict[str, Any]]
    category: dict[int, str]
    release_id: dict[int, int]


def named_categories(data: Release) -> pd.DataFrame | None:
    """The release's ``source_categories`` (none in a release made before the table)."""
    return data.table("source_categories") if "source_categories" in data.manifest["tables"] else None


def instance_truth(data: Release, images: pd.DataFrame, who: str) -> tuple[dict[str, Any], dict[str, int]]:
    """``who``'s regions of ``images`` as a COCO instances document, with the names a detection's
    ``label`` may give its category by (``measures.category_names``)."""
    named = named_categories(data)
    categories = measures.truth_categories(data.regions, data.vocabulary, who, named)
    truth = measures.ground_truth(data.regions, images, data.table("coverage"), who, categories)
    return truth, measures.category_names(categories, named, who)


def instance_run(run: Run[Settings], images: pd.DataFrame, who: str) -> InstanceRun:
    """``run``'s detections of ``images`` against ``who``'s regions (``InstanceRun``): a
    detection's category is one of the truth's, by its id in the source or by name."""
    truth, names = instance_truth(run.data, images, who)
    category = {c["id"]: c["name"] for c in truth["categories"]}
    numbering = measures.numbering(run.data.table("coverage"), who)
    release_id = {v: k for k, v in numbering.items()}
    chosen = set(images["image_id"].astype(int))
    others = {numbering.get(i, i) for i in run.data.images["image_id"].astype(int) if i not in chosen}
    try:
        detections = measures.check_results(run.predictions, run.given, truth, names, others)
    except measures.OutsideImages as exc:
        raise mask_scope(run.data, run.settings.split).refuse(run.predictions, exc.detections, exc.what) from None
    return InstanceRun(truth, detections, category, release_id)


def score(run: Run[Settings]) -> dict[str, Any]:
    """COCOeval of the run against each truth (``MaskSettings.truths``), per image F1 at IoU 0.5
    against the first, and the human ceiling."""
    data, settings = run.data, run.settings
    images = scored_images(data, settings.split)
    coverage = data.table("coverage")
    truths = settings.truths(data)
    max_dets = (1, 10, settings.max_dets)
    results = {}
    for who in truths:
        found = instance_run(run, images, who)
        ranges = {name: (low, high) for name, low, high in settings.area_ranges}
        results[who] = measures.score(found.truth, found.detections, settings.iou_type, max_dets, ranges)
        if who == truths[0]:  # per image, against the first truth, by the release's ids
            f1 = measures.per_image_f1(found.truth, found.detections, settings.iou_type, max_dets[-1])
            per_image = {found.release_id.get(i, i): v for i, v in f1.items()}
    report: dict[str, Any] = {"truth": truths if settings.all_annotators else truths[0]}
    if settings.all_annotators:
        report["per_annotator"] = {a: r["stats"] for a, r in results.items()}
        report["spread"] = spread(list(report["per_annotator"].values()), list(next(iter(results.values()))["stats"]))
    first = results[truths[0]]
    report |= {
        k: v
        for k, v in first.items()
        if k not in ("stats", "per_category_ap", "categories_absent", "ground_truth", "crowd")
    }
    if settings.all_annotators:  # the headline: the mean over the annotators
        report["measures"] = {k: v["mean"] for k, v in report["spread"].items()}
    else:
        report |= {k: first[k] for k in ("per_category_ap", "categories_absent")} | {"measures": first["stats"]}
        report |= {"ground_truth": first["ground_truth"], "crowd": first["crowd"]}
    report["per_image"] = per_image  # F1 at IoU 0.5 (measures.per_image_f1)
    report["human_ceiling"] = instances_ceiling(data, images, coverage, run)
    report["notes"] = []
    if settings.area_ranges:
        given = {name for name, _, _ in settings.area_ranges}
        origin = {name: "given" if name in given else "COCO's" for name in first["area_ranges"]}
        said = [f"{name} {low:g}:{high:g} ({origin[name]})" for name, (low, high) in first["area_ranges"].items()]
        report["notes"].append("area ranges in pixels: " + ", ".join(said))
    if absent := first["categories_absent"]:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        report["notes"].append(
            f"{len(absent)} of the truth's categories have no instance among the scored images (no AP, in no "
            f"mean; categories_absent in the report): {shown}"
        )
    return report


def instances_ceiling(
    data: Release, images: pd.DataFrame, coverage: pd.DataFrame, run: Run[Settings]
) -> dict[str, Any]:
    """Each human's regions as detections (score 1) against each other human's, COCO's way: the
    mean AP of each, and over them."""
    people = humans(data)
    if len(people) < 2:
        return {}
    each = {}
    for a in people:
        runs = []
        for b in people:
            if b == a:
                continue
            truth, _ = instance_truth(data, images, b)
            detections = measures.as_detections(data.regions, a, truth, measures.numbering(coverage, b))
            runs.append(
                measures.score(truth, detections, run.settings.iou_type, (1, 10, run.settings.max_dets))["stats"]
            )
        each[a] = {k: float(np.mean([r[k] for r in runs])) for k in ("AP", "AP50", "AP75")}
    return ceiling(each)


def shapes(run: Run[Settings], report: dict[str, Any]) -> Iterator[tuple[int, list[Shape]]]:
    """(image id, its detections) for every scored image, in id order: each detection's mask (or
    box), label and score, and what became of it at IoU 0.5 against the report's truth
    (``measures.matches``), the best first (the page draws it on top)."""
    images = scored_images(run.data, run.settings.split)
    found = instance_run(run, images, str(run.settings.annotator))
    out: dict[int, list[Shape]] = {}
    for m in measures.matches(found.truth, found.detections, run.settings.iou_type, run.settings.max_dets):
        d = found.detections[m.index]
        facts = {"score": d["score"], "iou": round(m.iou, 4), "outcome": m.outcome}
        rle, box = d.get("segmentation"), tuple(d["bbox"]) if "segmentation" not in d else None
        out.setdefault(found.release_id.get(d["image_id"], d["image_id"]), []).append(
            Shape(found.category.get(d["category_id"]), rle=rle, box=box, facts=facts)
        )
    for image_id in images["image_id"].astype(int):
        drawn = out.get(int(image_id), [])
        drawn.sort(key=lambda s: -s.facts["score"])
        yield int(image_id), drawn
