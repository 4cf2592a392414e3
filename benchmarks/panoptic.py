"""Panoptic collections at COCO's image size: reading a panoptic PNG beside a plain decode + RLE
script, and the whole ``evaluate --task panoptic`` command beside the COCO panoptic API's
``pq_compute`` on one process, on the same files.

    .venv/bin/python benchmarks/panoptic.py [--images 250 1000 4000]

Per size, a COCO panoptic tree of 640x480 images (one flat colour JPEG each, so that decoding is
cheap, each file its own bytes): 3-5 stuff bands and 6-16 things (rectangles and ellipses, 1 in
20 a crowd, one a category and image as in COCO's files, where the API's crowd rule is defined),
VOID between bands; built once into a release (classifiers off) and cached. The run
is the truth moved 4 pixels right and down, 1 segment in 10 relabelled, 1 in 20 dropped to VOID,
as a results JSON and its PNG folder. Each side runs as its own process, timed by the kernel
(CPU seconds, wall seconds, peak RSS):

- ``read``: the layout's reader over every image (``io.panoptic.PanopticReader.records``: the
  image and its PNG decoded, segment ids, each segment's mask, RLE, box and exact polygon) and
  ``plain``: a script of 12 lines that decodes the image and the PNG, computes the ids and
  encodes each segment's mask with pycocotools (``ingest``: the whole ingest of the shard,
  features and relations included, printed beside);
- ``ours``: ``regionbench evaluate --task panoptic --split all --cores 1`` (one process, as
  ``pq_compute_single_core`` is: release load, truth painted
  from the release's regions, report written), after ``regionbench verify`` timed apart;
  ``pq_compute``: ``pq_compute_single_core`` (the API's per-image loop, without its process
  pool) and its ``pq_average``, on the tree's JSON and PNGs.

The PQ, SQ and RQ of both (all, things, stuff) must be equal (1e-12) before any time is printed.
The last line is one JSON object with the growth exponents (log cost / log size).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
from io import BytesIO
from pathlib import Path

import numpy as np
from coco_scale import numbered
from paper_scale import PROJECT, build, fresh_project
from PIL import Image
from scoring import timed

from regionbench.io.panoptic import id_to_rgb

H, W = 480, 640
CACHE = PROJECT / "resources" / "bench" / "panoptic"
CATEGORIES = [{"id": i, "name": f"thing-{i}", "supercategory": "things", "isthing": 1} for i in range(1, 21)] + [
    {"id": 100 + i, "name": f"stuff-{i}", "supercategory": "stuff", "isthing": 0} for i in range(1, 11)
]

PLAIN = """
import json, sys
from pathlib import Path
import numpy as np
from PIL import Image
from pycocotools import mask as coco_mask
root = Path(sys.argv[1]); document = json.load(open(root / "annotations/panoptic_val.json"))
for image, annotation in zip(document["images"], document["annotations"]):
    pixels = np.asarray(Image.open(root / "images/val" / image["file_name"]).convert("RGB"))
    rgb = np.asarray(Image.open(root / "annotations/panoptic_val" / annotation["file_name"])).astype(np.uint32)
    ids = rgb[..., 0] + 256 * rgb[..., 1] + 65536 * rgb[..., 2]
    rles = [coco_mask.encode(np.asfortranarray(ids == s["id"], dtype=np.uint8)) for s in annotation["segments_info"]]
"""

READ = """
import sys
from pathlib import Path
from regionbench.io import panoptic
from regionbench.io.layouts import Reading
root = Path(sys.argv[1])
words = {"thing-%d" % i: i for i in range(1, 21)} | {"stuff-%d" % i: 100 + i for i in range(1, 11)}
run = panoptic.entries(root)[0]
reader = panoptic.PanopticReader(root, "00", run, Reading(words=words), ["panoptic"])
print(sum(len(record.regions) for record in reader.records()))
"""

INGEST = """
import sys
from pathlib import Path
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
words = {"thing-%d" % i: i for i in range(1, 21)} | {"stuff-%d" % i: 100 + i for i in range(1, 11)}
shard = ingest_shard(Path(sys.argv[1]), "00", words, layout="coco-panoptic", settings=IngestSettings(shard_size=10**6))
print(shard.regions.num_rows)
"""

PQ = """
import contextlib, io, json, sys
from panopticapi import evaluation
gt, pred = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
categories = {c["id"]: c for c in gt["categories"]}
pairs = list(zip(gt["annotations"], sorted(pred["annotations"], key=lambda a: [g["image_id"] for g in gt["annotations"]].index(a["image_id"]))))
with contextlib.redirect_stdout(io.StringIO()):
    stat = evaluation.pq_compute_single_core(0, pairs, sys.argv[1][:-5], sys.argv[2][:-5], categories)
