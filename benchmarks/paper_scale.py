"""Paper scale on this machine: the whole build through the release, per stage, against the decode floor.

    .venv/bin/python benchmarks/paper_scale.py [--fractions 0.1 1.0] [--cores 2] [--classifiers ...] [--no-audits]
    make bench

The paper profile (20,000 images, 99,555 regions in folders 00-40) is generated once and cached
under ``--cache``. For each fraction of its folders (10 % = the first 4 of 41, hard-linked into a
view; 100 % = the cache itself) the script:

1. times the decode floor: every JPEG decoded and every mask loaded once, over ``--cores``
   processes, nothing else;
2. copies the workflow into a fresh folder and runs ``regionbench build`` with ``raw_dir`` set to
   the collection, through the release (after an untimed build of the first folder, which fills
   numba's cache: the first build after a checkout compiles the kernels, about 9 s of CPU in
   each of its first jobs);
3. reads every job's Snakemake benchmark file and prints, per stage: jobs, wall time (from the first
   job's start to the last job's end), CPU time, and the peak RSS of its largest job;
4. reports the build's wall time with the classifier stages' own time taken out, and its ratio to
   the floor.

On the full collection it then times a no-op rerun and a rerun after touching one mask, and lists
which jobs the latter ran. The last line is one JSON object with every figure.

The classifiers default to the five that fit quickly: the full Table 4 grid has its own benchmark
(``benchmarks/classifiers.py``), and it would rerun whole on the touched-mask rerun, since every
classifier reads every shard's features.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from regionbench.core import features
from regionbench.io.matlab import read_mat
from regionbench.pipeline.jobs import logged_resources
from regionbench.synthetic import plans
from regionbench.synthetic.saiapr import write_collection

PROJECT = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "rules", "scripts", "config", "schemas")
FAST_CLASSIFIERS = ["zarbi", "naive", "kridge", "random", "majority"]
CLASSIFIER_STAGES = {"classify", "evaluate_classifiers"}
PER_SHARD_STAGES = {"ingest", "agreement"}  # ingest measures the features and relations too


def collection(cache: Path) -> Path:
    """The full paper-profile collection, generated on first use (about 10 minutes on 2 cores)."""
    raw = cache / "paper-raw"
    if not raw.is_dir():
        partial = cache / "paper-raw.partial"
        shutil.rmtree(partial, ignore_errors=True)
        start = time.perf_counter()
        for folder, regions in write_collection(partial, "paper", seed=0, workers=2):
            print(f"  generated folder {folder}: {regions} regions ({time.perf_counter() - start:.0f} s)", flush=True)
        partial.rename(raw)  # only a complete collection is ever cached
    return raw


def view(raw: Path, folders: list[str], out: Path) -> Path:
    """The collection restricted to ``folders``, as hard links (no copy, and no symlink for ingest to refuse)."""
    if (out / "wlist.txt").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    os.link(raw / "wlist.txt", partial / "wlist.txt")
    for folder in folders:
        shutil.copytree(raw / folder, partial / folder, copy_function=os.link)
        shutil.copytree(
            raw / "annotations_complete_eng" / folder,
            partial / "annotations_complete_eng" / folder,
            copy_function=os.link,
        )
    partial.rename(out)
    return out


def _decode_folder(folder: Path) -> tuple[int, int]:
    images = sorted((folder / "images").glob("*.jpg"))
    masks = sorted((folder / "segmentation_masks").glob("*.mat"))
    for path in images:
        features.decode_image(path)
    for path in masks:
        np.asarray(read_mat(path)["segimg_t"])
    return len(images), len(masks)


def decode_floor(root: Path, folders: list[str], cores: int) -> dict:
    """Wall and CPU seconds to decode every JPEG and load every mask once, ``cores`` folders at a time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with ProcessPoolExecutor(cores) as pool:
        counts = list(pool.map(_decode_folder, [root / f for f in folders]))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {
        "images": sum(c[0] for c in counts),
        "masks": sum(c[1] for c in counts),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
    }


def warm_up(raw: Path, work: Path, cores: int) -> None:
    """Build the collection ``raw`` untimed, classifiers off: the first build after a checkout
    compiles the numba kernels into their on-disk cache, in each of its first jobs at once, which
    would be charged to the first build measured. Prints how long it took."""
    project, override = fresh_project(work / "warm-up", raw, {"classifiers": {"enabled": False}})
    wall, _ = build(project, override, cores, project / "build.log")
    print(f"warm-up build of {raw.name} (fills numba's cache): {wall:.1f} s, untimed", flush=True)


