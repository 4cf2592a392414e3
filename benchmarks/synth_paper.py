"""Generate the full paper-profile collection and print its counts, time, memory and disk use.

    .venv/bin/python benchmarks/synth_paper.py [--out resources/raw/paper] [--workers 2]

Counts are read back from the written labels.txt files, so they measure what is on disk.
The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import time
from collections import Counter
from pathlib import Path

from regionbench.synthetic import plans
from regionbench.synthetic.saiapr import write_collection


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="resources/raw/paper")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)

    start = time.perf_counter()
    for folder, regions in write_collection(out, "paper", seed=args.seed, workers=args.workers):
        print(f"folder {folder}: {regions} regions ({time.perf_counter() - start:.0f} s)", flush=True)
    wall = time.perf_counter() - start

    words = dict(line.split("\t") for line in (out / "wlist.txt").read_text().splitlines())
    counts: Counter = Counter()
    images = 0
    for labels in sorted(out.glob("*/labels.txt")):
        rows = [line.split("\t") for line in labels.read_text().splitlines() if line]
        counts.update(words[label_id] for _, _, label_id in rows)
        images += len(list((labels.parent / "images").glob("*.jpg")))
    disk = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    peak_mib = (
        max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        / 1024
    )
    figures = {
        "images": images,
        **plans.summary(counts),
        "regions_per_image": plans.regions_per_image(sum(counts.values()), images),
        "top10": dict(counts.most_common(10)),
        "wall_s": round(wall, 1),
        "peak_rss_mib": round(peak_mib),
        "disk_mib": round(disk / 2**20),
        "workers": args.workers,
    }
    print(
        f"images {images}, regions {figures['regions']}, labels used {figures['labels_used']}, "
        f"{figures['regions_per_image']} regions per image"
    )
    print(
        f"wall {wall:.1f} s with {args.workers} workers, peak RSS {peak_mib:.0f} MiB per process, disk {disk / 2**20:.0f} MiB"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
