"""A run scored against SA-Co's own files (``regionbench concepts``): the measure of
``measures.concept_f1`` on the (image, noun phrase) pairs of one annotator's file or the oracle
over several, as SAM 3's evaluator scores SA-Co/Gold.

A file is COCO-shaped: its ``images`` are the pairs (``id``, ``file_name``, ``height``,
``width``, ``text_input``: the phrase, ``is_instance_exhaustive``), its ``annotations`` the
instances (``image_id`` the pair, an RLE ``segmentation`` of the pair's size, ``bbox``,
``iscrowd``). The pairs scored are those the first file annotates exhaustively and no other
file leaves not so; a run names pairs by these ids, as SAM 3's predictions do. Each pair is
scored in turn: memory holds the files and one pair's masks.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pycocotools import mask as coco_mask

from regionbench.core.errors import InputError, read_json
from regionbench.scoring.measures import concept_f1
from regionbench.scoring.results import detection_shape

IOU_TYPES = ("segm", "bbox")


class ConceptsError(InputError):
    """A file that cannot be scored: one line naming it and what is wrong."""


@dataclass
class Annotations:
    """One annotator's SA-Co file: each pair's phrase, whether it is annotated exhaustively and
    its image size, and its instances."""

    path: Path
    phrase: dict[int, str] = field(default_factory=dict)
    exhaustive: dict[int, bool] = field(default_factory=dict)
    size: dict[int, tuple[int, int]] = field(default_factory=dict)
    instances: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))


def _json(path: Path, what: str) -> Any:
    """``errors.read_json`` of ``path``, its problem one line naming the file."""
    try:
        return read_json(Path(path), what)
    except ValueError as exc:
        raise ConceptsError(f"{path}: {exc}") from None


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def compressed(shape: dict[str, Any]) -> dict[str, Any]:
    """An instance or detection with its RLE compressed, as COCO's loaders make an uncompressed
    one (``counts`` a list of runs) before any IoU: what SAM 3's evaluator scores too."""
    segmentation = shape.get("segmentation")
    if isinstance(segmentation, dict) and isinstance(segmentation.get("counts"), list):
        return shape | {"segmentation": coco_mask.frPyObjects(segmentation, *segmentation["size"])}
    return shape


def rle_problem(segmentation: Any, size: tuple[int, int]) -> str | None:
    """What is wrong with an RLE ``segmentation`` for an image of ``size`` (height, width)."""
    if not isinstance(segmentation, dict) or not isinstance(segmentation.get("counts"), str | list):
        return "its segmentation is no RLE ({size, counts})"
    given = segmentation.get("size")
    if not isinstance(given, list) or [int(v) for v in given if _integer(v)] != list(size) or len(given) != 2:
        return f"its RLE is of size {given}, its pair's image is {list(size)}"
    try:  # its runs, as a COCO results file's are checked
        detection_shape({"segmentation": segmentation}, *size)
    except ValueError as exc:
        return str(exc)
    return None