def build(project: Path, override: Path, cores: int, log: Path) -> tuple[float, str]:
    """Run ``regionbench build``; its wall time and output (also written to ``log``)."""
    # --verbose: Snakemake's own report, whose 'Job stats' table says which jobs ran.
    cmd = [
        sys.executable,
        "-m",
        "regionbench",
        "build",
        "--verbose",
        "--project-dir",
        str(project),
        "--cores",
        str(cores),
    ]
    start = time.perf_counter()
    done = subprocess.run([*cmd, "--configfile", str(override)], capture_output=True, text=True, cwd=project)
    wall = time.perf_counter() - start
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        sys.exit(f"paper_scale: the build in {project} failed; see {log}")
    return wall, done.stdout + done.stderr


def jobs(project: Path, dataset: str) -> list[dict]:
    """One record per job from its Snakemake benchmark file: stage, start, end, CPU seconds, peak
    memory. CPU and peak are the kernel's from the job's log where it has its last line: the
    benchmark file samples every 30 s once a job has run 30 s, and misses a shorter peak and the
    CPU of the last interval (a paper-scale release: 13.6 s sampled, 40.4 s counted). The log
    counts the job's largest process; for a job with forked workers the peak is the larger of
    that and the sampled PSS of the job's processes, which counts a page they share once, as
    the kernel's memory accounting of a cluster job does. (Their summed RSS counts it once per
    process: 1,193 MiB for a release whose PSS was 623 MiB and largest process 446 MiB.)"""
    out = []
    logs = project / "logs" / dataset
    root = logs / "benchmarks"
    for path in sorted(root.rglob("*.tsv")):
        header, values = path.read_text().splitlines()[:2]
        row = dict(zip(header.split("\t"), values.split("\t"), strict=True))
        stage = path.relative_to(root).parts[0].removesuffix(".tsv")
        end = path.stat().st_mtime
        peak, cpu = logged_resources(logs / path.relative_to(root).with_suffix(".log")) or (0.0, float(row["cpu_time"]))
        out.append(
            {
                "stage": stage,
                "start": end - float(row["s"]),
                "end": end,
                "cpu_s": cpu,
                "rss_mib": max(float(row["max_pss"]), peak),
            }
        )
    return out


def covered(intervals: list[tuple[float, float]]) -> float:
    """Total length of the union of ``intervals``."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def stage_table(records: list[dict]) -> dict[str, dict]:
    stages: dict[str, dict] = {}
    for name in sorted({r["stage"] for r in records}):
        mine = [r for r in records if r["stage"] == name]
        stages[name] = {
            "jobs": len(mine),
            "wall_s": round(max(r["end"] for r in mine) - min(r["start"] for r in mine), 1),
            "cpu_s": round(sum(r["cpu_s"] for r in mine), 1),
            "peak_rss_mib": round(max(r["rss_mib"] for r in mine)),
        }
    return stages


def without_classifiers(records: list[dict], wall: float) -> float:
    """The build's wall time less the time when only classifier jobs ran."""
    every = covered([(r["start"], r["end"]) for r in records])
    others = covered([(r["start"], r["end"]) for r in records if r["stage"] not in CLASSIFIER_STAGES])
    return wall - (every - others)


def rerun_counts(output: str) -> dict[str, int]:
    """Jobs per rule from Snakemake's 'Job stats' table (empty when nothing ran)."""
    match = re.search(r"Job stats:\n(.*?)\n\n", output, re.S)
    if not match:
        return {}
    counts = {}
    for line in match.group(1).splitlines()[2:]:
        name, count = line.split()
        if name != "total":
            counts[name] = int(count)
    return counts


def print_stages(title: str, stages: dict[str, dict]) -> None:
    print(f"\n{title}")
    print(f"  {'stage':<22}{'jobs':>5}{'wall s':>9}{'CPU s':>9}{'peak RSS MiB':>14}")
    for name, s in stages.items():
        print(f"  {name:<22}{s['jobs']:>5}{s['wall_s']:>9.1f}{s['cpu_s']:>9.1f}{s['peak_rss_mib']:>14}")


