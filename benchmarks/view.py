"""`regionbench view` at paper scale: how long the site takes to write, how large it is, and how
fast its index opens in a browser, as the release grows.

    .venv/bin/python benchmarks/view.py [--fractions 0.1 1.0] [--cores 2]

For each fraction of the paper profile's folders (the collection generated once under
``--cache``, as ``benchmarks/paper_scale.py`` makes it) the script builds the release with the
classifiers off (once; the release is cached beside the collection), then times
``regionbench view RELEASE --out SITE --images RAW`` in a fresh process (the release verified
first, as a user's run does; a collected tree's release names its images by path), and opens ``SITE/index.html`` from
``file://`` in headless Chromium (Debian's, driven by Playwright), timing the load until the
first page of thumbnails is drawn. It fits the growth exponent b of the write's wall time ~
images^b. The last line is one JSON object with every figure.

``--run`` adds a mask task's run: the reference annotator's label maps of the test images (the
truth, written once beside the release, untimed) scored by ``evaluate --task semantic --out``
and drawn by ``view --run REPORT --predictions MAPS``; each timed with its peak memory, the
drawing as the difference from the site without the run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from coco_scale import exponent
from paper_scale import PROJECT, build, collection, fresh_project, view

from regionbench.synthetic import plans

CHROMIUM = "/usr/bin/chromium"


def release_of(raw: Path, label: str, work: Path, cores: int) -> Path:
    """The release of ``raw`` (built once, classifiers off)."""
    folder = work / label / "releases" / "bench" / "v1.0.0"
    if not (folder / "manifest.json").is_file():
        project, override = fresh_project(work / label, raw, {"classifiers": {"enabled": False}})
        wall, _ = build(project, override, cores, project / "build.log")
        print(f"  built the release of {label} in {wall:.1f} s (untimed)", flush=True)
    return folder


def timed(command: list[str], log: Path) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of ``command`` in a fresh process (its output in ``log``);
    exits on failure."""
    start = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status:
        sys.exit(f"{' '.join(command[2:5])} failed: {log.read_text()[-1500:]}")
    return wall, usage.ru_maxrss / 1024


def truth_maps(release: Path, out: Path) -> int:
    """The reference annotator's label maps of the test images as PNGs of label ids (255 where
    no region), a batch of images at a time; returns how many."""
    import numpy as np
    from PIL import Image

    import regionbench
    from regionbench.scoring.measures import confusion
    from regionbench.scoring.tasks import _masks
    from regionbench.scoring.tasks.semantic import class_maps

    if (out / "done").is_file():
        return int((out / "done").read_text())
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    data = regionbench.load(release)
    images = _masks.scored_images(data, "test")
    _, index = confusion.label_codes(
        dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"], strict=True))
    )
    label_id = np.array([k for k, _ in sorted(index.items(), key=lambda kv: kv[1])], dtype=np.int64)
    for start in range(0, len(images), 256):
        batch = images.iloc[start : start + 256]
        for image_id, label in class_maps(data, _masks.reference(data), batch, index).items():
            ignore = label >= len(index)  # no region, or regions of two labels
            values = np.where(ignore, 255, label_id[np.where(ignore, 0, label)])
            Image.fromarray(values.astype(np.uint16)).save(out / f"{image_id}.png")
    (out / "done").write_text(str(len(images)))
    return len(images)


