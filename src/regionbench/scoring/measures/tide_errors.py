"""Why a detector fails: TIDE's error types (Bolya et al., "TIDE: A General Toolbox for Identifying
Object Detection Errors", ECCV 2020), counted as its reference code (``tidecv``) counts them.

At one IoU threshold t_f (0.5) and a background threshold t_b (0.1), each image's detections,
best first and at most ``max_dets``, are matched greedily to unmatched truth instances of their
class at IoU >= t_f (crowd regions: a detection more than t_f inside one of its class is left
out). Each detection that is not a match is, in this order:

- **Loc**: its best IoU with a truth instance of its class is in [t_b, t_f];
- **Cls**: its best IoU with a truth instance of another class is >= t_f;
- **Dupe**: its best IoU with an already matched instance of its class is >= t_f;
- **Bkg**: its best IoU with any truth instance is <= t_b (or the image has none);
- **Both**: anything else;

and a truth instance matched by nothing that no Loc or Cls error could take is **Miss**.

AP is TIDE's own (101 recall points, per class, the mean over the classes with a detection or an
instance, in percent). Each error type's dAP is the AP with its errors fixed (a Loc or Cls error
becomes a match of its instance, the best-scored one per instance; a Miss leaves the truth;
Dupe, Bkg and Both leave the detections) minus the AP, 0 when negative. FalsePos and FalseNeg
are the AP with every false positive scored 0, and with every missed instance removed, minus it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAIN = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")
SPECIAL = ("FalsePos", "FalseNeg")
FOREGROUND, BACKGROUND = 0.5, 0.1


@dataclass
class PerClass:
    """One class's AP data: detections by id (score, whether a match, in push order) and how
    many truth instances there are."""

    points: dict[int, tuple[float, bool]] = field(default_factory=dict)
    positives: int = 0

    def empty(self) -> bool:
        return not self.points and self.positives == 0

    def ap(self) -> float:
        """TIDE's AP of the class, in percent: precision made non-increasing, read at 101 recall
        points (the first point at or above each), averaged."""
        if self.positives == 0:
            return 0.0
        ranked = sorted(self.points.values(), key=lambda p: -p[0])
        hits = np.cumsum([p[1] for p in ranked], dtype=np.int64) if ranked else np.zeros(0, np.int64)
        count = np.arange(1, len(ranked) + 1)
        precision = (hits / count).tolist() if len(ranked) else []
        recall = hits / self.positives
        for i in range(len(precision) - 1, 0, -1):
            if precision[i] > precision[i - 1]:
                precision[i - 1] = precision[i]
        points = np.array([x / 100 for x in range(101)])
        index = np.searchsorted(recall, points, side="left")
        values = [precision[i] if i < len(precision) else 0 for i in index]
        return sum(values) / len(values) * 100


@dataclass
class Classed:
    """Per class ``PerClass``, in the order the classes are first met."""

    by_class: dict[int, PerClass] = field(default_factory=dict)

    def of(self, class_id: int) -> PerClass:
        return self.by_class.setdefault(class_id, PerClass())

    def mean_ap(self) -> float:
        aps = [c.ap() for c in self.by_class.values() if not c.empty()]
        return sum(aps) / len(aps) if aps else 0.0


@dataclass
class Error:
    """One error: its ``kind`` (``MAIN``), the detection's or the missed instance's id, its data
    point as counted (``original``: class, (score, match) or None) and fixed (``fixed``: class and
    a data point, None, or -1: one truth instance fewer)."""

    kind: str
    id: Any
    original: tuple[int, tuple[float, bool]] | None
    fixed: tuple[int, tuple[float, bool] | int | None] | None = None
    fix_rule: Any = None  # the instance (dict) a Loc or Cls error would take, for the best-scored rule
    image: Any = None  # the image it is of


def _iou(a: Sequence[Any], b: Sequence[Any], crowd: Sequence[bool]) -> np.ndarray:
    from pycocotools import mask as coco_mask

    if not len(a) or not len(b):
        return np.zeros((len(a), len(b)))
    return np.asarray(coco_mask.iou(list(a), list(b), list(crowd)), dtype=np.float64).reshape(len(a), len(b))


@dataclass
class Part:
    """What images give TIDE before its figures: the AP data, the errors (each fixed as its image
    decided), the missed instances by class, each detection's outcome and the truth instance it
    overlaps most, whatever its class (``nearest``: detection id -> (IoU, instance id)), and each
    detection's image (``image_of``). Parts of ranges of images join in image order (``add``)
    into the run's; ``ordered`` puts them in another order of the images."""

    data: Classed = field(default_factory=Classed)
    errors: list[Error] = field(default_factory=list)
    missed: dict[int, list[Any]] = field(default_factory=dict)
    outcomes: dict[Any, str] = field(default_factory=dict)
    nearest: dict[Any, tuple[float, Any]] = field(default_factory=dict)
    image_of: dict[Any, Any] = field(default_factory=dict)

    def add(self, other: Part) -> None:
        for class_id, found in other.data.by_class.items():
            mine = self.data.of(class_id)
            mine.points.update(found.points)
            mine.positives += found.positives
        self.errors += other.errors
        for class_id, ids in other.missed.items():
            self.missed.setdefault(class_id, []).extend(ids)
        self.outcomes |= other.outcomes
        self.nearest |= other.nearest
        self.image_of |= other.image_of

    def ordered(self, order: Mapping[Any, int]) -> Part:
        """The part as if its images had been met in ``order`` (image -> position; an image not in
        it after those that are): tidecv walks the images in its truth file's order, and a tie
        between two images' detections falls in that order, in AP and in every fixed AP."""

        def place(image: Any) -> float:
            return order.get(image, float("inf"))

        data = Classed()
        for class_id, found in self.data.by_class.items():  # a stable sort keeps an image's own order
            mine = data.of(class_id)
            mine.positives = found.positives
            mine.points = dict(sorted(found.points.items(), key=lambda kv: place(self.image_of[kv[0]])))
        errors = sorted(self.errors, key=lambda e: place(e.image))
        return Part(data, errors, self.missed, self.outcomes, self.nearest, self.image_of)


