"""``segments``: segmentations as label-map PNGs (a folder per scale) or BSDS .mat files.

Machine segmentations scored with the BSDS500 region benchmark (``regionbench.scoring.measures.bsds_regions``)
against every human who covered each image, beside the humans' own ceiling.

Predictions: a folder of label-map PNGs (8- or 16-bit, one channel, named by image id or file stem;
labels name segments, from 0 or 1 alike), a folder per scale of a hierarchy (sorted naturally), or
BSDS's own ``.mat`` files: a cell ``segs``, or a ``ucm2`` cut at ``--thresholds N``.

Measures: the BSDS500 region benchmark: covering ODS (and its threshold), OIS, best; PRI ODS/OIS; VI
ODS/OIS in bits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.core import errors, geometry
from regionbench.release.loader import Release
from regionbench.scoring import results
from regionbench.scoring.measures import bsds_regions as measures
from regionbench.scoring.runner import batches, gather, image_batches, stream
from regionbench.scoring.tasks import _masks as masks
from regionbench.scoring.tasks._base import Resampled, Run, Shape, TaskError, option


@dataclass(frozen=True)
class Settings(masks.BenchmarkSettings, Resampled):
    """The segments task's settings: the truth is every human but ``exclude`` (or ``annotator``);
    the bootstrap's resamples."""

    zero_is_unlabelled: bool = option(
        False, "--zero-is-unlabelled", "label 0 of a prediction is no region for covering, as BSDS's code reads it "
        "(default: a segment like any other, so 0- and 1-based maps of one partition score the same)",
        action="store_true",
    )  # fmt: skip


scope_of = masks.scope_of  # the images of the split
default_split = masks.default_split  # the source's evaluation split, where the release has one


def read(predictions: Path, data: Release, settings: Settings) -> tuple[list[float], dict[int, list[np.ndarray]]]:
    """The thresholds and each scored image's segmentations (``read_segmentations``)."""
    images = masks.scored_images(data, settings.split)
    masks.refuse_files_outside(data, predictions, images, settings.split)
    levels, found = read_segmentations(predictions, images, settings.thresholds)
    settings.refuse_missing(predictions, images, set(found))
    return levels, found


def segment_maps(data: Release, annotator: str, images: pd.DataFrame) -> dict[int, np.ndarray]:
    """``annotator``'s segmentation of each image: region k (in region order) numbered k, and the
    pixels no region covers one more segment, as the release's agreement reads a region set
    (a human segmentation that covers the image, as BSDS's do, has no such rest)."""
    ids = [int(i) for i in images["image_id"]]
    columns = ["image_id", "annotator", "region_id", "mask"]
    regions = data.image_regions(ids, annotator, columns)
    mine = regions[regions["mask"].notna()].sort_values(["image_id", "region_id"])
    shapes = masks.image_sizes(images)
    out: dict[int, np.ndarray] = {}
    drawn: dict[int, int] = {}
    for image_id, rle in zip(mine["image_id"].astype(int), mine["mask"], strict=True):
        if image_id in shapes:
            drawn[image_id] = drawn.get(image_id, 0) + 1
            label = out.setdefault(image_id, np.zeros(shapes[image_id], dtype=np.int32))
            label[geometry.from_rle(rle)] = drawn[image_id]
    for image_id, label in out.items():
        label[label == 0] = drawn[image_id] + 1  # the unlabelled rest: one segment
    return out


