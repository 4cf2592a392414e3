"""``boundaries``: boundary maps: probability PNGs, BSDS .mat files (ucm2, segs) or label maps.

Boundary maps scored with the BSDS500 boundary benchmark (``regionbench.scoring.measures.bsds_boundaries``) against
every human who covered each image, beside the humans' own ceiling.

Predictions: a folder of boundary probability PNGs (8- or 16-bit, one channel, named by image id or
file stem), BSDS's own ``.mat`` files (a ``ucm2`` or a cell ``segs``), label-map PNGs with
``--png segments``, or a folder per scale of a hierarchy's label maps (sorted naturally).

Measures: the BSDS500 boundary benchmark: ODS (threshold, recall, precision, F), OIS (recall,
precision, F), AP and the precision-recall curve.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.core import errors
from regionbench.release.loader import Release
from regionbench.scoring import results, runner
from regionbench.scoring.measures import bsds_boundaries as measures
from regionbench.scoring.runner import batches, gather, image_batches, stream
from regionbench.scoring.tasks import _masks as masks
from regionbench.scoring.tasks._base import Resampled, Run, Shape, TaskError, option, unit_interval
from regionbench.scoring.tasks.segments import segment_maps

SOFT_LEVELS = 99  # evaluation_bdry_image.m's default number of thresholds of a soft map
BATCH = 4  # images a batch: an image's 99 maps take seconds, and a few images keep every core busy to the end


@dataclass(frozen=True)
class Settings(masks.BenchmarkSettings, Resampled):
    """The boundaries task's settings: the truth is every human but ``exclude`` (or ``annotator``);
    the bootstrap's resamples."""

    max_dist: float = option(
        measures.MAX_DIST, "--max-dist", "the matching distance, a share of the image diagonal (0.0075, as BSDS)",
        type=unit_interval, metavar="SHARE",
    )  # fmt: skip
    png: str = option(
        "boundaries", "--png", "what a PNG holds: a boundary probability map (boundaries) or a label map whose "
        "segments' boundaries are scored (segments)", choices=["boundaries", "segments"],
    )  # fmt: skip


scope_of = masks.scope_of  # the images of the split
default_split = masks.default_split  # the source's evaluation split, where the release has one


def read(predictions: Path, data: Release, settings: Settings) -> tuple[list[float], dict[int, Path | list[Path]]]:
    """The thresholds and each scored image's file (read and checked here, held as its path:
    an image's maps are made when it is scored)."""
    images = masks.scored_images(data, settings.split)
    masks.refuse_files_outside(data, predictions, images, settings.split)
    if problem := (None if predictions.is_dir() else errors.file_problem(predictions, "a folder of boundary maps")):
        detail = problem if predictions.exists() else "no such folder"
        raise TaskError(f"{predictions}: {detail}; give the folder of predictions")
    keys = masks.file_keys(images)
    scales, layered = masks.scale_files(predictions, keys)  # a hierarchy, as the segments task reads one
    found: dict[int, Path | list[Path]] = dict(layered)
    for file in [] if scales else sorted(predictions.iterdir(), key=lambda p: masks.natural_order(p.name)):
        if file.stem in keys and file.suffix.lower() in (".png", ".mat"):
            found[keys[file.stem]] = file
    settings.refuse_missing(predictions, images, set(found))
    shapes, levels = masks.image_sizes(images), None
    for image_id, given in found.items():  # every file read once now: a bad one is refused before scoring
        mine = _read(given, shapes[image_id], settings)[0]
        if levels is not None and mine != levels:
            raise TaskError(f"{given}: {len(mine)} thresholds where the run's other files have {len(levels)}")
        levels = mine
    return levels or [1.0], found


def _read(
    path: Path | list[Path], shape: tuple[int, int], settings: Settings
) -> tuple[list[float], np.ndarray | list[np.ndarray]]:
    """A prediction file's thresholds and what it holds: a soft map (a probability PNG / 255 or
    / 65535, a ``ucm2`` at the pixels) to cut at them, or a segmentation per threshold (a
    ``segs`` cell, or a hierarchy's label maps, one file a scale, the scales its thresholds)."""
    if isinstance(path, list):
        return [float(k) for k in range(1, len(path) + 1)], [results.read_label_map(p, shape, dtype=None) for p in path]
    if path.suffix.lower() == ".png":
        values = results.read_label_map(path, shape, dtype=None)
        if settings.png == "segments":
            return [1.0], [values]
        soft = values / (65535.0 if values.dtype == np.uint16 else 255.0)
    else:
        ucm2, segs = results.bsds_mat(path, shape)
        if ucm2 is None:
            return [float(k) for k in range(1, len(segs) + 1)], segs
        soft = ucm2[2::2, 2::2]
    return [float(t) for t in measures.thresholds(settings.thresholds or SOFT_LEVELS)], soft


