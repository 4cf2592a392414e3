"""What scoring a promptable-concept run against SA-Co files costs (``regionbench concepts``), by
the number of pairs, one annotator and the oracle over three, and what reading the same files as
a collection costs (the ``saco`` layout's ``prepare``: every file read once, each pair checked,
the photos' pieces written): SA-Co/Gold's subsets hold up to ~65,000 (image, phrase) pairs.

    .venv/bin/python benchmarks/concepts.py [--pairs 2000 8000 32000]

Per size: three annotators' files of 640x480 pairs (half negatives; positives with one to four
instances, each annotator's shifted a little), and a run of about two detections a pair, scores
uniform. CPU seconds and peak memory of ``concept_files.score`` and of ``io.saco.LAYOUT.prepare``
in this process. Prints a line per
size and, last, one JSON object: seconds, growth exponent b of cost ~ n^b, and the seconds the
growth forecasts for 65,000 pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
from pycocotools import mask as coco_mask

from regionbench.io import saco
from regionbench.scoring import concept_files as concepts

H, W = 480, 640


def rle(x: int, y: int, w: int, h: int) -> dict:
    mask = np.zeros((H, W), dtype=np.uint8, order="F")
    mask[y : y + h, x : x + w] = 1
    encoded = coco_mask.encode(mask)
    return {"size": [H, W], "counts": encoded["counts"].decode()}


def files(folder: Path, pairs: int, seed: int = 0) -> tuple[list[Path], Path]:
    """Three annotators' files of ``pairs`` pairs and a run, written under ``folder``."""
    rng = np.random.default_rng(seed)
    boxes = [
        [tuple(int(v) for v in rng.integers([0, 0, 20, 20], [W - 200, H - 200, 200, 200])) for _ in range(int(rng.integers(1, 5)))]
        if rng.random() < 0.5 else []
        for _ in range(pairs)
    ]  # fmt: skip
    shapes = {}  # one RLE a box and shift: encoding is not what is measured
    images = [{"id": p + 1, "file_name": f"{p // 4}.jpg", "height": H, "width": W, "text_input": f"phrase {p % 97}",
               "is_instance_exhaustive": True} for p in range(pairs)]  # fmt: skip
    paths = []
    for k, who in enumerate("abc"):
        annotations = []
        for p, found in enumerate(boxes):
            for x, y, w, h in found:
                key = (x + k, y, w, h)
                shapes.setdefault(key, rle(*key))
                annotations.append({"id": len(annotations) + 1, "image_id": p + 1, "category_id": 1,
                                    "segmentation": shapes[key], "bbox": list(key), "area": float(w * h), "iscrowd": 0})  # fmt: skip
        path = folder / "annotations" / f"gold_bench_merged_{who}_release_test.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": [{"id": 1}]}))
        paths.append(path)
    run = []
    for p, found in enumerate(boxes):
        for x, y, w, h in found[:2] or [(10, 10, 40, 40)]:
            key = (x + 2, y + 1, w, h)
            shapes.setdefault(key, rle(*key))
            run.append(
                {"image_id": p + 1, "segmentation": shapes[key], "bbox": list(key), "score": float(rng.random())}
            )
    (folder / "run.json").write_text(json.dumps(run))
    return paths, folder / "run.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, nargs="+", default=[2000, 8000, 32000])
    args = ap.parse_args()
    found: dict[str, dict[int, float]] = {"one annotator": {}, "oracle over three": {}, "saco layout prepare": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.pairs:
            folder = Path(tmp) / str(n)
            folder.mkdir()
            paths, run = files(folder, n)
            for name, chosen in (("one annotator", paths[:1]), ("oracle over three", paths)):
                start = time.process_time()
                concepts.score(chosen, run)
                found[name][n] = time.process_time() - start
            (folder / "images").mkdir()  # the photos are not read by prepare: their names are
            start = time.process_time()
            saco.LAYOUT.prepare(folder, folder / "pieces", None)
            found["saco layout prepare"][n] = time.process_time() - start
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"{n} pairs: " + ", ".join(f"{k} {v[n]:.2f} s CPU" for k, v in found.items()) + f"; peak {peak:.0f} MiB"
            )
    small, large = min(args.pairs), max(args.pairs)
    growth = {k: round(math.log(v[large] / v[small]) / math.log(large / small), 3) for k, v in found.items()}
    forecast = {k: round(v[large] * (65_000 / large) ** growth[k], 1) for k, v in found.items()}
    print(json.dumps({"cpu_s": found, "growth_exponent": growth, "forecast_65000_pairs_s": forecast}))


if __name__ == "__main__":
    main()
