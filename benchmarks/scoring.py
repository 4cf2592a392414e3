"""Scoring segmentation methods at the field's sizes: the whole ``evaluate --task instances`` command
beside pycocotools' COCOeval and faster-coco-eval called directly on the same two files, and the
BSDS region benchmark.

    .venv/bin/python benchmarks/scoring.py [--images 500 5000 20000] [--cocoeval-up-to 5000] [--bsds 50 200]
        [--boundary 500 2000] [--lvis 500 2000] [--lvis-categories 1203] [--only instances boundary lvis bsds]

Instances: the collections of ``scoring_data.py`` (COCO-val-like: 640x480 images, ~7.2 instances
an image, 1% crowd, 100 detections an image as RLE), built into releases once and cached. Each
contender runs as its own process, timed by the kernel (``wait4``: CPU seconds, wall seconds,
peak RSS of its largest process):

- ``ours``: ``regionbench evaluate --task instances --split all`` on one core and on every core
  (release load, its checks, the report written: the whole command), after ``regionbench
  verify`` of the release, timed apart (``verify``): a release is verified on its first load and
  remembered, so a user pays it once, not per run;
- ``faster-coco-eval``: its ``COCO``, ``loadRes``, ``COCOeval_faster`` evaluate, accumulate and
  summarize on the instances file and the results file, as its README calls it (its IoU
  threads at their default);
- ``cocoeval``: pycocotools the same way (up to ``--cocoeval-up-to`` images: it needs ~10 GiB and
  half an hour beyond).

Boundary AP (``--iou-type boundary``) beside faster-coco-eval's ``iouType="boundary"``, and
LVIS's federated AP (``--method lvis``, on an LVIS variant of the collection) beside the
``lvis`` package's ``LVISEval`` and faster-coco-eval's ``lvis_style``, the same way.

The 12 figures of each are checked equal (1e-12) before any time is printed. Segments:
BSDS-sized label maps (321x481), five humans and five machine scales an image, scored with
``bsds_regions.score_image`` then ``collect``. Prints a line per size and, last, one JSON object:
every figure, the ratios to the engines and the growth exponents (log cost / log size) of CPU
and peak memory from the smallest to the largest size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scoring_data import collection

from regionbench.scoring.measures import average_precision, bsds_regions

ENGINE = """
import contextlib, io, json, sys
from {module} import COCO
from {evaluator}
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(sys.argv[1])
    evaluation = {cls}(gt, gt.loadRes(sys.argv[2]), "segm")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