print(json.dumps({name: stat.pq_average(categories, isthing=flag)[0] for name, flag in (("all", None), ("things", True), ("stuff", False))}))
"""


def scene(rng: np.random.Generator) -> tuple[np.ndarray, list[dict]]:
    """One image's segment ids and segments_info."""
    ids = np.zeros((H, W), dtype=np.uint32)
    used: set[int] = set()
    info = []

    def fresh() -> int:
        while (value := int(rng.integers(1, 1 << 24))) in used:
            pass
        used.add(value)
        return value

    edges = np.sort(rng.integers(40, H - 40, size=int(rng.integers(2, 5))))
    for top, bottom in zip([0, *edges.tolist()], [*edges.tolist(), H], strict=True):
        value = fresh()
        ids[top + 2 : bottom] = value  # two rows of VOID between bands
        info.append({"id": value, "category_id": 100 + int(rng.integers(1, 11)), "iscrowd": 0})
    yy, xx = np.mgrid[0:H, 0:W]
    crowded: set[int] = set()
    for _ in range(int(rng.integers(6, 17))):
        w, h = int(rng.integers(12, 200)), int(rng.integers(12, 200))
        x, y = int(rng.integers(0, W - w)), int(rng.integers(0, H - h))
        value = fresh()
        if rng.random() < 0.5:
            ids[y : y + h, x : x + w] = value
        else:
            inside = ((xx - x - w / 2) / (w / 2)) ** 2 + ((yy - y - h / 2) / (h / 2)) ** 2 < 1
            ids[inside] = value
        category = int(rng.integers(1, 21))
        crowd = rng.random() < 0.05 and category not in crowded  # one crowd a category, as COCO's files have
        crowded |= {category} if crowd else set()
        info.append({"id": value, "category_id": category, "iscrowd": int(crowd)})
    present = np.unique(ids)
    kept = []
    for segment in info:
        if segment["id"] in present:
            ys, xs = np.nonzero(ids == segment["id"])
            box = [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)]
            kept.append(segment | {"area": len(xs), "bbox": box})
    return ids, kept


def generate(root: Path, n: int, seed: int = 0) -> Path:
    """The tree (images, truth) and the run at ``root`` (made once: only a complete one is cached)."""
    if (root / "run.json").is_file():
        return root
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for folder in ("images/val", "annotations/panoptic_val", "run"):
        (partial / folder).mkdir(parents=True)
    rng = np.random.default_rng(seed)
    jpeg = BytesIO()
    Image.new("RGB", (W, H), (90, 120, 150)).save(jpeg, "JPEG", quality=90)
    truth: dict = {"images": [], "annotations": [], "categories": CATEGORIES}
    run: dict = {"annotations": []}
    for k in range(1, n + 1):
        name = f"{k:012d}"
        (partial / "images/val" / f"{name}.jpg").write_bytes(numbered(jpeg.getvalue(), k))
        ids, info = scene(rng)
        Image.fromarray(id_to_rgb(ids)).save(partial / "annotations/panoptic_val" / f"{name}.png")
        truth["images"].append({"id": k, "file_name": f"{name}.jpg", "width": W, "height": H})
        truth["annotations"].append({"image_id": k, "file_name": f"{name}.png", "segments_info": info})
        moved = np.roll(ids, (4, 4), axis=(0, 1))
        predicted = []
        for segment in info:
            if rng.random() < 0.05:
                moved[moved == segment["id"]] = 0
                continue
            category = segment["category_id"]
            if rng.random() < 0.1:
                category = int(rng.integers(1, 21)) if category < 100 else 100 + int(rng.integers(1, 11))
            predicted.append({"id": segment["id"], "category_id": category})
        present = set(np.unique(moved).tolist())
        predicted = [s for s in predicted if s["id"] in present]
        Image.fromarray(id_to_rgb(moved)).save(partial / "run" / f"{name}.png")
        run["annotations"].append({"image_id": k, "file_name": f"{name}.png", "segments_info": predicted})
    (partial / "annotations/panoptic_val.json").write_text(json.dumps(truth))
    (partial / "run.json").write_text(json.dumps(run))
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return root