def collect(
    images: Iterable[int],
    truth: Mapping[int, list[dict[str, Any]]],
    detections: Mapping[int, list[dict[str, Any]]],
    shape: str = "segmentation",
    max_dets: int = 100,
    foreground: float = FOREGROUND,
    background: float = BACKGROUND,
) -> Part:
    """TIDE's ``Part`` of ``images`` (in order): truth instances ``{id, category_id, iscrowd,
    <shape>}`` and detections ``{id, category_id, score, <shape>}`` by image id (``shape``:
    ``segmentation``, an RLE, or ``bbox``), ids unique among their kind over the run."""
    part = Part()
    for image in images:
        gt = [dict(g) for g in truth.get(image, [])]  # marked while matched: copies
        for g in gt:
            if not g["iscrowd"]:
                part.data.of(g["category_id"]).positives += 1
        preds = sorted(detections.get(image, []), key=lambda d: -d["score"])[:max_dets]
        part.image_of.update((p["id"], image) for p in preds)
        _image(preds, gt, shape, foreground, background, part, image)
    return part


def summarize(part: Part, order: Mapping[Any, int] | None = None) -> dict[str, Any]:
    """TIDE's figures of a run's ``Part``: ``ap`` (in percent, at the foreground IoU), ``main``
    and ``special`` dAP by error type, ``counts`` of each main error; ``order``: the images in
    the truth file's order (image -> position; ``Part.ordered``), else in the order collected."""
    if order:
        part = part.ordered(order)
    data, errors = part.data, part.errors
    ap = data.mean_ap()
    main = {}
    for kind in MAIN:
        fixed = _fixed(data, errors, lambda e, k=kind: e.kind == k)
        main[kind] = max(fixed.mean_ap() - ap, 0.0)
    special = {
        "FalsePos": _fixed(data, errors, lambda e: False, zero_false_positives=True).mean_ap() - ap,
        "FalseNeg": _fixed(data, errors, lambda e: False, missed=part.missed).mean_ap() - ap,
    }
    counts = {kind: sum(e.kind == kind for e in errors) for kind in MAIN}
    return {"ap": ap, "main": main, "special": special, "counts": counts}


