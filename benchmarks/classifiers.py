"""The whole classifier grid (subsets A-H x Table 4 classifiers and baselines) on paper features.

    .venv/bin/python benchmarks/classifiers.py --results results/paper [--workers 2]

Reads the features and subsets a paper-profile build wrote (``regionbench build --configfile
config/paper.yaml`` through ``results/paper/subsets.parquet``), runs one job per classifier
over every subset as the workflow does, two at a time, and prints per classifier the summed
fit and predict times, then the grid's wall time; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import yaml

from regionbench.core import tables
from regionbench.pipeline import classifiers, subsets

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"


def job(args: tuple[str, str, dict, int]) -> list[tuple[str, str, float, float, int]]:
    """One classifier on subsets A-H in one process, its inputs read once, as rule classify runs."""
    results, name, params, seed = args
    feats = tables.concat([tables.read_parquet(p) for p in sorted(Path(results, "features").glob("*.parquet"))])
    members = tables.read_parquet(Path(results, "subsets.parquet"))
    out = []
    for subset in subsets.SUBSET_SIZES:
        train, test = classifiers.subset_data(members, feats, subset)
        start = time.perf_counter()
        model = classifiers.fit(
            name, classifiers.matrix(train), np.array(train.column("label").to_pylist(), dtype=object), params, seed
        )
        fitted = time.perf_counter()
        model.predict(classifiers.matrix(test))
        out.append((subset, name, fitted - start, time.perf_counter() - fitted, test.num_rows))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results/paper")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    cfg = yaml.safe_load(CONFIG.read_text())["classifiers"]
    jobs = [(args.results, n, cfg["params"].get(n, {}), cfg["seed"]) for n in cfg["names"]]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        done = [fit for fits in pool.map(job, jobs) for fit in fits]
    wall = time.perf_counter() - start
    per: dict[str, dict[str, float]] = {}
    for subset, name, fit_s, predict_s, n_test in done:
        p = per.setdefault(name, {"fit_s": 0.0, "predict_s": 0.0})
        p["fit_s"] += fit_s
        p["predict_s"] += predict_s
        print(
            f"{subset} {name:10s} fit {fit_s:8.2f} s  predict {predict_s:6.2f} s  ({n_test} test regions)", flush=True
        )
    print("per classifier, summed over A-H:")
    for name, p in per.items():
        print(f"  {name:10s} fit {p['fit_s']:8.1f} s  predict {p['predict_s']:6.1f} s")
    print(f"grid wall time {wall:.1f} s with {args.workers} workers (target < 1200 s)")
    print(json.dumps({"wall_s": round(wall, 1), "workers": args.workers,
                      "classifiers": {k: {m: round(v, 2) for m, v in p.items()} for k, p in per.items()}}))  # fmt: skip


if __name__ == "__main__":
    main()
