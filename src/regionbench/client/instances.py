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
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import pandas as pd

from regionbench.core import errors, jsondepth, numbers
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


def truth_images(images: pd.DataFrame, ids: Mapping[int, int]) -> list[dict[str, Any]]:
    """The COCO ``images`` entries of rows of the release's images table, under the ids ``ids``
    gives them (release id -> the truth's, ``numbering``; else the release's), sorted by id."""
    entries = [
        {"id": ids.get(int(i), int(i)), "width": int(w), "height": int(h), "file_name": str(p)}
        for i, w, h, p in images[["image_id", "width", "height", "path"]].itertuples(index=False)
    ]
    return sorted(entries, key=lambda e: e["id"])


def ground_truth(
    regions: pd.DataFrame,
    images: pd.DataFrame,
    coverage: pd.DataFrame,
    annotator: str,
    categories: dict[int, str],
    ids: Mapping[int, int] | None = None,
) -> dict:
    """The COCO instances document of ``annotator``'s regions of ``images`` (rows of the release's
    images table), numbered as the source numbered them (module docstring; ``ids``: that
    ``numbering``, when known), under ``categories`` (``truth_categories``: id -> label)."""
    ids = numbering(coverage, annotator) if ids is None else ids
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
                "region_id": int(r["region_id"]),  # the release's, for what a page draws of it
            }
        )
    return {
        "images": truth_images(images, ids),
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


def read_results(
    path: Path, truth: dict, names: Mapping[str, int], others: Collection[int] = (), strict: bool = False
) -> list[dict]:
    """The detections of a COCO results file, checked against ``truth`` (``Checker``; ``strict``:
    refusing those of categories the truth lacks); raises ``OutsideImages`` where detections lie
    on ``others`` (images of the release the truth leaves out), else ``InstancesError`` with one
    line per problem (the first ten)."""
    return Checker(truth_header(truth), names, others, strict=strict).read(path, stream_items(path))


def stream_items(path: Path) -> Iterator[Any]:
    """The items of a COCO results file (a JSON list), read one at a time (ijson's C parser):
    memory by the item, not the file. ``InstancesError`` in one line where it is no file, not
    a list, or not JSON."""
    import ijson

    if problem := errors.file_problem(path, "a COCO results file"):
        raise InstancesError(f"{path}: {problem}")
    try:
        with path.open("rb") as f:
            if said := _encoding_problem(f.read(4)):
                raise InstancesError(f"{path}: {said}")
            f.seek(0)
            while (chunk := f.read(1 << 16)) and not chunk.strip(b" \t\r\n"):  # whitespace before the list
                pass
            if chunk.lstrip(b" \t\r\n")[:1] != b"[":
                raise InstancesError(f"{path}: a COCO results file is a JSON list of detections")
            if jsondepth.deeper_than(path, MAX_DEPTH):  # a streaming parser's memory grows with depth squared
                raise InstancesError(
                    f"{path}: arrays and objects nested more than {MAX_DEPTH} deep; a COCO results file is a "
                    "list of detections, whose deepest part, a polygon, is a list in a list"
                )
            f.seek(0)
            yield from ijson.items(f, "item", use_float=True)
    except ijson.JSONError as exc:
        said = errors.streamed_json_problem(
            exc, "write the results file as UTF-8 JSON", "write finite scores, e.g. json.dump(..., allow_nan=False)"
        )
        raise InstancesError(f"{path}: {said}") from None
    except OSError as exc:
        raise InstancesError(f"{path}: unreadable ({exc.strerror})") from None


MAX_DEPTH = 32  # levels a results file may nest: a detection's polygons are 4 deep


def _encoding_problem(head: bytes) -> str | None:
    """What the first bytes of a JSON file say of its encoding where it is not plain UTF-8 (JSON's
    own, RFC 8259): a byte-order mark, or UTF-16/32 (NUL bytes among the first four)."""
    if head.startswith(b"\xef\xbb\xbf"):
        return "begins with a UTF-8 byte-order mark; write it without one (encoding='utf-8', not 'utf-8-sig')"
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head:
        return "is UTF-16 or UTF-32 text; write it as UTF-8 (JSON's encoding)"
    return None


def truth_header(truth: dict) -> dict:
    """What checking detections needs of a truth: its ``images`` and ``categories``."""
    return {"images": truth["images"], "categories": truth["categories"]}


def _not_an_id(key: str, value: object, required: bool) -> str | None:
    """What is wrong with ``value`` as an id (``key``), or None: an id is a JSON integer, as COCO
    gives them. Text (``"213"``) and numbers with a decimal point (``213.0``) are named as what
    they are, not looked up and reported missing."""
    if value is None and not required:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return None
    if isinstance(value, str):
        return f'{key} {value!r} is text; write ids as JSON integers ({key}: 213, not "213")'
    if isinstance(value, float):
        return f"{key} {value!r} is a decimal number; write ids as JSON integers ({key}: 213, not 213.0)"
    if value is None:
        return f"{key} is missing; every detection names its image by id"
    return f"{key} {value!r} is not an id; write ids as JSON integers"


class Checker:
    """Detections checked one at a time against a truth's images and categories (``header``:
    ``truth_header``), as pycocotools' ``loadRes`` would take them and in the same pass:

    - every item an object with a known ``image_id``; ``others`` (images of the release the
      truth leaves out) are counted (``OutsideImages``), not checked;
    - a category of the truth by ``category_id`` (its id in the truth) or ``label`` (``names``:
      a name -> its id; ``category_names``), the two agreeing where both are given; a detection
      whose ``category_id`` alone names a category the truth lacks is left out and counted by id
      (``absent``), as COCOeval leaves it out (it evaluates the truth's categories only), or,
      ``strict``, refused (``keep_absent``: taken and counted, for TIDE, which counts them);
    - a finite ``score``; a ``segmentation`` (RLE of the image's size, or polygons inside it,
      made RLE) or a ``bbox`` (four numbers);
    - its ``area`` as ``loadRes`` states it: the box's where the run's first detection has a
      box, else the mask's (measured here, where the mask is decoded anyway); a box from the
      mask where it has none (``boxes``: for every detection, else only where the area needs it).

    ``take`` returns the detection (``None`` when refused), ``finish`` raises the problems."""

    def __init__(
        self,
        header: dict,
        names: Mapping[str, int],
        others: Collection[int] = (),
        boxes: bool = True,
        strict: bool = False,
        keep_absent: bool = False,
    ) -> None:
        self.boxes, self.strict = boxes, strict  # boxes: for every detection (scoring boxes, or drawing them)
        self.keep_absent = keep_absent  # TIDE, as tidecv, counts them: a class with detections and no instance
        self.absent = Counter[int]()  # detections left out, by the category id the truth lacks
        self.sizes = {e["id"]: (e["height"], e["width"]) for e in header["images"]}
        self.label_of = {c["id"]: c["name"] for c in header["categories"]}
        self.names, self.others = names, others
        self.problems: list[str] = []
        self.outside = Counter[int]()
        self.box_areas: bool | None = None  # loadRes: the first detection's kind decides for all

    def take(self, n: int, item: Any) -> dict[str, Any] | None:
        """Detection ``n`` (its position in the file) checked: the detection the engine reads."""
        where = f"detection {n}"
        if not isinstance(item, dict):
            self.problems.append(f"{where}: not a JSON object")
            return None
        for key in ("image_id", "category_id"):
            if (said := _not_an_id(key, item.get(key), required=key == "image_id")) is not None:
                self.problems.append(f"{where}: {said}")
                return None
        image: int = item["image_id"]
        if image in self.others:
            self.outside[image] += 1
            return None
        if image not in self.sizes:
            self.problems.append(f"{where}: image_id {image!r} is no image of the release")
            return None
        given = item.get("category_id")
        if (
            not self.strict
            and "label" not in item
            and isinstance(given, int)
            and not isinstance(given, bool)
            and given not in self.label_of
        ):
            self.absent[given] += 1
            if not self.keep_absent:
                return None
            category, problem = int(given), None  # checked as the others are: TIDE counts it
        else:
            category, problem = _category(item, self.label_of, self.names)
        if problem:
            self.problems.append(f"{where}: {problem}")
            return None
        score = numbers.json_number(item.get("score"))
        if score is None:
            self.problems.append(f"{where}: score {item.get('score')!r} is not a finite number")
            return None
        try:
            shape = _shape(item, *self.sizes[image])
        except (ValueError, TypeError) as exc:
            self.problems.append(f"{where}: {errors.first_line(exc)}")
            return None
        if self.box_areas is None:
            self.box_areas = "bbox" in shape
        detection: dict[str, Any] = {"image_id": image, "category_id": category, "score": score} | shape
        area = detection.pop("mask_area", None)
        if self.box_areas or area is None or self.boxes:
            if "bbox" not in detection:  # then it has a mask
                detection["bbox"] = _mask_box(detection["segmentation"])
            box = detection["bbox"]
            area = box[2] * box[3] if self.box_areas or area is None else area
        detection["area"] = area
        return detection

    def read(self, path: Path, items: Iterable[Any]) -> list[dict]:
        """Every item of the results file ``path`` taken in order, then its problems raised
        (``finish``): the detections kept."""
        out = [d for n, item in enumerate(items) if (d := self.take(n, item)) is not None]
        self.finish(path)
        return out

    def finish(self, path: Path) -> None:
        """Raise what was found: ``OutsideImages``, else ``InstancesError`` (the first ten problems)."""
        if self.outside:
            raise OutsideImages(sum(self.outside.values()), len(self.outside))
        if self.problems:
            more = f" (and {len(self.problems) - 10} more)" if len(self.problems) > 10 else ""
            raise InstancesError(f"{path}: " + f"; {path}: ".join(self.problems[:10]) + more)


def check_results(path: Path, items: Iterable[Any], truth: dict, names: Mapping[str, int]) -> list[dict]:
    """``read_results`` of the ``items`` of the results file ``path`` (``Checker.read``)."""
    return Checker(truth_header(truth), names).read(path, items)


def _mask_box(rle: dict[str, Any]) -> list[float]:
    return [float(v) for v in _masks().toBbox(rle)]


def decoded_runs(rle: dict[str, Any]) -> list[int]:
    """The runs faster-coco-eval decodes from a compressed RLE (``counts`` bytes) of ``size``
    (h, w), checked to make its mask: non-negative and h·w pixels in all. Counts that do not (a
    string cut short, a negative run, runs past the last pixel or stopping short) raise a
    ``ValueError`` here: the engine's IoU would loop for ever on them."""
    height, width = rle["size"]
    try:
        runs: list[int] = _engine_masks().toUncompressedRLE([rle])[0]["counts"]
    except (ValueError, RuntimeError) as exc:  # cut short, or past the last pixel
        reason = str(exc).rstrip(".")
    else:
        if sum(runs) == height * width:
            return runs
        reason = f"its runs make {sum(runs)} pixels, not {height * width}"
    raise ValueError(f"RLE counts do not make the {width}x{height} image's mask ({reason}); encode it with pycocotools")


@functools.cache
def _engine_masks() -> Any:
    """faster-coco-eval's mask module, imported once."""
    from faster_coco_eval import mask_api_new_cpp

    return mask_api_new_cpp


@functools.cache
def _masks() -> Any:
    """pycocotools' mask module, imported once (a detection at a time, an import costs as much as
    its checks)."""
    from pycocotools import mask

    return mask


def _shape(item: dict[str, Any], height: int, width: int) -> dict[str, Any]:
    """A detection's ``segmentation`` (an RLE of the image's size, or polygons inside it, as RLE,
    with its ``mask_area``) and ``bbox`` (four numbers), at least one of them; a ``ValueError``
    says what is wrong."""
    coco_mask = _masks()
    found: dict[str, Any] = {}
    segmentation = item.get("segmentation")
    if isinstance(segmentation, dict):
        size = segmentation.get("size")
        if list(size or []) != [height, width]:
            raise ValueError(f"RLE size {size!r} differs from the image's [{height}, {width}]")
        counts = segmentation.get("counts")
        if isinstance(counts, list):
            if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
                raise ValueError("RLE counts must be non-negative integers")
            if sum(counts) != height * width:
                raise ValueError(f"RLE counts cover {sum(counts)} pixels, the {width}x{height} image {height * width}")
        elif not isinstance(counts, str):
            raise ValueError("RLE counts are neither a string nor a list of integers")
        rle = {"size": [height, width], "counts": counts.encode() if isinstance(counts, str) else counts}
        if isinstance(counts, list):
            rle = coco_mask.frPyObjects(rle, height, width)
        runs = counts if isinstance(counts, list) else decoded_runs(rle)
        found["mask_area"] = sum(runs[1::2])  # the runs alternate background and mask, background first
        found["segmentation"] = rle
    elif isinstance(segmentation, list):
        flat = [v for part in segmentation for v in (part if isinstance(part, list) else [None])]
        if not flat or any(numbers.json_number(v) is None for v in flat):
            raise ValueError("polygons must be lists of finite numbers")
        if any(len(part) < 6 or len(part) % 2 for part in segmentation):
            raise ValueError("a polygon is x, y pairs of at least 3 points (6 numbers, an even count)")
        xs, ys = np.array(flat[0::2], dtype=float), np.array(flat[1::2], dtype=float)
        if xs.min() < 0 or ys.min() < 0 or xs.max() > width or ys.max() > height:
            raise ValueError(f"a polygon leaves the {width}x{height} image")
        found["segmentation"] = coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
        found["mask_area"] = int(coco_mask.area(found["segmentation"]))
    elif segmentation is not None:
        raise ValueError("segmentation is neither an RLE nor polygons")
    box = item.get("bbox")
    if box is not None:
        if not (isinstance(box, list) and len(box) == 4 and all(numbers.json_number(v) is not None for v in box)):
            raise ValueError(f"bbox {box!r} is not four numbers")
        if box[2] < 0 or box[3] < 0:
            raise ValueError(f"bbox {box!r} has a negative width or height (COCO's box is x, y, width, height)")
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
        return 0, (
            f"category_id {given!r} is not a category of the truth (give its id in the source file, or a label; "
            "without --strict a detection whose category_id alone names a category the truth lacks is left out)"
        )
    by_label = names.get(label) if isinstance(label, str) else None
    if label is not None and by_label is None:
        return 0, f"label {label!r} names no category of the truth (give a label of the release or the source's name)"
    if by_id is not None and by_label is not None and by_id != by_label:
        return 0, (
            f"category_id {by_id} ({label_of[by_id]}) and label {label!r} ({label_of[by_label]}) disagree; give one"
        )
    return int(by_id if by_id is not None else by_label), None  # type: ignore[arg-type]


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
    the truth annotation id each matched detection took."""

    scores: dict[int, np.ndarray] = field(default_factory=dict)
    ranks: dict[int, np.ndarray] = field(default_factory=dict)
    hits: dict[int, np.ndarray] = field(default_factory=dict)
    ignored: dict[int, np.ndarray] = field(default_factory=dict)
    instances: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    per_image: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    outcomes: dict[int, tuple[str, float]] = field(default_factory=dict)
    taken: dict[int, int] = field(default_factory=dict)


IOU_TYPES = ("segm", "bbox", "boundary")
DILATION_RATIO = 0.02  # Boundary IoU's band: this share of the image diagonal (boundary-iou-api's default)

METHODS = ("coco", "lvis")
LVIS = "lvis"
"""LVIS's federated evaluation (Gupta et al., CVPR 2019), as its ``lvis`` package's ``LVISEval``
scores a run (the engine's ``lvis_style``): an image's file states which categories were
verified absent (``neg_category_ids``) and which are present but not annotated exhaustively
(``not_exhaustive_category_ids``);

- a detection of a category the image neither annotates nor verified absent is dropped: nobody
  checked, so it is neither right nor wrong;
- a detection of a non-exhaustive category that takes no instance is ignored;
- an image keeps its ``LVIS_MAX_DETS`` best detections over all categories (``capped``), before
  those rules; the figures are AP at that count (``LVIS_STATS``), APr/APc/APf the mean AP of the
  rare, common and frequent categories (``frequency``)."""
LVIS_MAX_DETS = 300
FREQUENCIES = ("r", "c", "f")


def lvis_stats(most: int) -> tuple[str, ...]:
    """LVISEval's 13 figures, named as it names them, at ``most`` detections an image."""
    return (
        "AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf",
        f"AR@{most}", f"ARs@{most}", f"ARm@{most}", f"ARl@{most}",
    )  # fmt: skip


def capped(detections: Sequence[dict], most: int) -> list[dict]:
    """Each image's ``most`` best detections over all its categories, as LVIS's results loader
    keeps them (``LVISResults.limit_dets_per_image``): by score, ties in file order."""
    by_image: dict[int, list[dict]] = defaultdict(list)
    for d in detections:
        by_image[d["image_id"]].append(d)
    out: list[dict] = []
    for items in by_image.values():
        out += items if len(items) <= most else sorted(items, key=lambda d: -d["score"])[:most]
    return out


def lvis_summary(
    precision: np.ndarray, recall: np.ndarray, groups: Sequence[Sequence[int]], most: int
) -> dict[str, float]:
    """LVISEval's ``summarize`` of accumulated ``precision`` and ``recall`` (one ``max_dets``,
    ``most``): the mean of the entries that are not -1 (-1 where none), all areas or one, IoU
    .50:.95, .50 or .75; APr/APc/APf over the category indices ``groups`` (rare, common,
    frequent)."""

    def mean(values: np.ndarray) -> float:
        values = values[values > -1]
        return float(values.mean()) if values.size else -1.0

    ap = [mean(precision[:, :, :, 0, -1]), mean(precision[:1, :, :, 0, -1]), mean(precision[5:6, :, :, 0, -1])]
    ap += [mean(precision[:, :, :, a, -1]) for a in (1, 2, 3)]
    ap += [mean(precision[:, :, list(g), 0, -1]) for g in groups]
    ar = [mean(recall[:, :, a, -1]) for a in (0, 1, 2, 3)]
    return dict(zip(lvis_stats(most), ap + ar, strict=True))


def frequency_groups(categories: Sequence[dict]) -> list[list[int]]:
    """The indices (in id order) of the rare, common and frequent ``categories`` (their
    ``frequency``), as LVISEval groups them."""
    ordered = sorted(categories, key=lambda c: c["id"])
    return [[k for k, c in enumerate(ordered) if c.get("frequency") == f] for f in FREQUENCIES]


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
            detections = _federated(truth, detections)  # when nothing else of that image is in the run
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
                instances=_instances(truth, cat_index, areas), per_image=_per_image(truth, ids, Evaluated(), {})
            )
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
        found.per_image = _per_image(truth, images, found, {k: np.repeat(images_of[k], sizes[k]) for k in sizes})
        return found


def _federated(truth: dict, detections: Sequence[dict]) -> list[dict]:
    """The ``detections`` LVIS scores (Gupta et al., CVPR 2019): those of a category the image's
    truth holds or lists as verified absent (``neg_category_ids``); the others are left out, as
    LVISEval leaves them out (what covers no pixel is left out before, in ``evaluate``)."""
    checked: dict[int, set[int]] = {e["id"]: set(e.get("neg_category_ids", ())) for e in truth["images"]}
    for a in truth["annotations"]:
        checked[a["image_id"]].add(a["category_id"])
    return [d for d in detections if d["category_id"] in checked[d["image_id"]]]


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


class Kept(NamedTuple):
    """One category's detections over a run's ranges, in image order (``Evaluated``'s arrays
    laid end to end): scores, ranks, hits and ignored (area range x detection)."""

    scores: np.ndarray
    ranks: np.ndarray
    hits: np.ndarray
    ignored: np.ndarray

    @classmethod
    def joined(cls, pieces: Sequence[Kept]) -> Kept | None:
        """``pieces`` (one a range, in image order) laid end to end; None without any."""
        if not pieces:
            return None
        return cls(
            np.concatenate([p.scores for p in pieces]),
            np.concatenate([p.ranks for p in pieces]),
            np.concatenate([p.hits for p in pieces], axis=1),
            np.concatenate([p.ignored for p in pieces], axis=1),
        )


class Accumulated(Protocol):
    """A run's evaluated ranges as ``accumulate`` reads them: ``instances`` (category x area
    range, summed over the ranges) and ``kept(k)``, category index ``k``'s detections (``None``:
    none)."""

    instances: np.ndarray

    def kept(self, k: int) -> Kept | None: ...


class InMemory:
    """``Accumulated`` of ranges held in memory (``parts``, in image order)."""

    def __init__(self, parts: Sequence[Evaluated], categories: int, areas: int) -> None:
        self.parts = parts
        self.instances = np.sum([p.instances for p in parts], axis=0) if parts else np.zeros((categories, areas))

    def kept(self, k: int) -> Kept | None:
        return Kept.joined(
            [Kept(p.scores[k], p.ranks[k], p.hits[k], p.ignored[k]) for p in self.parts if k in p.scores]
        )


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
    frequency = {k: f for f, members in zip(FREQUENCIES, groups or (), strict=False) for k in members}
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


def band_covers_mask(annotations: Sequence[dict], dilation_ratio: float) -> int:
    """How many of the (non-crowd) truth ``annotations`` (their ``segmentation`` RLEs) lie wholly in
    their own boundary band (``dilation_ratio`` of the diagonal): objects so thin that their
    boundary IoU is their mask IoU, which users of Boundary AP ask to know. The bands the engine
    already made (each annotation's ``boundary``, after an evaluation) are taken as they are."""
    mask_api_new_cpp = _engine_masks()
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
        else lvis_summary(precision, recall, groups, max_dets[-1]),
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
    areas, lvis = area_bounds(area_ranges), method == LVIS
    fresh = truth | {"annotations": [dict(a) for a in truth["annotations"]]}  # the engine marks them
    chosen = capped(detections, max_dets[-1]) if lvis else detections
    part = Engine(iou_type, max(max_dets), areas, dilation_ratio, lvis).evaluate(fresh, [dict(d) for d in chosen])
    categories = {c["id"]: c["name"] for c in sorted(truth["categories"], key=lambda c: c["id"])}
    counts = {
        "images": len(truth["images"]),
        "ground_truth": len(truth["annotations"]),
        "crowd": sum(a["iscrowd"] for a in truth["annotations"]),
        "detections": len(detections),
    }
    groups = frequency_groups(truth["categories"]) if lvis else None
    return report([part], categories, iou_type, max_dets, area_ranges, counts, groups)
