"""The reference classifiers at COCO sizes: how their cost grows with the training regions.

    .venv/bin/python benchmarks/classifiers_scale.py [--sizes 25000 100000 200000] [--every-region 25000 100000]

A COCO-sized subset H has 80 labels of very unequal frequency (as COCO's categories) and the
27 features of each region. For each size n of the train split it draws n regions (label
frequencies falling as 1/rank, each label a Gaussian cluster that overlaps its neighbours) and a
test split of 0.3 n, then fits every classifier of ``config/config.yaml`` one-versus-all, as
rule ``classify`` does, two at a time: on the sample ``classifiers.training_sample`` keeps
under the configured ``max_train``, and, at the sizes of ``--every-region``, on every region
(``max_train: null``). It prints per size and classifier the fit and predict seconds, the
grid's wall time per size, the growth exponent of the uncapped grid's CPU between the
``--every-region`` sizes; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import yaml

from regionbench.pipeline import classifiers

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
LABELS, FEATURES = 80, 27


def regions(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` regions: features (n, 27) and labels, label k drawn with weight 1 / (k + 1)."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, LABELS + 1)
    y = rng.choice(LABELS, size=n, p=weights / weights.sum())
    centres = np.random.default_rng(0).normal(0, 1.5, size=(LABELS, FEATURES))
    x = centres[y] + rng.normal(0, 1, size=(n, FEATURES))
    return x, np.array([f"label {k:02d}" for k in y], dtype=object)


def fit_one(args: tuple[str, dict, int, int, int | None]) -> dict:
    """One classifier fitted on the train split of size ``n`` (at most ``cap`` of it) and predicting its test split."""
    name, params, seed, n, cap = args
    x, labels = regions(n + int(0.3 * n), seed=n)
    train_x, train_y, test_x = x[:n], labels[:n], x[n:]
    keep = classifiers.training_sample(train_y, cap, seed)
    start = time.perf_counter()
    cpu = time.process_time()
    model = classifiers.fit(name, train_x[keep], train_y[keep], params, seed)
    fitted = time.perf_counter()
    model.predict(test_x)
    return {
        "classifier": name,
        "train": n,
        "fitted_on": len(keep),
        "fit_s": round(fitted - start, 2),
        "predict_s": round(time.perf_counter() - fitted, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
    }


def grid(names: list[str], cfg: dict, n: int, cap: int | None, workers: int) -> tuple[list[dict], float]:
    jobs = [(name, cfg["params"].get(name, {}), cfg["seed"], n, cap) for name in names]
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        done = list(pool.map(fit_one, jobs))
    return done, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[25_000, 100_000, 200_000])
    ap.add_argument("--every-region", type=int, nargs="*", default=[25_000, 100_000])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    cfg = yaml.safe_load(CONFIG.read_text())["classifiers"]
    cap = cfg["max_train"]
    runs = [(n, cap) for n in args.sizes] + [(n, None) for n in args.every_region]
    out = []
    for n, limit in runs:
        done, wall = grid(cfg["names"], cfg, n, limit, args.workers)
        fitted = done[0]["fitted_on"]
        print(
            f"\n{n:,} train regions, {LABELS} labels, fitted on {fitted:,} (max_train {limit}): grid {wall:.1f} s wall"
        )
        for d in done:
            print(
                f"  {d['classifier']:10s} fit {d['fit_s']:8.2f} s  predict {d['predict_s']:6.2f} s  CPU {d['cpu_s']:8.2f} s"
            )
        out.append({"train": n, "max_train": limit, "wall_s": round(wall, 1), "classifiers": done})
        print(json.dumps(out[-1]), flush=True)
    every = [r for r in out if r["max_train"] is None]
    exponent = None
    if len(every) > 1:
        sizes = [r["train"] for r in every]
        cpu = [sum(d["cpu_s"] for d in r["classifiers"]) for r in every]
        exponent = round(float(np.polyfit(np.log(sizes), np.log(cpu), 1)[0]), 3)
        print(f"\nevery region: grid CPU grows as train^{exponent}")
    print(json.dumps({"max_train": cap, "labels": LABELS, "runs": out, "exponent_every_region": exponent}))


if __name__ == "__main__":
    main()
