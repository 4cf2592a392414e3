"""The BSDS boundary benchmark through the command, at the BSDS500 test set's size.

    .venv/bin/python benchmarks/boundaries.py [--images 25 50 200]

A release of a generated BSDS500 tree (``benchmarks/segments.py``'s: 481x321 images, five humans
an image, one fewer on the last of each split; built once, cached) and one soft edge map an image
for its test side: the gradient magnitude (Sobel) of the smoothed grey image, scaled to its
maximum, as an 8-bit PNG, as an edge detector writes one. ``regionbench evaluate --task
boundaries --split source`` (the test images, 99 thresholds as the benchmark takes them,
against every human who covered each, the humans' ceiling included: matched, as on a release's
first run, not taken from the cache) is timed as its own process
(CPU and wall seconds, peak RSS) at each size, with the time an image and an image-threshold and
the growth exponent over sizes. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from labelmaps import generate
from PIL import Image
from scoring import exponent, timed
from segments import CACHE, release

THRESHOLDS = 99


def write_run(folder: Path, tree: Path, out: Path) -> int:
    """One soft edge map PNG for each of the release's test images; the images written."""
    from skimage import color, filters

    import regionbench
    from regionbench.scoring.tasks import _masks

    data = regionbench.load(folder)
    ids = _masks.scored_images(data, "source")["image_id"].astype(int).tolist()
    out.mkdir(parents=True)
    for path in data.image_sources(ids, root=tree).values():
        grey = color.rgb2gray(np.asarray(Image.open(path).convert("RGB")))
        edges = filters.sobel(filters.gaussian(grey, 1.5))
        soft = np.round(255 * edges / max(float(edges.max()), 1e-12)).astype(np.uint8)
        Image.fromarray(soft).save(out / f"{Path(path).stem}.png")  # named as the image file
    return len(ids)


def at(n: int) -> dict:
    """The command timed on a run of the ``n``-test-image release."""
    folder = release(n)
    with tempfile.TemporaryDirectory() as scratch:
        run = Path(scratch) / "run"
        scored = write_run(folder, generate("bsds500", CACHE / f"bsds-{2 * n}", 2 * n), run)
        report = Path(scratch) / "report.json"
        os.environ["REGIONBENCH_CACHE"] = str(Path(scratch) / "cache")  # the humans' ceiling matched, as a first run
        ours, _ = timed([sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--task",
                         "boundaries", "--split", "source", "--predictions", str(run), "--out", str(report)])  # fmt: skip
        said = json.loads(report.read_text())
        measures, human = said["measures"], said["human_ceiling"]
    ours["cpu_s_per_image"] = round(ours["cpu_s"] / scored, 3)
    ours["cpu_ms_per_image_threshold"] = round(1000 * ours["cpu_s"] / (scored * THRESHOLDS), 2)
    return {"images": scored, "ours": ours, "ods_f": measures["ods"]["f"], "ois_f": measures["ois"]["f"],
            "ap": measures["ap"], "human": human}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[25, 50, 200])
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    for n in args.images:
        row = at(n)
        rows.append(row)
        o = row["ours"]
        print(f"boundaries {row['images']} test images x {THRESHOLDS} thresholds: {o['cpu_s']} s CPU, {o['wall_s']} s "
              f"wall, {o['peak_mib']} MiB; {o['cpu_s_per_image']} s an image, {o['cpu_ms_per_image_threshold']} ms "
              f"an image-threshold", flush=True)  # fmt: skip
    growth = {"cpu": exponent(rows, "cpu_s", "ours"), "peak": exponent(rows, "peak_mib", "ours")}
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"thresholds": THRESHOLDS, "rows": rows, "growth": {k: v if not math.isnan(v) else None for k, v in growth.items()}}))  # fmt: skip


if __name__ == "__main__":
    main()
