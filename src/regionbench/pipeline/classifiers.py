"""Reference classifiers of the paper's Table 4, one-versus-all with a max-confidence merge.

Every classifier trains one binary model per label (its regions positive, all others
negative) and labels a region with the class whose model is most confident. Features are
standardised with the training split's mean and std. Everything is seeded.

Mapping from the paper's Table 4 (CLOP toolbox) to this implementation; the settings live in
``config/config.yaml`` under ``classifiers``:

========== ======================================= ===========================================
paper      Table 4 parameters                      here
========== ======================================= ===========================================
zarbi      simple linear classifier                weights (mean+ - mean-) / pooled variance,
                                                   bias at the midpoint of the class means
naive      naive Bayes                             sklearn GaussianNB
klogistic  kernel logistic regression              Nystroem RBF features (n_components) +
                                                   LogisticRegression
neural     Units 10, Shrinkage 0.1, Epochs 50      MLPClassifier(hidden 10, alpha 0.1, 50 epochs)
svc        Kernel poly, degree 1, shrinkage 0.001  LinearSVC (a degree-1 polynomial kernel is
                                                   linear), C = 1 / (2 * 0.001 * n_train)
kridge     Kernel poly, degree 1, shrinkage 0.001  RidgeClassifier(alpha 0.001): degree-1 ridge
rf         Depth 1, shrinkage 0.3, units 100       RandomForestClassifier(100 trees)
random     baseline                                a seeded uniform draw among training labels
majority   baseline                                the most frequent training label
========== ======================================= ===========================================
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from threadpoolctl import threadpool_limits

from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.core.forked import forked_map
from regionbench.core.hierarchy import Hierarchy
from regionbench.core.tables import FEATURE_NAMES
from regionbench.pipeline import onevsall
from regionbench.pipeline.subsets import SUBSET_SIZES
from regionbench.scoring.measures.label_sets import region_scores

NAMES = ("zarbi", "naive", "klogistic", "neural", "svc", "kridge", "rf", "random", "majority")
BASELINES = ("random", "majority")


@dataclass
class Model:
    """A fitted one-versus-all model with its standardisation: ``score`` gives each row's score
    for every label (rows x labels), the label kept as ``OneVsRestClassifier`` keeps it."""

    name: str
    labels: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    score: Callable[[np.ndarray], np.ndarray] | None = None
    threshold: float = 0.0  # two labels: the second where its score exceeds this
    constant: str | None = None
    seed: int = 0

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.name == "majority":
            return np.full(len(x), self.constant, dtype=object)
        if self.name == "random":
            rng = np.random.default_rng(self.seed)
            return self.labels[rng.integers(len(self.labels), size=len(x))]
        if len(self.labels) == 1:
            return np.full(len(x), self.labels[0], dtype=object)
        assert self.score is not None  # fit sets it for every model but the two baselines
        scores = self.score((x - self.mean) / self.scale)
        if len(self.labels) == 2:
            # scikit-learn's one-versus-all fits the second label's model alone for two labels.
            return self.labels[(scores[:, 1] > self.threshold).astype(np.int64)]
        return self.labels[onevsall.best_label(scores)]


def fit(name: str, x: np.ndarray, labels: np.ndarray, params: dict | None = None, seed: int = 0) -> Model:
    """Train classifier ``name`` one-versus-all on features ``x`` and string ``labels``.

    The per-label models are fitted for all labels at once (``regionbench.pipeline.onevsall``),
    step for step as scikit-learn's ``OneVsRestClassifier`` of the binary models in the table above
    fits them one a label; the linear SVM stays that, one liblinear fit a label.
    """
    if name not in NAMES:
        raise InputError(f"unknown classifier {name!r}; choose one of {', '.join(NAMES)}")
    classes, y = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    model = Model(name, classes, mean, scale, seed=seed)
    if name == "majority":
        counts = np.bincount(y)
        model.constant = classes[int(np.argmax(counts))]  # ties: first by name
        return model
    if name == "random" or len(classes) == 1:
        return model
    p, k = params or {}, len(classes)
    z = (x - mean) / scale
    if name == "zarbi":
        model.score = onevsall.fit_zarbi(z, y, k)
    elif name == "naive":
        model.score, model.threshold = onevsall.fit_naive_bayes(z, y, k), 0.5  # a posterior
    elif name == "kridge":
        model.score = onevsall.fit_ridge(z, y, k, p["shrinkage"])
    elif name == "klogistic":
        model.score = onevsall.fit_kernel_logistic(
            z, y, k, p["n_components"], p.get("gamma"), p["C"], p["max_iter"], seed
        )
    elif name == "neural":
        model.score = onevsall.fit_network(z, y, k, p["units"], p["shrinkage"], p["epochs"], seed)
        model.threshold = 0.5
    elif name == "rf" and p.get("max_depth") == 1:
        model.score, model.threshold = onevsall.fit_stump_forest(z, y, k, p["trees"], seed), 0.5
    else:  # the linear SVM, and a forest deeper than the paper's stumps: scikit-learn's, a label at a time
        from regionbench.pipeline.estimators import binary_estimator

        model.score, model.threshold = onevsall.fit_one_per_label(binary_estimator(name, p, seed, len(x)), z, y, k)
    return model


def subset_data(subsets: pa.Table, features: pa.Table, subset: str) -> tuple[pa.Table, pa.Table]:
    """(train, test) rows of one subset with their label and the 27 features, sorted by key."""
    rows = subsets.filter(pc.equal(subsets.column("subset"), subset)).select([*tables.REGION_KEY, "label", "split"])
    joined = rows.join(features, keys=tables.REGION_KEY, join_type="inner").sort_by(
        [(k, "ascending") for k in tables.REGION_KEY]
    )
    if joined.num_rows != rows.num_rows:
        raise InputError(
            f"subset {subset}: {rows.num_rows - joined.num_rows} regions have no features; rebuild the features stage"
        )
    is_test = pc.equal(joined.column("split"), "test")
    return joined.filter(pc.invert(is_test)), joined.filter(is_test)


def matrix(table: pa.Table) -> np.ndarray:
    return np.column_stack([table.column(name).to_numpy() for name in FEATURE_NAMES])


def training_sample(labels: np.ndarray, max_train: int | None, seed: int = 0) -> np.ndarray:
    """The rows (sorted indices into ``labels``) a classifier is fitted on: all of them, or with
    more than ``max_train`` a seeded sample of exactly ``max_train`` stratified by label.

    Each label keeps one row, and the other ``max_train - labels`` seats go to the labels in
    proportion to their remaining rows, by largest remainder (ties to the first label by name);
    within a label the rows are a seeded draw. One-versus-all costs labels x rows x epochs, so
    the cap bounds a reference classifier's fit whatever the collection (docs/build.md).
    """
    n = len(labels)
    if max_train is None or n <= max_train:
        return np.arange(n)
    classes, y = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
    if max_train < len(classes):
        raise InputError(f"classifiers.max_train {max_train} is below the {len(classes)} labels to learn; raise it")
    counts = np.bincount(y, minlength=len(classes))
    share = (max_train - len(classes)) * (counts - 1) / (n - len(classes))
    quota = 1 + np.floor(share).astype(np.int64)
    rest = max_train - int(quota.sum())
    quota[np.argsort(-(share - np.floor(share)), kind="stable")[:rest]] += 1
    rng = np.random.default_rng(seed)
    chosen = [rng.choice(np.flatnonzero(y == k), size=int(q), replace=False) for k, q in enumerate(quota)]
    return np.sort(np.concatenate(chosen))


def run(
    name: str,
    subsets: pa.Table,
    features: pa.Table,
    subset: str,
    params: dict,
    seed: int = 0,
    max_train: int | None = None,
) -> tuple[pa.Table, float]:
    """Fit ``name`` on a subset's train split (at most ``max_train`` regions of it,
    ``training_sample``); test-split predictions and the fit time in seconds."""
    train, test = subset_data(subsets, features, subset)
    train = train.take(training_sample(np.array(train.column("label").to_pylist(), dtype=object), max_train, seed))
    start = time.perf_counter()
    model = fit(name, matrix(train), np.array(train.column("label").to_pylist(), dtype=object), params, seed)
    seconds = time.perf_counter() - start
    predicted = model.predict(matrix(test)) if test.num_rows else np.array([], dtype=object)
    out = test.select([*tables.REGION_KEY, "label"]).append_column("predicted", pa.array(list(predicted), pa.string()))
    return out.cast(tables.PREDICTIONS), seconds


def run_subsets(
    name: str,
    subsets: pa.Table,
    features: pa.Table,
    names: Sequence[str],
    params: dict,
    seed: int = 0,
    max_train: int | None = None,
    workers: int = 1,
) -> list[tuple[pa.Table, float]]:
    """``run`` of classifier ``name`` on each subset of ``names``, in that order, fitted by up to
    ``workers`` forked processes. Each fit is independent of the others, so the predictions are
    the same for any number of workers; the largest subset (the last of A-H) starts first, since
    a fit's cost grows with its training regions and the largest is most of the job.

    BLAS runs on one thread: the workers are the parallelism, and BLAS threads beside them spin
    for work (a kernel logistic fit took nine times the CPU), whatever the machine's cores."""
    order = sorted(range(len(names)), key=lambda i: -SUBSET_SIZES.get(names[i], 0))
    with threadpool_limits(limits=1):
        done = forked_map(
            lambda i: run(name, subsets, features, names[i], params, seed=seed, max_train=max_train), order, workers
        )
    return [result for _, result in sorted(zip(order, done, strict=True))]