print(json.dumps([float(v) for v in evaluation.stats[:12]]))
"""
ENGINES = {
    "faster-coco-eval": ENGINE.format(
        module="faster_coco_eval", evaluator="faster_coco_eval import COCOeval_faster", cls="COCOeval_faster"
    ),
    "cocoeval": ENGINE.format(
        module="pycocotools.coco", evaluator="pycocotools.cocoeval import COCOeval", cls="COCOeval"
    ),
}


# Run a command and report its usage as the kernel counted it. A child of this (large) process
# would count this one's pages in its peak (fork, or vfork before exec: the kernel records the
# peak of the memory it leaves); a child of a small wrapper counts only its own.
WRAPPER = """
import json, os, resource, subprocess, sys, time
start = time.perf_counter()
status = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1], "wb"))
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([status, time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss]))
"""


def timed(cmd: list[str]) -> tuple[dict, str]:
    """Run ``cmd``; its CPU and wall seconds and peak RSS (MiB, its largest process), and stdout."""
    with tempfile.NamedTemporaryFile() as out:
        done = subprocess.run([sys.executable, "-c", WRAPPER, out.name, *cmd], capture_output=True, text=True)
        status, wall, cpu, peak = json.loads(done.stdout.strip().splitlines()[-1])
        if status != 0:
            raise SystemExit(f"{cmd[:4]} failed: {done.stderr[-2000:]}")
        return {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "peak_mib": round(peak / 1024)}, Path(
            out.name
        ).read_text()


def instances_at(n: int, cores: int, cocoeval_up_to: int) -> dict:
    folder, truth, results = collection(n)
    row: dict = {"images": n}
    figures = {}
    for name, code in ENGINES.items():
        if name == "cocoeval" and n > cocoeval_up_to:
            continue
        row[name], said = timed([sys.executable, "-c", code, str(truth), str(results)])
        figures[name] = json.loads(said.strip().splitlines()[-1])
    # A release is verified once (the first load; remembered after): timed apart, as a user pays it once.
    row["verify"], _ = timed([sys.executable, "-m", "regionbench", "verify", str(folder)])
    with tempfile.TemporaryDirectory() as scratch:
        for label, use in (("ours_1_core", 1), (f"ours_{cores}_cores", cores)):
            report = Path(scratch) / f"{use}.json"
            cmd = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--task", "instances",
                   "--predictions", str(results), "--split", "all", "--cores", str(use), "--out", str(report)]  # fmt: skip
            row[label], _ = timed(cmd)
            measures = json.loads(report.read_text())["measures"]  # its keys sorted: read in COCO's order
            figures[label] = [measures[k] for k in average_precision.STATS]
        if (Path(scratch) / "1.json").read_bytes() != (Path(scratch) / f"{cores}.json").read_bytes():
            raise SystemExit(f"{n} images: the reports on 1 and {cores} cores differ")
    reference = figures.get("cocoeval", figures["faster-coco-eval"])
    for name, values in figures.items():
        if not np.allclose(values, reference, rtol=0, atol=1e-12):
            raise SystemExit(f"{n} images: {name}'s figures differ from the reference's: the timing means nothing")
    engine = row["faster-coco-eval"]
    row["cpu_ratio_to_faster_coco_eval"] = {
        k: round(row[k]["cpu_s"] / engine["cpu_s"], 3) for k in ("ours_1_core", f"ours_{cores}_cores")
    }
    row["wall_ratio_to_faster_coco_eval"] = round(row[f"ours_{cores}_cores"]["wall_s"] / engine["wall_s"], 3)
    if "cocoeval" in row:
        row["cpu_ratio_to_cocoeval"] = round(row["ours_1_core"]["cpu_s"] / row["cocoeval"]["cpu_s"], 3)
    return row


BOUNDARY_ENGINE = """
import contextlib, io, json, sys
from faster_coco_eval import COCO, COCOeval_faster
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(sys.argv[1])
    evaluation = COCOeval_faster(gt, gt.loadRes(sys.argv[2]), "boundary")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
print(json.dumps([float(v) for v in evaluation.stats[:12]]))
"""
# lvis 0.5.3 calls np.float, which NumPy removed: the alias is given back for its run.
LVIS_ENGINE = """
import json, logging, sys
import numpy as np
np.float = float
from lvis import LVIS, LVISEval, LVISResults
logging.disable(logging.WARNING)
gt = LVIS(sys.argv[1])
evaluation = LVISEval(gt, LVISResults(gt, sys.argv[2]), "segm")
evaluation.run()
print(json.dumps({k: float(v) for k, v in evaluation.results.items()}))
"""
LVIS_FASTER = """
import contextlib, io, json, sys
from faster_coco_eval import COCO, COCOeval_faster
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(sys.argv[1])
    evaluation = COCOeval_faster(gt, gt.loadRes(sys.argv[2]), "segm", lvis_style=True)
    evaluation.params.maxDets = [300]
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
print(json.dumps(evaluation.stats_as_dict))
"""


def ours(folder: Path, results: Path, cores: int, *options: str) -> tuple[dict, dict]:
    """``evaluate --task instances`` timed on ``cores``: its usage and its figures."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        cmd = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--task", "instances",
               "--predictions", str(results), "--split", "all", "--cores", str(cores), "--out", str(report), *options]  # fmt: skip
        usage, _ = timed(cmd)
        return usage, json.loads(report.read_text())["measures"]


