"""The reference methods' cost: CPU seconds an image for each baseline, at BSDS500's size
(481x321) and at 640x480, and how the cost grows with the number of images.

    .venv/bin/python benchmarks/baselines.py [--images 4 16 64]

The images are scikit-image's real photographs (``chelsea``, ``coffee``, ``astronaut``,
``rocket``), resized, taken in turn: a method's cost is a photograph's. Each method's
``predict`` (its whole sweep) is timed in this process; a learnt method (labels) is fitted once
on the four photographs (classes: each one's halves of brightness, the fit's cost apart) and its
predictor timed. ``cpu_s_per_megapixel`` is what a module's ``COST`` says. The last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable
from types import ModuleType

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


def predictor(
    module: ModuleType, pictures: list[np.ndarray]
) -> tuple[Callable[[np.ndarray], np.ndarray], float | None]:
    """The function timed for ``module`` and the CPU seconds its fit took (None: nothing fitted)."""
    if module.KIND != "labels":
        return (lambda image: baselines.predictions(module, image)), None
    start = time.process_time()
    examples = [(p, (p.mean(axis=2) > np.median(p.mean(axis=2))).astype(np.int64)) for p in pictures]
    fitted = module.train(examples, 2)
    return fitted, time.process_time() - start


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
            predict, fit = predictor(module, pictures)
            predict(pictures[0])  # imports and first-call costs aside
            costs = []
            for n in args.images:
                start = time.process_time()
                for k in range(n):
                    predict(pictures[k % len(pictures)])
                costs.append(time.process_time() - start)
            per = costs[-1] / args.images[-1]
            grows = math.log(costs[-1] / costs[0]) / math.log(args.images[-1] / args.images[0])
            rows[name][size] = {"cpu_s_per_image": round(per, 3), "cpu_s": [round(c, 2) for c in costs],
                                "growth_exponent": round(grows, 3),
                                "cpu_s_per_megapixel": round(per / (width * height / 1e6), 2)}  # fmt: skip
            if fit is not None:
                rows[name][size]["fit_cpu_s"] = round(fit, 2)
            print(f"{name:<13} {size}: {per:.3f} CPU-s an image ({len(module.SWEEP)} levels); "
                  f"{args.images} images: {[round(c, 1) for c in costs]} s, exponent {grows:.2f}", flush=True)  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"images": args.images, "methods": rows}, sort_keys=True))


if __name__ == "__main__":
    main()