def open_index(site: Path) -> tuple[float, float]:
    """Seconds from opening the index to its first page of thumbnails drawn, and to its every
    part read (the filters and sorts then span every image)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        start = time.perf_counter()
        page.goto(f"file://{site}/index.html")
        page.wait_for_selector(".tile img")
        page.wait_for_function("[...document.querySelectorAll('.tile img')].every(i => i.complete)")
        seconds = time.perf_counter() - start
        page.wait_for_selector("body[data-indexed=all]")
        whole = time.perf_counter() - start
        browser.close()
    return seconds, whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=PROJECT / "resources" / "bench")
    parser.add_argument("--run", action="store_true", help="also score and draw a label-map run")
    args = parser.parse_args()
    raw = collection(args.cache)
    every = plans.folders("paper")
    work = args.cache / "view"
    runs = {}
    for fraction in args.fractions:
        folders = every[: max(1, round(fraction * len(every)))]
        tree = raw if len(folders) == len(every) else view(raw, folders, args.cache / f"paper-{len(folders)}")
        label = f"paper-{len(folders)}-folders"
        print(f"\n== {label}", flush=True)
        release = release_of(tree, label, work, args.cores)
        site = work / f"{label}-site"
        shutil.rmtree(site, ignore_errors=True)
        wall, peak = timed(
            [sys.executable, "-m", "regionbench", "view", str(release), "--out", str(site), "--images", str(tree)],
            work / f"{label}-view.log",
        )
        opened, indexed = open_index(site)
        manifest = json.loads((release / "manifest.json").read_text())
        images, regions = manifest["tables"]["images"]["rows"], manifest["tables"]["regions"]["rows"]
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        index = sum(p.stat().st_size for p in (site / "data" / "index").glob("*.js"))
        print(f"  {(work / f'{label}-view.log').read_text().strip().splitlines()[-1]}")
        print(
            f"  {images:,} images, {regions:,} regions: written in {wall:.1f} s (target 60 s at 20,000 images); "
            f"index opened in {opened:.2f} s (target 2 s), read whole in {indexed:.2f} s; site {size / 2**20:,.1f} MiB, index data {index / 2**10:,.0f} KiB",
            flush=True,
        )
        runs[label] = {
            "images": images,
            "regions": regions,
            "write_s": round(wall, 1),
            "write_peak_mib": round(peak),
            "open_index_s": round(opened, 2),
            "index_read_s": round(indexed, 2),
            "site_mib": round(size / 2**20, 1),
            "index_kib": round(index / 2**10),
        }
        if args.run:
            maps = work / f"{label}-maps"
            scored = truth_maps(release, maps)
            report = work / f"{label}-confusion.json"
            command = [sys.executable, "-m", "regionbench"]
            score_s, score_mib = timed(
                [*command, "evaluate", "--release", str(release), "--predictions", str(maps), "--task", "semantic",
                 "--out", str(report)], work / f"{label}-evaluate.log",
            )  # fmt: skip
            shutil.rmtree(site, ignore_errors=True)
            drawn_s, drawn_mib = timed(
                [*command, "view", str(release), "--out", str(site), "--images", str(tree), "--run", str(report),
                 "--predictions", str(maps)], work / f"{label}-view-run.log",
            )  # fmt: skip
            print(
                f"  a label-map run of {scored:,} test images: scored in {score_s:.1f} s ({score_mib:,.0f} MiB peak), "
                f"the site with it drawn in {drawn_s:.1f} s ({drawn_mib:,.0f} MiB peak; "
                f"{drawn_s - wall:+.1f} s for the run)",
                flush=True,
            )
            runs[label] |= {
                "run_images": scored,
                "score_s": round(score_s, 1),
                "score_peak_mib": round(score_mib),
                "write_with_run_s": round(drawn_s, 1),
                "write_with_run_peak_mib": round(drawn_mib),
            }
    sizes = [r["images"] for r in runs.values()]
    growth = {"write": exponent(sizes, [r["write_s"] for r in runs.values()])}
    if args.run:
        growth |= {
            key: exponent([r["run_images"] for r in runs.values()], [r[key] for r in runs.values()])
            for key in ("score_s", "score_peak_mib", "write_with_run_s", "write_with_run_peak_mib")
        }
    print(f"\ngrowth exponent of the write over {sizes} images: {growth}")
    print(json.dumps({"cores": args.cores, "runs": runs, "growth": growth}, sort_keys=True))


if __name__ == "__main__":
    main()
