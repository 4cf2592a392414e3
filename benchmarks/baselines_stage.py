"""The baselines stage's cost as a build pays it: predictions and scoring, by images.

    .venv/bin/python benchmarks/baselines_stage.py [--images 10 25 50] [--method canny felzenszwalb]

A release of a generated BSDS500 tree (``benchmarks/segments.py``'s: 481x321 images, five humans
an image; built once, cached). ``regionbench baselines`` (what the stage runs: each method's
predictions of the test side, scored through ``evaluate`` by the tasks of its kind, the humans'
ceiling matched once, an empty cache each size) is timed as its own process on two cores: CPU
and wall seconds and peak RSS, the CPU an image, and the growth exponent over sizes. The last
line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

from labelmaps import generate
from scoring import exponent, timed
from segments import CACHE, release


def at(n: int, methods: list[str]) -> dict:
    """The command timed on the ``n``-test-image release."""
    folder = release(n)
    tree = generate("bsds500", CACHE / f"bsds-{2 * n}", 2 * n)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["REGIONBENCH_CACHE"] = str(Path(scratch) / "cache")  # the ceiling matched, as a build's first run
        cmd = [sys.executable, "-m", "regionbench", "baselines", str(folder), "--out", str(Path(scratch) / "out"),
               "--method", *methods, "--images", str(tree), "--cores", "2"]  # fmt: skip
        ours, _ = timed(cmd)
    ours["cpu_s_per_image"] = round(ours["cpu_s"] / n, 3)
    return {"images": n, "ours": ours}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[10, 25, 50])
    ap.add_argument("--method", nargs="+", default=["canny", "felzenszwalb"])
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    for n in args.images:
        row = at(n, args.method)
        rows.append(row)
        o = row["ours"]
        print(f"baselines {', '.join(args.method)} on {n} test images: {o['cpu_s']} s CPU, {o['wall_s']} s wall, "
              f"{o['peak_mib']} MiB; {o['cpu_s_per_image']} CPU-s an image", flush=True)  # fmt: skip
    growth = {"cpu": exponent(rows, "cpu_s", "ours"), "peak": exponent(rows, "peak_mib", "ours")}
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"methods": args.method, "rows": rows, "growth": {k: v if not math.isnan(v) else None for k, v in growth.items()}}))  # fmt: skip


if __name__ == "__main__":
    main()