def fresh_project(folder: Path, raw: Path, settings: dict) -> tuple[Path, Path]:
    """A fresh copy of the workflow in ``folder`` and its override file (dataset ``bench``, raw
    tree ``raw``, and ``settings``)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in WORKFLOW_FILES:
        src = PROJECT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, folder / name)
    override = folder / "bench.yaml"
    override.write_text(json.dumps({"dataset": "bench", "raw_dir": str(raw.resolve()), **settings}))
    return folder, override


def measure(raw: Path, folders: list[str], label: str, work: Path, args: argparse.Namespace) -> dict:
    print(f"\n== {label}: {len(folders)} folders ({folders[0]}-{folders[-1]})", flush=True)
    floor = decode_floor(raw, folders, args.cores)
    print(f"  decode floor: {floor['images']} JPEGs, {floor['masks']} masks in {floor['wall_s']} s", flush=True)
    audits = {"duplicates": {"enabled": args.audits}, "labels": {"enabled": args.audits}}
    settings = {"classifiers": {"names": args.classifiers}, "audit": audits}
    project, override = fresh_project(work / label, raw, settings)
    wall, _ = build(project, override, args.cores, project / "build.log")
    records = jobs(project, "bench")
    stages = stage_table(records)
    core = without_classifiers(records, wall)
    print_stages(f"{label}: build {wall:.1f} s wall", stages)
    cpu = sum(s["cpu_s"] for name, s in stages.items() if name not in CLASSIFIER_STAGES)
    print(
        f"  without classifiers: {core:.1f} s wall, {cpu:.1f} s CPU; "
        f"{core / floor['wall_s']:.2f}x the floor's wall, {cpu / floor['cpu_s']:.2f}x its CPU (target <= 1.5x the wall)",
        flush=True,
    )
    result = {
        "folders": len(folders),
        "floor": floor,
        "build_wall_s": round(wall, 1),
        "without_classifiers_wall_s": round(core, 1),
        "without_classifiers_cpu_s": round(cpu, 1),
        "ratio_wall": round(core / floor["wall_s"], 2),
        "ratio_cpu": round(cpu / floor["cpu_s"], 2),
        "peak_rss_mib": max(s["peak_rss_mib"] for s in stages.values()),
        "stages": stages,
    }
    if args.reruns:
        result.update(reruns(project, override, raw, folders, args.cores))
    return result


def reruns(project: Path, override: Path, raw: Path, folders: list[str], cores: int) -> dict:
    noop, output = build(project, override, cores, project / "noop.log")
    assert "Nothing to be done" in output, "the no-op rerun ran jobs; see noop.log"
    print(f"  no-op rerun: {noop:.1f} s (target <= 5 s)", flush=True)
    shard = folders[len(folders) // 2]
    mask = sorted((raw / shard / "segmentation_masks").glob("*.mat"))[0]
    os.utime(mask)
    touched, output = build(project, override, cores, project / "touch.log")
    ran = rerun_counts(output)
    stray = {k: v for k, v in ran.items() if k in PER_SHARD_STAGES and v != 1}
    print(f"  touched {mask.relative_to(raw)}: rerun {touched:.1f} s, jobs {ran}", flush=True)
    print(f"  per-shard jobs beyond shard {shard}: {stray or 'none'}", flush=True)
    return {"noop_rerun_s": round(noop, 1), "touch_rerun_s": round(touched, 1), "touch_rerun_jobs": ran}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=PROJECT / "resources" / "bench")
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--classifiers", nargs="+", default=FAST_CLASSIFIERS)
    ap.add_argument("--no-reruns", dest="reruns", action="store_false", help="skip the no-op and touched-mask reruns")
    ap.add_argument(
        "--no-audits",
        dest="audits",
        action="store_false",
        help="switch the audits off (what they cost: run with and without)",
    )
    args = ap.parse_args()

    raw = collection(args.cache)
    every = plans.folders("paper")
    warm_up(view(raw, every[:1], args.cache / "paper-raw-1-folders"), args.cache / "work", args.cores)
    figures = {"cores": args.cores, "classifiers": args.classifiers, "audits": args.audits, "runs": {}}
    for fraction in sorted(args.fractions):
        count = max(1, round(fraction * len(every)))
        folders = every[:count]
        label = f"{round(100 * count / len(every))}pct"
        root = raw if count == len(every) else view(raw, folders, args.cache / f"paper-raw-{count}-folders")
        run_args = argparse.Namespace(**{**vars(args), "reruns": args.reruns and count == len(every)})
        figures["runs"][label] = measure(root, folders, label, args.cache / "work", run_args)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
