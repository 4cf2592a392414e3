"""Scoring segmentation methods: the instance task beside pycocotools' COCOeval on the same files,
and the BSDS region benchmark, each at growing sizes.

    .venv/bin/python benchmarks/scoring.py [--images 250 500 1000] [--bsds 50 100 200]

Instances: a generated COCO-val-like collection (480x640 images, ~7.2 ground-truth instances an
image, crowd regions among them, 100 detections an image near the truth), written as an
instances file and a results file. ``ours`` is what ``evaluate --task instances`` does past
loading the release (``instances.ground_truth`` from the regions table, ``read_results``,
``score``); ``cocoeval`` is pycocotools on the two files (``COCO``, ``loadRes``, ``evaluate``,
``accumulate``, ``summarize``). Both give the same 12 figures (checked).

Segments: BSDS-sized label maps (321x481), five humans and five machine scales an image,
``segments.score_image`` then ``collect``.

Prints a line per size and, last, one JSON object: seconds and peak memory per size, the
ours/cocoeval ratio at the largest, and the growth exponents (log time / log size).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from pycocotools import mask as coco_mask

from regionbench.client import instances, segments

H, W = 480, 640
CATEGORIES = {k: str(k) for k in range(1, 81)}  # COCO's 80, named by their label (the label id)


def _rle(mask: np.ndarray) -> dict:
    encoded = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [H, W], "counts": encoded["counts"].decode()}


def collection(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[dict]]:
    """Images, regions and coverage tables of one annotator, and the detections."""
    rng = np.random.default_rng(seed)
    images = pd.DataFrame(
        {"image_id": np.arange(1, n + 1), "width": W, "height": H, "path": [f"{i}.jpg" for i in range(1, n + 1)]}
    )
    regions, detections = [], []
    for image_id in range(1, n + 1):
        boxes = []
        for k in range(int(rng.poisson(7.2))):
            w, h = int(rng.integers(8, 200)), int(rng.integers(8, 200))
            x, y = int(rng.integers(0, W - w)), int(rng.integers(0, H - h))
            mask = np.zeros((H, W), dtype=bool)
            mask[y : y + h, x : x + w] = True
            regions.append(
                {"image_id": image_id, "annotator": "a", "region_id": k + 1, "label_id": int(rng.integers(1, 81)),
                 "label": "", "category_id": None, "mask": _rle(mask), "area_px": int(mask.sum()),
                 "bbox_x": x, "bbox_y": y, "bbox_w": w, "bbox_h": h, "iscrowd": bool(rng.random() < 0.01)}
            )  # fmt: skip
            boxes.append((x, y, w, h, regions[-1]["label_id"]))
        for _ in range(100):
            if boxes and rng.random() < 0.5:
                x, y, w, h, category = boxes[int(rng.integers(len(boxes)))]
                x, y = max(0, x + int(rng.integers(-6, 7))), max(0, y + int(rng.integers(-6, 7)))
            else:
                w, h = int(rng.integers(8, 120)), int(rng.integers(8, 120))
                x, y, category = int(rng.integers(0, W - w)), int(rng.integers(0, H - h)), int(rng.integers(1, 81))
            w, h = min(w, W - x), min(h, H - y)
            mask = np.zeros((H, W), dtype=bool)
            mask[y : y + h, x : x + w] = True
            detections.append({"image_id": image_id, "category_id": category, "segmentation": _rle(mask),
                               "bbox": [x, y, w, h], "score": float(rng.random())})  # fmt: skip
    frame = pd.DataFrame(regions)
    frame["label"] = frame["label_id"].astype(str)
    coverage = pd.DataFrame({"image_id": images["image_id"], "annotator": "a"})
    return images, frame, coverage, detections


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def instances_at(n: int, folder: Path) -> dict:
    images, regions, coverage, detections = collection(n)
    truth = instances.ground_truth(regions, images, coverage, "a", CATEGORIES)
    (folder / "truth.json").write_text(json.dumps(truth))
    (folder / "results.json").write_text(json.dumps(detections))
    del truth, detections
    start = time.perf_counter()
    truth = instances.ground_truth(regions, images, coverage, "a", CATEGORIES)
    read = instances.read_results(folder / "results.json", truth, {})
    ours = instances.score(truth, read, "segm")
    ours_s = time.perf_counter() - start
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(folder / "truth.json"))
        evaluation = COCOeval(gt, gt.loadRes(str(folder / "results.json")), "segm")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    theirs_s = time.perf_counter() - start
    if not np.allclose(list(ours["stats"].values()), evaluation.stats, rtol=0, atol=1e-12):
        raise SystemExit("our figures and COCOeval's differ: the timing means nothing")
    return {"images": n, "instances": len(regions), "ours_s": round(ours_s, 2), "cocoeval_s": round(theirs_s, 2),
            "ratio": round(ours_s / theirs_s, 3), "peak_mib": round(peak_mib())}  # fmt: skip


def bsds_at(n: int) -> dict:
    rng = np.random.default_rng(1)
    start = time.perf_counter()
    scored = []
    for _ in range(n):
        humans = [
            rng.integers(1, 40, size=(321 // 8 + 1, 481 // 8 + 1)).repeat(8, 0).repeat(8, 1)[:321, :481]
            for _ in range(5)
        ]
        machine = [
            rng.integers(1, 10 * (s + 1), size=(321 // 16 + 1, 481 // 16 + 1)).repeat(16, 0).repeat(16, 1)[:321, :481]
            for s in range(5)
        ]
        scored.append(segments.score_image(machine, humans))
    segments.collect(range(1, 6), scored)
    return {"images": n, "seconds": round(time.perf_counter() - start, 2), "peak_mib": round(peak_mib())}


def exponent(rows: list[dict], size: str, cost: str) -> float:
    a, b = rows[0], rows[-1]
    return round(math.log(b[cost] / a[cost]) / math.log(b[size] / a[size]), 2) if b[size] > a[size] else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[250, 500, 1000])
    ap.add_argument("--bsds", type=int, nargs="+", default=[50, 100, 200])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for n in args.images:
            rows.append(instances_at(n, Path(scratch)))
            print(f"instances {n:>6} images: ours {rows[-1]['ours_s']:8.2f} s, cocoeval {rows[-1]['cocoeval_s']:8.2f} s, "
                  f"ratio {rows[-1]['ratio']:.3f}, peak {rows[-1]['peak_mib']} MiB")  # fmt: skip
    bsds = []
    for n in args.bsds:
        bsds.append(bsds_at(n))
        print(
            f"segments  {n:>6} images x 5 scales x 5 humans: {bsds[-1]['seconds']:6.2f} s, peak {bsds[-1]['peak_mib']} MiB"
        )
    print(json.dumps({
        "instances": rows, "ratio_at_largest": rows[-1]["ratio"],
        "instances_growth": {"ours": exponent(rows, "images", "ours_s"), "cocoeval": exponent(rows, "images", "cocoeval_s")},
        "segments": bsds, "segments_growth": exponent(bsds, "images", "seconds"),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
