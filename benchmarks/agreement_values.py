"""The collection's agreement figures as the label vocabulary grows: time and peak memory.

    .venv/bin/python benchmarks/agreement_values.py [--values 80 300 1203 4000] [--annotators 3]

The agreement summary measures Fleiss' kappa and Krippendorff's alpha on a fixed sample of
``agreement.MAX_UNITS`` pixel units. For each vocabulary size (80: COCO's things, 1,203: LVIS)
a child process draws that many units rated by ``--annotators`` annotators (each agreeing with
the first at 70 %, one in ten absent), counts them (``agreement.value_counts``) and measures both
figures (``agreement.collection_agreement``); it prints the seconds and the child's peak RSS, as the
kernel counts it. Units x values counts held densely would take 8 bytes a cell: 1.9 GB at
1,203 values. The last line is one JSON object with every figure and the growth exponent of
time and memory in the number of values.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np

CHILD = """
import resource, sys, time
import numpy as np
from regionbench.pipeline import agreement
values, annotators = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
first = rng.integers(0, values, agreement.MAX_UNITS)
units = np.stack([np.where(rng.random(first.size) < 0.7, first, rng.integers(0, values, first.size))
                  for _ in range(annotators)]).astype(np.int32)
units[1:][rng.random(units[1:].shape) < 0.1] = agreement.NOT_COVERED
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
figures = agreement.collection_agreement(units)
print(time.perf_counter() - start, before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
      figures["fleiss_kappa"], figures["krippendorff_alpha"])
"""


def measure(values: int, annotators: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(values), str(annotators)], capture_output=True, text=True, check=True
    )
    seconds, before, peak, kappa, alpha = done.stdout.split()
    return {
        "values": values,
        "seconds": round(float(seconds), 3),
        "peak_rss_mib": round(int(peak) / 1024),
        "added_mib": round((int(peak) - int(before)) / 1024),  # above the units and the imports
        "fleiss_kappa": round(float(kappa), 6),
        "krippendorff_alpha": round(float(alpha), 6),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, nargs="+", default=[80, 300, 1203, 4000])
    parser.add_argument("--annotators", type=int, default=3)
    args = parser.parse_args()
    runs = []
    print(f"{'values':>7} {'seconds':>8} {'peak RSS MiB':>13} {'added MiB':>10}")
    for values in args.values:
        run = measure(values, args.annotators)
        runs.append(run)
        print(f"{values:>7} {run['seconds']:>8.3f} {run['peak_rss_mib']:>13} {run['added_mib']:>10}", flush=True)
    sizes = np.log([r["values"] for r in runs])
    growth = {
        key: round(float(np.polyfit(sizes, np.log([max(r[key], 1e-3) for r in runs]), 1)[0]), 3)
        for key in ("seconds", "peak_rss_mib")
    }
    print(json.dumps({"annotators": args.annotators, "runs": runs, "growth": growth}, sort_keys=True))


if __name__ == "__main__":
    main()