def read_segmentations(
    folder: Path, images: pd.DataFrame, thresholds: int | None
) -> tuple[list[float], dict[int, list[np.ndarray]]]:
    """Each image's machine segmentations, one per threshold, from ``folder``: ``<key>.png``
    (one), ``<scale>/<key>.png`` (one per subfolder, sorted naturally), or BSDS's own
    ``<key>.mat`` holding a cell ``segs`` or a ``ucm2`` (cut at ``segments.thresholds``; it needs
    ``thresholds``). ``key`` is the image id or its file's stem. Returns the thresholds and the
    segmentations by image id; an image without any is absent."""
    if problem := (None if folder.is_dir() else errors.file_problem(folder, "a folder of segmentations")):
        raise TaskError(f"{folder}: {problem if folder.exists() else 'no such folder'}; give the folder of predictions")
    keys = masks.file_keys(images)
    shapes = masks.image_sizes(images)
    scales, layered = masks.scale_files(folder, keys)
    found: dict[int, list[np.ndarray]] = {}
    if scales:
        for image_id, paths in layered.items():
            found[image_id] = [results.read_label_map(path, shapes[image_id], dtype=None) for path in paths]
        return [float(k) for k in range(1, scales + 1)], found
    levels = []
    for path in sorted(folder.iterdir(), key=lambda p: masks.natural_order(p.name)):
        if path.stem not in keys:
            continue
        image_id = keys[path.stem]
        if path.suffix.lower() == ".png":
            found[image_id], levels = [results.read_label_map(path, shapes[image_id], dtype=None)], [1.0]
        elif path.suffix.lower() == ".mat":
            found[image_id], levels = _read_mat(path, shapes[image_id], thresholds, levels)
    return levels, found


def _read_mat(
    path: Path, shape: tuple[int, int], thresholds: int | None, levels: list[float]
) -> tuple[list[np.ndarray], list[float]]:
    ucm2, segs = results.bsds_mat(path, shape)
    if ucm2 is not None:
        if thresholds is None:
            raise TaskError(f"{path}: a ucm2 needs --thresholds N (the benchmark cuts it at N levels)")
        cuts = measures.thresholds(thresholds)
        return [measures.cut_ucm(ucm2, t) for t in cuts], [float(t) for t in cuts]
    return segs, [float(k) for k in range(1, len(segs) + 1)]


@dataclass
class Scored:
    """What a batch adds to a region run: the ids of its images some chosen human drew, each one's
    scores against those humans (``measures.score_image``), against each alone
    (``all_annotators``), and the humans' ceiling pairs (human -> (image, their scores against
    another human))."""

    ids: list[int] = dataclasses.field(default_factory=list)
    scored: list[measures.ImageScores] = dataclasses.field(default_factory=list)
    each: dict[str, list[measures.ImageScores]] = dataclasses.field(default_factory=dict)
    pairs: dict[str, list[tuple[int, measures.ImageScores]]] = dataclasses.field(default_factory=dict)


