"""The reference classifiers' stage against a plain scikit-learn script doing the same fits.

    .venv/bin/python benchmarks/classifiers_vs_sklearn.py --results results/demo [--workers 1]

Reads a build's features and subsets (``results/<dataset>/features/*.parquet``,
``subsets.parquet``) and the classifiers of ``config/config.yaml`` (names, parameters, seed),
then times, as the kernel counts them:

1. **the stage**: one ``classify`` job per classifier as the workflow runs it (a fresh
   interpreter running ``regionbench.pipeline.classifiers.run_subsets`` on subsets A-H, its
   imports included), on ``--workers`` processes;
2. **plain scikit-learn**: one script, one interpreter, that standardises the features on each
   subset's train split and fits ``OneVsRestClassifier`` of the same binary models with the same
   parameters and seeds, then predicts the test split.

Prints each classifier's CPU both ways, the totals and their ratio; checks the predictions agree.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml
from scoring import timed

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"

STAGE = """
import json, sys
from pathlib import Path
from regionbench.core import tables
from regionbench.pipeline import classifiers
from regionbench.pipeline.subsets import SUBSET_SIZES
results, name, params, seed, workers = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
features = tables.concat([tables.read_parquet(p) for p in sorted(Path(results, "features").glob("*.parquet"))])
subsets = tables.read_parquet(Path(results, "subsets.parquet"))
done = classifiers.run_subsets(name, subsets, features, list(SUBSET_SIZES), params, seed=seed, max_train=None, workers=workers)
print(json.dumps([t.column("predicted").to_pylist() for t, _ in done]))
"""

# What a user would write with scikit-learn alone: the same splits, models and parameters.
PLAIN = """
import json, sys, warnings
from pathlib import Path
import numpy as np, pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC
from regionbench.pipeline.estimators import Zarbi  # the paper's naive linear model: no scikit-learn twin
results, name, p, seed = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
features = pa.concat_tables([pq.read_table(f) for f in sorted(Path(results, "features").glob("*.parquet"))])
members = pq.read_table(Path(results, "subsets.parquet"))
key = ["image_id", "annotator", "region_id"]
columns = [c for c in features.column_names if c not in key and c not in ("label", "label_id")]
out = []
for subset in "ABCDEFGH":
    rows = members.filter(pc.equal(members["subset"], subset)).select([*key, "label", "split"])
    if rows.num_rows == 0:
        continue
    joined = rows.join(features, keys=key).sort_by([(k, "ascending") for k in key])
    test = pc.equal(joined["split"], "test")
    train, held = joined.filter(pc.invert(test)), joined.filter(test)
    x = np.column_stack([train[c].to_numpy() for c in columns]); xt = np.column_stack([held[c].to_numpy() for c in columns])
    mean, scale = x.mean(0), x.std(0); scale[scale == 0] = 1
    labels, y = np.unique(np.array(train["label"].to_pylist(), dtype=object), return_inverse=True)
    if name == "majority":
        out.append([labels[np.argmax(np.bincount(y))]] * held.num_rows); continue
    if name == "random":
        out.append(list(labels[np.random.default_rng(seed).integers(len(labels), size=held.num_rows)])); continue
    if len(labels) == 1:
        out.append([labels[0]] * held.num_rows); continue
    model = {
        "zarbi": lambda: Zarbi(),
        "naive": lambda: GaussianNB(),
        "klogistic": lambda: make_pipeline(Nystroem(gamma=p.get("gamma"), n_components=p["n_components"], random_state=seed), LogisticRegression(C=p["C"], max_iter=p["max_iter"])),
        "neural": lambda: MLPClassifier(hidden_layer_sizes=(p["units"],), alpha=p["shrinkage"], max_iter=p["epochs"], random_state=seed),
        "svc": lambda: LinearSVC(C=1.0 / (2 * p["shrinkage"] * len(x)), random_state=seed),
        "kridge": lambda: RidgeClassifier(alpha=p["shrinkage"]),
        "rf": lambda: RandomForestClassifier(n_estimators=p["trees"], max_depth=p.get("max_depth"), random_state=seed, n_jobs=1),
    }[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = OneVsRestClassifier(model, n_jobs=1).fit((x - mean) / scale, y)
    out.append(list(labels[fitted.predict((xt - mean) / scale)]))
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="a build's results/<dataset> folder")
    ap.add_argument("--workers", type=int, default=1, help="the stage's processes per classifier (default 1)")
    args = ap.parse_args()
    cfg = yaml.safe_load(CONFIG.read_text())["classifiers"]
    rows, agree = {}, True
    for name in cfg["names"]:
        params = json.dumps(cfg["params"].get(name, {}))
        seed = str(cfg["seed"])
        stage, said = timed([sys.executable, "-c", STAGE, args.results, name, params, seed, str(args.workers)])
        plain, theirs = timed([sys.executable, "-c", PLAIN, args.results, name, params, seed])
        same = json.loads(said.strip().splitlines()[-1]) == json.loads(theirs.strip().splitlines()[-1])
        agree &= same
        rows[name] = {"stage_cpu_s": stage["cpu_s"], "plain_cpu_s": plain["cpu_s"], "same_predictions": same}
        print(f"{name:10s} stage {stage['cpu_s']:7.2f} s CPU   plain scikit-learn {plain['cpu_s']:7.2f} s CPU"
              f"   predictions {'the same' if same else 'DIFFER'}", flush=True)  # fmt: skip
    stage_total = sum(r["stage_cpu_s"] for r in rows.values())
    plain_total = sum(r["plain_cpu_s"] for r in rows.values())
    ratio = stage_total / plain_total
    print(
        f"all: stage {stage_total:.1f} s CPU, plain scikit-learn {plain_total:.1f} s CPU: {ratio:.2f}x (target <= 0.25)"
    )
    print(json.dumps({"classifiers": rows, "stage_cpu_s": round(stage_total, 2), "plain_cpu_s": round(plain_total, 2),
                      "ratio": round(ratio, 3), "predictions_agree": agree}))  # fmt: skip


if __name__ == "__main__":
    main()
