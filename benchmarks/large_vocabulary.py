"""Scoring at V3Det's shape: 13,204 categories (29 names each shared by two ids), boxes, 100
detections an image; ``evaluate --task instances --iou-type bbox`` on every core beside
faster-coco-eval called directly on the same two files, at several sizes.

    .venv/bin/python benchmarks/large_vocabulary.py [--images 250 2000 20000] [--reference-up-to 250]

The collections are ``scoring_data.py``'s (640x480 images, ~7.2 instances an image), with V3Det's
category count, built into releases once and cached. Each contender runs as its own process,
timed by the kernel (CPU seconds, wall seconds, peak RSS of its largest process). faster-coco-eval
keeps a state per category, area range and image, so it needs ~500 bytes x 13,204 x 4 an image
(about 7 GiB at 250 images, 26 GiB at 1,000): it runs up to ``--reference-up-to`` images, and there the 12
figures and every category's AP (keyed by id) are checked equal (1e-12) before a time is
printed. Prints a line per size and, last, one JSON object: every figure and the growth
exponents (log cost / log size) from the smallest to the largest size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from scoring import BOUNDARY_ENGINE, exponent, timed
from scoring_data import collection

from regionbench.scoring.measures import average_precision

CATEGORIES = 13_204
V3DET = {"categories": CATEGORIES, "shared": 29, "boxes": True}  # 13,204 ids, 13,175 names; boxes
# faster-coco-eval as scoring.py calls it, on boxes, each category's AP printed too (by id)
ENGINE = BOUNDARY_ENGINE.replace('"boundary"', '"bbox"').replace(
    "print(json.dumps([float(v) for v in evaluation.stats[:12]]))",
    """precision = evaluation.eval["precision"][:, :, :, 0, -1]
per = {}
for k, c in enumerate(evaluation.params.catIds):
    values = precision[:, :, k][precision[:, :, k] > -1]
    per[str(c)] = float(values.mean()) if values.size else None
print(json.dumps({"stats": [float(v) for v in evaluation.stats[:12]], "per_category": per}))""",
)


def at(n: int, cores: int, reference_up_to: int) -> dict:
    """One size: ours on ``cores`` and, up to ``reference_up_to`` images, faster-coco-eval."""
    folder, truth, results = collection(n, **V3DET)
    row: dict = {"images": n, "detections": n * 100}
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        cmd = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--task", "instances",
               "--predictions", str(results), "--iou-type", "bbox", "--split", "all", "--cores", str(cores),
               "--out", str(report)]  # fmt: skip
        row["ours"], _ = timed(cmd)
        found = json.loads(report.read_text())
    ours = [found["measures"][k] for k in average_precision.STATS]
    per = {k: v["ap"] for k, v in found["per_category_ap"].items()}
    row["categories_scored"] = sum(v is not None for v in per.values())
    row["names_shared"] = len(per) - len({v["name"] for v in found["per_category_ap"].values()})
    if n <= reference_up_to:
        row["faster-coco-eval"], said = timed([sys.executable, "-c", ENGINE, str(truth), str(results)])
        theirs = json.loads(said.strip().splitlines()[-1])
        if not np.allclose(ours, theirs["stats"], rtol=0, atol=1e-12):
            raise SystemExit(f"{n} images: the 12 figures differ from faster-coco-eval's: the timing means nothing")
        differ = [c for c, v in theirs["per_category"].items() if (v is None) != (per[c] is None)
                  or (v is not None and abs(v - per[c]) > 1e-12)]  # fmt: skip
        if differ:
            raise SystemExit(f"{n} images: per-category AP differs from faster-coco-eval's, e.g. category {differ[0]}")
        row["cpu_ratio_to_faster_coco_eval"] = round(row["ours"]["cpu_s"] / row["faster-coco-eval"]["cpu_s"], 3)
    row["stats"] = dict(zip(average_precision.STATS, ours, strict=True))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[250, 2000, 20000])
    ap.add_argument("--reference-up-to", type=int, default=250)
    ap.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    for n in args.images:
        rows.append(at(n, args.cores, args.reference_up_to))
        r = rows[-1]
        print(f"{n:>6} images, {r['detections']} detections, {r['categories_scored']} categories with an instance: "
              + ", ".join(f"{k} {r[k]['cpu_s']} s CPU {r[k]['wall_s']} s wall {r[k]['peak_mib']} MiB"
                          for k in ("ours", "faster-coco-eval") if k in r), flush=True)  # fmt: skip
    growth = {"ours_cpu": exponent(rows, "cpu_s", "ours"), "ours_peak": exponent(rows, "peak_mib", "ours")}
    referenced = [r for r in rows if "faster-coco-eval" in r]
    growth |= {"faster_coco_eval_cpu": exponent(referenced, "cpu_s", "faster-coco-eval"),
               "faster_coco_eval_peak": exponent(referenced, "peak_mib", "faster-coco-eval")}  # fmt: skip
    print(f"growth exponents over {args.images} images: {growth}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"categories": CATEGORIES, "cores": args.cores, "rows": rows, "growth": growth}, sort_keys=True))


if __name__ == "__main__":
    main()
