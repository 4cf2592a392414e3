"""What a new user pays on real collections as distributed: BSDS500's 200 test images and the
COCO 2017 subset (160 photos), each built with the workflow's defaults and a two-line config.

    REGIONBENCH_REAL_DATA=DATA .venv/bin/python benchmarks/real_collections.py \
        [--collections bsds500 coco-tiny] [--cores 2]

DATA is the folder of real collections (``bsds500/BSDS500/...``, ``coco-tiny/...``), as the
tests read it; the repository carries none.

For each collection it copies the workflow into a fresh folder and, as the kernel counts them (the
command and every process under it):

1. builds the release (``regionbench build`` with ``raw_dir`` and ``dataset`` alone), noting when
   the plan (``running at least N jobs``) is printed and what each stage's jobs cost;
2. rebuilds it (nothing changed: a no-op);
3. times the commands a researcher starts on it: ``regionbench --help``, ``verify``,
   ``regionbench.load`` and, for COCO, ``evaluate`` of a run over val2017's 80 images (its truth,
   scored, as a method that finds every object would give it).

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paper_scale import PROJECT, fresh_project, jobs, stage_table

WORK = PROJECT / "resources" / "bench" / "real"
RAW = {"bsds500": "bsds500/BSDS500", "coco-tiny": "coco-tiny"}


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(project: Path, override: Path, cores: int) -> dict:
    """One ``regionbench build``: its CPU and wall, and the seconds until the plan was printed."""
    cmd = [sys.executable, "-m", "regionbench", "build", "--project-dir", str(project), "--cores", str(cores),
           "--configfile", str(override)]  # fmt: skip
    before, start = cpu_of_children(), time.monotonic()
    plan = None
    lines = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip())
            if plan is None and line.startswith("running "):
                plan = round(time.monotonic() - start, 1)
    if process.returncode != 0:
        raise SystemExit("build failed:\n" + "\n".join(lines[-30:]))
    return {
        "cpu_s": round(cpu_of_children() - before, 1),
        "wall_s": round(time.monotonic() - start, 1),
        "plan_s": plan,
        "output": lines,
    }


def command_cpu(cmd: list[str]) -> float:
    """The CPU seconds of one command (its children included)."""
    before = cpu_of_children()
    subprocess.run(cmd, check=True, capture_output=True)
    return round(cpu_of_children() - before, 2)


def coco_run(raw: Path, out: Path) -> Path:
    """val2017's truth as a COCO results file: every object found, scored by its area's rank."""
    truth = json.loads((raw / "annotations" / "instances_val2017.json").read_text())
    kept = ("image_id", "category_id", "segmentation", "bbox")
    results = [
        {**{key: a[key] for key in kept}, "score": round(1 / (1 + k % 7), 3)}
        for k, a in enumerate(truth["annotations"])
        if not a.get("iscrowd")
    ]
    out.write_text(json.dumps(results))
    return out


def measure(name: str, data: Path, cores: int) -> dict:
    raw = data / RAW[name]
    project, override = fresh_project(WORK / name, raw, {})
    override.write_text(json.dumps({"dataset": name, "raw_dir": str(raw.resolve())}))
    first = build(project, override, cores)
    again = build(project, override, cores)
    stages = stage_table(jobs(project, name))
    folder = next((project / "releases" / name).glob("v*"))
    python = sys.executable
    row = {
        "build": {k: v for k, v in first.items() if k != "output"},
        "noop_cpu_s": again["cpu_s"],
        "stages_cpu_s": {stage: s["cpu_s"] for stage, s in stages.items()},
        "help_cpu_s": command_cpu([python, "-m", "regionbench", "--help"]),
        "verify_cpu_s": command_cpu([python, "-m", "regionbench", "verify", str(folder)]),
        "load_cpu_s": command_cpu([python, "-c", f"import regionbench; regionbench.load({str(folder)!r}).images"]),
    }
    if name == "coco-tiny":
        with tempfile.TemporaryDirectory() as scratch:
            run = coco_run(raw, Path(scratch) / "results.json")
            cmd = [python, "-m", "regionbench", "evaluate", "--release", str(folder), "--task", "instances",
                   "--predictions", str(run), "--out", str(Path(scratch) / "report.json")]  # fmt: skip
            row["evaluate_cpu_s"] = command_cpu(cmd)
    print(f"\n== {name}: build {row['build']['cpu_s']} CPU-s, {row['build']['wall_s']} s wall, plan at "
          f"{row['build']['plan_s']} s; no-op rebuild {row['noop_cpu_s']} CPU-s", flush=True)  # fmt: skip
    for stage, cpu in sorted(row["stages_cpu_s"].items(), key=lambda kv: -kv[1]):
        print(f"  {stage:<22} {cpu:>8.1f} CPU-s")
    commands = ("help", "verify", "load", "evaluate")
    print("  commands (CPU-s): " + ", ".join(f"{k} {row[f'{k}_cpu_s']}" for k in commands if f"{k}_cpu_s" in row))
    print("\n".join(first["output"][-12:]))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=os.environ.get("REGIONBENCH_REAL_DATA"))
    ap.add_argument("--collections", nargs="+", choices=sorted(RAW), default=sorted(RAW))
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args()
    if args.data is None:
        raise SystemExit("real_collections.py: name the real collections' folder (--data or REGIONBENCH_REAL_DATA)")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = {name: measure(name, Path(args.data), args.cores) for name in args.collections}
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
