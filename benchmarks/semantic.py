"""Label maps scored: the whole ``evaluate --task semantic`` command beside the plain numpy loop
that a user would write, on the same PNGs.

    .venv/bin/python benchmarks/semantic.py [--images 500 2000]

Per size, a Pascal VOC tree of 500x375 images (``benchmarks/labelmaps.py``'s generator) is built
into a release (once, cached, classifiers off), and a run is written: each image's class map
shifted 7 pixels right and down, in the release's label ids (255 stays VOC's void). Both sides
run as their own process, timed by the kernel (CPU seconds, wall seconds, peak RSS):

- ``ours``: ``regionbench evaluate --task semantic --split all --cores 1`` (one process, as the
  loop is: release load and checks, the truth rasterised from the release's regions, the report
  written), after ``regionbench verify`` of the release, timed apart (``verify``: a release is verified on its first load and
  remembered, so a user pays it once, not per run);
- ``numpy``: a loop of 15 lines: each image's ``SegmentationClass`` PNG and its prediction read,
  mapped to class indices through a lookup table (the smallest integer type), one ``bincount``
  to the confusion matrix; mIoU from it.

The two mIoU must be equal (1e-12) before any time is printed. The last line is one JSON object,
with the growth exponents b of cost ~ images^b (CPU and peak, ours and the loop's) across the
sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from coco_scale import exponent
from labelmaps import generate
from paper_scale import PROJECT, build, fresh_project
from PIL import Image
from scoring import timed

CACHE = PROJECT / "resources" / "bench" / "semantic"
SHIFT = 7

NUMPY = """
import json, sys
from pathlib import Path
import numpy as np
from PIL import Image
truth_dir, run_dir, lut_file = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
truth_lut, run_lut, k = (lambda d: (np.array(d["truth"], np.uint8), np.array(d["run"], np.uint8), d["classes"]))(json.load(open(lut_file)))
matrix = np.zeros((k + 1) * (k + 1), dtype=np.int64)
for path in sorted(run_dir.glob("*.png")):
    t = truth_lut[np.asarray(Image.open(truth_dir / path.name))]
    p = run_lut[np.asarray(Image.open(path))]
    matrix += np.bincount(t.astype(np.int64).ravel() * (k + 1) + p.ravel(), minlength=(k + 1) * (k + 1))
c = matrix.reshape(k + 1, k + 1)[:k]
hit = np.diag(c[:, :k]).astype(float); union = c.sum(1) + c[:, :k].sum(0) - hit
print(json.dumps(float((hit[union > 0] / union[union > 0]).mean())))
"""


def release(n: int) -> tuple[Path, Path]:
    """The release of an ``n``-image VOC tree and the tree (built once)."""
    tree = generate("voc", CACHE / f"voc-{n}", n)
    folder = CACHE / f"voc-{n}-project" / "releases" / "bench" / "v1.0.0"
    if not (folder / "manifest.json").is_file():
        project, override = fresh_project(CACHE / f"voc-{n}-project", tree, {"classifiers": {"enabled": False}})
        build(project, override, 2, CACHE / f"voc-{n}-build.log")
    return folder, tree


def run_and_tables(folder: Path, tree: Path, out: Path) -> tuple[Path, Path, Path]:
    """The run's folder (named as the release names its images), the truth's class folder and the
    lookup tables of the numpy loop (VOC value -> class, label id -> class; 255 and the rest: k)."""
    images = pq.read_table(folder / "data" / "images.parquet", columns=["image_id", "path"]).to_pylist()
    vocabulary = pq.read_table(folder / "data" / "vocabulary.parquet", columns=["label_id", "label"]).to_pylist()
    named = pq.read_table(folder / "data" / "source_categories.parquet").to_pylist()
    label_ids = sorted(v["label_id"] for v in vocabulary)
    klass = {label_id: k for k, label_id in enumerate(label_ids)}
    label_of = {v["label"]: v["label_id"] for v in vocabulary}
    voc_to_label = {int(r["category_id"]): label_of[r["label"]] for r in named if r["label"] in label_of}
    classes = len(label_ids)
    truth_lut = [classes] * 256
    run_lut = [classes] * 65536
    for value, label_id in voc_to_label.items():
        truth_lut[value] = klass[label_id]
    for label_id, k in klass.items():
        run_lut[label_id] = k
    value_map = np.full(256, 255, dtype=np.uint16)
    for value, label_id in voc_to_label.items():
        value_map[value] = label_id
    classes_dir = next(p for p in tree.rglob("SegmentationClass") if p.is_dir())
    truth = out / "truth"
    run = out / "run"
    truth.mkdir()
    run.mkdir()
    for image in images:
        stem = Path(image["path"]).stem
        values = np.asarray(Image.open(classes_dir / f"{stem}.png"))
        shifted = np.roll(values, (SHIFT, SHIFT), axis=(0, 1))
        Image.fromarray(value_map[shifted]).save(run / f"{stem}.png")
        (truth / f"{stem}.png").symlink_to(classes_dir / f"{stem}.png")
    tables = out / "lut.json"
    tables.write_text(json.dumps({"truth": truth_lut, "run": run_lut[:256], "classes": classes}))
    return run, truth, tables


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[500, 2000])
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    import tempfile

    for n in args.images:
        folder, tree = release(n)
        with tempfile.TemporaryDirectory() as scratch:
            run, truth, tables = run_and_tables(folder, tree, Path(scratch))
            numpy_side, said = timed([sys.executable, "-c", NUMPY, str(truth), str(run), str(tables)])
            verify, _ = timed([sys.executable, "-m", "regionbench", "verify", str(folder)])  # once, remembered
            report = Path(scratch) / "report.json"
            cmd = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--task", "semantic",
                   "--predictions", str(run), "--split", "all", "--cores", "1", "--out", str(report)]  # fmt: skip
            ours, _ = timed(cmd)
            ours_miou, theirs = json.loads(report.read_text())["measures"]["miou"], json.loads(said)
            if abs(ours_miou - theirs) > 1e-12:
                raise SystemExit(f"{n} images: mIoU {ours_miou} against the loop's {theirs}: the timing means nothing")
        row = {"images": n, "ours": ours, "numpy": numpy_side, "miou": ours_miou, "verify": verify,
               "cpu_ratio": round(ours["cpu_s"] / numpy_side["cpu_s"], 3),
               "peak_ratio": round(ours["peak_mib"] / numpy_side["peak_mib"], 3)}  # fmt: skip
        rows.append(row)
        print(f"semantic {n:>5} images: ours {ours['cpu_s']} s CPU {ours['peak_mib']} MiB, numpy loop "
              f"{numpy_side['cpu_s']} s CPU {numpy_side['peak_mib']} MiB: CPU x{row['cpu_ratio']}, "
              f"peak x{row['peak_ratio']}", flush=True)  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    sizes = [r["images"] for r in rows]
    growth = {
        f"{side}_{cost}": exponent(sizes, [r[side][key] for r in rows])
        for side in ("ours", "numpy")
        for cost, key in (("cpu", "cpu_s"), ("peak", "peak_mib"))
    } if len(rows) > 1 else {}  # fmt: skip
    if growth:
        print(f"growth exponents over {sizes} images: {growth}")
    print(json.dumps({"semantic": rows, "growth": growth}, sort_keys=True))


if __name__ == "__main__":
    main()