def release(n: int) -> tuple[Path, Path]:
    """The release of an ``n``-image tree and the tree (built once)."""
    tree = generate(CACHE / f"panoptic-{n}", n)
    folder = CACHE / f"panoptic-{n}-project" / "releases" / "bench" / "v1.0.0"
    if not (folder / "manifest.json").is_file():
        project, override = fresh_project(CACHE / f"panoptic-{n}-project", tree, {"classifiers": {"enabled": False}})
        build(project, override, 2, CACHE / f"panoptic-{n}-build.log")
    return folder, tree


def growth(rows: list[dict], key: str, side: str) -> float:
    first, last = rows[0], rows[-1]
    return round(math.log(last[side][key] / first[side][key]) / math.log(last["images"] / first["images"]), 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[250, 1000])
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    for n in args.images:
        folder, tree = release(n)
        row: dict = {"images": n}
        row["plain"], _ = timed([sys.executable, "-c", PLAIN, str(tree)])
        row["read"], regions = timed([sys.executable, "-c", READ, str(tree)])
        row["ingest"], _ = timed([sys.executable, "-c", INGEST, str(tree)])
        with tempfile.TemporaryDirectory() as scratch:
            run = Path(scratch) / "run.json"
            shutil.copy(tree / "run.json", run)
            (Path(scratch) / "run").symlink_to(tree / "run")
            row["pq_compute"], said = timed(
                [sys.executable, "-c", PQ, str(tree / "annotations/panoptic_val.json"), str(run)]
            )
            row["verify"], _ = timed([sys.executable, "-m", "regionbench", "verify", str(folder)])
            report = Path(scratch) / "report.json"
            cmd = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--task", "panoptic",
                   "--predictions", str(run), "--split", "all", "--cores", "1", "--out", str(report)]  # fmt: skip
            row["ours"], _ = timed(cmd)
            ours, theirs = json.loads(report.read_text())["measures"], json.loads(said)
        for name in ("all", "things", "stuff"):
            for key in ("pq", "sq", "rq"):
                if abs(ours[name][key] - theirs[name][key]) > 1e-12:
                    raise SystemExit(f"{n} images: {name} {key} {ours[name][key]} against {theirs[name][key]}")
        row["pq"] = ours["all"]["pq"]
        row["regions"] = int(regions)
        row["read_cpu_ratio_to_plain"] = round(row["read"]["cpu_s"] / row["plain"]["cpu_s"], 3)
        row["ingest_cpu_ratio_to_plain"] = round(row["ingest"]["cpu_s"] / row["plain"]["cpu_s"], 3)
        row["evaluate_cpu_ratio_to_pq_compute"] = round(row["ours"]["cpu_s"] / row["pq_compute"]["cpu_s"], 3)
        rows.append(row)
        print(
            f"panoptic {n:>5} images ({row['regions']} segments): read {row['read']['cpu_s']} s CPU vs plain "
            f"{row['plain']['cpu_s']} s (x{row['read_cpu_ratio_to_plain']}; whole ingest "
            f"x{row['ingest_cpu_ratio_to_plain']}); evaluate {row['ours']['cpu_s']} s CPU "
            f"{row['ours']['peak_mib']} MiB vs pq_compute {row['pq_compute']['cpu_s']} s "
            f"{row['pq_compute']['peak_mib']} MiB (x{row['evaluate_cpu_ratio_to_pq_compute']})",
            flush=True,
        )
    summary: dict = {"panoptic": rows}
    if len(rows) > 1:
        summary["growth"] = {
            f"{side}_{key}": growth(rows, key, side)
            for side in ("read", "plain", "ours", "pq_compute")
            for key in ("cpu_s", "peak_mib")
        }
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