@dataclass
class Regions(masks.AgainstHumans):
    """The region measure the runner streams (``runner.Measure``): each image's machine
    segmentations against the humans who covered it, the humans against each other (the
    ceiling, from the same maps); the benchmark collected at the end (``measures.collect``)."""

    run: Run[Settings]

    def __post_init__(self) -> None:
        super().__post_init__()
        self.levels = self.run.given[0] or [1.0]
        self.total = Scored(each={a: [] for a in self.who}, pairs={a: [] for a in self.people})

    def machine(self, image_id: int) -> list[np.ndarray]:
        """The image's segmentations (held in their files' own type, widened here); without a
        prediction, one segment at every threshold."""
        given = self.run.given[1].get(image_id)
        if not given:
            return [np.ones(self.shapes[image_id], dtype=np.int64)] * len(self.levels)
        return [m.astype(np.int64) for m in given]

    def process(self, batch: pd.DataFrame) -> Scored:
        zero, looked = self.run.settings.zero_is_unlabelled, self.covered_by
        maps = {a: segment_maps(self.run.data, a, batch) for a in self.people}
        part = Scored(each={a: [] for a in self.who}, pairs={a: [] for a in self.people})
        for i in batch["image_id"].astype(int).tolist():
            present = [a for a in self.people if a in looked.get(i, []) and i in maps[a]]
            for a in present:  # the ceiling: every ordered pair of humans who drew the image
                part.pairs[a] += [(i, measures.score_image([maps[a][i]], [maps[b][i]])) for b in present if b != a]
            truth = [maps[a][i] for a in self.who if a in present]
            if not truth:
                continue
            part.ids.append(i)
            part.scored.append(measures.score_image(self.machine(i), truth, zero))
            if self.run.settings.all_annotators:
                for a in (a for a in self.who if a in present):
                    part.each[a].append(measures.score_image(self.machine(i), [maps[a][i]], zero))
        return part

    def add(self, part: Scored) -> None:
        gather(self.total, part)

    def compute(self) -> dict[str, Any]:
        """The report (``score``)."""
        levels, ids, scored = self.levels, self.total.ids, self.total.scored
        found = measures.collect(levels, scored)
        zero = self.run.settings.zero_is_unlabelled
        report: dict[str, Any] = {
            "images": len(ids),
            "images_without_prediction": sum(i not in self.run.given[1] for i in ids),
            "truth": self.who,
            "label_zero": "no region (BSDS's rule for covering)" if zero else "a segment, as every other label",
            "thresholds": found.thresholds,
            "measures": {"covering": found.covering, "pri": found.pri, "vi": found.vi},
            # Per image: its covering by the run at its best threshold (the benchmark's per-image OIS).
            "per_image": {ids[int(e["image"]) - 1]: e["covering"] for e in found.per_image},
            "per_image_threshold": {ids[int(e["image"]) - 1]: e["threshold"] for e in found.per_image},
            "per_source_split": masks.several(
                {
                    split: {"images": len(members)}
                    | {k: v["ods"] for k, v in _collected([scored[k] for k in members], levels).items()}
                    for split, members in _by_split(ids, masks.source_split_of(self.images)).items()
                }
            ),
        }
        if self.run.settings.resamples:  # the headline is against the humans together, with or without each alone
            per_image = {i: image_sums(s) for i, s in zip(ids, scored, strict=True)}
            thresholds = len(levels)
            figures = lambda sums: benchmark_figures(sums, thresholds)  # noqa: E731
            report |= masks.resampled(self.images, per_image, figures, self.run.settings)
        if self.run.settings.all_annotators:
            each = {}
            for a, mine in self.total.each.items():
                b = measures.collect(levels, mine)
                each[a] = {"covering": b.covering["ods"], "pri": b.pri["ods"], "vi": b.vi["ods"]}
            report["per_annotator"] = each
            report["spread"] = masks.spread(list(each.values()), ["covering", "pri", "vi"])
        report["human_ceiling"] = segments_ceiling(self.total.pairs)
        return report


def image_sums(image: measures.ImageScores) -> np.ndarray:
    """What an image adds to the benchmark's sums (its figures as ``measures.collect`` reads them,
    printed as the published code prints them): per threshold cntR, sumR, RI and VI, then cntR
    and sumR at its best threshold, its best RI and VI, cntR_best, and 1 (the image itself, for
    the means): shape (4 thresholds + 6,), what the bootstrap over images sums."""
    cnt_r, sum_r, ri, vi = (measures.printed(v) for v in (image.cnt_r, image.sum_r, image.ri, image.vi))
    best = int(np.argmax(cnt_r / (sum_r + (sum_r == 0))))
    tail = [cnt_r[best], sum_r[best], ri.max(), vi.min(), float(measures.printed(np.array(image.cnt_r_best))), 1.0]
    return np.concatenate([cnt_r, sum_r, ri, vi, tail])


def benchmark_figures(sums: np.ndarray, thresholds: int) -> dict[str, np.ndarray]:
    """Covering, PRI and VI, ODS and OIS (``measures.collect``'s), of many summed ``image_sums``
    at once (shape (k, 4 thresholds + 6)): each figure's k values."""
    n = thresholds
    cnt_r, sum_r, ri, vi = (sums[:, j * n : (j + 1) * n] for j in range(4))
    oracle, oracle_sum, ri_best, vi_best, _, images = sums[:, 4 * n :].T
    recall = cnt_r / (sum_r + (sum_r == 0))
    return {
        "covering.ods": recall.max(axis=1),
        "covering.ois": np.divide(oracle, oracle_sum, out=np.zeros_like(oracle), where=oracle_sum > 0),
        "pri.ods": (ri / images[:, None]).max(axis=1),
        "pri.ois": ri_best / images,
        "vi.ods": (vi / images[:, None]).min(axis=1),
        "vi.ois": vi_best / images,
    }


