"""Scoring what segmentation methods produce against a release (docs/scoring.md): instance masks
(``instances``), segmentations against several humans (``segments``), label maps
(``semantic``). This module chooses the images and the truth and reads the predictions; the
measures are ``instances``, ``segments`` and ``semantic``.

- **Which images.** The test side of the image split where the release has subsets A-H
  (``split="test"``), else, or with ``split="all"``, every image; predictions for images left
  out, or named for no image of the release, are refused in one line (``scope``).
- **Against whom.** Instances and label maps: the reference annotator (the consensus where
  there are several), or ``annotator``; ``all_annotators`` scores against each annotator and
  gives the mean, spread, min and max. Segments: every human who covered the image, as the BSDS
  benchmark does (``annotator``: that one only; ``exclude``: all but that one).
- **The human ceiling.** Each annotator scored as a prediction against the others the same way,
  beside the run's figures.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from regionbench import release
from regionbench.client import instances, scope, segments, semantic
from regionbench.client.evaluation import release_hierarchy
from regionbench.client.loader import Release
from regionbench.core import errors, geometry, tables
from regionbench.core.errors import InputError
from regionbench.core.hierarchy import Hierarchy

TASKS = ("instances", "segments", "semantic")
BATCH = 64  # images whose label maps are held at a time


class ScoringError(InputError):
    """Predictions or settings that cannot be scored; the message says what and where."""


@dataclass(frozen=True)
class MaskRun:
    """One run of a mask task (the module docstring says what each setting chooses)."""

    data: Release
    tree: Hierarchy
    predictions: Path
    task: str
    annotator: str | None = None
    all_annotators: bool = False
    exclude: str | None = None
    split: str = "test"
    iou_type: str = "segm"
    max_dets: tuple[int, ...] = (1, 10, 100)
    area_ranges: tuple[tuple[str, float, float], ...] = ()  # (small | medium | large, low, high) in pixels
    thresholds: int | None = None
    zero_is_unlabelled: bool = False  # segments: label 0 of a prediction is no region (BSDS's rule)
    ignore: int = 255
    names: Path | Mapping[str, str] | None = None  # label maps' pixel value -> label (a JSON file, or read)

    @cached_property
    def pixel_values(self) -> dict[int, int] | None:
        """``names`` read once, as pixel value -> label id (None: the values are label ids)."""
        return _pixel_values(self.names, self.data) if self.names else None


def image_sizes(images: pd.DataFrame) -> dict[int, tuple[int, int]]:
    """Image id -> (height, width) of rows of the release's images table."""
    return {int(i): (int(h), int(w)) for i, h, w in images[["image_id", "height", "width"]].itertuples(index=False)}


def humans(data: Release) -> list[str]:
    """The annotators who drew (the derived consensus aside)."""
    return [a for a in data.annotators() if a != tables.CONSENSUS]


def reference(data: Release) -> str:
    """The reference annotator: the subsets', else the consensus, else the only annotator."""
    if not data.subsets.empty:
        return str(data.subsets["annotator"].iloc[0])
    names = data.annotators()
    return tables.CONSENSUS if tables.CONSENSUS in names else names[0]


def scored_images(data: Release, split: str) -> pd.DataFrame:
    """The images of ``split`` (module docstring), by id."""
    images = data.images.sort_values("image_id")
    if split == "all" or data.subsets.empty:
        return images
    if split != "test":
        raise ScoringError(f"--split {split}: use test or all")
    regions = data.regions
    test = regions.loc[regions["image_split"] == "test", "image_id"].unique()
    return images[images["image_id"].isin(test)]


def mask_scope(data: Release, split: str) -> scope.Scope:
    """What a mask task scores of ``data`` (``scored_images``), as every task says it."""
    if split not in scope.SPLITS:
        raise ScoringError(f"--split {split}: use test or all")
    has_split = not data.subsets.empty
    side = scope.image_side(split, has_split)
    return scope.Scope(split, side, len(scored_images(data, split)), len(data.images), "images")


