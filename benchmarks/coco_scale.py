"""COCO at today's sizes on this machine: how the build's cost grows with the images.

    .venv/bin/python benchmarks/coco_scale.py [--sizes 2000 8000 32000 118000] [--three-at 8000]

For each size it generates (once, cached under ``--cache``) a COCO tree of small images, as in
COCO train2017 but 96x72 pixels: ``images/`` of JPEGs and one annotator file of seven polygons
per image over 80 categories; at ``--three-at`` images also a tree of three annotators (the
second and third trace the first's polygons within a pixel or two). Before the first tree it
builds a 200-image tree, untimed, so that numba's cache holds the compiled kernels, as after any
first build. Then, per tree, it:

1. times the floor: every image decoded once and one parse of each annotator file, on ``--cores``
   processes, nothing else;
2. copies the workflow into a fresh folder and times planning (a dry run before anything is
   built), the build through the release with the classifiers switched off, and a no-op rerun;
3. prints per stage the jobs, wall time and CPU time, read from the rules' Snakemake benchmark
   files, the peak RSS of its largest job as the kernel counted it (the job's log), and the
   build's ratio to the floor.

Across the sizes it fits the growth exponent b of cost ~ images^b for ingest's CPU (its CPU per
image should stay flat: b near 1) and for the whole build. The last line is one JSON object with
every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from io import BytesIO
from pathlib import Path

import numpy as np
from paper_scale import PROJECT, build, fresh_project, jobs, print_stages, stage_table, warm_up
from PIL import Image

WIDTH, HEIGHT, REGIONS, CATEGORIES = 96, 72, 7, 80
PAYLOADS = 256  # distinct JPEG scans, written in turn, each file made its own by a comment (below)


def _polygon(rng: np.random.Generator) -> list[float]:
    """A convex hexagon inside the image: six points at sorted angles around a centre."""
    cx, cy = rng.uniform(12, WIDTH - 12), rng.uniform(12, HEIGHT - 12)
    radius = rng.uniform(4, 12)
    angles = np.sort(rng.uniform(0, 2 * np.pi, 6))
    xs = np.clip(cx + radius * np.cos(angles), 0, WIDTH)
    ys = np.clip(cy + radius * np.sin(angles), 0, HEIGHT)
    return [round(float(v), 2) for xy in zip(xs, ys, strict=True) for v in xy]


def _jittered(polygon: list[float], rng: np.random.Generator) -> list[float]:
    xy = np.asarray(polygon).reshape(-1, 2) + rng.uniform(-1.5, 1.5, (len(polygon) // 2, 2))
    xy = np.clip(xy, 0, [WIDTH, HEIGHT])
    return [round(float(v), 2) for v in xy.ravel()]


def numbered(jpeg: bytes, k: int) -> bytes:
    """``jpeg`` with a comment segment (COM) saying ``k`` after its start marker: the same pixels,
    other bytes, so that each file is a photograph of its own (one image under two ids is a
    reject)."""
    text = f"image {k}".encode()
    return jpeg[:2] + b"\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + jpeg[2:]


def partial_tree(root: Path) -> Path:
    """An empty ``<root>.partial`` with ``images/`` and ``annotations/``: a tree is written there
    and renamed to ``root`` when complete, so only a complete tree is ever cached."""
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "images").mkdir(parents=True)
    (partial / "annotations").mkdir()
    return partial


def generate(root: Path, images: int, annotators: int, seed: int = 0) -> Path:
    """The tree at ``root`` (made once: only a complete tree is ever cached)."""
    if (root / "annotations").is_dir():
        return root
    partial = partial_tree(root)
    rng = np.random.default_rng(seed)
    payloads = []
    for _ in range(PAYLOADS):
        buffer = BytesIO()
        pixels = rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(buffer, "JPEG", quality=90)
        payloads.append(buffer.getvalue())
    for k in range(1, images + 1):
        (partial / "images" / f"{k:012d}.jpg").write_bytes(numbered(payloads[k % PAYLOADS], k))
    categories = [{"id": c, "name": f"category {c}", "supercategory": f"group {c % 10}"} for c in range(1, 81)]
    truth = [(k, int(rng.integers(1, CATEGORIES + 1)), _polygon(rng)) for k in range(1, images + 1) for _ in range(7)]
    for a in range(1, annotators + 1):
        jitter = np.random.default_rng(seed + a)
        with (partial / "annotations" / f"annotator-{a}.json").open("w") as f:  # written an item at a time
            f.write('{"info": {}, "licenses": [], "images": [')
            f.write(
                ",".join(
                    json.dumps({"id": k, "file_name": f"{k:012d}.jpg", "width": WIDTH, "height": HEIGHT})
                    for k in range(1, images + 1)
                )
            )
            f.write('], "annotations": [')
            for n, (image, category, polygon) in enumerate(truth, start=1):
                points = polygon if a == 1 else _jittered(polygon, jitter)
                item = {"id": n, "image_id": image, "category_id": category, "iscrowd": 0, "segmentation": [points]}
                f.write(("," if n > 1 else "") + json.dumps(item))
            f.write('], "categories": ' + json.dumps(categories) + "}")
    partial.rename(root)
    return root


def _decode(paths: list[str]) -> int:
    for path in paths:
        with Image.open(path) as im:
            np.asarray(im.convert("RGB"))
    return len(paths)


def _parse(path: str) -> int:
    with open(path, "rb") as f:
        return len(json.load(f)["annotations"])


def floor(root: Path, cores: int) -> dict:
    """Wall and CPU seconds to decode every image once and parse each annotator file once."""
    paths = sorted(str(p) for p in (root / "images").iterdir())
    chunks = [paths[k : k + 2000] for k in range(0, len(paths), 2000)]
    files = sorted(str(p) for p in (root / "annotations").iterdir())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with ProcessPoolExecutor(cores) as pool:
        parsed = pool.map(_parse, files)
        decoded = sum(pool.map(_decode, chunks))
        annotations = sum(parsed)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"images": decoded, "annotations": annotations, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}


def timed(project: Path, override: Path, cores: int, *args: str) -> float:
    cmd = [sys.executable, "-m", "regionbench", "build", "--project-dir", str(project), "--cores", str(cores)]
    start = time.perf_counter()
    done = subprocess.run([*cmd, "--configfile", str(override), *args], capture_output=True, text=True, cwd=project)
    if done.returncode != 0:
        sys.exit(f"coco_scale: {' '.join(args) or 'the build'} in {project} failed: {done.stderr[-1500:]}")
    return time.perf_counter() - start


def measure(root: Path, label: str, work: Path, cores: int) -> dict:
    print(f"\n== {label}", flush=True)
    low = floor(root, cores)
    print(f"  floor: {low['images']:,} images decoded, {low['annotations']:,} annotations parsed: {low['wall_s']} s")
    project, override = fresh_project(work / label, root, {"classifiers": {"enabled": False}})
    planning = timed(project, override, cores, "--dry-run")
    wall, _ = build(project, override, cores, project / "build.log")
    noop = timed(project, override, cores)
    stages = stage_table(jobs(project, "bench"))
    print_stages(f"{label}: build {wall:.1f} s wall", stages)
    cpu = sum(s["cpu_s"] for s in stages.values())
    images = low["images"]
    print(
        f"  {cpu:.1f} s CPU; {wall / low['wall_s']:.2f}x the floor's wall, {cpu / low['cpu_s']:.2f}x its CPU; "
        f"ingest {1000 * stages['ingest']['cpu_s'] / images:.2f} ms CPU per image; planning {planning:.1f} s, "
        f"no-op rerun {noop:.1f} s",
        flush=True,
    )
    return {
        "images": images,
        "annotations": low["annotations"],
        "floor": low,
        "planning_s": round(planning, 1),
        "noop_s": round(noop, 1),
        "build_wall_s": round(wall, 1),
        "build_cpu_s": round(cpu, 1),
        "ratio_wall": round(wall / low["wall_s"], 2),
        "ratio_cpu": round(cpu / low["cpu_s"], 2),
        "ingest_ms_per_image": round(1000 * stages["ingest"]["cpu_s"] / images, 2),
        "peak_rss_mib": max(s["peak_rss_mib"] for s in stages.values()),
        "stages": stages,
    }


def exponent(sizes: list[int], costs: list[float]) -> float:
    """b of the least-squares fit of log(cost) = a + b log(size)."""
    return round(float(np.polyfit(np.log(sizes), np.log(costs), 1)[0]), 3) if len(sizes) > 1 else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000, 32000, 118000])
    parser.add_argument("--three-at", type=int, default=8000, help="images of the three-annotator tree (0: none)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=PROJECT / "resources" / "bench" / "coco")
    args = parser.parse_args()
    work = args.cache / "work"
    warm_up(generate(args.cache / "coco-200", 200, 1), work, args.cores)
    results = {}
    for n in args.sizes:
        root = generate(args.cache / f"coco-{n}", n, 1)
        results[f"{n}x1"] = measure(root, f"{n:,} images, 1 annotator", work, args.cores)
    if args.three_at:
        root = generate(args.cache / f"coco-{args.three_at}-3", args.three_at, 3)
        results[f"{args.three_at}x3"] = measure(root, f"{args.three_at:,} images, 3 annotators", work, args.cores)
    ones = [results[f"{n}x1"] for n in args.sizes]
    growth = {
        "ingest_cpu": exponent(args.sizes, [r["stages"]["ingest"]["cpu_s"] for r in ones]),
        "build_cpu": exponent(args.sizes, [r["build_cpu_s"] for r in ones]),
        "build_wall": exponent(args.sizes, [r["build_wall_s"] for r in ones]),
    }
    print(f"\ngrowth exponents over {args.sizes} images: {growth}")
    print(json.dumps({"cores": args.cores, "runs": results, "growth": growth}, sort_keys=True))


if __name__ == "__main__":
    main()