def boundary_at(n: int, cores: int) -> dict:
    """Boundary AP: ours against faster-coco-eval's ``iouType="boundary"`` on the same files."""
    folder, truth, results = collection(n)
    row: dict = {"images": n}
    row["faster-coco-eval"], said = timed([sys.executable, "-c", BOUNDARY_ENGINE, str(truth), str(results)])
    reference = json.loads(said.strip().splitlines()[-1])
    for label, use in (("ours_1_core", 1), (f"ours_{cores}_cores", cores)):
        row[label], measures = ours(folder, results, use, "--iou-type", "boundary")
        if not np.allclose([measures[k] for k in average_precision.STATS], reference, rtol=0, atol=1e-9):
            raise SystemExit(f"{n} images: Boundary AP differs from faster-coco-eval's: the timing means nothing")
    row["cpu_ratio_to_faster_coco_eval"] = round(row["ours_1_core"]["cpu_s"] / row["faster-coco-eval"]["cpu_s"], 3)
    return row


def lvis_at(n: int, cores: int, categories: int = 80) -> dict:
    """LVIS's federated AP: ours against the ``lvis`` package and faster-coco-eval's
    ``lvis_style`` on the same files (``categories``: LVIS's 1,203, or COCO's 80)."""
    folder, truth, results = collection(n, lvis=True, **({"categories": categories} if categories != 80 else {}))
    row: dict = {"images": n, "categories": categories}
    row["lvis"], said = timed([sys.executable, "-c", LVIS_ENGINE, str(truth), str(results)])
    reference = json.loads(said.strip().splitlines()[-1])
    try:  # faster-coco-eval 1.8's lvis_style fails on an image whose detections it all drops
        row["faster-coco-eval"], _ = timed([sys.executable, "-c", LVIS_FASTER, str(truth), str(results)])
    except SystemExit as failed:
        row["faster-coco-eval"] = {"failed": str(failed).strip().splitlines()[-1]}
    for label, use in (("ours_1_core", 1), (f"ours_{cores}_cores", cores)):
        row[label], measures = ours(folder, results, use, "--method", "lvis")
        if not np.allclose([measures[k] for k in reference], list(reference.values()), rtol=0, atol=1e-9):
            raise SystemExit(f"{n} images: LVIS AP differs from LVISEval's: the timing means nothing")
    row["cpu_ratio_to_lvis"] = round(row["ours_1_core"]["cpu_s"] / row["lvis"]["cpu_s"], 3)
    if "cpu_s" in row["faster-coco-eval"]:
        row["cpu_ratio_to_faster_coco_eval"] = round(row["ours_1_core"]["cpu_s"] / row["faster-coco-eval"]["cpu_s"], 3)
    return row


