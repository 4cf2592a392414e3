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
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from coco_scale import exponent
from paper_scale import PROJECT, build, collection, fresh_project, view

from regionbench.synthetic import scenes as synth

CHROMIUM = "/usr/bin/chromium"


def release_of(raw: Path, label: str, work: Path, cores: int) -> Path:
    """The release of ``raw`` (built once, classifiers off)."""
    folder = work / label / "releases" / "bench" / "v1.0.0"
    if not (folder / "manifest.json").is_file():
        project, override = fresh_project(work / label, raw, {"classifiers": {"enabled": False}})
        wall, _ = build(project, override, cores, project / "build.log")
        print(f"  built the release of {label} in {wall:.1f} s (untimed)", flush=True)
    return folder


def open_index(site: Path) -> float:
    """Seconds from opening the index to its first page of thumbnails drawn."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        start = time.perf_counter()
        page.goto(f"file://{site}/index.html")
        page.wait_for_selector(".tile img")
        page.wait_for_function("[...document.querySelectorAll('.tile img')].every(i => i.complete)")
        seconds = time.perf_counter() - start
        browser.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=PROJECT / "resources" / "bench")
    args = parser.parse_args()
    raw = collection(args.cache)
    every = synth.folders("paper")
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
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "regionbench", "view", str(release), "--out", str(site), "--images", str(tree)],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"view failed: {done.stderr[-1500:]}")
        opened = open_index(site)
        manifest = json.loads((release / "manifest.json").read_text())
        images, regions = manifest["tables"]["images"]["rows"], manifest["tables"]["regions"]["rows"]
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        index = (site / "data" / "index.js").stat().st_size
        print(f"  {done.stdout.strip()}")
        print(
            f"  {images:,} images, {regions:,} regions: written in {wall:.1f} s (target 60 s at 20,000 images); "
            f"index opened in {opened:.2f} s (target 2 s); site {size / 2**20:,.1f} MiB, index data {index / 2**10:,.0f} KiB",
            flush=True,
        )
        runs[label] = {
            "images": images,
            "regions": regions,
            "write_s": round(wall, 1),
            "open_index_s": round(opened, 2),
            "site_mib": round(size / 2**20, 1),
            "index_kib": round(index / 2**10),
        }
    sizes = [r["images"] for r in runs.values()]
    growth = {"write": exponent(sizes, [r["write_s"] for r in runs.values()])}
    print(f"\ngrowth exponent of the write over {sizes} images: {growth}")
    print(json.dumps({"cores": args.cores, "runs": runs, "growth": growth}, sort_keys=True))


if __name__ == "__main__":
    main()
