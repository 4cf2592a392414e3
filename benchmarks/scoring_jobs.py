"""What scoring as jobs costs beside one process: ``evaluate --task instances`` on the collections
of ``scoring_data.py`` (COCO-val-like, 100 RLE detections an image), once in one process on every
core and once as ``--executor local --jobs J`` (Snakemake, one run, a part job a share of the
images and a gathering each round), the reports checked equal to the bit before any time is
printed.

    .venv/bin/python benchmarks/scoring_jobs.py [--images 500 5000] [--jobs 2 4] [--cores 2]

Each command is timed by the kernel as its own process tree (``scoring.timed``: CPU and wall
seconds, the peak RSS of its largest process). Prints a line per size and job count, the
overhead (jobs' CPU over one process's) and the wall ratio; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from scoring import timed
from scoring_data import collection


def one_size(images: int, jobs: list[int], cores: int) -> dict:
    """One process and each job count on the ``images``-image collection: their usage, ratios."""
    folder, _, results = collection(images, cores)
    row: dict = {"images": images}
    with tempfile.TemporaryDirectory() as scratch:
        base = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--task", "instances",
                "--predictions", str(results), "--split", "all"]  # fmt: skip
        one = Path(scratch) / "one.json"
        row["one_process"], _ = timed([*base, "--cores", str(cores), "--out", str(one)])
        for count in jobs:
            report = Path(scratch) / f"jobs-{count}.json"
            cmd = [*base, "--executor", "local", "--jobs", str(count), "--cores", str(cores), "--out", str(report)]
            usage, _ = timed(cmd)
            if report.read_bytes() != one.read_bytes():
                raise SystemExit(f"{images} images, {count} jobs: the report differs from one process's")
            usage["cpu_overhead"] = round(usage["cpu_s"] / row["one_process"]["cpu_s"], 3)
            usage["wall_ratio"] = round(usage["wall_s"] / row["one_process"]["wall_s"], 3)
            row[f"jobs_{count}"] = usage
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[500])
    ap.add_argument("--jobs", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--cores", type=int, default=2, help="cores of the one process and of the local executor")
    args = ap.parse_args()
    rows = []
    for images in args.images:
        row = one_size(images, args.jobs, args.cores)
        rows.append(row)
        one = row["one_process"]
        print(f"{images} images: one process {one['cpu_s']} s CPU, {one['wall_s']} s wall", flush=True)
        for count in args.jobs:
            got = row[f"jobs_{count}"]
            print(
                f"  {count} jobs: {got['cpu_s']} s CPU ({got['cpu_overhead']}x), {got['wall_s']} s wall "
                f"({got['wall_ratio']}x), peak {got['peak_mib']} MiB",
                flush=True,
            )
    print(json.dumps({"cores": args.cores, "rows": rows}))


if __name__ == "__main__":
    main()
