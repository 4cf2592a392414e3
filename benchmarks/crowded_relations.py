"""Relations of crowded images: how their cost grows with the regions of one image.

    .venv/bin/python benchmarks/crowded_relations.py [--counts 25 50 100 200 500 1000] [--repeat 3]

For each count n it draws n small rectangles (3-20 pixels a side) at random in a 640x480
image, as the instances of a crowded COCO or LVIS image, and times ``relations.pairwise`` as
ingest calls it (boxes and centroids known) twice: relating every ordered pair
(``max_regions=None``) and with the default cap (``RelationSettings.max_regions``, near pairs
only above it). It prints per count the best time of ``--repeat`` runs and the rows each gives,
then the growth exponent b of time ~ n^b of both; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from regionbench.core import geometry, relations

HEIGHT, WIDTH = 480, 640


def crowd(n: int, seed: int) -> list[np.ndarray]:
    """``n`` masks of small rectangles at random places (overlaps allowed, as instances do)."""
    rng = np.random.default_rng(seed)
    masks = []
    for _ in range(n):
        mask = np.zeros((HEIGHT, WIDTH), dtype=bool)
        h, w = rng.integers(3, 21, 2)
        y, x = rng.integers(0, HEIGHT - h), rng.integers(0, WIDTH - w)
        mask[y : y + h, x : x + w] = True
        masks.append(mask)
    return masks


def best_time(
    masks: list[np.ndarray], boxes: np.ndarray, centres: np.ndarray, cap: int | None, repeat: int
) -> tuple[float, int]:
    best, rows = math.inf, 0
    for _ in range(repeat):
        start = time.perf_counter()
        pairs = relations.pairwise(masks, (HEIGHT, WIDTH), boxes=boxes, centres=centres, max_regions=cap)
        best = min(best, time.perf_counter() - start)
        rows = len(pairs.i)
    return best, rows


def exponent(counts: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) on log(counts)."""
    return float(np.polyfit(np.log(counts), np.log(seconds), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[25, 50, 100, 200, 500, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cap = relations.RelationSettings.max_regions
    warm = crowd(3, 0)
    relations.pairwise(warm, (HEIGHT, WIDTH))  # compile the kernel before timing
    results = []
    print(f"{'regions':>8} {'every pair s':>13} {'rows':>9} {f'cap {cap} s':>11} {'rows':>7}")
    for n in args.counts:
        masks = crowd(n, seed=n)
        boxes = geometry.bboxes(masks)
        centres = relations.centroids(masks)
        full_s, full_rows = best_time(masks, boxes, centres, None, args.repeat)
        capped_s, capped_rows = best_time(masks, boxes, centres, cap, args.repeat)
        print(f"{n:>8} {full_s:>13.4f} {full_rows:>9} {capped_s:>11.4f} {capped_rows:>7}", flush=True)
        results.append(
            {
                "regions": n,
                "every_pair_s": full_s,
                "every_pair_rows": full_rows,
                "capped_s": capped_s,
                "capped_rows": capped_rows,
            }
        )
    counts = [r["regions"] for r in results]
    summary = {
        "max_regions": cap,
        "counts": results,
        "exponent_every_pair": round(exponent(counts, [r["every_pair_s"] for r in results]), 3),
        "exponent_capped_above_cap": round(
            exponent(
                [n for n in counts if n > (cap or 0)], [r["capped_s"] for r in results if r["regions"] > (cap or 0)]
            ),
            3,
        )
        if sum(n > (cap or 0) for n in counts) > 1
        else None,
    }
    print(
        f"growth exponent: every pair {summary['exponent_every_pair']}, capped above {cap}: {summary['exponent_capped_above_cap']}"
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