def refuse_files_outside(data: Release, folder: Path, scored: pd.DataFrame, split: str) -> None:
    """Prediction files (``.png``, ``.mat``) of ``folder`` and its scale folders that name no
    image of the release, or images that ``scored`` leaves out: refused in one line (the second
    kind by ``scope.Scope.refuse``), never dropped without a word."""
    if not folder.is_dir():
        return
    keys, chosen = _keys(data.images), set(scored["image_id"].astype(int))
    files = [p for d in (folder, *(p for p in folder.iterdir() if p.is_dir())) for p in d.iterdir() if p.is_file()]
    files = sorted(p for p in files if p.suffix.lower() in (".png", ".mat"))
    if unknown := [p for p in files if p.stem not in keys]:
        raise ScoringError(
            f"{folder}: {len(unknown)} prediction files name no image of the release, e.g. "
            f"{unknown[0].relative_to(folder)}; name each by its image's id or its file's stem "
            "(an image the build rejected is in the release's rejects table)"
        )
    if outside := [p for p in files if keys[p.stem] not in chosen]:
        images = len({keys[p.stem] for p in outside})
        raise mask_scope(data, split).refuse(folder, len(outside), f"prediction files for {images} images")


def _covered(data: Release) -> dict[int, list[str]]:
    coverage = data.table("coverage")
    out: dict[int, list[str]] = {}
    for image_id, annotator in coverage[["image_id", "annotator"]].itertuples(index=False):
        out.setdefault(int(image_id), []).append(str(annotator))
    return out


def segment_maps(data: Release, annotator: str, images: pd.DataFrame) -> dict[int, np.ndarray]:
    """``annotator``'s segmentation of each image: region k (in region order) numbered k, and the
    pixels no region covers one more segment, as the release's agreement reads a region set
    (a human segmentation that covers the image, as BSDS's do, has no such rest)."""
    regions = data.regions
    mine = regions[(regions["annotator"] == annotator) & regions["mask"].notna()].sort_values(["image_id", "region_id"])
    shapes = image_sizes(images)
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


# --- reading predictions -------------------------------------------------------------------------