def read(path: Path) -> Annotations:
    """One annotator's file, checked: a pair without a phrase, a pair listed twice, an
    instance of no pair, of another size than its pair's image or with another's id is one line
    naming it."""
    found = _json(path, "an SA-Co file")
    if not isinstance(found, dict) or not isinstance(found.get("images"), list):
        raise ConceptsError(f"{path}: no 'images' list: not an SA-Co file (its pairs are its images)")
    out = Annotations(Path(path))
    for n, entry in enumerate(found["images"]):
        given = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(given, int) or isinstance(given, bool):
            raise ConceptsError(f"{path}: images[{n}]: no integer id")
        pair = given
        phrase = entry.get("text_input")
        if not isinstance(phrase, str) or not phrase.strip():
            raise ConceptsError(f"{path}: pair {pair}: no text_input (its noun phrase); every pair names one")
        if pair in out.phrase:
            raise ConceptsError(f"{path}: pair {pair} is listed twice (images[{n}]); keep one entry a pair")
        height, width = entry.get("height"), entry.get("width")
        if not (_integer(height) and _integer(width)) or height <= 0 or width <= 0:
            raise ConceptsError(f"{path}: pair {pair}: no height and width of its image")
        out.phrase[pair], out.size[pair] = phrase, (height, width)
        out.exhaustive[pair] = bool(entry.get("is_instance_exhaustive", False))
    first_of: dict[object, int] = {}  # instance id -> where it was first given
    for n, annotation in enumerate(found.get("annotations") or []):
        named = annotation.get("image_id") if isinstance(annotation, dict) else None
        if not isinstance(named, int) or named not in out.phrase:
            raise ConceptsError(f"{path}: annotations[{n}]: image_id {named!r} names no pair of the file")
        # COCO's tools index instances by id: a repeated one would stand for another, unseen
        if (seen := first_of.setdefault(annotation.get("id"), n)) != n:
            raise ConceptsError(
                f"{path}: annotations[{n}] (pair {named}): id {annotation.get('id')!r} is the id of annotations[{seen}] "
                "too; give every instance its own id"
            )
        if (problem := rle_problem(annotation.get("segmentation"), out.size[named])) is not None:
            raise ConceptsError(f"{path}: annotations[{n}] (pair {named}): {problem}")
        out.instances[named].append(compressed(annotation))
    return out


def scored_pairs(files: Sequence[Annotations]) -> list[int]:
    """The pairs scored, in the first file's order: those it annotates exhaustively and no
    other file leaves not exhaustive (SA-Co's rule)."""
    partial = {p for f in files[1:] for p, done in f.exhaustive.items() if not done}
    return [p for p, done in files[0].exhaustive.items() if done and p not in partial]


def read_run(path: Path, first: Annotations, iou_type: str) -> dict[int, list[dict[str, Any]]]:
    """The run's detections by pair, those scored under ``concept_f1.SCORE`` left out; a
    detection of no pair, without a finite score or with a shape of another size is one line."""
    found = _json(path, "a predictions file")
    if not isinstance(found, list):
        raise ConceptsError(f"{path}: not a list of detections (SAM 3's predictions file)")
    shape = "segmentation" if iou_type == "segm" else "bbox"
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for n, d in enumerate(found):
        pair = d.get("image_id") if isinstance(d, dict) else None
        if pair not in first.phrase:
            raise ConceptsError(f"{path}: detection {n}: image_id {pair!r} names no pair of {first.path.name}")
        score = d.get("score")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise ConceptsError(f"{path}: detection {n}: no finite score")
        if shape not in d:
            raise ConceptsError(f"{path}: detection {n}: no {shape} (--iou-type {iou_type})")
        if shape == "segmentation" and (problem := rle_problem(d[shape], first.size[pair])) is not None:
            raise ConceptsError(f"{path}: detection {n} (pair {pair}): {problem}")
        if score >= concept_f1.SCORE:
            out[pair].append(compressed(d))
    return out


def ious(detections: list[dict[str, Any]], instances: list[dict[str, Any]], shape: str) -> np.ndarray:
    """IoU of each detection with each instance, crowds left out (pycocotools' IoU)."""
    plain = [a for a in instances if not a.get("iscrowd")]
    if not detections or not plain:
        return np.zeros((len(detections), len(plain)))
    found = coco_mask.iou([d[shape] for d in detections], [a[shape] for a in plain], [0] * len(plain))
    return np.asarray(found, dtype=np.float64).reshape(len(detections), len(plain))


