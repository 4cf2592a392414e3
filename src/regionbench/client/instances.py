"""Instance masks and boxes scored with COCO's protocol (docs/scoring.md, "Instances").

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
import io
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.core import errors, numbers
from regionbench.core.errors import InputError

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


def numbering(coverage: pd.DataFrame, annotator: str) -> dict[int, int]:
    """Release image id -> the id the annotator's file gave it; for one without a file (the
    consensus), the id every file that lists the image agrees on. The release's ids wherever
    there is none, or where two images would share one."""
    if "source_image_id" not in coverage.columns:
        return {}
    own = coverage[coverage["annotator"] == annotator]
    rows = own if own["source_image_id"].notna().any() else coverage
    given: dict[int, set[int]] = {}
    for image_id, source in zip(rows["image_id"], rows["source_image_id"], strict=True):
        given.setdefault(int(image_id), set()).add(int(source) if not pd.isna(source) else int(image_id))
    ids = {i: next(iter(s)) if len(s) == 1 else i for i, s in given.items()}
    return ids if len(set(ids.values())) == len(ids) else {}


def _category_ids(named: pd.DataFrame | None) -> dict[str, int]:
    """Label -> the one category id the source files give it (``source_categories``), where they
    agree; a region without its own ``category_id`` (the consensus) takes it."""
    if named is None or named.empty:
        return {}
    found: dict[str, set[int]] = {}
    for label, category in zip(named["label"], named["category_id"], strict=True):
        if isinstance(label, str):
            found.setdefault(label, set()).add(int(category))
    return {label: next(iter(ids)) for label, ids in found.items() if len(ids) == 1}


def truth_categories(
    regions: pd.DataFrame, vocabulary: pd.DataFrame, annotator: str, named: pd.DataFrame | None = None
) -> dict[int, str]:
    """The categories a truth of ``annotator``'s regions scores, id -> label, present among the
    scored images or not (COCO's files list every category; a detection of one without instances
    counts in no figure):

    - an annotator whose file numbered its categories: that file's categories that map to a
      label (``named``, the release's ``source_categories``), under the file's ids;
    - otherwise (the consensus, a layout without category ids): every label of ``vocabulary``,
      under the id the files agree on for it, else its label id; the label ids for all where two
      labels would share an id."""
    own = regions[(regions["annotator"] == annotator) & regions["category_id"].notna()]
    if not own.empty:
        out: dict[int, str] = {}
        if named is not None and not named.empty:
            rows = named[(named["annotator"] == annotator) & named["label"].notna()]
            out = {int(c): str(label) for c, label in zip(rows["category_id"], rows["label"], strict=True)}
        for c, label in zip(own["category_id"], own["label"], strict=True):
            out.setdefault(int(c), str(label))
        return dict(sorted(out.items()))
    labels = dict(zip(vocabulary["label"].astype(str), vocabulary["label_id"].astype(int), strict=True))
    agreed = _category_ids(named)
    ids = {label: agreed.get(label, label_id) for label, label_id in labels.items()}
    if len(set(ids.values())) < len(ids):
        ids = labels
    return {c: label for label, c in sorted(ids.items(), key=lambda item: item[1])}


def category_names(categories: dict[int, str], named: pd.DataFrame | None, annotator: str) -> dict[str, int]:
    """Name -> category id, the names a detection's ``label`` may give: each category's release
    label (the vocabulary key), and the name the source spells it by (``source_categories``:
    ``annotator``'s file, or any file where ``annotator`` has none), where that name is not
    another category's label."""
    out = {label: c for c, label in categories.items()}
    if named is None or named.empty:
        return out
    rows = named[named["label"].notna()]
    if (rows["annotator"] == annotator).any():
        rows = rows[rows["annotator"] == annotator]
    for name, label in zip(rows["name"].astype(str), rows["label"].astype(str), strict=True):
        if label in out:
            out.setdefault(name, out[label])
    return out


def ground_truth(
    regions: pd.DataFrame,
    images: pd.DataFrame,
    coverage: pd.DataFrame,
    annotator: str,
    categories: dict[int, str],
) -> dict:
    """The COCO instances document of ``annotator``'s regions of ``images`` (rows of the release's
    images table), numbered as the source numbered them (module docstring), under
    ``categories`` (``truth_categories``: id -> label)."""
    ids = numbering(coverage, annotator)
    category_of = {label: c for c, label in categories.items()}
    categories = dict(categories)
    chosen = set(images["image_id"].astype(int))
    mine = regions[(regions["annotator"] == annotator) & regions["image_id"].isin(chosen) & regions["mask"].notna()]
    annotations = []
    rows: list[dict[str, Any]] = mine.sort_values(["image_id", "region_id"]).to_dict("records")  # type: ignore[assignment]
    for k, r in enumerate(rows, start=1):
        if not pd.isna(r["category_id"]):
            category = int(r["category_id"])
        else:  # a region its file did not number among regions it did: its label id
            category = category_of.get(str(r["label"]), int(r["label_id"]))
        categories.setdefault(category, str(r["label"]))
        box = [r.get(f"source_bbox_{c}") for c in "xywh"]
        measured = [float(r[f"bbox_{c}"]) for c in "xywh"]
        area = r.get("source_area")
        annotations.append(
            {
                "id": k,
                "image_id": ids.get(int(r["image_id"]), int(r["image_id"])),
                "category_id": category,
                "segmentation": {"size": [int(v) for v in r["mask"]["size"]], "counts": r["mask"]["counts"]},
                "area": float(area) if area is not None and not pd.isna(area) else float(r["area_px"]),
                "bbox": [float(v or 0) for v in box] if not any(v is None or pd.isna(v) for v in box) else measured,
                "iscrowd": int(bool(r["iscrowd"])),
            }
        )
    entries = [
        {"id": ids.get(int(i), int(i)), "width": int(w), "height": int(h), "file_name": str(p)}
        for i, w, h, p in images[["image_id", "width", "height", "path"]].itertuples(index=False)
    ]
    return {
        "images": sorted(entries, key=lambda e: e["id"]),
        "annotations": annotations,
        "categories": [{"id": c, "name": n} for c, n in sorted(categories.items())],
    }


def as_detections(regions: pd.DataFrame, annotator: str, truth: dict, numbering: dict[int, int]) -> list[dict]:
    """``annotator``'s regions (crowd regions aside) as detections of score 1 against ``truth``:
    its images numbered by ``numbering`` (release id -> the truth's, ``numbering``), its
    categories by label (the truth's ``categories`` are named by label)."""
    category = {c["name"]: c["id"] for c in truth["categories"]}
    known = {e["id"] for e in truth["images"]}
    mine = regions[(regions["annotator"] == annotator) & regions["mask"].notna() & ~regions["iscrowd"].astype(bool)]
    out = []
    for image_id, label, rle, *box in mine[
        ["image_id", "label", "mask", "bbox_x", "bbox_y", "bbox_w", "bbox_h"]
    ].itertuples(index=False):
        image = numbering.get(int(image_id), int(image_id))
        if image in known and label in category:
            out.append({"image_id": image, "category_id": category[label], "score": 1.0,
                        "segmentation": {"size": [int(v) for v in rle["size"]], "counts": rle["counts"]},
                        "bbox": [float(v) for v in box]})  # fmt: skip
    return out


def read_results(path: Path, truth: dict, names: Mapping[str, int], others: Collection[int] = ()) -> list[dict]:
    """The detections of a COCO results file, checked against ``truth``: every item an object
    with a known ``image_id``, a category of the truth by ``category_id`` (its id in the truth)
    or ``label`` (``names``: a name -> its id; ``category_names``), the two agreeing where both
    are given, a finite ``score``, and a ``segmentation`` (RLE of the image's size, or polygons
    inside it) or a ``bbox``; polygons become RLE. Raises ``OutsideImages`` where detections lie
    on ``others`` (images of the release the truth leaves out), else ``InstancesError`` with one
    line per problem (the first ten)."""
    return check_results(path, read_items(path), truth, names, others)


def read_items(path: Path) -> list[Any]:
    """The items of a COCO results file: a JSON list (its items checked by ``check_results``)."""
    try:
        items = errors.read_json(path, "a COCO results file")
    except ValueError as exc:
        raise InstancesError(f"{path}: {exc}") from None
    if not isinstance(items, list):
        raise InstancesError(f"{path}: a COCO results file is a JSON list of detections")
    return items


def check_results(
    path: Path, items: Sequence[Any], truth: dict, names: Mapping[str, int], others: Collection[int] = ()
) -> list[dict]:
    """``read_results`` of the ``items`` of the results file ``path``, already read."""
    sizes = {e["id"]: (e["height"], e["width"]) for e in truth["images"]}
    label_of = {c["id"]: c["name"] for c in truth["categories"]}
    problems, out, outside = [], [], Counter[int]()
    for n, item in enumerate(items):
        where = f"detection {n}"
        if not isinstance(item, dict):
            problems.append(f"{where}: not a JSON object")
            continue
        image = item.get("image_id")
        if isinstance(image, int) and not isinstance(image, bool) and image in others:
            outside[image] += 1
            continue
        if image not in sizes or isinstance(image, bool):
            problems.append(f"{where}: image_id {image!r} is no image of the release")
            continue
        category, problem = _category(item, label_of, names)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        score = numbers.json_number(item.get("score"))
        if score is None:
            problems.append(f"{where}: score {item.get('score')!r} is not a finite number")
            continue
        detection: dict[str, Any] = {"image_id": image, "category_id": category, "score": score}
        try:
            detection |= _shape(item, *sizes[image])
        except (ValueError, TypeError) as exc:
            problems.append(f"{where}: {errors.first_line(exc)}")
            continue
        out.append(detection)
    if outside:
        raise OutsideImages(sum(outside.values()), len(outside))
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise InstancesError(f"{path}: " + f"; {path}: ".join(problems[:10]) + more)
    return out


def _shape(item: dict[str, Any], height: int, width: int) -> dict[str, Any]:
    """A detection's ``segmentation`` (an RLE of the image's size, or polygons inside it, as RLE)
    and ``bbox`` (four numbers), at least one of them; a ``ValueError`` says what is wrong."""
    from pycocotools import mask as coco_mask

    found: dict[str, Any] = {}
    segmentation = item.get("segmentation")
    if isinstance(segmentation, dict):
        size = segmentation.get("size")
        if list(size or []) != [height, width]:
            raise ValueError(f"RLE size {size!r} differs from the image's [{height}, {width}]")
        counts = segmentation.get("counts")
        rle = {"size": [height, width], "counts": counts.encode() if isinstance(counts, str) else counts}
        if isinstance(counts, list):
            rle = coco_mask.frPyObjects(rle, height, width)
        coco_mask.area(rle)  # decodable, or an error here
        found["segmentation"] = rle
    elif isinstance(segmentation, list):
        flat = [v for part in segmentation for v in (part if isinstance(part, list) else [None])]
        if not flat or any(numbers.json_number(v) is None for v in flat):
            raise ValueError("polygons must be lists of finite numbers")
        xs, ys = np.array(flat[0::2], dtype=float), np.array(flat[1::2], dtype=float)
        if xs.min() < 0 or ys.min() < 0 or xs.max() > width or ys.max() > height:
            raise ValueError(f"a polygon leaves the {width}x{height} image")
        found["segmentation"] = coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
    elif segmentation is not None:
        raise ValueError("segmentation is neither an RLE nor polygons")
    box = item.get("bbox")
    if box is not None:
        if not (isinstance(box, list) and len(box) == 4 and all(numbers.json_number(v) is not None for v in box)):
            raise ValueError(f"bbox {box!r} is not four numbers")
        found["bbox"] = [float(v) for v in box]
    if not found:
        raise ValueError("neither a segmentation nor a bbox")
    return found


def _category(item: dict, label_of: Mapping[int, str], names: Mapping[str, int]) -> tuple[int, str | None]:
    """A detection's category id from its ``category_id`` or ``label`` (both: they must agree),
    or the reason there is none."""
    given, label = item.get("category_id"), item.get("label")
    if given is None and label is None:
        return 0, "no category_id or label"
    by_id = given if isinstance(given, int) and not isinstance(given, bool) and given in label_of else None
    if given is not None and by_id is None:
        return 0, f"category_id {given!r} is not a category of the truth (give its id in the source file, or a label)"
    by_label = names.get(label) if isinstance(label, str) else None
    if label is not None and by_label is None:
        return 0, f"label {label!r} names no category of the truth (give a label of the release or the source's name)"
    if by_id is not None and by_label is not None and by_id != by_label:
        return 0, (
            f"category_id {by_id} ({label_of[by_id]}) and label {label!r} ({label_of[by_label]}) disagree; give one"
        )
    return int(by_id if by_id is not None else by_label), None  # type: ignore[arg-type]


@dataclass(frozen=True)
class Match:
    """What became of one detection at IoU 0.5 (``matches``): ``index`` in the detections given;
    ``outcome`` "matched" (it took an instance), "unmatched" (it took none: a false positive),
    "crowd" (unmatched but lying on a crowd region: not counted) or "dropped" (beyond the
    ``max_dets`` best of its image and category: not scored); ``iou`` its IoU with the instance
    it took, else its best with any instance of its category (0 when dropped)."""

    index: int
    outcome: str
    iou: float

    @property
    def matched(self) -> bool:
        return self.outcome == "matched"

    @property
    def counted(self) -> bool:
        """Whether the detection counts in the run's F1 (a match or a false positive)."""
        return self.outcome in ("matched", "unmatched")


def matches(truth: dict, detections: Sequence[dict], iou_type: str = "segm", max_dets: int = 100) -> list[Match]:
    """Each detection matched against ``truth``'s instances at IoU 0.5, as COCOeval matches at
    that threshold: per image and category, detections best score first (at most ``max_dets``
    kept) each take the unmatched instance they overlap most, at IoU >= 0.5. Crowd instances
    are never taken; a detection left unmatched that overlaps one by half (IoU with the
    detection's area as the union) is not counted against the run. Returns one ``Match`` per
    detection, in the detections' order."""
    from pycocotools import mask as coco_mask

    key = "segmentation" if iou_type == "segm" else "bbox"

    def shape(value: Any) -> Any:  # RLE counts as pycocotools takes them
        if key == "segmentation" and isinstance(value.get("counts"), str):
            return {"size": value["size"], "counts": value["counts"].encode()}
        return value

    instances: dict[tuple[int, int], list[Any]] = defaultdict(list)
    crowds: dict[tuple[int, int], list[Any]] = defaultdict(list)
    for a in truth["annotations"]:
        (crowds if a["iscrowd"] else instances)[(a["image_id"], a["category_id"])].append(shape(a[key]))
    found: dict[tuple[int, int], list[int]] = defaultdict(list)
    for k, d in enumerate(detections):
        found[(d["image_id"], d["category_id"])].append(k)
    out: list[Match] = []
    for group, mine in found.items():
        mine = sorted(mine, key=lambda k: -detections[k]["score"])
        out += [Match(k, "dropped", 0.0) for k in mine[max_dets:]]
        mine = mine[:max_dets]
        boxes = [shape(detections[k][key]) for k in mine]
        taken = np.zeros(len(instances[group]), dtype=bool)
        ious = np.asarray(coco_mask.iou(boxes, instances[group], [0] * len(taken))) if taken.size else None
        in_crowd = (
            np.asarray(coco_mask.iou(boxes, crowds[group], [1] * len(crowds[group]))).max(axis=1) >= 0.5
            if crowds[group]
            else np.zeros(len(mine), dtype=bool)
        )
        for n, k in enumerate(mine):
            best_iou = float(ious[n].max()) if ious is not None else 0.0
            if ious is not None:
                candidates = np.where(taken, -1.0, ious[n])
                best = int(np.argmax(candidates))
                if candidates[best] >= 0.5:
                    taken[best] = True
                    out.append(Match(k, "matched", float(candidates[best])))
                    continue
            out.append(Match(k, "crowd" if in_crowd[n] else "unmatched", best_iou))
    return sorted(out, key=lambda m: m.index)


def per_image_f1(
    truth: dict, detections: Sequence[dict], iou_type: str = "segm", max_dets: int = 100
) -> dict[int, float]:
    """Per image of ``truth`` (its numbering), the F1 at IoU 0.5 of ``detections`` against the
    image's instances (``matches``): F1 = 2 matched / (instances + counted detections), 1 when
    the image has neither; crowd instances are not counted."""
    counted: Counter[int] = Counter(a["image_id"] for a in truth["annotations"] if not a["iscrowd"])
    matched: Counter[int] = Counter()
    for m in matches(truth, detections, iou_type, max_dets):
        image = detections[m.index]["image_id"]
        counted[image] += m.counted
        matched[image] += m.matched
    return {
        int(entry["id"]): 2 * matched[entry["id"]] / counted[entry["id"]] if counted[entry["id"]] else 1.0
        for entry in truth["images"]
    }


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


def score(
    truth: dict,
    detections: Sequence[dict],
    iou_type: str = "segm",
    max_dets: Sequence[int] = (1, 10, 100),
    area_ranges: dict[str, tuple[float, float]] | None = None,
) -> dict:
    """COCOeval of ``detections`` against ``truth`` (a COCO instances document): the 12 summary
    figures (``STATS``, -1 where a figure has no ground truth, as COCOeval gives it), per-category
    AP (over IoU .50:.95, all areas, the last ``max_dets``), and the settings."""
    from faster_coco_eval import COCO, COCOeval_faster

    if iou_type not in ("segm", "bbox"):
        raise InstancesError(f"--iou-type {iou_type}: use segm or bbox")
    if iou_type == "segm" and any("segmentation" not in d for d in detections):
        raise InstancesError(
            "--iou-type segm: every detection needs a segmentation (or score boxes with --iou-type bbox)"
        )
    ranges = merged_area_ranges(area_ranges or {})
    with contextlib.redirect_stdout(io.StringIO()):  # the engine prints its progress
        gt = COCO()
        gt.dataset = json.loads(json.dumps(truth))
        gt.createIndex()
        dt = gt.loadRes([dict(d) for d in detections]) if detections else COCO()
        if not detections:
            dt.dataset = {"images": truth["images"], "annotations": [], "categories": truth["categories"]}
            dt.createIndex()
        evaluation = COCOeval_faster(gt, dt, iou_type, print_function=lambda *args, **kwargs: None)
        evaluation.params.maxDets = list(max_dets)
        evaluation.params.areaRng = [[0.0, 1e10]] + [list(ranges[k]) for k in ("small", "medium", "large")]
        evaluation.params.areaRngLbl = ["all", "small", "medium", "large"]
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    stats = dict(zip(STATS, (float(v) for v in evaluation.stats[: len(STATS)]), strict=True))
    if list(max_dets)[-1] != 100:
        stats = {k.replace("AR100", f"AR{list(max_dets)[-1]}"): v for k, v in stats.items()}
    precision = evaluation.eval["precision"][:, :, :, 0, -1]  # T x R x K, all areas, the most detections
    names = {c["id"]: c["name"] for c in truth["categories"]}
    per_category, absent = {}, []
    for k, category in enumerate(evaluation.params.catIds):
        values = precision[:, :, k]
        values = values[values > -1]
        if values.size:
            per_category[names.get(category, str(category))] = float(values.mean())
        else:  # no instance to find among the scored images (crowds aside): in no mean
            absent.append(names.get(category, str(category)))
    return {
        "iou_type": iou_type,
        "max_dets": list(max_dets),
        "area_ranges": {k: list(v) for k, v in ranges.items()},
        "images": len(truth["images"]),
        "ground_truth": len(truth["annotations"]),
        "crowd": sum(a["iscrowd"] for a in truth["annotations"]),
        "detections": len(detections),
        "stats": stats,
        "per_category_ap": per_category,
        "categories_absent": sorted(absent),
    }