def _image(
    preds: list[dict[str, Any]], gt: list[dict[str, Any]], shape: str, foreground: float, background: float,
    part: Part, image: Any,
) -> None:  # fmt: skip
    """One image (``TIDERun._eval_image``); its Loc and Cls errors fixed as TIDE fixes them: an
    instance is taken by the best-scored error that wants it, the others fix nothing."""
    data, errors, missed, outcomes = part.data, part.errors, part.missed, part.outcomes
    first = len(errors)
    instances = [g for g in gt if not g["iscrowd"]]
    crowds = [g for g in gt if g["iscrowd"]]
    for g in instances:
        g["_used"], g["_usable"] = False, False
    if not preds:
        for g in instances:
            missed.setdefault(g["category_id"], []).append(g["id"])
            errors.append(Error("Miss", g["id"], None, (g["category_id"], -1), image=image))
        return
    iou = _iou([p[shape] for p in preds], [g[shape] for g in instances], [False] * len(instances))
    if instances:
        for k, j in enumerate(np.argmax(iou, axis=1).tolist()):
            part.nearest[preds[k]["id"]] = (float(iou[k, j]), instances[j]["id"])
    pred_class = np.array([p["category_id"] for p in preds])
    gt_class = np.array([g["category_id"] for g in instances])
    same = pred_class[:, None] == gt_class[None, :] if instances else np.zeros((len(preds), 0), bool)
    same_iou = iou * same
    used: list[bool | None] = [False] * len(preds)
    matched: dict[int, int] = {}  # pred index -> instance index
    if instances:
        buffer = same_iou.copy()
        for k in range(len(preds)):
            j = int(np.argmax(buffer[k]))
            if buffer[k, j] >= foreground:
                used[k], matched[k] = True, j
                instances[j]["_used"] = True
                buffer[:, j] = 0
    for crowd in crowds:
        inside = _iou([p[shape] for p in preds], [crowd[shape]], [True])[:, 0]
        for k in range(len(preds)):
            if not used[k] and inside[k] > foreground and crowd["category_id"] == preds[k]["category_id"]:
                used[k] = None
    gt_used = np.array([g["_used"] for g in instances], dtype=bool)[None, :]
    other_iou = iou * ~same if instances else same_iou
    used_same = gt_used * iou * same if instances else same_iou
    for k, p in enumerate(preds):
        if used[k] is not None:
            data.of(p["category_id"]).points[p["id"]] = (p["score"], bool(used[k]))
        if used[k]:
            outcomes[p["id"]] = "match"
            continue
        original = None if used[k] is None else (p["category_id"], (p["score"], False))
        kind = _kind(k, instances, same_iou, other_iou, used_same, iou, foreground, background)
        outcomes[p["id"]] = "ignored" if used[k] is None else kind
        error = Error(kind, p["id"], original, None, image=image)
        if kind in ("Loc", "Cls"):
            j = int(np.argmax(same_iou[k] if kind == "Loc" else other_iou[k]))
            instance = instances[j]
            fixed_class = p["category_id"] if kind == "Loc" else instance["category_id"]
            if not instance["_used"]:  # the instance is taken by the best-scored error that wants it
                instance["_usable"] = True
                if instance.get("_best_score", -1) < p["score"]:
                    instance["_best_score"], instance["_best"] = p["score"], p["id"]
                error.fix_rule = (instance, fixed_class, p["score"])
        errors.append(error)
    for g in instances:
        if not g["_used"]:
            missed.setdefault(g["category_id"], []).append(g["id"])
            if not g["_usable"]:
                errors.append(Error("Miss", g["id"], None, (g["category_id"], -1), image=image))
    for error in errors[first:]:
        if error.fix_rule is not None:
            instance, fixed_class, score = error.fix_rule
            best = instance["_best"] == error.id and not instance["_used"]
            error.fixed, error.fix_rule = (fixed_class, (score, True) if best else None), None


def _kind(
    k: int, instances: list[dict[str, Any]], same_iou: np.ndarray, other_iou: np.ndarray, used_same: np.ndarray,
    iou: np.ndarray, foreground: float, background: float,
) -> str:  # fmt: skip
    """The error type of unmatched detection ``k`` (module docstring, in TIDE's order)."""
    if not instances:
        return "Bkg"
    if background <= same_iou[k].max() <= foreground:
        return "Loc"
    if other_iou[k].max() >= foreground:
        return "Cls"
    if used_same[k].max() >= foreground:
        return "Dupe"
    if iou[k].max() <= background:
        return "Bkg"
    return "Both"


def _fixed(
    data: Classed, errors: list[Error], condition: Any, zero_false_positives: bool = False,
    missed: Mapping[int, list[int]] | None = None,
) -> Classed:  # fmt: skip
    """The AP data with the errors ``condition`` holds for fixed (``TIDERun.fix_errors``):
    ``zero_false_positives`` scores every false positive 0 and every match 1, ``missed`` removes
    those instances from the truth."""
    positives = {c: d.positives for c, d in data.by_class.items()}
    out = Classed()

    def push(class_id: int, point_id: int, point: tuple[float, bool]) -> None:
        if zero_false_positives:
            point = (1.0, True) if point[1] else (0.0, False)
        out.of(class_id).points[point_id] = point

    for error in errors:
        chosen: tuple[Any, Any] = error.original or (None, None)
        if condition(error):
            chosen = error.fixed or (None, None)
            if isinstance(chosen[1], int):  # a missed instance leaves the truth
                positives[chosen[0]] += chosen[1]
                chosen = (None, None)
        if chosen[1] is not None:
            push(chosen[0], error.id, chosen[1])
    for class_id in positives:
        for point_id, point in data.by_class[class_id].points.items():
            if point[1]:
                push(class_id, point_id, point)
    for class_id, count in positives.items():
        out.of(class_id).positives += count - (len(missed[class_id]) if missed and class_id in missed else 0)
    return out
