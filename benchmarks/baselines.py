"""The reference methods' cost: CPU seconds an image for each baseline, at BSDS500's size
(481x321) and at 640x480, and how the cost grows with the number of images.

    .venv/bin/python benchmarks/baselines.py [--images 4 16 64]

The images are scikit-image's real photographs (``chelsea``, ``coffee``, ``astronaut``,
``rocket``), resized, taken in turn: a method's cost is a photograph's. Each method's
``predict`` (its whole sweep) is timed in this process. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np
from PIL import Image

from regionbench import baselines

SIZES = {"481x321": (481, 321), "640x480": (640, 480)}


def photos(width: int, height: int) -> list[np.ndarray]:
    from skimage import data

    return [
        np.asarray(Image.fromarray(getattr(data, name)()).convert("RGB").resize((width, height), Image.BILINEAR))
        for name in ("chelsea", "coffee", "astronaut", "rocket")
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[4, 16, 64])
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows: dict[str, dict] = {}
    for name, module in baselines.registry().items():
        rows[name] = {"kind": module.KIND, "levels": len(module.SWEEP)}
        for size, (width, height) in SIZES.items():
            pictures = photos(width, height)
            baselines.predictions(module, pictures[0])  # imports and first-call costs aside
            costs = []
            for n in args.images:
                start = time.process_time()
                for k in range(n):
                    baselines.predictions(module, pictures[k % len(pictures)])
                costs.append(time.process_time() - start)
            per = costs[-1] / args.images[-1]
            grows = math.log(costs[-1] / costs[0]) / math.log(args.images[-1] / args.images[0])
            rows[name][size] = {"cpu_s_per_image": round(per, 3), "cpu_s": [round(c, 2) for c in costs],
                                "growth_exponent": round(grows, 3)}  # fmt: skip
            print(f"{name:<13} {size}: {per:.3f} CPU-s an image ({len(module.SWEEP)} levels); "
                  f"{args.images} images: {[round(c, 1) for c in costs]} s, exponent {grows:.2f}", flush=True)  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"images": args.images, "methods": rows}, sort_keys=True))


if __name__ == "__main__":
    main()