def boundary_maps(
    path: Path | list[Path], shape: tuple[int, int], settings: Settings
) -> tuple[list[float], list[np.ndarray]]:
    """A prediction file's thresholds and its boundary map at each (``client.boundaries``)."""
    levels, held = _read(path, shape, settings)
    if isinstance(held, list):  # segmentations: their segments' boundaries
        return levels, [measures.seg2bdry(m) for m in held]
    return levels, [held >= t for t in levels]


def human_boundaries(data: Release, people: list[str], images: pd.DataFrame) -> dict[str, dict[int, np.ndarray]]:
    """Each human's boundaries per image: the boundaries of their segmentation (``segments.
    segment_maps``), thinned, as BSDS's ``groundTruth`` ``Boundaries`` are made."""
    out: dict[str, dict[int, np.ndarray]] = {}
    for a in people:
        out[a] = {i: measures.thin(measures.seg2bdry(m)) for i, m in segment_maps(data, a, images).items()}
    return out


def _thinned(maps: list[np.ndarray]) -> list[np.ndarray]:
    """Each map thinned (``measures.thin``); a map equal to the one before is that one's thinned
    map, not thinned again (a soft map of a few levels cut at 99 thresholds)."""
    out: list[np.ndarray] = []
    for k, boundary in enumerate(maps):
        out.append(out[-1] if k and np.array_equal(boundary, maps[k - 1]) else measures.thin(boundary))
    return out


@dataclass
class Counted:
    """What a batch adds to a boundary run: the ids of its images some chosen human covered, their
    counts against those humans together and (``all_annotators``) against each alone, and the
    humans' ceiling counts (human -> cntR, sumR, cntP, sumP)."""

    ids: list[int] = dataclasses.field(default_factory=list)
    together: list[measures.ImageCounts] = dataclasses.field(default_factory=list)
    each: dict[str, list[measures.ImageCounts]] = dataclasses.field(default_factory=dict)
    pooled: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)


@dataclass
class Boundaries(masks.AgainstHumans):
    """The boundary measure the runner streams (``runner.Measure``): each image's machine maps,
    thinned once, against the chosen humans' boundaries, and the humans' against each other (the
    ceiling, from the same maps); the benchmark collected at the end (``measures.collect``)."""

    run: Run[Settings]

    def __post_init__(self) -> None:
        super().__post_init__()
        self.levels, self.files = self.run.given
        self.total = Counted(each={a: [] for a in self.who})
        self.ceiling_key = ceiling_key(self.run.data, self.images, self.people, self.run.settings.max_dist)
        self.known_ceiling = cached_ceiling(self.ceiling_key)  # the humans matched once a release

    def process(self, batch: pd.DataFrame) -> Counted:
        settings, part = self.run.settings, Counted(each={a: [] for a in self.who})
        truth = human_boundaries(self.run.data, self.people, batch)
        for image_id in batch["image_id"].astype(int).tolist():
            if self.known_ceiling is None:
                _pool_ceiling(truth, image_id, self.people, self.covered_by, settings.max_dist, part.pooled)
            mine = [a for a in self.who if a in self.covered_by.get(image_id, []) and image_id in truth[a]]
            if not mine:
                continue
            path = self.files.get(image_id)
            if path is None:  # --allow-missing: no boundary at all
                maps = [np.zeros(self.shapes[image_id], dtype=bool)] * len(self.levels)
            else:
                maps = boundary_maps(path, self.shapes[image_id], settings)[1]
            maps = _thinned(maps)  # once, for every human
            theirs = [truth[a][image_id] for a in mine]
            part.together.append(measures.score_image(maps, theirs, settings.max_dist, thinned=False))
            part.ids.append(image_id)
            if settings.all_annotators:
                for a, human in zip(mine, theirs, strict=True):
                    part.each[a].append(measures.score_image(maps, [human], settings.max_dist, thinned=False))
        return part

    def add(self, part: Counted) -> None:
        gather(self.total, part)

    def compute(self) -> dict[str, Any]:
        """The report (``score``)."""
        settings, levels, ids, together = self.run.settings, self.levels, self.total.ids, self.total.together
        if not ids:
            raise TaskError("no scored image was covered by the chosen humans; choose others with --annotator")
        found = measures.collect(levels, together)
        report: dict[str, Any] = {
            "images": len(ids),
            "images_without_prediction": sum(i not in self.files for i in ids),
            "truth": self.who,
            "thresholds": found.thresholds,
            "measures": {"ods": found.ods, "ois": found.ois, "ap": found.ap},
            "curve": found.curve,  # recall, precision, F per threshold: the PR curve view draws
            "per_image": {i: e["f"] for i, e in zip(ids, found.per_image, strict=True)},
            "per_image_threshold": {i: e["threshold"] for i, e in zip(ids, found.per_image, strict=True)},
            "per_source_split": masks.several(
                {
                    split: {"images": len(part)} | {"ods_f": b.ods["f"], "ois_f": b.ois["f"], "ap": b.ap}
                    for split, part in _by_split(ids, together, masks.source_split_of(self.images)).items()
                    for b in [measures.collect(levels, part)]
                }
            ),
            "conventions": conventions(settings.max_dist),
        }
        if settings.resamples:  # the headline is against the humans together, with or without each alone
            per_image = {i: image_counts(c) for i, c in zip(ids, together, strict=True)}
            report |= masks.resampled(self.images, per_image, benchmark_figures, settings)
        if settings.all_annotators:
            each = {a: measures.collect(levels, c) for a, c in self.total.each.items() if c}
            report["per_annotator"] = {
                a: {"ods_f": b.ods["f"], "ois_f": b.ois["f"], "ap": b.ap} for a, b in each.items()
            }
            report["spread"] = masks.spread(list(report["per_annotator"].values()), ["ods_f", "ois_f", "ap"])
        if self.known_ceiling is None:
            keep_ceiling(self.ceiling_key, self.total.pooled)
        report["human_ceiling"] = boundaries_ceiling(
            self.total.pooled if self.known_ceiling is None else self.known_ceiling
        )
        return report