def summary(
    tree: Hierarchy,
    predictions: dict[tuple[str, str], pa.Table],
    sizes: dict[str, dict],
    max_train: int | None = None,
) -> pa.Table:
    """One row per (subset, classifier): sizes (``n_train``: the regions fitted on, at most
    ``max_train``) and the region-level measures on the test split."""
    rows = []
    for (subset, name), table in sorted(predictions.items()):
        scores = region_scores(tree, table.column("label").to_pylist(), table.column("predicted").to_pylist())
        rows.append(
            {
                "subset": subset,
                "classifier": name,
                "n_labels": len(sizes[subset]["labels"]),
                "n_train": min(sizes[subset]["train"], max_train or sizes[subset]["train"]),
                "n_test": table.num_rows,
                **scores,
            }
        )
    return pa.Table.from_pylist(rows, schema=tables.CLASSIFIER_SCORES)


def soft_confusions(tree: Hierarchy, predictions: dict[tuple[str, str], pa.Table], top: int = 20) -> dict:
    """The paper's Table 6 from the reference classifiers' test predictions: pairs (true label,
    predicted label) wrong by e_hard but right by e_hierarchy (0 < e < 1), counted over the
    regions of the largest subset and every classifier but the baselines; the ``top`` most
    frequent (ties by labels), each with its e_hierarchy and the classifiers that made it."""
    present = [s for s in SUBSET_SIZES if any(subset == s for subset, _ in predictions)]
    subset = present[-1] if present else None
    counts: dict[tuple[str, str], int] = {}
    makers: dict[tuple[str, str], set[str]] = {}
    names = sorted(n for s, n in predictions if s == subset and n not in BASELINES)
    for name in names:
        table = predictions[(str(subset), name)]  # a name is found only under a subset
        true, pred = table.column("label").to_pylist(), table.column("predicted").to_pylist()
        e = tree.e_hierarchy(true, pred) if true else np.array([])
        for t, p, value in zip(true, pred, e, strict=True):
            if 0 < value < 1:
                counts[(t, p)] = counts.get((t, p), 0) + 1
                makers.setdefault((t, p), set()).add(name)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return {
        "subset": subset,
        "classifiers": names,
        "pairs": [
            {
                "label": t,
                "predicted": p,
                "e_hierarchy": float(tree.e_hierarchy(t, p)),
                "regions": n,
                "classifiers": sorted(makers[(t, p)]),
            }
            for (t, p), n in ranked
        ],
    }


METRIC_MEASURES = ("e_hard", "soft", "mean_e")


def metrics(summary_table: pa.Table) -> dict[str, dict[str, float]]:
    """The files of the ``metrics/`` folder for ``dvc metrics``: ``<subset>-<classifier>.json``, each
    a flat ``{e_hard, soft, mean_e}``. One small file per pair because ``dvc metrics show`` prints a
    row per file and a column per key: the folder reads as a table of 72 rows and three columns,
    where one file would be one row of 216 columns."""
    return {
        f"{row['subset']}-{row['classifier']}.json": {k: row[k] for k in METRIC_MEASURES}
        for row in summary_table.to_pylist()
    }
