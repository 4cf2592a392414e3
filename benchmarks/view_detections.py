"""What drawing an instances run costs `regionbench view`, as the detections grow: each
detection's outline made from its RLE (``predictions.Shape.polygon``) and written as the
page's SVG path (``view.outline_paths``).

    .venv/bin/python benchmarks/view_detections.py [--images 50 200 800]

A COCO-val-like run: 480x640 images, 100 detections an image, each an ellipse of 8 to 200
pixels a side at a random place (seeded). Prints a line per size and, last, one JSON object:
seconds, milliseconds per detection, the MiB of paths written, and the growth exponents.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from coco_scale import exponent
from pycocotools import mask as coco_mask

from regionbench.client import view
from regionbench.scoring.tasks import Shape

H, W = 480, 640


def detections(images: int, seed: int = 0) -> list[Shape]:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:H, :W]
    out = []
    for _ in range(images * 100):
        a, b = rng.integers(4, 100, size=2)
        cx, cy = rng.integers(0, W), rng.integers(0, H)
        mask = ((xx - cx) / a) ** 2 + ((yy - cy) / b) ** 2 <= 1
        rle = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
        out.append(Shape("label", rle=rle, facts={"score": float(rng.random())}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, nargs="+", default=[50, 200, 800])
    args = parser.parse_args()
    runs = {}
    for images in args.images:
        shapes = detections(images)
        start = time.perf_counter()
        paths = view.outline_paths(np.array([s.polygon() for s in shapes], dtype=object))
        seconds = time.perf_counter() - start
        size = sum(len(p) for p in paths) / 2**20
        per = seconds / len(shapes) * 1e3
        print(
            f"{images:,} images, {len(shapes):,} detections: outlined in {seconds:.1f} s ({per:.3f} ms each), "
            f"{size:,.1f} MiB of paths",
            flush=True,
        )
        runs[images] = {"detections": len(shapes), "seconds": round(seconds, 2), "ms_each": round(per, 4),
                        "paths_mib": round(size, 1)}  # fmt: skip
    sizes = [r["detections"] for r in runs.values()]
    growth = {"seconds": exponent(sizes, [r["seconds"] for r in runs.values()])}
    print(json.dumps({"runs": runs, "growth": growth}, sort_keys=True))


if __name__ == "__main__":
    main()
