"""What a scored mask run predicted, image by image, as shapes to draw beside the truth
(``regionbench view --run REPORT --predictions PATH``).

The predictions are read again with the readers that scored them (``scoring.rerun`` checks
they are the bytes the report scored) and each becomes a ``Shape``:

- **instances**: each detection, its mask (or its box), category and score, and what became
  of it at IoU 0.5 against the report's truth (``instances.matches``): it took an instance,
  it took none (its best IoU said), it lay on a crowd region, or it fell beyond the
  ``max_dets`` best;
- **segments**: each segment of the image's segmentation at its best threshold (the one its
  per-image covering was taken at), with its area;
- **semantic**: each label the map gives, its pixels as one shape, with its area and the share
  of them the truth labels the same (pixels the truth ignores aside).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import shapely

from regionbench.client import instances, scoring, semantic
from regionbench.client.scoring import MaskRun


@dataclass(frozen=True)
class Shape:
    """One predicted shape: a boolean ``mask`` of the image, a detection's COCO ``rle`` (decoded
    when drawn: a run holds up to 100 an image), or a COCO ``box`` (x, y, w, h) where a detection
    has no mask; its ``label`` (None for a segment) and ``facts`` (figures by name)."""

    label: str | None
    mask: np.ndarray | None = None
    rle: dict | None = None
    box: tuple[float, float, float, float] | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def polygon(self) -> shapely.Geometry | None:
        """The shape's exact polygon (pixel squares; a box as it is), None when it is empty."""
        from regionbench.core import geometry

        if self.rle is not None:
            from pycocotools import mask as coco_mask

            mask = coco_mask.decode(self.rle).astype(bool)
            box = [int(v) for v in coco_mask.toBbox(self.rle)]  # from the runs: no scan of the mask
            return geometry.mask_to_polygon(mask, (box[0], box[1], box[2], box[3])) if box[2] and box[3] else None
        if self.mask is not None:
            return geometry.mask_to_polygon(self.mask) if self.mask.any() else None
        left, top, width, height = self.box or (0.0, 0.0, 0.0, 0.0)
        return shapely.box(left, top, left + width, top + height) if width > 0 and height > 0 else None


def shapes(run: MaskRun, report: dict) -> Iterator[tuple[int, list[Shape]]]:
    """(image id, its shapes) for every image ``report`` scored, in id order (an image the run
    gave nothing has no shapes). Detections are read at once; label maps a batch of images at a
    time (``scoring.batches``)."""
    images = scoring.scored_images(run.data, run.split)
    if run.task == "instances":
        found = _instances(run, images)
        for image_id in images["image_id"].astype(int):
            yield int(image_id), found.get(int(image_id), [])
        return
    draw = {"segments": _segments, "semantic": _semantic}[run.task]
    for batch in scoring.batches(images):
        found = draw(run, report, batch)
        for image_id in batch["image_id"].astype(int):
            yield int(image_id), found.get(int(image_id), [])


def _instances(run: MaskRun, images: pd.DataFrame) -> dict[int, list[Shape]]:
    found = scoring.instance_run(run, images, str(run.annotator))
    out: dict[int, list[Shape]] = {}
    for m in instances.matches(found.truth, found.detections, run.iou_type, run.max_dets[-1]):
        d = found.detections[m.index]
        facts = {"score": d["score"], "iou": round(m.iou, 4), "outcome": m.outcome}
        rle, box = d.get("segmentation"), tuple(d["bbox"]) if "segmentation" not in d else None
        out.setdefault(found.release_id.get(d["image_id"], d["image_id"]), []).append(
            Shape(found.category.get(d["category_id"]), rle=rle, box=box, facts=facts)
        )
    for shapes_of_image in out.values():
        shapes_of_image.sort(key=lambda s: -s.facts["score"])  # the best first (the page draws it on top)
    return out


def _segments(run: MaskRun, report: dict, images: pd.DataFrame) -> dict[int, list[Shape]]:
    levels, found = scoring.read_segmentations(run.predictions, images, run.thresholds)
    best = {int(k): float(v) for k, v in report.get("per_image_threshold", {}).items()}
    out: dict[int, list[Shape]] = {}
    for image_id, maps in found.items():
        chosen = maps[levels.index(best[image_id])] if image_id in best else maps[0]
        segments, areas = np.unique(chosen, return_counts=True)
        out[image_id] = [
            Shape(None, chosen == value, facts={"segment": int(value), "area": int(area)})
            for value, area in zip(segments.tolist(), areas.tolist(), strict=True)
        ]
    return out


def _semantic(run: MaskRun, report: dict, images: pd.DataFrame) -> dict[int, list[Shape]]:
    data = run.data
    names, index = semantic.label_codes(
        dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"], strict=True))
    )
    predicted = scoring.read_label_maps(run, images, index)
    truth = scoring.class_maps(data, str(run.annotator), images[images["image_id"].isin(list(predicted))], index)
    out: dict[int, list[Shape]] = {}
    for image_id, classes in predicted.items():
        label, ignore, _ = truth[image_id]
        areas = np.bincount(classes.ravel() + 1)[1:]  # pixels per class (-1, ignored, aside)
        scored = np.bincount(classes[~ignore].ravel() + 1, minlength=len(areas) + 1)[1:]
        agreeing = np.bincount(classes[~ignore & (label == classes)].ravel() + 1, minlength=len(areas) + 1)[1:]
        out[image_id] = [
            Shape(
                names[k],
                classes == k,
                facts={"area": int(areas[k]), "right": float(agreeing[k] / scored[k]) if scored[k] else None},
            )
            for k in np.flatnonzero(areas).tolist()
        ]
    return out
