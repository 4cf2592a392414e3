"""The collections ``benchmarks/scoring.py`` scores, made once and cached.

    .venv/bin/python benchmarks/scoring_data.py --images 500 5000 20000   # make (and build) them

A COCO-val-like tree per size: ``images/`` of 640x480 JPEGs (one flat colour each, so decoding is
cheap, each file its own bytes), ``annotations/instances.json`` of ~7.2 instances an image over
COCO's 80 categories (rectangles and hexagons of 8-200 pixels a side, 1% crowd; area and bbox
given, as COCO's files give them), built into a
release by the workflow (classifiers off), and ``results.json``: 100 detections an image as RLE,
half near an instance of the image, half anywhere, their scores uniform.
"""

from __future__ import annotations

import argparse
import json
import sys
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np
from coco_scale import numbered, partial_tree
from paper_scale import PROJECT, build, fresh_project
from PIL import Image
from pycocotools import mask as coco_mask

H, W = 480, 640
INSTANCES, DETECTIONS, CROWD = 7.2, 100, 0.01
CACHE = PROJECT / "resources" / "bench" / "scoring"


def _shape(rng: np.random.Generator, x: float, y: float, w: float, h: float) -> list[float]:
    """A rectangle or a hexagon in the box (x, y, w, h), as one COCO polygon."""
    if rng.random() < 0.5:
        return [x, y, x + w, y, x + w, y + h, x, y + h]
    angles = np.sort(rng.uniform(0, 2 * np.pi, 6))
    xs = x + w / 2 * (1 + np.cos(angles))
    ys = y + h / 2 * (1 + np.sin(angles))
    return [round(float(v), 2) for xy in zip(xs, ys, strict=True) for v in xy]


def _box(rng: np.random.Generator, low: int, high: int) -> tuple[int, int, int, int]:
    w, h = int(rng.integers(low, high)), int(rng.integers(low, high))
    return int(rng.integers(0, W - w)), int(rng.integers(0, H - h)), w, h


def generate(
    root: Path,
    images: int,
    seed: int = 0,
    lvis: bool = False,
    categories: int = 80,
    shared: int = 0,
    boxes: bool = False,
) -> Path:
    """The tree and results file at ``root`` (made once: only a complete one is cached).
    ``lvis``: an LVIS file (each image 5 categories verified absent, one of its own not
    exhaustive at 30%, every category a frequency), crowds aside as LVIS has none.
    ``categories``: how many (COCO's 80; V3Det's 13,204), ``shared`` names each given to two ids
    (V3Det's 29), ``boxes``: detections as boxes alone (V3Det is a detection benchmark)."""
    if (root / "results.json").is_file():
        return root
    partial = partial_tree(root)
    rng = np.random.default_rng(seed)
    jpeg = BytesIO()
    Image.new("RGB", (W, H), (90, 120, 150)).save(jpeg, "JPEG", quality=90)
    entries, annotations, truth = [], [], {}
    for k in range(1, images + 1):
        name = f"{k:012d}.jpg"
        (partial / "images" / name).write_bytes(numbered(jpeg.getvalue(), k))
        entries.append({"id": k, "file_name": name, "width": W, "height": H})
        truth[k] = []
        for _ in range(int(rng.poisson(INSTANCES))):
            box, category = _box(rng, 8, 200), int(rng.integers(1, categories + 1))
            polygon = _shape(rng, *box)
            rle = coco_mask.frPyObjects([polygon], H, W)[0]  # area and bbox as COCO's files state them
            annotations.append({"id": len(annotations) + 1, "image_id": k, "category_id": category,
                                "iscrowd": int(not lvis and rng.random() < CROWD), "segmentation": [polygon],
                                "area": int(coco_mask.area(rle)), "bbox": [float(v) for v in coco_mask.toBbox(rle)]})  # fmt: skip
            truth[k].append((box, category))
    twins = set(range(2, 2 * shared + 1, 2))  # ids named as the id before them
    listed = [
        {"id": c, "name": f"category {c - 1 if c in twins else c}", "supercategory": f"group {c % 10}"}
        for c in range(1, categories + 1)
    ]
    if lvis:
        for c in listed:
            c["frequency"] = "rcf"[c["id"] % 3]
        for entry in entries:
            own = sorted({category for _, category in truth[entry["id"]]})
            absent = [c for c in range(1, categories + 1) if c not in own]
            entry["neg_category_ids"] = sorted(int(c) for c in rng.choice(absent, size=5, replace=False))
            entry["not_exhaustive_category_ids"] = own[:1] if own and rng.random() < 0.3 else []
    document = {"info": {}, "licenses": [], "images": entries, "annotations": annotations, "categories": listed}
    (partial / "annotations" / "instances.json").write_text(json.dumps(document))
    with (partial / "results.json").open("w") as f:  # written an image at a time
        f.write("[")
        for k in range(1, images + 1):
            items = []
            for _ in range(DETECTIONS):
                if truth[k] and rng.random() < 0.5:
                    (x, y, w, h), category = truth[k][int(rng.integers(len(truth[k])))]
                    x, y = (
                        min(max(0, x + int(rng.integers(-6, 7))), W - w),
                        min(max(0, y + int(rng.integers(-6, 7))), H - h),
                    )
                    box = (x, y, w, h)
                else:
                    box, category = _box(rng, 8, 120), int(rng.integers(1, categories + 1))
                score = round(float(rng.random()), 6)
                if boxes:
                    items.append(
                        json.dumps({"image_id": k, "category_id": category, "score": score, "bbox": list(box)})
                    )
                    continue
                rle = coco_mask.frPyObjects([_shape(rng, *box)], H, W)[0]
                items.append(json.dumps({"image_id": k, "category_id": category, "score": score,
                                         "segmentation": {"size": [H, W], "counts": rle["counts"].decode()}}))  # fmt: skip
            f.write(("," if k > 1 else "") + ",".join(items))
        f.write("]")
    partial.rename(root)
    return root


def release(root: Path, cores: int = 2) -> Path:
    """The release the workflow builds from the tree at ``root`` (built once, classifiers off)."""
    out = root / "project" / "releases" / "bench" / "v1.0.0"
    if (out / "manifest.json").is_file():
        return out
    # The images are one picture each (only their bytes differ): every pair is a near-copy, and
    # grouping 20,000 of them as one took 19 GiB; scoring needs neither audit.
    audits_off = {"duplicates": {"enabled": False}, "labels": {"enabled": False}}
    project, override = fresh_project(root / "project", root, {"classifiers": {"enabled": False}, "audit": audits_off})
    wall, _ = build(project, override, cores, root / "build.log")
    print(f"built {root.name} in {wall:.0f} s", file=sys.stderr, flush=True)
    return out


def collection(
    images: int, cores: int = 2, cache: Path = CACHE, lvis: bool = False, **shape: Any
) -> tuple[Path, Path, Path]:
    """(release folder, the instances file it was built from, the results file) at ``images``
    (``lvis``: the LVIS variant; ``shape``: ``generate``'s categories, shared and boxes)."""
    kind = "lvis" if lvis else "coco"
    if shape:
        kind += "-" + "-".join(f"{k}{int(v)}" for k, v in sorted(shape.items()))
    root = generate(cache / f"{kind}-{images}", images, lvis=lvis, **shape)
    return release(root, cores), root / "annotations" / "instances.json", root / "results.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[500, 5000, 20000])
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args()
    for n in args.images:
        print(*collection(n, args.cores), flush=True)


if __name__ == "__main__":
    main()
