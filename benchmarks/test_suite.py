"""What the test suite costs: its wall time, its CPU as the kernel counts it, and that CPU file by file.

    .venv/bin/python benchmarks/test_suite.py [--lane test|test-machinery|test-units] [--top 25] [-- PYTEST ARGS]

Runs the lane's pytest command (``make test``'s, ``make test-machinery``'s without the SLURM test, or ``make test-units``'s) in this checkout with
``REGIONBENCH_CPU_LOG`` set (tests/cpu_log.py: each test's CPU, its children's included), then
prints the test files by CPU, the lane's wall time and its total CPU (user + system of pytest,
its workers and every process under them: builds, jobs, CLI calls). Run it on a fresh clone, alone
on the machine. The last line is one JSON object.
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
from collections import defaultdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
LANES = {
    "test": ["-n", "auto", "--dist", "loadfile", "--ignore=tests/lint", "-m", "not machinery and not slurm"],
    "test-machinery": ["-n", "auto", "--dist", "loadfile", "--ignore=tests/lint", "-m", "machinery and not slurm"],
    "test-units": ["-n", "auto", "--dist", "loadfile", "--ignore=tests/lint", "-m", "not workflow and not slurm"],
}


def per_file(folder: Path) -> dict[str, float]:
    """CPU seconds by test file, from the logs ``tests/cpu_log.py`` wrote in ``folder``."""
    files: dict[str, float] = defaultdict(float)
    for log in folder.glob("*.jsonl"):
        for line in log.read_text().splitlines():
            row = json.loads(line)
            files[row["test"].split("::")[0]] += row["cpu_s"]
    return dict(files)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lane", choices=sorted(LANES), default="test")
    ap.add_argument("--top", type=int, default=25, help="files shown (all are in the JSON line)")
    ap.add_argument("--output", type=Path, help="write pytest's whole output to this file")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as logs:
        env = {**os.environ, "REGIONBENCH_CPU_LOG": logs}
        cmd = [sys.executable, "-m", "pytest", "-q", *LANES[args.lane], *args.pytest_args]
        start = time.monotonic()
        done = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True)
        wall = time.monotonic() - start
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        files = per_file(Path(logs))
    if args.output:
        args.output.write_text(done.stdout + done.stderr)
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    print("\n".join([*failed, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]]))
    total = children.ru_utime + children.ru_stime
    ranked = sorted(files.items(), key=lambda kv: -kv[1])
    for name, cpu in ranked[: args.top]:
        print(f"{cpu:8.1f} s CPU  {name}")
    print(f"lane {args.lane}: {wall:.0f} s wall, {total:.0f} s CPU in all (tests' own sum {sum(files.values()):.0f})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(
        json.dumps(
            {
                "lane": args.lane,
                "exit": done.returncode,
                "wall_s": round(wall, 1),
                "cpu_s": round(total, 1),
                "files": {name: round(cpu, 1) for name, cpu in ranked},
            }
        )
    )
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
