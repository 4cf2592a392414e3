"""A build's fixed cost: what ``regionbench build`` costs beyond its images.

    .venv/bin/python benchmarks/fixed_cost.py [--sizes 10 100 1000] [--cores 2] [--no-classifiers]

For each size it generates (once, cached) a COCO tree of small images as ``coco_scale.py`` does
(96x72 pixels, seven polygons an image, one annotator), copies the workflow into a fresh folder
and times, as the kernel counts them (the build command and every process under it: Snakemake's
driver and each job):

1. the build through the release, the reference classifiers on (the config's);
2. a no-op rebuild (nothing changed).

From the two smallest sizes it fits cost = fixed + per image x images and prints both parts,
then how the cost grows over every size. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from coco_scale import generate
from paper_scale import PROJECT, fresh_project
from scoring import timed

CACHE = PROJECT / "resources" / "bench" / "fixed"


def built(n: int, cores: int, classifiers: bool) -> dict:
    """Build and rebuild an ``n``-image tree; their CPU, wall, peak and jobs."""
    raw = generate(CACHE / f"coco-{n}", n, 1)
    project, override = fresh_project(CACHE / f"work-{n}", raw, {"classifiers": {"enabled": classifiers}})
    cmd = [sys.executable, "-m", "regionbench", "build", "--verbose", "--project-dir", str(project), "--cores",
           str(cores), "--configfile", str(override)]  # fmt: skip
    first, _ = timed(cmd)
    again, _ = timed(cmd)
    jobs = len(list((project / "logs").rglob("*.log")))  # every job writes its log
    return {"images": n, "build": first, "noop": again, "jobs": jobs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--no-classifiers", action="store_true", help="switch the reference classifiers off")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = [built(n, args.cores, not args.no_classifiers) for n in sorted(args.sizes)]
    for r in rows:
        print(f"{r['images']:>5} images: build {r['build']['cpu_s']} s CPU, {r['build']['wall_s']} s wall, "
              f"{r['jobs']} jobs; no-op rebuild {r['noop']['cpu_s']} s CPU", flush=True)  # fmt: skip
    (a, b) = rows[:2]
    per_image = (b["build"]["cpu_s"] - a["build"]["cpu_s"]) / (b["images"] - a["images"])
    fixed = a["build"]["cpu_s"] - per_image * a["images"]
    print(f"fixed {fixed:.1f} s CPU, {per_image * 1000:.1f} ms CPU an image (from the two smallest sizes)")
    for r in rows[2:]:
        print(
            f"{r['images']:>5} images: {r['build']['cpu_s'] / (fixed + per_image * r['images']):.2f}x the line's cost"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"runs": rows, "fixed_cpu_s": round(fixed, 2), "per_image_cpu_ms": round(per_image * 1000, 2)}))


if __name__ == "__main__":
    main()
