"""How well the percentile interval on AP covers a population's AP, by test-set size: test sets
drawn from a generated population of detections (``tests/test_bootstrap.py``'s ``Detections``),
each with its 95 % interval as ``evaluate`` makes it (``resampled_ap``), and the share that
covers the population's AP, beside AP's own bias at that size (the mean test-set AP less the
population's, in standard deviations of the test-set AP) and, for comparison, the share a
bias-corrected percentile interval (Efron's BC: the percentiles moved by twice
``z0 = Phi^-1(share of resamples below the test set's AP)``) covers.

    .venv/bin/python benchmarks/bootstrap_calibration.py [--sizes 300 1000 3000] [--draws 200] [--resamples 200]

Prints a line per size and, last, one JSON object: coverage, bias and spread per size.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_bootstrap import Detections

from regionbench.scoring.measures import average_precision, resampled_ap

POPULATION = 60_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 3000])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=200)
    args = ap.parse_args()
    population = Detections(np.random.default_rng(0), POPULATION)
    precision, _ = average_precision.accumulate(population.only(np.arange(POPULATION)), 5, 1, [100])
    truth = float(precision[precision > -1].mean())
    found = {}
    for size in args.sizes:
        rng = np.random.default_rng(1)
        points, covered, corrected = [], 0, 0
        for draw in range(args.draws):
            test = population.only(np.sort(rng.choice(POPULATION, size=size, replace=False)))
            precision, _ = average_precision.accumulate(test, 5, 1, [100])
            points.append(float(precision[precision > -1].mean()))
            values = resampled_ap.resampled(test, 5, 100, args.resamples, draw)["AP"]
            low, high = np.percentile(values, [2.5, 97.5])
            covered += low <= truth <= high
            share = min(max(float(np.mean(values < points[-1])), 0.5 / len(values)), 1 - 0.5 / len(values))
            z0, normal = NormalDist().inv_cdf(share), NormalDist()
            bounds = [100 * normal.cdf(2 * z0 + z) for z in (-1.959964, 1.959964)]
            low, high = np.percentile(values, bounds)
            corrected += low <= truth <= high
        spread = float(np.std(points))
        found[size] = {
            "coverage": covered / args.draws,
            "coverage_bias_corrected": corrected / args.draws,
            "bias": float(np.mean(points)) - truth,
            "bias_in_sd": (float(np.mean(points)) - truth) / spread,
            "sd": spread,
        }
        print(
            f"{size} images: coverage {covered / args.draws:.3f} (bias-corrected {corrected / args.draws:.3f}); AP's bias {found[size]['bias']:+.4f} "
            f"({found[size]['bias_in_sd']:+.2f} sd), sd {spread:.4f}; population AP {truth:.4f}"
        )
    print(json.dumps({"population_ap": truth, "draws": args.draws, "resamples": args.resamples, "by_size": found}))


if __name__ == "__main__":
    main()