def bsds_at(n: int) -> dict:
    rng = np.random.default_rng(1)
    start = time.process_time()
    scored = []
    for _ in range(n):
        humans = [
            rng.integers(1, 40, size=(321 // 8 + 1, 481 // 8 + 1)).repeat(8, 0).repeat(8, 1)[:321, :481]
            for _ in range(5)
        ]
        machine = [
            rng.integers(1, 10 * (s + 1), size=(321 // 16 + 1, 481 // 16 + 1)).repeat(16, 0).repeat(16, 1)[:321, :481]
            for s in range(5)
        ]
        scored.append(bsds_regions.score_image(machine, humans))
    bsds_regions.collect(range(1, 6), scored)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"images": n, "cpu_s": round(time.process_time() - start, 2), "peak_mib": round(peak)}


def exponent(rows: list[dict], cost: str, key: str | None = None) -> float:
    """log(cost of the largest) / log(cost of the smallest) over log of their sizes; nan with one size."""
    if len(rows) < 2:
        return math.nan
    a, b = rows[0], rows[-1]
    value = (lambda r: r[key][cost]) if key else (lambda r: r[cost])
    return round(math.log(value(b) / value(a)) / math.log(b["images"] / a["images"]), 3) if len(rows) > 1 else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[500, 5000, 20000])
    ap.add_argument("--cocoeval-up-to", type=int, default=5000)
    ap.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--bsds", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--boundary", type=int, nargs="*", default=[500, 2000], help="images for Boundary AP")
    ap.add_argument("--lvis", type=int, nargs="*", default=[500, 2000], help="images for LVIS's AP")
    ap.add_argument("--lvis-categories", type=int, default=80, help="categories of the LVIS runs (LVIS's own: 1203)")
    ap.add_argument("--only", choices=["instances", "boundary", "lvis", "bsds"], nargs="*", help="these parts alone")
    args = ap.parse_args()
    wanted = set(args.only or ["instances", "boundary", "lvis", "bsds"])
    if "instances" not in wanted:
        args.images = []
    if "bsds" not in wanted:
        args.bsds = []
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    for n in args.images:
        rows.append(instances_at(n, args.cores, args.cocoeval_up_to))
        r = rows[-1]
        print(f"instances {n:>6} images: " + ", ".join(
            f"{k} {r[k]['cpu_s']} s CPU {r[k]['wall_s']} s wall {r[k]['peak_mib']} MiB"
            for k in ("ours_1_core", f"ours_{args.cores}_cores", "faster-coco-eval", "cocoeval") if k in r
        ), flush=True)  # fmt: skip
    bsds = [bsds_at(n) for n in args.bsds]
    for b in bsds:
        print(f"segments  {b['images']:>6} images x 5 scales x 5 humans: {b['cpu_s']} s CPU, peak {b['peak_mib']} MiB")
    mine = f"ours_{args.cores}_cores"
    growth = {
        "ours_1_core_cpu": exponent(rows, "cpu_s", "ours_1_core"),
        "ours_1_core_peak": exponent(rows, "peak_mib", "ours_1_core"),
        f"{mine}_peak": exponent(rows, "peak_mib", mine),
        "faster_coco_eval_cpu": exponent(rows, "cpu_s", "faster-coco-eval"),
        "faster_coco_eval_peak": exponent(rows, "peak_mib", "faster-coco-eval"),
    }
    print(f"growth exponents over {args.images} images: {growth}")
    boundary = [boundary_at(n, args.cores) for n in (args.boundary if "boundary" in wanted else [])]
    for b in boundary:
        print(f"boundary  {b['images']:>6} images: ours {b['ours_1_core']['cpu_s']} s CPU (1 core), faster-coco-eval "
              f"{b['faster-coco-eval']['cpu_s']} s: ratio {b['cpu_ratio_to_faster_coco_eval']}", flush=True)  # fmt: skip
    lvis = []
    for n in args.lvis if "lvis" in wanted else []:  # each row as it comes: LVISEval takes long
        b = lvis_at(n, args.cores, args.lvis_categories)
        lvis.append(b)
        print(f"lvis      {n:>6} images, {b['categories']} categories: ours {b['ours_1_core']} (1 core), "
              f"{b[f'ours_{args.cores}_cores']} ({args.cores} cores); LVISEval {b['lvis']}; "
              f"faster-coco-eval {b['faster-coco-eval']}", flush=True)  # fmt: skip
    growth |= {"boundary_ours_1_core_cpu": exponent(boundary, "cpu_s", "ours_1_core"),
               "lvis_ours_1_core_cpu": exponent(lvis, "cpu_s", "ours_1_core"),
               "lvis_ours_1_core_peak": exponent(lvis, "peak_mib", "ours_1_core"),
               "lvis_lviseval_cpu": exponent(lvis, "cpu_s", "lvis"),
               "lvis_lviseval_peak": exponent(lvis, "peak_mib", "lvis")}  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"cores": args.cores, "instances": rows, "growth": growth, "segments": bsds,
                      "boundary": boundary, "lvis": lvis}, sort_keys=True))  # fmt: skip


if __name__ == "__main__":
    main()
