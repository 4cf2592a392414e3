"""Ingest of each label-map layout against decoding its files once, at the format's own size.

    .venv/bin/python benchmarks/labelmaps.py [--sizes 50 200] [--layouts voc cityscapes ade20k bsds500]

For each layout and size it generates (once, cached under ``--cache``) a tree at the format's
typical image size (VOC 500x375, Cityscapes 2048x1024, ADE20K 683x512, BSDS500 481x321), then:

1. times the floor: every image and every map (or ``.mat``) decoded once, nothing else; and the
   plain script a user would write (``plain``): that, and each region cut and RLE-encoded;
2. times the layout's reading alone (every shard's records: files decoded, a mask, RLE and
   exact polygon per region) and ingest: every shard by ``pipeline.ingest.ingest_shard`` (the
   reading, then features, relations and the consensus where there are several annotators),
   one shard after another in a child process, whose peak RSS the kernel reports (a shard job's).

It prints per layout and size the seconds of both, their ratio and the milliseconds per image,
and fits the growth exponent b of ingest ~ images^b across the sizes. The last line is one JSON
object with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import scipy.io
from PIL import Image

from regionbench.core.hierarchy import Hierarchy
from regionbench.io import layouts
from regionbench.pipeline.ingest import IngestSettings, ingest_shard

SIZES = {"voc": (500, 375), "cityscapes": (2048, 1024), "ade20k": (683, 512), "bsds500": (481, 321)}
SHARD = 100  # images per shard, as a build over a few thousand images cuts them


def generate(layout: str, root: Path, images: int) -> Path:
    """The tree of ``images`` images at ``root`` (made once: only a complete tree is cached)."""
    tree = root / "BSDS500" if layout == "bsds500" else root  # BSDS500's archive unpacks into its folder
    if root.is_dir():
        return tree
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    if layout == "bsds500":
        from regionbench.synthetic import bsds500

        ids = {"train": list(range(1, images // 2 + 1)), "test": list(range(images // 2 + 1, images + 1))}
        width, height = SIZES[layout]
        bsds500.write_tree(partial, ids, humans=5, seed=0, shape=(height, width))
    else:
        module = __import__(f"regionbench.synthetic.{layout}", fromlist=["write_tree"])
        for _ in module.write_tree(partial, images, 0, SIZES[layout]):
            pass
    partial.rename(root)
    return tree


def floor(root: Path) -> float:
    """Seconds to decode every image and map file of the tree once."""
    start = time.perf_counter()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".jpg", ".png"):
            with Image.open(path) as image:
                np.asarray(image)
        elif path.suffix == ".mat":
            scipy.io.loadmat(path)
    return time.perf_counter() - start


# The plain script's region maps: each map's distinct values are its regions (0 and 255 aside).
REGION_MAPS = {"voc": "SegmentationObject", "cityscapes": "_instanceIds", "ade20k": "annotations", "bsds500": ".mat"}


def plain(layout: str, root: Path) -> float:
    """Seconds of the plain script a user would write: every image and map decoded once, and
    each region of the layout's region maps (``REGION_MAPS``) cut as a mask and RLE-encoded
    (pycocotools), nothing else."""
    from pycocotools import mask as coco_mask

    def encode(values: np.ndarray) -> None:
        for v in np.unique(values):
            if v not in (0, 255):
                coco_mask.encode(np.asfortranarray((values == v).astype(np.uint8)))

    start = time.perf_counter()
    for path in sorted(root.rglob("*")):
        if path.suffix == ".mat":
            for human in scipy.io.loadmat(path)["groundTruth"][0]:
                encode(human["Segmentation"][0, 0])
        elif path.suffix in (".jpg", ".png"):
            with Image.open(path) as image:
                values = np.asarray(image)
            if path.suffix == ".png" and REGION_MAPS[layout] in str(path):
                encode(values)
    return time.perf_counter() - start


def ingest(layout: str, root: Path) -> tuple[float, float, int]:
    """Seconds to read every shard's records (the layout alone) and to ingest every shard, one
    after another in a child process, and its peak RSS in bytes."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one build's ingest jobs, in turn
        os.close(read)
        found = layouts.get(layout)
        with_vocabulary = Path(os.environ.get("TMPDIR", "/tmp")) / f"labelmaps-vocabulary-{os.getpid()}"
        with_vocabulary.mkdir(parents=True, exist_ok=True)
        tree = found.write_vocabulary(root, with_vocabulary)
        hierarchy = Hierarchy.from_yaml(with_vocabulary / "hierarchy.yaml")
        words = tree.ids or {label: k for k, label in enumerate(tree.labels, start=1)}
        reading = layouts.Reading(words, shard_size=SHARD)
        start = time.perf_counter()
        for shard in found.shards(root, SHARD):  # the layout's reading alone: files decoded, regions cut
            for _ in found.read_shard(root, shard, reading, hierarchy).records():
                pass
        read_s = time.perf_counter() - start
        start = time.perf_counter()
        for shard in found.shards(root, SHARD):
            ingest_shard(root, shard, words, hierarchy, layout=found, settings=IngestSettings(shard_size=SHARD))
        os.write(write, json.dumps([read_s, time.perf_counter() - start]).encode())
        os._exit(0)
    os.close(write)
    answer = os.read(read, 100)
    _, status, usage = os.wait4(pid, 0)
    if status:
        raise SystemExit(f"{layout}: the ingest of {root} failed (its traceback is above)")
    read_s, ingest_s = json.loads(answer)
    return read_s, ingest_s, usage.ru_maxrss * 1024


def exponent(points: list[tuple[int, float]]) -> float | None:
    """b of cost ~ n^b, least squares over (n, cost) in log-log."""
    if len(points) < 2:
        return None
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return round(float(np.polyfit(x, y, 1)[0]), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--layouts", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/regionbench-labelmaps"))
    args = parser.parse_args()
    figures: dict[str, dict] = {}
    for layout in args.layouts:
        rows = []
        for n in args.sizes:
            root = generate(layout, args.cache / f"{layout}-{n}", n)
            decode = floor(root)
            script = plain(layout, root)
            read_s, seconds, peak = ingest(layout, root)
            row = {
                "images": n,
                "decode_s": round(decode, 2),
                "plain_script_s": round(script, 2),
                "ratio_to_plain_script": round(seconds / script, 2),
                "read_s": round(read_s, 2),
                "read_ratio": round(read_s / decode, 2),
                "ingest_s": round(seconds, 2),
                "ratio": round(seconds / decode, 2),
                "ingest_ms_per_image": round(1000 * seconds / n, 1),
                "peak_rss_mib": round(peak / 2**20),
            }
            rows.append(row)
            print(f"{layout} {n} images: " + ", ".join(f"{k} {v}" for k, v in row.items() if k != "images"), flush=True)
        figures[layout] = {"runs": rows, "growth": exponent([(r["images"], r["ingest_s"]) for r in rows])}
    worst = max((r["ratio"] for f in figures.values() for r in f["runs"]), default=math.nan)
    print(json.dumps({"layouts": figures, "worst_ratio": worst, "cores": os.cpu_count()}, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
