"""The BSDS region benchmark through the command, at the BSDS500 test set's size.

    .venv/bin/python benchmarks/segments.py [--images 200]

A BSDS500 tree (``benchmarks/labelmaps.py``'s generator: 481x321 images, five humans an image,
one fewer on the last of each split) of ``--images`` train and as many test images is built into
a release (once, cached, classifiers off), and a run of five scales is written for its test
side: scale k merges each first human's segments k at a time (label // k), as a hierarchy's
coarser levels do. ``regionbench evaluate --task segments`` (the default split: the test images,
against every human who covered each) is timed as its own process (CPU and wall seconds, peak
RSS), after the release's verification, timed apart. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from labelmaps import generate
from paper_scale import PROJECT, build, fresh_project
from PIL import Image
from scoring import timed

CACHE = PROJECT / "resources" / "bench" / "segments"
SCALES = 5


def release(n: int) -> Path:
    """The release of a BSDS500 tree of ``n`` train and ``n`` test images (built once)."""
    tree = generate("bsds500", CACHE / f"bsds-{2 * n}", 2 * n)
    folder = CACHE / f"bsds-{2 * n}-project" / "releases" / "bench" / "v1.0.0"
    if not (folder / "manifest.json").is_file():
        project, override = fresh_project(CACHE / f"bsds-{2 * n}-project", tree, {"classifiers": {"enabled": False}})
        build(project, override, 2, CACHE / f"bsds-{2 * n}-build.log")
    return folder


def write_run(folder: Path, out: Path) -> int:
    """Five scale folders of PNGs for the release's test images; the images written."""
    import regionbench
    from regionbench.scoring.tasks import _masks
    from regionbench.scoring.tasks import segments as task

    data = regionbench.load(folder)
    images = _masks.scored_images(data, "test")
    first = _masks.humans(data)[0]
    maps = task.segment_maps(data, first, images)
    for k in range(1, SCALES + 1):
        (out / f"scale{k}").mkdir(parents=True)
        for image_id, labels in maps.items():
            Image.fromarray((np.asarray(labels) // k).astype(np.uint16)).save(out / f"scale{k}" / f"{image_id}.png")
    return len(maps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=200)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    folder = release(args.images)
    with tempfile.TemporaryDirectory() as scratch:
        run = Path(scratch) / "run"
        scored = write_run(folder, run)
        verify, _ = timed([sys.executable, "-m", "regionbench", "verify", str(folder)])
        report = Path(scratch) / "report.json"
        ours, _ = timed([sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--task",
                         "segments", "--predictions", str(run), "--out", str(report)])  # fmt: skip
        figures = json.loads(report.read_text())["measures"]
    print(f"segments {scored} test images x {SCALES} scales: {ours['cpu_s']} s CPU, {ours['wall_s']} s wall, "
          f"{ours['peak_mib']} MiB (verification before: {verify['cpu_s']} s CPU)")  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"images": scored, "scales": SCALES, "ours": ours, "verify": verify, "measures": figures}))


if __name__ == "__main__":
    main()