def score(run: Run[Settings]) -> dict[str, Any]:
    """The BSDS region benchmark of the run against the humans, against each with
    ``all_annotators``, and the humans' ceiling, streamed by the runner."""
    images = masks.scored_images(run.data, run.settings.split)
    people, who = masks.chosen_humans(run.data, run.settings)
    return stream(Regions(run, who, people, images), image_batches(images), run.cores)


def _by_split(ids: list[int], split_of: dict[int, str]) -> dict[str, list[int]]:
    """Each source split's positions among the scored ``ids``."""
    out: dict[str, list[int]] = {}
    for k, i in enumerate(ids):
        if (split := split_of.get(i)) is not None:
            out.setdefault(split, []).append(k)
    return out


def _collected(scored: list[measures.ImageScores], levels: list[float]) -> dict[str, dict[str, float]]:
    """The benchmark collected over ``scored`` (some images' scores) only: covering, PRI, VI."""
    part = measures.collect(levels, scored)
    return {"covering": part.covering, "pri": part.pri, "vi": part.vi}


def segments_ceiling(pairs: dict[str, list[tuple[int, measures.ImageScores]]]) -> dict[str, Any]:
    """The humans' ceiling, BSDS500's "Human" row, from ``pairs`` (human -> (image, their
    segmentation scored against another human's who covered the image), in image order): covering
    of the other's, Rand index, VI in bits, pooled over every (image, human, other human) as the
    benchmark and the release's agreement table pool them, so a human who covered few images
    weighs as many pairs as they are in. Beside it, ``per_annotator``: each human against the
    others who covered the same images (one threshold: covering over all their regions, PRI and
    VI the mean over images of the mean over the others), and ``annotator_mean``, the unweighted
    mean of those."""
    found = [score for scored in pairs.values() for _, score in scored]
    if not found:
        return {}
    covering = [float(p.cnt_r[0] / p.sum_r[0]) if p.sum_r[0] else 0.0 for p in found]
    each = {}
    for a, scored in pairs.items():
        if not scored:
            continue
        by_image: dict[int, list[measures.ImageScores]] = {}
        for i, score in scored:
            by_image.setdefault(i, []).append(score)
        images = [
            measures.ImageScores(
                np.sum([p.cnt_r for p in ps], axis=0), np.sum([p.sum_r for p in ps], axis=0),
                np.sum([p.cnt_p for p in ps], axis=0), np.sum([p.sum_p for p in ps], axis=0),
                np.mean([p.ri for p in ps], axis=0), np.mean([p.vi for p in ps], axis=0),
                float(sum(p.cnt_r_best for p in ps)),
            )
            for _, ps in sorted(by_image.items())
        ]  # fmt: skip
        collected = measures.collect([1.0], images, as_published=False)
        each[a] = {"covering": collected.covering["ods"], "pri": collected.pri["ods"], "vi": collected.vi["ods"]}
    return {
        "covering": float(np.mean(covering)),
        "pri": float(np.mean([p.ri[0] for p in found])),
        "vi": float(np.mean([p.vi[0] for p in found])),
        "pairs": len(found),
        "per_annotator": each,
        "annotator_mean": {k: float(np.mean([v[k] for v in each.values()])) for k in ("covering", "pri", "vi")},
    }


def shapes(run: Run[Settings], report: dict[str, Any]) -> Iterator[tuple[int, list[Shape]]]:
    """(image id, its segments) for every scored image, in id order, a batch of images at a time:
    each segment of the image's segmentation at its best threshold (the one its per-image
    covering was taken at), with its area."""
    best = {int(k): float(v) for k, v in report.get("per_image_threshold", {}).items()}
    for batch in batches(masks.scored_images(run.data, run.settings.split)):
        levels, found = read_segmentations(run.predictions, batch, run.settings.thresholds)
        for image_id in batch["image_id"].astype(int):
            maps = found.get(int(image_id))
            if maps is None:
                yield int(image_id), []
                continue
            chosen = maps[levels.index(best[image_id])] if image_id in best else maps[0]
            values, areas = np.unique(chosen, return_counts=True)
            yield (
                int(image_id),
                [
                    Shape(None, chosen == value, facts={"segment": int(value), "area": int(area)})
                    for value, area in zip(values.tolist(), areas.tolist(), strict=True)
                ],
            )
