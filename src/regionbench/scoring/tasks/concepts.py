"""``concepts``: detections per (image, noun phrase) pair, scored as SA-Co scores SAM 3.

The pairs are the release's as ``regionbench export --format saco`` writes them
(``io.saco.pairs``): SA-Co's own, with their ids, where the release was read from SA-Co's files;
else each scored image with each label its annotators gave it, and two labels it lacks (seeded)
as negative phrases, numbered once over the release. A run names pairs by those ids, as SAM 3's
predictions name SA-Co's; the pairs scored are those every chosen annotator annotated
exhaustively (SA-Co's rule).
Its detections are scored with SA-Co's cgF1 (``measures.concept_f1``) against the reference
annotator, or with ``--all-annotators`` the oracle over every human annotator, each alone beside
it; the human ceiling is each annotator against the oracle over the others.

Predictions: JSON, SAM 3's predictions file: a list of detections, each ``image_id`` (the pair's
number), ``segmentation`` (RLE) or ``bbox``, ``score``; those scored under 0.5 are left out.

Measures: cgF1, pmF1, IL_MCC, precision, recall, F1, positive macro F1 (0.50:0.95, at 0.5 and
0.75), IL precision, recall, F1 and FPR; by annotator and by vocabulary level; the human ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.errors import InputError
from regionbench.io import saco
from regionbench.release.loader import Release
from regionbench.scoring import concept_files as files
from regionbench.scoring import scope
from regionbench.scoring.measures import bootstrap, concept_f1
from regionbench.scoring.tasks import _masks as masks
from regionbench.scoring.tasks._base import Resampled, Run, TaskError, option


@dataclass(frozen=True)
class Settings(masks.MaskSettings, Resampled):
    """The concepts task's settings: whom (an annotator, or every one), the IoU's shapes, the
    resamples."""

    iou_type: str = option("segm", "--iou-type", "IoU of masks (segm) or of boxes (bbox)", choices=["segm", "bbox"])


default_split = masks.default_split  # the source's evaluation split, where the release has one


@dataclass(frozen=True)
class Given:
    """What ``read`` found: the pairs, and the run's detections scored (at or over 0.5) by pair."""

    pairs: list[dict[str, Any]]
    detections: dict[int, list[dict[str, Any]]]


def _pairs(data: Release, settings: Settings) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every pair of the release (numbered once over all its images) and those of the scored images."""
    every = saco.pairs(data, data.images["image_id"].astype(int).tolist())
    scored = set(masks.scored_images(data, settings.split)["image_id"].astype(int).tolist())
    return every, [p for p in every if p["image_id"] in scored]


def scope_of(data: Release, settings: Settings) -> scope.Scope:
    """The pairs of the scored images."""
    every, pairs = _pairs(data, settings)
    side = masks.mask_scope(data, settings.split).side
    return scope.Scope(settings.split, side, len(pairs), len(every), "(image, phrase) pairs")


def read(predictions: Path, data: Release, settings: Settings) -> Given:
    """The run's detections by pair, checked: one naming no pair of the release, without a
    finite score or without the shape ``--iou-type`` scores is one line
    (``scoring.concept_files.read_run``); detections of pairs outside the scored side are refused
    in one line (``scope``)."""
    every, pairs = _pairs(data, settings)
    sizes = {
        int(i): (int(h), int(w)) for i, h, w in data.images[["image_id", "height", "width"]].itertuples(index=False)
    }
    known = files.Annotations(Path("the release's pairs (numbered as export --format saco numbers them)"))
    for p in every:
        known.phrase[p["id"]], known.size[p["id"]] = p["label"], sizes[p["image_id"]]
    try:
        detections = files.read_run(Path(predictions), known, settings.iou_type)
    except InputError as exc:
        raise TaskError(str(exc)) from None
    scored = {p["id"] for p in pairs}
    if outside := [p for p in detections if p not in scored]:
        count = sum(len(detections[p]) for p in outside)
        raise scope_of(data, settings).refuse(predictions, count, f"detections on {len(outside)} pairs")
    return Given(pairs, detections)


def truth(data: Release, pairs: list[dict[str, Any]], annotator: str) -> dict[int, list[dict[str, Any]]]:
    """``annotator``'s instances of each pair: its regions of the pair's label on the pair's image."""
    from pycocotools import mask as coco_mask

    pair_of = {(p["image_id"], p["label"]): p["id"] for p in pairs}
    images = sorted({p["image_id"] for p in pairs})
    regions = data.image_regions(images, annotator, ["image_id", "label", "iscrowd", "mask"])
    out: dict[int, list[dict[str, Any]]] = {p["id"]: [] for p in pairs}
    for image_id, label, crowd, mask in regions[["image_id", "label", "iscrowd", "mask"]].itertuples(index=False):
        pair = pair_of.get((int(image_id), str(label)))
        if pair is None or not isinstance(mask, dict):
            continue
        rle = {"size": [int(v) for v in mask["size"]], "counts": mask["counts"]}
        out[pair].append(
            {
                "segmentation": rle,
                "bbox": [float(v) for v in coco_mask.toBbox(rle)],
                "iscrowd": int(crowd is True or crowd == 1),
            }
        )
    return out


