"""What a bootstrap interval costs beside the scoring it follows: the label-map, panoptic and BSDS tasks'
1,000 resamples over images (``measures.bootstrap.additive`` of the per-image counts scoring
already made), at three sizes, so that its growth shows.

    .venv/bin/python benchmarks/bootstrap.py [--images 500 5000 50000] [--resamples 1000]

Per size, per-image counts are drawn as a run's would be (label maps: each image's hit, true and
predicted pixels of 21 VOC classes and of 150 ADE20K classes, a few classes an image; panoptic:
each image's TP, FP, FN and IoU sum of 133 COCO categories; BSDS boundaries: cntR, sumR, cntP
and sumP at 99 thresholds; BSDS segments: covering, RI and VI sums at 5 scales), then each task's figures are
resampled as ``evaluate`` resamples them. Timed in this process (CPU seconds). Prints a line per
size and, last, one JSON object: the seconds per size and the growth exponent b of cost ~ n^b.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from regionbench.scoring.measures import bootstrap
from regionbench.scoring.tasks import boundaries, panoptic, segments, semantic


def label_counts(rng: np.random.Generator, n: int, classes: int) -> np.ndarray:
    """(n, 3, classes): a few classes an image, their pixels, most predicted right."""
    counts = np.zeros((n, 3, classes), dtype=np.int64)
    for i in range(n):
        present = rng.choice(classes, size=min(classes, 4), replace=False)
        true = rng.integers(1_000, 60_000, size=len(present))
        hit = (true * rng.uniform(0.5, 1.0, size=len(present))).astype(np.int64)
        counts[i, 1, present], counts[i, 0, present] = true, hit
        counts[i, 2, present] = hit + rng.integers(0, 5_000, size=len(present))
    return counts


def panoptic_tallies(rng: np.random.Generator, n: int, categories: int) -> np.ndarray:
    """(n, categories, 4): IoU sum, TP, FP, FN of a few categories an image."""
    tallies = np.zeros((n, categories, 4))
    for i in range(n):
        present = rng.choice(categories, size=6, replace=False)
        tp = rng.integers(0, 4, size=6)
        tallies[i, present, 1], tallies[i, present, 0] = tp, tp * rng.uniform(0.6, 0.95, size=6)
        tallies[i, present, 2], tallies[i, present, 3] = rng.integers(0, 2, size=6), rng.integers(0, 2, size=6)
    return tallies


def timed(per_image: np.ndarray, figures: Callable[[np.ndarray], dict[str, np.ndarray]], resamples: int) -> float:
    """The CPU seconds of the bootstrap of ``per_image`` counts (seed 0), as ``evaluate`` runs it."""
    start = time.process_time()
    bootstrap.additive(per_image, figures, resamples, 0)
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[500, 5000, 50000])
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    things = np.arange(133) < 80
    found: dict[str, dict[int, float]] = {k: {} for k in ("voc", "ade20k", "panoptic", "boundaries", "segments")}
    for n in args.images:
        counts = {
            "voc": (label_counts(rng, n, 21), semantic.flat_figures),
            "ade20k": (label_counts(rng, n, 150), semantic.flat_figures),
            "panoptic": (panoptic_tallies(rng, n, 133), partial(panoptic.summary_figures, things=things)),
            # 99 thresholds and each image's best; 5 scales
            "boundaries": (np.abs(rng.normal(100, 30, (n, 4, 100))).round(), boundaries.benchmark_figures),
            "segments": (
                np.abs(rng.normal(100, 30, (n, 4 * 5 + 6))) + 1,
                partial(segments.benchmark_figures, thresholds=5),
            ),
        }
        for name, (per_image, figures) in counts.items():
            found[name][n] = timed(per_image, figures, args.resamples)
        print(
            f"{n} images, {args.resamples} resamples: " + ", ".join(f"{k} {v[n]:.2f} s CPU" for k, v in found.items())
        )
    small, large = min(args.images), max(args.images)
    growth = {
        k: round(math.log(v[large] / v[small]) / math.log(large / small), 3) if v[small] > 0 else None
        for k, v in found.items()
    }
    print(json.dumps({"resamples": args.resamples, "cpu_s": found, "growth_exponent": growth}))


if __name__ == "__main__":
    main()
