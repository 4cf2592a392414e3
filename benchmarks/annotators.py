"""A crowd of annotators: how the build's cost grows with the annotators at a fixed number of
annotations.

    .venv/bin/python benchmarks/annotators.py [--annotators 10 30 100 300 1000] [--images 1000]

A crowdsourced collection has hundreds of annotators, each covering a few images. For each
number of annotators A the script generates (once, cached under ``--cache``) a COCO tree of
``--images`` small images (96x72 JPEGs) that every image has ``--per-image`` annotators
cover, taken in turn from the A (image k by annotators 3k, 3k+1, 3k+2 mod A), each tracing the
image's ``--regions`` hexagons within a pixel or two; one instances file per annotator lists the
images it covered. The annotations are the same number at every A: only how they fall into
files changes. Per tree it copies the workflow into a fresh folder, builds through the release
with the classifiers off, and reads per stage the jobs' CPU time and the peak RSS of the
largest job (``paper_scale.jobs``).

It fits the growth exponent b of cost ~ A^b for the build's CPU, each stage's CPU and the
largest job's peak RSS: a cost that follows the annotations, not annotators x images, has b
near 0. The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
from io import BytesIO
from pathlib import Path

import numpy as np
from coco_scale import HEIGHT, WIDTH, _jittered, _polygon, exponent, partial_tree
from paper_scale import PROJECT, build, fresh_project, jobs, print_stages, stage_table, warm_up
from PIL import Image

CATEGORIES = 20


def generate(root: Path, images: int, annotators: int, per_image: int, regions: int, seed: int = 0) -> Path:
    """The tree at ``root`` (made once: only a complete tree is ever cached)."""
    if (root / "annotations").is_dir():
        return root
    partial = partial_tree(root)
    rng = np.random.default_rng(seed)
    for k in range(1, images + 1):
        buffer = BytesIO()
        Image.fromarray(rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8)).save(buffer, "JPEG", quality=90)
        (partial / "images" / f"{k:012d}.jpg").write_bytes(buffer.getvalue())
    categories = [
        {"id": c, "name": f"category {c}", "supercategory": f"group {c % 5}"} for c in range(1, CATEGORIES + 1)
    ]
    files: list[dict[str, list]] = [{"images": [], "annotations": []} for _ in range(annotators)]
    serial = 0
    for k in range(1, images + 1):
        truth = [(int(rng.integers(1, CATEGORIES + 1)), _polygon(rng)) for _ in range(regions)]
        for j in range(per_image):
            mine = files[((k - 1) * per_image + j) % annotators]
            jitter = np.random.default_rng([seed, k, j])
            mine["images"].append({"id": k, "file_name": f"{k:012d}.jpg", "width": WIDTH, "height": HEIGHT})
            for category, polygon in truth:
                serial += 1
                points = _jittered(polygon, jitter)
                mine["annotations"].append(
                    {"id": serial, "image_id": k, "category_id": category, "iscrowd": 0, "segmentation": [points]}
                )
    for a, document in enumerate(files):
        body = {"info": {"description": f"annotator {a}"}, "licenses": [], **document, "categories": categories}
        (partial / "annotations" / f"annotator-{a:04d}.json").write_text(json.dumps(body))
    partial.rename(root)
    return root


def measure(root: Path, label: str, work: Path, cores: int) -> dict:
    print(f"\n== {label}", flush=True)
    project, override = fresh_project(work / label, root, {"classifiers": {"enabled": False}})
    wall, _ = build(project, override, cores, project / "build.log")
    stages = stage_table(jobs(project, "bench"))
    print_stages(f"{label}: build {wall:.1f} s wall", stages)
    cpu = sum(s["cpu_s"] for s in stages.values())
    peak = max(s["peak_rss_mib"] for s in stages.values())
    print(f"  {cpu:.1f} s CPU, largest job {peak} MiB", flush=True)
    return {"build_wall_s": round(wall, 1), "build_cpu_s": round(cpu, 1), "peak_rss_mib": peak, "stages": stages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, nargs="+", default=[10, 30, 100, 300, 1000])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--per-image", type=int, default=3, help="annotators who cover each image")
    parser.add_argument("--regions", type=int, default=4, help="regions each annotator draws on an image")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=PROJECT / "resources" / "bench" / "annotators")
    args = parser.parse_args()
    if min(args.annotators) < args.per_image:
        parser.error("every number of annotators must be at least --per-image")
    work = args.cache / "work"
    shape = f"{args.images}x{args.per_image}x{args.regions}"
    warm_up(
        generate(args.cache / f"{shape}-{args.per_image}", args.images, args.per_image, args.per_image, args.regions),
        work,
        args.cores,
    )
    results = {}
    for a in args.annotators:
        root = generate(args.cache / f"{shape}-{a}", args.images, a, args.per_image, args.regions)
        results[str(a)] = measure(root, f"{a} annotators", work, args.cores)
    runs = [results[str(a)] for a in args.annotators]
    growth = {
        "build_cpu": exponent(args.annotators, [r["build_cpu_s"] for r in runs]),
        "build_wall": exponent(args.annotators, [r["build_wall_s"] for r in runs]),
        "peak_rss": exponent(args.annotators, [r["peak_rss_mib"] for r in runs]),
        "stage_cpu": {
            stage: exponent(args.annotators, [max(r["stages"][stage]["cpu_s"], 0.05) for r in runs])
            for stage in runs[0]["stages"]
        },
    }
    annotations = args.images * args.per_image * args.regions
    print(f"\ngrowth exponents over {args.annotators} annotators at {annotations:,} annotations: {growth}")
    print(
        json.dumps(
            {"cores": args.cores, "images": args.images, "annotations": annotations, "runs": results, "growth": growth},
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