def _natural(name: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _keys(images: pd.DataFrame) -> dict[str, int]:
    """Prediction file stem -> image id: the id itself, or the stem of the image's file."""
    out: dict[str, int] = {}
    for image_id, path in images[["image_id", "path"]].itertuples(index=False):
        out[str(int(image_id))] = int(image_id)
        out.setdefault(Path(str(path)).stem, int(image_id))
    return out


def read_png(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """A label map PNG: one channel of 8 or 16 bits (mode L, P, I;16 or I), the image's size."""
    from PIL import Image  # the build extra: scoring label maps reads PNG files

    try:
        with Image.open(path) as im:
            if im.format != "PNG" or im.mode not in ("L", "P", "I;16", "I;16B", "I"):
                raise ScoringError(
                    f"{path}: a {im.format} in mode {im.mode}; a label map is a single-channel 8- or 16-bit PNG"
                )
            values = np.asarray(im).astype(np.int64)
    except OSError as exc:
        raise ScoringError(f"{path}: unreadable ({errors.first_line(exc)}); write the label map as a PNG") from None
    if values.shape != shape:
        raise ScoringError(
            f"{path}: {values.shape[1]}x{values.shape[0]} differs from its image's {shape[1]}x{shape[0]}"
        )
    return values


def read_segmentations(
    folder: Path, images: pd.DataFrame, thresholds: int | None
) -> tuple[list[float], dict[int, list[np.ndarray]]]:
    """Each image's machine segmentations, one per threshold, from ``folder``: ``<key>.png``
    (one), ``<scale>/<key>.png`` (one per subfolder, sorted naturally), or BSDS's own
    ``<key>.mat`` holding a cell ``segs`` or a ``ucm2`` (cut at ``segments.thresholds``; it needs
    ``thresholds``). ``key`` is the image id or its file's stem. Returns the thresholds and the
    segmentations by image id; an image without any is absent."""
    if problem := (None if folder.is_dir() else errors.file_problem(folder, "a folder of segmentations")):
        raise ScoringError(
            f"{folder}: {problem if folder.exists() else 'no such folder'}; give the folder of predictions"
        )
    keys = _keys(images)
    shapes = image_sizes(images)
    scales = sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: _natural(p.name))
    found: dict[int, list[np.ndarray]] = {}
    if scales:
        for scale in scales:
            for path in sorted(scale.glob("*.png")):
                if path.stem in keys:
                    image_id = keys[path.stem]
                    found.setdefault(image_id, []).append(read_png(path, shapes[image_id]))
        levels = [float(k) for k in range(1, len(scales) + 1)]
        short = [i for i, s in found.items() if len(s) != len(scales)]
        if short:
            raise ScoringError(f"{folder}: image {short[0]} lacks a PNG in some of the {len(scales)} scale folders")
        return levels, found
    levels = []
    for path in sorted(folder.iterdir(), key=lambda p: _natural(p.name)):
        if path.stem not in keys:
            continue
        image_id = keys[path.stem]
        if path.suffix.lower() == ".png":
            found[image_id], levels = [read_png(path, shapes[image_id])], [1.0]
        elif path.suffix.lower() == ".mat":
            found[image_id], levels = _read_mat(path, shapes[image_id], thresholds, levels)
    return levels, found


def _read_mat(
    path: Path, shape: tuple[int, int], thresholds: int | None, levels: list[float]
) -> tuple[list[np.ndarray], list[float]]:
    from regionbench.io.matlab import read_mat  # the build extra: BSDS's .mat files

    try:
        variables = read_mat(path)
    except ValueError as exc:
        raise ScoringError(f"{path}: unreadable MAT file ({errors.first_line(exc)})") from None
    if "ucm2" in variables:
        if thresholds is None:
            raise ScoringError(f"{path}: a ucm2 needs --thresholds N (the benchmark cuts it at N levels)")
        ucm2 = np.asarray(variables["ucm2"], dtype=np.float64)
        if ucm2.shape != (2 * shape[0] + 1, 2 * shape[1] + 1):
            raise ScoringError(f"{path}: ucm2 of {ucm2.shape} is not the double size of the image's {shape}")
        cuts = segments.thresholds(thresholds)
        return [segments.cut_ucm(ucm2, t) for t in cuts], [float(t) for t in cuts]
    if "segs" in variables:
        cell = np.asarray(variables["segs"], dtype=object).ravel()
        maps = [np.asarray(m).astype(np.int64) for m in cell]
        if any(m.shape != shape for m in maps):
            raise ScoringError(f"{path}: a segs entry differs from the image's size {shape}")
        return maps, [float(k) for k in range(1, len(maps) + 1)]
    raise ScoringError(f"{path}: neither a segs cell nor a ucm2 (found {', '.join(sorted(variables)) or 'nothing'})")


# --- the tasks -----------------------------------------------------------------------------------


def _spread(values: list[dict], keys: list[str]) -> dict[str, dict[str, float]]:
    """Mean, standard deviation, min and max of each figure over several truths."""
    return {
        k: {
            "mean": float(np.mean([v[k] for v in values])),
            "std": float(np.std([v[k] for v in values])),
            "min": float(np.min([v[k] for v in values])),
            "max": float(np.max([v[k] for v in values])),
        }
        for k in keys
    }


def _ceiling(each: dict[str, dict[str, float]]) -> dict:
    """A human ceiling: each annotator's figures against the others, and their mean over the
    annotators (none without two annotators)."""
    if not each:
        return {}
    keys = next(iter(each.values()))
    return {"per_annotator": each} | {k: float(np.mean([v[k] for v in each.values()])) for k in keys}


def _segments_of(maps: dict[str, dict[int, np.ndarray]], covered: dict[int, list[str]], who: list[str], ids: list[int]):
    """Per image the human label maps of ``who`` who covered it."""
    return {i: [maps[a][i] for a in who if a in covered.get(i, []) and i in maps[a]] for i in ids}


def score_segments(run: MaskRun) -> dict:
    data = run.data
    images = scored_images(data, run.split)
    people = humans(data)
    who = [run.annotator] if run.annotator else [a for a in people if a != run.exclude]
    unknown = [a for a in (*who, run.exclude) if a is not None and a not in people]
    if unknown:
        raise ScoringError(f"no annotator {unknown[0]!r}; the humans are {', '.join(people)}")
    covered = _covered(data)
    maps = {a: segment_maps(data, a, images) for a in people}
    ids = [int(i) for i in images["image_id"]]
    truth = _segments_of(maps, covered, who, ids)
    ids = [i for i in ids if truth[i]]
    refuse_files_outside(data, run.predictions, images, run.split)
    levels, predicted = read_segmentations(run.predictions, images, run.thresholds)
    levels = levels or [1.0]
    shape = image_sizes(images)

    def machine(image_id: int) -> list[np.ndarray]:
        """The image's segmentations; without a prediction, one segment at every threshold."""
        return predicted.get(image_id) or [np.ones(shape[image_id], dtype=np.int64)] * len(levels)

    zero = run.zero_is_unlabelled
    found = segments.collect(levels, [segments.score_image(machine(i), truth[i], zero) for i in ids])
    report: dict = {
        "images": len(ids),
        "images_without_prediction": sum(i not in predicted for i in ids),
        "truth": who,
        "label_zero": "no region (BSDS's rule for covering)" if zero else "a segment, as every other label",
        "thresholds": found.thresholds,
        "measures": {"covering": found.covering, "pri": found.pri, "vi": found.vi},
        # Per image: its covering by the run at its best threshold (the benchmark's per-image OIS).
        "per_image": {ids[int(e["image"]) - 1]: e["covering"] for e in found.per_image},
        "per_image_threshold": {ids[int(e["image"]) - 1]: e["threshold"] for e in found.per_image},
    }
    if run.all_annotators:
        each = {}
        for a in who:
            mine = [i for i in ids if a in covered.get(i, []) and i in maps[a]]
            b = segments.collect(levels, [segments.score_image(machine(i), [maps[a][i]], zero) for i in mine])
            each[a] = {"covering": b.covering["ods"], "pri": b.pri["ods"], "vi": b.vi["ods"]}
        report["per_annotator"] = each
        report["spread"] = _spread(list(each.values()), ["covering", "pri", "vi"])
    report["human_ceiling"] = segments_ceiling(maps, covered, people)
    return report


def segments_ceiling(maps: dict[str, dict[int, np.ndarray]], covered: dict[int, list[str]], people: list[str]) -> dict:
    """Each human's segmentation scored against the others who covered the same images (one
    threshold), and the mean over humans: the BSDS "Human" row."""
    each = {}
    for a in people:
        ids = [i for i in sorted(maps[a]) if any(b != a and b in covered.get(i, []) and i in maps[b] for b in people)]
        if not ids:
            continue
        scores = [
            segments.score_image([maps[a][i]], [maps[b][i] for b in people if b != a and i in maps[b]]) for i in ids
        ]
        found = segments.collect([1.0], scores, as_published=False)
        each[a] = {"covering": found.covering["ods"], "pri": found.pri["ods"], "vi": found.vi["ods"]}
    return _ceiling(each)


@dataclass(frozen=True)
class InstanceRun:
    """A run's detections against one annotator's regions, as COCO states them: ``truth`` (the
    COCO document, images under the ids the source gave them), ``detections`` (read against
    it), ``category`` (category id -> label) and ``release_id`` (the truth's image id -> the
    release's)."""

    truth: dict
    detections: list[dict]
    category: dict[int, str]
    release_id: dict[int, int]


def instance_truth(data: Release, images: pd.DataFrame, who: str) -> tuple[dict, dict[str, int]]:
    """``who``'s regions of ``images`` as a COCO instances document, with the names a detection's
    ``label`` may give its category by (``instances.category_names``)."""
    named = named_categories(data)
    categories = instances.truth_categories(data.regions, data.vocabulary, who, named)
    truth = instances.ground_truth(data.regions, images, data.table("coverage"), who, categories)
    return truth, instances.category_names(categories, named, who)


def instance_run(run: MaskRun, images: pd.DataFrame, who: str) -> InstanceRun:
    """``run``'s detections of ``images`` against ``who``'s regions (``InstanceRun``): a
    detection's category is one of the truth's, by its id in the source or by name."""
    truth, names = instance_truth(run.data, images, who)
    category = {c["id"]: c["name"] for c in truth["categories"]}
    numbering = instances.numbering(run.data.table("coverage"), who)
    release_id = {v: k for k, v in numbering.items()}
    chosen = set(images["image_id"].astype(int))
    others = {numbering.get(i, i) for i in run.data.images["image_id"].astype(int) if i not in chosen}
    try:
        detections = instances.read_results(run.predictions, truth, names, others)
    except instances.OutsideImages as exc:
        raise mask_scope(run.data, run.split).refuse(run.predictions, exc.detections, exc.what) from None
    return InstanceRun(truth, detections, category, release_id)


def score_instances(run: MaskRun) -> dict:
    data = run.data
    images = scored_images(data, run.split)
    coverage = data.table("coverage")
    truths = humans(data) if run.all_annotators else [run.annotator or reference(data)]
    if any(a not in data.annotators() for a in truths):
        raise ScoringError(f"no annotator {truths[0]!r}; annotators: {', '.join(data.annotators())}")
    results = {}
    for who in truths:
        found = instance_run(run, images, who)
        ranges = {name: (low, high) for name, low, high in run.area_ranges}
        results[who] = instances.score(found.truth, found.detections, run.iou_type, run.max_dets, ranges)
        if who == truths[0]:  # per image, against the first truth, by the release's ids
            f1 = instances.per_image_f1(found.truth, found.detections, run.iou_type, run.max_dets[-1])
            per_image = {found.release_id.get(i, i): v for i, v in f1.items()}
    report: dict = {"truth": truths if run.all_annotators else truths[0]}
    if run.all_annotators:
        report["per_annotator"] = {a: r["stats"] for a, r in results.items()}
        report["spread"] = _spread(list(report["per_annotator"].values()), list(next(iter(results.values()))["stats"]))
    first = results[truths[0]]
    report |= {
        k: v
        for k, v in first.items()
        if k not in ("stats", "per_category_ap", "categories_absent", "ground_truth", "crowd")
    }
    if run.all_annotators:  # the headline: the mean over the annotators
        report["measures"] = {k: v["mean"] for k, v in report["spread"].items()}
    else:
        report |= {k: first[k] for k in ("per_category_ap", "categories_absent")} | {"measures": first["stats"]}
        report |= {"ground_truth": first["ground_truth"], "crowd": first["crowd"]}
    report["per_image"] = per_image  # F1 at IoU 0.5 (instances.per_image_f1)
    report["human_ceiling"] = instances_ceiling(data, images, coverage, run)
    report["notes"] = []
    if run.area_ranges:
        given = {name for name, _, _ in run.area_ranges}
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


def named_categories(data: Release) -> pd.DataFrame | None:
    """The release's ``source_categories`` (none in a release made before the table)."""
    return data.table("source_categories") if "source_categories" in data.manifest["tables"] else None


def source_ids(regions: pd.DataFrame, who: str) -> dict[str, int]:
    """Label -> the category id ``who``'s file gave it, where it gave one."""
    mine = regions[(regions["annotator"] == who) & regions["category_id"].notna()]
    return {str(label): int(c) for label, c in zip(mine["label"], mine["category_id"], strict=True)}


def instances_ceiling(data: Release, images: pd.DataFrame, coverage: pd.DataFrame, run: MaskRun) -> dict:
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
            detections = instances.as_detections(data.regions, a, truth, instances.numbering(coverage, b))
            runs.append(instances.score(truth, detections, run.iou_type, run.max_dets)["stats"])
        each[a] = {k: float(np.mean([r[k] for r in runs])) for k in ("AP", "AP50", "AP75")}
    return _ceiling(each)


def class_maps(
    data: Release, annotator: str, images: pd.DataFrame, index: dict[int, int]
) -> dict[int, tuple[np.ndarray, np.ndarray, int]]:
    """``annotator``'s label map of each image as class indices (``index``: label id -> class),
    with its ignore mask (no region, or regions of different labels overlapping) and the number
    of overlapped pixels ignored."""
    regions = data.regions
    mine = regions[
        (regions["annotator"] == annotator) & regions["mask"].notna() & regions["image_id"].isin(images["image_id"])
    ]
    drawn: dict[int, list[tuple[dict, int]]] = {}
    for image_id, rle, label_id in zip(mine["image_id"], mine["mask"], mine["label_id"], strict=True):
        drawn.setdefault(int(image_id), []).append((rle, int(label_id)))
    out = {}
    for image_id, height, width in images[["image_id", "height", "width"]].itertuples(index=False):
        label = np.full((int(height), int(width)), -1, dtype=np.int64)
        clash = np.zeros((int(height), int(width)), dtype=bool)
        for rle, label_id in drawn.get(int(image_id), []):
            mask = geometry.from_rle(rle)
            k = index[int(label_id)]
            clash |= mask & (label >= 0) & (label != k)
            label[mask] = k
        out[int(image_id)] = (np.where(clash, -1, label), (label < 0) | clash, int(clash.sum()))
    return out


def _semantic_against(truth: dict, predicted: dict[int, np.ndarray], classes: int) -> tuple[np.ndarray, int, int, int]:
    """The confusion matrix of ``predicted`` class maps (image id -> classes, -1 where the run
    abstains; a missing image abstains everywhere) against ``truth`` (``class_maps``), with the
    pixels the truth ignores, its overlapped pixels and the pixels the run abstains on where the
    truth is labelled. Only the truth ignores: an abstaining pixel is wrong (the matrix's last
    column), as mmseg and cityscapesScripts count it."""
    matrix = np.zeros((classes, classes + 1), dtype=np.int64)
    overlapped = ignored = abstained = 0
    for image_id, (label, ignore, clash) in truth.items():
        overlapped += clash
        ignored += int(ignore.sum())
        mapped = predicted.get(image_id)
        if mapped is None:
            matrix += semantic.confusion(np.where(ignore, 0, label), np.full(label.shape, classes), classes, ignore)
            continue
        abstains = mapped < 0
        abstained += int((abstains & ~ignore).sum())
        matrix += semantic.confusion(np.where(ignore, 0, label), np.where(abstains, classes, mapped), classes, ignore)
    return matrix, ignored, overlapped, abstained


def _pixel_accuracy(truth: dict, predicted: dict[int, np.ndarray]) -> dict[int, float]:
    """Per image, the share of the pixels its truth labels that the run gives their class (an
    abstaining pixel is wrong); 0 for an image without a prediction, 1 with no pixel to score."""
    out = {}
    for image_id, (label, ignore, _) in truth.items():
        mapped = predicted.get(image_id)
        if mapped is None:
            out[int(image_id)] = 0.0
            continue
        scored = ~ignore
        out[int(image_id)] = float((mapped[scored] == label[scored]).mean()) if scored.any() else 1.0
    return out


def read_label_maps(
    run: MaskRun, images: pd.DataFrame, index: dict[int, int], unknown: Counter[int] | None = None
) -> dict[int, np.ndarray]:
    """The run's label maps (``<key>.png`` in ``run.predictions``, ``key`` the image id or its
    file's stem) as class indices (``index``: label id -> class; -1 where the run abstains: the
    ignore value, or a value naming no label, whose pixels ``unknown`` counts by value), by
    image id; an image without one is absent."""
    if not run.predictions.is_dir():
        problem = errors.file_problem(run.predictions, "a folder of label maps") or "not a folder"
        raise ScoringError(f"{run.predictions}: {problem}")
    files = {}
    for image_id, path in images[["image_id", "path"]].itertuples(index=False):
        named = [run.predictions / f"{int(image_id)}.png", run.predictions / f"{Path(str(path)).stem}.png"]
        if found := next((p for p in named if p.is_file()), None):
            files[int(image_id)] = found
    shapes = image_sizes(images)
    return {
        i: _classes(read_png(path, shapes[i]), index, run.pixel_values, run.ignore, unknown)
        for i, path in files.items()
    }


def batches(images: pd.DataFrame) -> Iterator[pd.DataFrame]:
    """``images`` ``BATCH`` rows at a time: label maps are whole images, held a batch at a time."""
    for start in range(0, len(images), BATCH):
        yield images.iloc[start : start + BATCH]


def score_semantic(run: MaskRun) -> dict:
    data = run.data
    images = scored_images(data, run.split)
    names, index = semantic.label_codes(
        dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"], strict=True))
    )
    truths = humans(data) if run.all_annotators else [run.annotator or reference(data)]
    if any(who not in data.annotators() for who in truths):
        raise ScoringError(f"no annotator {truths[0]!r}; annotators: {', '.join(data.annotators())}")
    refuse_files_outside(data, run.predictions, images, run.split)
    classes = len(names)
    # The confusion matrices, ignored and overlapped pixels add up image by image.
    matrices = {who: np.zeros((classes, classes + 1), dtype=np.int64) for who in truths}
    ignored = overlapped = abstained = without = 0
    unknown: Counter[int] = Counter()
    per_image: dict[int, float] = {}
    for batch in batches(images):
        predicted = read_label_maps(run, batch, index, unknown)
        for who in truths:
            truth = class_maps(data, who, batch, index)
            part, skipped, clashing, abstaining = _semantic_against(truth, predicted, classes)
            matrices[who] += part
            if who == truths[0]:
                ignored, overlapped = ignored + skipped, overlapped + clashing
                abstained += abstaining
                per_image |= _pixel_accuracy(truth, predicted)
                without += sum(1 for i in truth if i not in predicted)
    matrix = matrices[truths[0]]
    used = [int(k) for k in np.flatnonzero(matrix[:, :classes].sum(axis=0) + matrix.sum(axis=1))]
    flat = semantic.measures(matrix, names)
    report: dict = {
        "truth": truths if run.all_annotators else truths[0],
        "images": len(images),
        "images_without_prediction": without,
        "ignored_pixels": ignored,
        "overlapping_labels_pixels": overlapped,
        # Where the truth is labelled and the run gives the ignore value or a value naming no
        # label: wrong pixels, not left out (the values naming no label, with their pixels).
        "abstained_pixels": abstained,
        "unknown_values": {str(v): n for v, n in sorted(unknown.items())},
        "measures": {k: v for k, v in flat.items() if k != "per_class_iou"},
        "per_class_iou": flat["per_class_iou"],
        "levels": semantic.hierarchical(matrix[np.ix_(used, [*used, classes])], [names[k] for k in used], run.tree),
        "per_image": per_image,
    }
    report["notes"] = []
    named = run.pixel_values if run.pixel_values is not None else {i: i for i in index}
    if run.ignore in named and named[run.ignore] in index:
        report["notes"].append(
            f"the ignore value {run.ignore} is the id of label {names[index[named[run.ignore]]]}: its pixels in a map "
            "are read as abstaining (wrong); give --ignore with a value no label has, e.g. 65535"
        )
    if unknown:
        shown = ", ".join(f"{v} ({n} px)" for v, n in sorted(unknown.items())[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        hint = "; 0 is 'other' in ADE20K's maps: --ignore 0 names it" if 0 in unknown and run.ignore != 0 else ""
        report["notes"].append(
            f"pixel values naming no label of the release, counted wrong: {shown}{more}; "
            f"give --label-names if the maps number labels otherwise{hint}"
        )
    if run.all_annotators:
        figures = ("pixel_accuracy", "mean_class_accuracy", "miou", "fwiou")
        each = {who: {k: semantic.measures(m, names)[k] for k in figures} for who, m in matrices.items()}
        report["per_annotator"] = each
        report["spread"] = _spread(list(each.values()), list(figures))
        report["measures"] = {k: v["mean"] for k, v in report["spread"].items()}  # the headline: the mean
    report["human_ceiling"] = semantic_ceiling(data, images, index, classes, names)
    return report


def semantic_ceiling(
    data: Release, images: pd.DataFrame, index: dict[int, int], classes: int, names: list[str]
) -> dict:
    """Each human's label maps scored against each other human's: pixel accuracy and mIoU of
    each (the mean over the others), and over them."""
    people = humans(data)
    if len(people) < 2:
        return {}
    pairs = {(a, b): np.zeros((classes, classes + 1), dtype=np.int64) for a in people for b in people if a != b}
    for batch in batches(images):
        maps = {a: class_maps(data, a, batch, index) for a in people}
        for (a, b), matrix in pairs.items():
            predicted = {i: np.where(ignore, -1, label) for i, (label, ignore, _) in maps[a].items()}
            matrix += _semantic_against(maps[b], predicted, classes)[0]  # unlabelled by a: abstains
    each = {}
    for a in people:
        runs = [semantic.measures(pairs[(a, b)], names) for b in people if b != a]
        each[a] = {k: float(np.mean([r[k] for r in runs])) for k in ("pixel_accuracy", "miou")}
    return _ceiling(each)


def _pixel_values(names: Path | Mapping[str, str], data: Release) -> dict[int, int]:
    """A map of pixel value -> label name (a JSON file, or the map itself), as label id per value."""
    path = names if isinstance(names, Path) else "--label-names"
    try:
        given = errors.read_json(names, "a JSON map of pixel values to labels") if isinstance(names, Path) else names
    except ValueError as exc:
        raise ScoringError(f"{path}: {exc}") from None
    ids = dict(zip(data.vocabulary["label"], data.vocabulary["label_id"].astype(int), strict=True))
    if not isinstance(given, dict):
        raise ScoringError(f"{path}: a JSON object of pixel value -> label name")
    out = {}
    for value, label in given.items():
        if not str(value).isdigit() or label not in ids:
            raise ScoringError(f"{path}: {value!r}: {label!r} is not a pixel value and a label of the release")
        out[int(value)] = ids[label]
    return out


def _classes(
    values: np.ndarray,
    index: dict[int, int],
    value_of: dict[int, int] | None,
    ignore: int,
    unknown: Counter[int] | None = None,
) -> np.ndarray:
    """Pixel values -> class indices; -1 for the ignore value and for a value naming no label
    (``value_of``: pixel value -> label id, else the values are label ids), whose pixels
    ``unknown`` counts by value."""
    low = min(int(values.min()), 0) if values.size else 0  # a 32-bit PNG may hold negative values
    counts = np.bincount((values - low).ravel()) if values.size else np.zeros(0, dtype=np.int64)
    lookup = np.full(len(counts), -1, dtype=np.int64)  # pixel value - low -> class
    for k in np.flatnonzero(counts).tolist():
        value = k + low
        label_id = value_of.get(value) if value_of is not None else value
        if value == ignore:
            continue
        if label_id is None or label_id not in index:
            if unknown is not None:
                unknown[value] += int(counts[k])
            continue
        lookup[k] = index[label_id]
    return lookup[values - low]


SCORERS: dict[str, Callable[[MaskRun], dict]] = {
    "instances": score_instances,
    "segments": score_segments,
    "semantic": score_semantic,
}


def score(run: MaskRun) -> dict:
    """The report of one run of a mask task."""
    if run.task not in SCORERS:
        raise ScoringError(f"task {run.task!r}: use {', '.join(SCORERS)}")
    report = {
        "release": {"dataset": run.data.dataset, "version": run.data.version},
        "task": run.task,
        "split": "all" if run.split == "all" or run.data.subsets.empty else run.split,
        "scored": mask_scope(run.data, run.split).to_report(),
        "predictions": run.predictions.name,
    } | SCORERS[run.task](run)
    names = run.pixel_values if run.task == "semantic" else None
    label = dict(zip(run.data.vocabulary["label_id"].astype(int), run.data.vocabulary["label"], strict=True))
    report["predictions_sha256"] = predictions_digest(run.predictions)
    report["settings"] = {
        "annotator": run.annotator or (None if run.task == "segments" else reference(run.data)),
        "exclude": run.exclude,
        "iou_type": run.iou_type,
        "max_dets": list(run.max_dets),
        "thresholds": run.thresholds,
        "zero_is_unlabelled": run.zero_is_unlabelled,
        "ignore": run.ignore,
        "label_names": {str(v): label[i] for v, i in sorted(names.items())} if names is not None else None,
    }
    return report


def predictions_digest(path: Path) -> str:
    """sha256 of a predictions file, or over the relative path and sha256 of every file of a
    predictions folder: the report names what it scored, and ``view`` draws only that."""
    return release.sha256_file(path) if path.is_file() else release.fingerprint_tree(path)


def rerun(data: Release, report: dict, predictions: Path) -> MaskRun:
    """The run a mask task's report scored, its predictions read from ``predictions`` again
    (``view`` draws them); raises ScoringError when ``predictions`` are not the ones it scored."""
    settings = report.get("settings")
    if report.get("task") not in SCORERS or not isinstance(settings, dict):
        raise ScoringError(
            "--predictions: the report is not of a mask task scored by this version; score the run with evaluate --out"
        )
    if not predictions.exists():
        raise ScoringError(
            f"--predictions {predictions}: no such file or folder; give the predictions the report scored"
        )
    if (found := predictions_digest(predictions)) != report.get("predictions_sha256"):
        raise ScoringError(
            f"--predictions {predictions}: not the predictions the report scored (sha256 {found[:12]}, the report's "
            f"{str(report.get('predictions_sha256'))[:12]}); give the file or folder it scored"
        )
    return MaskRun(
        data, release_hierarchy(data), predictions, str(report["task"]), annotator=settings["annotator"],
        exclude=settings["exclude"], split=str(report["split"]), iou_type=settings["iou_type"],
        max_dets=tuple(settings["max_dets"]), thresholds=settings["thresholds"], ignore=int(settings["ignore"]),
        zero_is_unlabelled=bool(settings.get("zero_is_unlabelled", False)),
        names=settings["label_names"],
    )  # fmt: skip


def render(report: dict) -> str:
    """The report's headline figures as lines: the run's, then the human ceiling's beside them."""
    head = (
        f"{report['release']['dataset']} v{report['release']['version']}  task {report['task']}  "
        f"split {report['split']}  predictions {report['predictions']}"
    )
    lines = [scope.Scope(**report["scored"]).line(), head, "-" * len(head)]
    for key in ("images", "images_without_prediction", "ground_truth", "detections", "ignored_pixels",
                "abstained_pixels"):  # fmt: skip
        if key in report:
            lines.append(f"{key:<28}{report[key]}")
    lines += [f"note: {note}" for note in report.get("notes", [])]

    def rows(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                rows(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, float):
            lines.append(f"{prefix:<28}{value:.4f}")

    rows("", report["measures"])
    ceiling = {k: v for k, v in report.get("human_ceiling", {}).items() if k != "per_annotator"}
    if ceiling:
        lines.append("human ceiling (each annotator against the others):")
        rows("  human", ceiling)
    if "spread" in report:
        lines.append("against each annotator (mean, std, min, max):")
        for name, spread in report["spread"].items():
            lines.append(f"  {name:<26}" + "  ".join(f"{spread[k]:.4f}" for k in ("mean", "std", "min", "max")))
    return "\n".join(lines)