def exhaustive(pairs: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The pairs SA-Co's rule scores against the annotators ``names``: those each of them
    annotated exhaustively (a made pair is, for every annotator: ``io.saco.pairs``)."""
    return [p for p in pairs if all(p["exhaustive"].get(a, True) for a in names)]


def score(run: Run[Settings]) -> dict[str, Any]:
    """The run against the chosen truth, each annotator alone (with several), by vocabulary
    level, the human ceiling and the intervals of cgF1, pmF1 and IL_MCC over images; on the
    pairs the chosen annotators annotated exhaustively (``exhaustive``)."""
    data, settings, given = run.data, run.settings, run.given
    who, humans = settings.truths(data), masks.humans(data)
    shape = "segmentation" if settings.iou_type == "segm" else "bbox"
    ceiling = humans if len(humans) > 1 else []
    by_name = {a: truth(data, given.pairs, a) for a in dict.fromkeys([*who, *ceiling])}  # each read once
    truths = [by_name[a] for a in who]
    pairs = exhaustive(given.pairs, who)
    ids = [p["id"] for p in pairs]
    scored = files.oracle_pairs(given.detections, truths, ids, shape)
    report: dict[str, Any] = {
        "pairs": len(ids),
        "pairs_left_out": len(given.pairs) - len(ids),
        "negatives": sum(not p["positive"] for p in pairs),
        "detections": sum(len(v) for v in given.detections.values()),
        "truth": "the oracle over " + ", ".join(who) if len(who) > 1 else who[0],
        "measures": concept_f1.summary(concept_f1.figures(scored)),
    }
    if len(who) > 1:
        report["by_annotator"] = {
            a: concept_f1.summary(concept_f1.figures(files.oracle_pairs(given.detections, [t], ids, shape)))
            for a, t in zip(who, truths, strict=True)
        }
    report["by_level"] = _by_level(data, pairs, scored)
    if ceiling:
        report["human_ceiling"] = _ceiling({a: by_name[a] for a in ceiling}, given.pairs, shape)
    images, per_image = _per_image(pairs, scored)
    report["per_image"] = _image_scores(images, per_image)
    if settings.resamples:
        values = bootstrap.additive(per_image, concept_f1.headline, settings.resamples, settings.seed)
        report |= bootstrap.report(values, [str(i) for i in images], settings.resamples, settings.seed)
    return report


def _ceiling(
    truths: dict[str, dict[int, list[dict[str, Any]]]], pairs: list[dict[str, Any]], shape: str
) -> dict[str, Any]:
    """``concept_files.ceiling`` of the annotators ``truths`` on the ``pairs`` each of them
    annotated exhaustively."""
    return files.ceiling(truths, [p["id"] for p in exhaustive(pairs, list(truths))], shape)


def human_ceiling(data: Release, iou_type: str = "segm") -> dict[str, Any] | None:
    """The release's own human ceiling on its concepts, as the build's ``concept_ceiling`` stage
        reports it for the card and the site: on the pairs of the side ``evaluate`` scores by default
    (``default_split``: the source's evaluation split, else the test side; ``_pairs``) that
        every human annotator annotated exhaustively, each annotator's regions as a run (score 1)
        against the oracle over the others (``concept_files.ceiling``); its cgF1, pmF1 and IL_MCC,
        each annotator's and their means. None with fewer than two human annotators or no pair."""
    settings = Settings(split=default_split(data), iou_type=iou_type).resolve(data)  # evaluate's side
    humans = masks.humans(data)
    agreed = exhaustive(_pairs(data, settings)[1], humans)
    if len(humans) < 2 or not agreed:
        return None
    shape = "segmentation" if iou_type == "segm" else "bbox"
    found = files.ceiling({a: truth(data, agreed, a) for a in humans}, [p["id"] for p in agreed], shape)
    return {
        "split": settings.split, "iou_type": iou_type, "annotators": humans, "pairs": len(agreed),
        "negatives": sum(not p["positive"] for p in agreed),
    } | found  # fmt: skip


def _by_level(data: Release, pairs: list[dict[str, Any]], scored: list[concept_f1.Pair]) -> dict[str, Any]:
    """The headline figures of the pairs whose label sits at each depth of the vocabulary."""
    depth = dict(zip(data.vocabulary["label"].astype(str), data.vocabulary["depth"].astype(int), strict=True))
    levels: dict[int, list[concept_f1.Pair]] = {}
    for p, found in zip(pairs, scored, strict=True):
        levels.setdefault(depth.get(p["label"], 0), []).append(found)
    return {
        str(level): {"pairs": len(mine)} | {k: v for k, v in concept_f1.summary(concept_f1.figures(mine)).items()
                                           if k in files.CEILING}
        for level, mine in sorted(levels.items())
    }  # fmt: skip


def _per_image(pairs: list[dict[str, Any]], scored: list[concept_f1.Pair]) -> tuple[list[int], np.ndarray]:
    """The scored images (in id order) and each one's pairs' tallies summed (``concept_f1.tallies``):
    additive, so a bootstrap resample of images sums them as often as it draws each image, and its
    cgF1, pmF1 and IL_MCC (``concept_f1.headline``) are the figures of the drawn images' pairs."""
    images = sorted({p["image_id"] for p in pairs})
    row = {image_id: k for k, image_id in enumerate(images)}
    per_image = np.zeros((len(images), concept_f1.WIDTH))
    for p, found in zip(pairs, scored, strict=True):
        per_image[row[p["image_id"]]] += concept_f1.tallies(found)
    return images, per_image


def _image_scores(images: list[int], per_image: np.ndarray) -> dict[int, float]:
    """Per image (what ``view`` sorts and colours it by), the F1 of its pairs' instances over
    0.50:0.95; 1 where its pairs hold neither truth nor detections (its negatives all right)."""
    t = len(concept_f1.THRESHOLDS)
    f1 = concept_f1.from_tallies(per_image)["F1"].mean(axis=1)
    empty = per_image[:, : 3 * t].sum(axis=1) == 0
    return {int(i): 1.0 if e else float(v) for i, v, e in zip(images, f1, empty, strict=True)}
