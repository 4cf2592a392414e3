"""What AP's bootstrap over images costs beside the scoring it follows: 1,000 resamples of a
COCO-like run (``measures.resampled_ap``) against the engine's evaluation of that run, at three
sizes, scores distinct and scores rounded to 0.01 (ties within and across images: the categories
laid out per resample).

    .venv/bin/python benchmarks/bootstrap_instances.py [--images 500 2000 5000] [--resamples 1000]

Per size: COCO's 80 categories, ~7.2 boxes an image (1 % crowd), 100 box detections an image, half
near an instance, half anywhere. The scoring is what ``evaluate --task instances`` does after
reading the files: the engine a range of 250 images at a time, then the 12 figures; boxes, the
cheapest IoU, so the ratio is the least favourable. CPU seconds in this process. Prints a line per
size and, last, one JSON object: the seconds, the ratio to the scoring and the growth exponent b
of cost ~ n^b.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from regionbench.scoring.measures import average_precision, kept_detections, resampled_ap

RANGE, CATEGORIES, INSTANCES, DETECTIONS = 250, 80, 7.2, 100


def collection(rng: np.random.Generator, n: int) -> tuple[dict, list[dict]]:
    """A truth of ``n`` 640x480 images and a run of boxes."""
    images = [{"id": i + 1, "width": 640, "height": 480} for i in range(n)]
    annotations, detections = [], []
    for image in images:
        boxes = []
        for _ in range(rng.poisson(INSTANCES)):
            w, h = rng.uniform(8, 200, 2)
            x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
            boxes.append((int(rng.integers(1, CATEGORIES + 1)), [x, y, w, h]))
            annotations.append({
                "id": len(annotations) + 1, "image_id": image["id"], "category_id": boxes[-1][0], "bbox": [x, y, w, h],
                "area": float(w * h), "iscrowd": int(rng.random() < 0.01),
            })  # fmt: skip
        for k in range(DETECTIONS):
            if boxes and k % 2 == 0:
                c, (x, y, w, h) = boxes[int(rng.integers(len(boxes)))]
                box = [x + rng.normal(0, 4), y + rng.normal(0, 4), w * rng.uniform(0.8, 1.2), h * rng.uniform(0.8, 1.2)]
            else:
                c, (w, h) = int(rng.integers(1, CATEGORIES + 1)), rng.uniform(8, 200, 2)
                box = [rng.uniform(0, 640 - w), rng.uniform(0, 480 - h), w, h]
            detections.append({"image_id": image["id"], "category_id": c, "bbox": [float(v) for v in box],
                               "area": float(box[2] * box[3]), "score": float(rng.random())})  # fmt: skip
    categories = [{"id": c, "name": f"c{c}"} for c in range(1, CATEGORIES + 1)]
    return {"images": images, "annotations": annotations, "categories": categories}, detections


def scored(truth: dict, detections: list[dict]) -> tuple[float, kept_detections.InMemory]:
    """The engine over ranges of ``RANGE`` images and the figures: CPU seconds, and the ranges."""
    start = time.process_time()
    by_image: dict[int, list[dict]] = {}
    for d in detections:
        by_image.setdefault(d["image_id"], []).append(d)
    truths: dict[int, list[dict]] = {}
    for a in truth["annotations"]:
        truths.setdefault(a["image_id"], []).append(a)
    engine = average_precision.Engine("bbox", 100, average_precision.area_bounds(None))
    parts = []
    for low in range(0, len(truth["images"]), RANGE):
        chosen = truth["images"][low : low + RANGE]
        document = {
            "images": chosen,
            "categories": truth["categories"],
            "annotations": [dict(a) for e in chosen for a in truths.get(e["id"], [])],
        }
        parts.append(engine.evaluate(document, [dict(d) for e in chosen for d in by_image.get(e["id"], [])]))
    categories = {c["id"]: c["name"] for c in truth["categories"]}
    evaluated = kept_detections.InMemory(parts, len(categories), 4)
    average_precision.report(evaluated, categories, "bbox", (1, 10, 100), None, {})
    return time.process_time() - start, evaluated


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[500, 2000, 5000])
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    found: dict[str, dict[int, float]] = {"scoring": {}, "distinct": {}, "rounded": {}}
    for n in args.images:
        truth, detections = collection(np.random.default_rng(n), n)
        for name, run in (
            ("distinct", detections),
            ("rounded", [d | {"score": round(d["score"], 2)} for d in detections]),
        ):
            seconds, evaluated = scored(truth, run)
            found["scoring"][n] = min(found["scoring"].get(n, math.inf), seconds)
            start = time.process_time()
            resampled_ap.resampled(evaluated, CATEGORIES, 100, args.resamples, 0)
            found[name][n] = time.process_time() - start
        print(
            f"{n} images, {len(detections)} detections: scoring {found['scoring'][n]:.2f} s CPU; {args.resamples} "
            f"resamples {found['distinct'][n]:.2f} s ({found['distinct'][n] / found['scoring'][n]:.2f}x), scores "
            f"rounded {found['rounded'][n]:.2f} s ({found['rounded'][n] / found['scoring'][n]:.2f}x)"
        )
    small, large = min(args.images), max(args.images)
    growth = {k: round(math.log(v[large] / v[small]) / math.log(large / small), 3) for k, v in found.items()}
    ratio = {k: {n: round(found[k][n] / found["scoring"][n], 3) for n in args.images} for k in ("distinct", "rounded")}
    print(
        json.dumps({"resamples": args.resamples, "cpu_s": found, "ratio_to_scoring": ratio, "growth_exponent": growth})
    )


if __name__ == "__main__":
    main()