def image_counts(counts: measures.ImageCounts) -> np.ndarray:
    """An image's cntR, sumR, cntP and sumP at each threshold and, last, at its own best
    threshold (what OIS sums): shape (4, thresholds + 1), what the bootstrap over images sums."""
    parts = np.stack([counts.cnt_r, counts.sum_r, counts.cnt_p, counts.sum_p])
    best = int(np.argmax(measures.f_measure(measures._ratio(parts[0], parts[1]), measures._ratio(parts[2], parts[3]))))
    return np.concatenate([parts, parts[:, best : best + 1]], axis=1)


def benchmark_figures(sums: np.ndarray) -> dict[str, np.ndarray]:
    """ODS F, OIS F and AP (``measures.collect``'s) of many summed ``image_counts`` at once
    (shape (k, 4, thresholds + 1)): each figure's k values."""
    r = measures._ratio(sums[:, 0, :-1], sums[:, 1, :-1])
    p = measures._ratio(sums[:, 2, :-1], sums[:, 3, :-1])
    best = sums[:, :, -1]
    # ODS F: the largest F on the curve interpolated between consecutive thresholds (``max_f``'s
    # points, every resample at once; the F is the same whichever point a tie gives it)
    d = np.linspace(0, 1, measures.STEPS)
    rr = r[:, 1:, None] * d + r[:, :-1, None] * (1 - d)
    pp = p[:, 1:, None] * d + p[:, :-1, None] * (1 - d)
    ods = np.maximum(measures.f_measure(r[:, 0], p[:, 0]), measures.f_measure(rr, pp).max(axis=(1, 2), initial=0.0))
    return {
        "ods.f": ods,
        "ois.f": measures.f_measure(measures._ratio(best[:, 0], best[:, 1]), measures._ratio(best[:, 2], best[:, 3])),
        "ap": np.array([measures.average_precision(r[j], p[j]) for j in range(len(sums))]),
    }


def score(run: Run[Settings]) -> dict[str, Any]:
    """The BSDS boundary benchmark of the run against the humans (against each with
    ``all_annotators``) and the humans' ceiling, streamed by the runner."""
    images = masks.scored_images(run.data, run.settings.split)
    people, who = masks.chosen_humans(run.data, run.settings)
    return stream(Boundaries(run, who, people, images), image_batches(images, min(BATCH, runner.BATCH)), run.cores)


def _by_split(
    ids: list[int], counts: list[measures.ImageCounts], split_of: dict[int, str]
) -> dict[str, list[measures.ImageCounts]]:
    """The scored images' counts grouped by their source split."""
    out: dict[str, list[measures.ImageCounts]] = {}
    for i, c in zip(ids, counts, strict=True):
        if (split := split_of.get(i)) is not None:
            out.setdefault(split, []).append(c)
    return out


def conventions(max_dist: float) -> list[str]:
    """How the boundary benchmark counts, as its report says it."""
    return [
        f"matching within {max_dist:g} of the image diagonal, one to one, as few pixels left over as can be and then "
        "the nearest (correspondPixels' outlier cost 100 times the distance)",
        "machine maps thinned to one pixel (bwmorph thin); a human's boundaries: its segmentation's, thinned",
        "ODS on the curve interpolated between thresholds, OIS at each image's best threshold, AP at recall 0:0.01:1",
    ]