def score(annotations: Sequence[Path], predictions: Path, iou_type: str = "segm") -> dict[str, Any]:
    """The run of ``predictions`` against the files ``annotations`` (one: that annotator; several:
    the oracle over them): the measure's figures (``concept_f1.summary``), the pairs scored and
    left out, and each pair's kind."""
    if iou_type not in IOU_TYPES:
        raise ConceptsError(f"--iou-type {iou_type}: use {' or '.join(IOU_TYPES)}")
    files = [read(Path(p)) for p in annotations]
    for f in files[1:]:
        if set(f.phrase) != set(files[0].phrase):
            raise ConceptsError(f"{f.path}: its pairs are not {files[0].path.name}'s; give the files of one subset")
    run = read_run(Path(predictions), files[0], iou_type)
    shape = "segmentation" if iou_type == "segm" else "bbox"
    chosen = scored_pairs(files)
    return {
        "annotations": [Path(p).name for p in annotations],
        "truth": "the oracle over the files" if len(files) > 1 else Path(annotations[0]).name,
        "iou_type": iou_type,
        "pairs": len(chosen),
        "pairs_left_out": len(files[0].phrase) - len(chosen),
        "measures": scored(run, files, chosen, shape),
        "human_ceiling": ceiling({f.path.name: f.instances for f in files}, chosen, shape),
    }


def oracle_pairs(
    run: Mapping[int, list[dict[str, Any]]],
    truths: Sequence[Mapping[int, list[dict[str, Any]]]],
    chosen: Sequence[int],
    shape: str,
) -> list[concept_f1.Pair]:
    """Each pair of ``chosen`` scored: ``run``'s detections of it against the oracle over
    ``truths`` (each an annotator's instances by pair; one: that annotator)."""
    return [
        concept_f1.oracle([concept_f1.pair(ious(run.get(p, []), t.get(p, []), shape)) for t in truths]) for p in chosen
    ]


def scored(
    run: dict[int, list[dict[str, Any]]], files: Sequence[Annotations], chosen: Sequence[int], shape: str
) -> dict[str, float | None]:
    """The figures of ``run`` (detections by pair) on the pairs ``chosen``, against the oracle
    over ``files`` (one file: that annotator)."""
    return concept_f1.summary(concept_f1.figures(oracle_pairs(run, [f.instances for f in files], chosen, shape)))


CEILING = ("cgF1", "pmF1", "IL_MCC", "cgF1@0.5", "cgF1@0.75")


def ceiling(
    truths: Mapping[str, Mapping[int, list[dict[str, Any]]]], chosen: Sequence[int], shape: str
) -> dict[str, Any]:
    """Each annotator's instances (``truths``: name -> instances by pair) as a run (score 1)
    against the oracle over the others, on the same pairs: its cgF1, pmF1 and IL_MCC, and their
    means over the annotators (none with one annotator)."""
    if len(truths) < 2:
        return {}
    each = {}
    for name, mine in truths.items():
        drawn = {p: [a | {"score": 1.0} for a in mine.get(p, []) if not a.get("iscrowd")] for p in chosen}
        others = [t for other, t in truths.items() if other != name]
        found = concept_f1.summary(concept_f1.figures(oracle_pairs(drawn, others, chosen, shape)))
        each[name] = {figure: found[figure] for figure in CEILING}
    means = {
        figure: float(np.mean([e[figure] for e in each.values()]))
        for figure in CEILING
        if all(e[figure] is not None for e in each.values())
    }
    return {"per_annotator": each} | means


def render(report: dict[str, Any]) -> str:
    """The report as the command prints it."""
    head = f"{report['truth']}  {report['iou_type']}  {report['pairs']} pairs ({report['pairs_left_out']} not exhaustive: left out)"
    lines = [head, "-" * len(head)]

    def shown(value: Any) -> str:
        return "none" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)

    lines += [f"{name:<32}  {shown(value)}" for name, value in report["measures"].items()]
    if ceiling := {k: v for k, v in report["human_ceiling"].items() if k != "per_annotator"}:
        lines.append("human ceiling (each annotator against the oracle over the others):")
        lines += [f"  human.{name:<26}  {shown(value)}" for name, value in ceiling.items()]
    return "\n".join(lines)