def _pool_ceiling(
    truth: dict[str, dict[int, np.ndarray]],
    image_id: int,
    people: list[str],
    covered_by: dict[int, list[str]],
    max_dist: float,
    pooled: dict[str, np.ndarray],
) -> None:
    """Add to ``pooled`` (human -> cntR, sumR, cntP, sumP) each human's boundaries of
    ``image_id`` scored against the other humans who covered it."""
    present = [a for a in people if a in covered_by.get(image_id, []) and image_id in truth[a]]
    for a in present:
        others = [truth[b][image_id] for b in present if b != a]
        if others:
            c = measures.score_image([truth[a][image_id]], others, max_dist, thinned=False)
            counts = np.array([c.cnt_r[0], c.sum_r[0], c.cnt_p[0], c.sum_p[0]], dtype=np.int64)
            pooled[a] = pooled.get(a, np.zeros(4, dtype=np.int64)) + counts


CEILING_FORMAT = 1  # raised when the ceiling's counts change meaning: older cached ones are not read


def ceiling_key(data: Release, images: pd.DataFrame, people: list[str], max_dist: float) -> str:
    """What the humans' ceiling of a run depends on, hashed: the release's images and regions (their
    content hashes, the same in the assembled and the published folder), the scored images, the
    humans and the matching distance."""
    tables = data.manifest.get("tables", {})
    about = {
        "format": CEILING_FORMAT,
        "content": [tables.get(name, {}).get("content_sha256") for name in ("images", "regions")],
        "images": sorted(int(i) for i in images["image_id"]),
        "people": sorted(people),
        "max_dist": float(max_dist),
    }
    return hashlib.sha256(json.dumps(about, sort_keys=True).encode()).hexdigest()


def _ceiling_file(key: str) -> Path:
    from regionbench.release.loader import cache_root

    return cache_root() / "ceilings" / f"boundaries-{key}.json"


def cached_ceiling(key: str) -> dict[str, np.ndarray] | None:
    """The ceiling's pooled counts (human -> cntR, sumR, cntP, sumP) kept by an earlier run of
    the same ``key`` (``keep_ceiling``), or None: a file missing, unreadable or of another shape
    is computed again."""
    try:
        kept = json.loads(_ceiling_file(key).read_text(encoding="utf-8"))
        return {str(a): np.array(c, dtype=np.int64).reshape(4) for a, c in kept.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def keep_ceiling(key: str, pooled: dict[str, np.ndarray]) -> None:
    """Keep a run's ceiling counts under the user's cache (written whole, then renamed): the
    next run on the same release and humans takes them instead of matching the humans again. A
    cache that cannot be written is skipped: the figures do not depend on it."""
    path = _ceiling_file(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps({a: c.tolist() for a, c in sorted(pooled.items())}), encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass


def boundaries_ceiling(pooled: dict[str, np.ndarray]) -> dict[str, Any]:
    """The humans' ceiling, as BSDS500 states its human F: each human's boundaries scored against
    the other humans who covered the image, the counts (``_pool_ceiling``) pooled over every
    (image, human): recall, precision and F; per annotator the same over their images."""
    if not pooled:
        return {}

    def figures(c: np.ndarray) -> dict[str, float]:
        r, p = c[0] / c[1] if c[1] else 0.0, c[2] / c[3] if c[3] else 0.0
        return {"recall": float(r), "precision": float(p), "f": float(measures.f_measure(r, p))}

    total = np.sum(list(pooled.values()), axis=0)
    return figures(total) | {"per_annotator": {a: figures(c) for a, c in sorted(pooled.items())}}


def shapes(run: Run[Settings], report: dict[str, Any]) -> Iterator[tuple[int, list[Shape]]]:
    """(image id, its boundary) for every scored image, in id order: the thinned boundary map at
    the image's best threshold, with its F there."""
    best = {int(k): float(v) for k, v in report.get("per_image_threshold", {}).items()}
    f = {int(k): float(v) for k, v in report.get("per_image", {}).items()}
    _, files = run.given
    for batch in batches(masks.scored_images(run.data, run.settings.split)):
        shapes_ = masks.image_sizes(batch)
        for image_id in batch["image_id"].astype(int):
            path = files.get(int(image_id))
            if path is None or int(image_id) not in best:
                yield int(image_id), []
                continue
            levels, maps = boundary_maps(path, shapes_[int(image_id)], run.settings)
            at = int(np.argmin([abs(t - best[int(image_id)]) for t in levels]))
            drawn = measures.thin(maps[at])
            yield int(image_id), [Shape(None, drawn, facts={"threshold": levels[at], "f": round(f[int(image_id)], 4)})]
