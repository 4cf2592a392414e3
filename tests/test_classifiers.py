from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core import tables
from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline import classifiers, estimators, subsets
from regionbench.pipeline.vocabulary import DEFAULT_DIR

PARAMS = {
    "klogistic": {"n_components": 50, "gamma": None, "C": 1.0, "max_iter": 200},
    "neural": {"units": 10, "shrinkage": 0.1, "epochs": 50},
    "svc": {"shrinkage": 0.001},
    "kridge": {"shrinkage": 0.001},
    "rf": {"trees": 20, "max_depth": None},
}


def test_each_classifier_learns_separable_classes() -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 5, size=(3, 27))
    y = np.repeat(np.array(["a", "b", "c"], dtype=object), 60)
    x = centres[np.repeat(np.arange(3), 60)] + rng.normal(0, 1, size=(180, 27))
    for name in classifiers.NAMES:
        model = classifiers.fit(name, x, y, PARAMS.get(name), seed=0)
        accuracy = (model.predict(x) == y).mean()
        if name == "majority":
            assert accuracy == pytest.approx(1 / 3)
        elif name == "random":
            assert 0.15 < accuracy < 0.55
        else:
            assert accuracy > 0.95, name


def test_zarbi_weights_follow_the_definition() -> None:
    x = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 3.0], [6.0, 3.0]])
    y = np.array([0, 0, 1, 1])
    z = estimators.Zarbi().fit(x, y)
    # means+ (5, 3), means- (1, 1); pooled variance (1, 0 -> floor) per feature
    assert z.coef_[0] == pytest.approx(4.0)
    assert z.decision_function(np.array([[3.0, 2.0]]))[0] == pytest.approx(0.0, abs=1e-6)


def test_unknown_classifier() -> None:
    with pytest.raises(ValueError, match="unknown classifier"):
        classifiers.fit("deepnet", np.zeros((2, 27)), np.array(["a", "b"]))


@pytest.fixture(scope="module")
def demo_runs(demo_ingest: Path) -> tuple[dict, dict, pa.Table]:
    regions = tables.concat(
        [
            tables.read_parquet(p).select(["image_id", "annotator", "region_id", "label"])
            for p in sorted(demo_ingest.glob("*/regions.parquet"))
        ]
    )
    feats = tables.concat([tables.read_parquet(p) for p in sorted(demo_ingest.glob("*/features.parquet"))])
    table, report = subsets.make_subsets(regions, seed=0)
    runs = {}
    for subset in ("A", "B", "C", "D", "E"):
        for name in classifiers.NAMES:
            runs[(subset, name)] = classifiers.run(name, table, feats, subset, PARAMS.get(name, {}), seed=0)[0]
    return runs, report["subsets"], table


def test_soft_is_at_least_hard_and_equal_on_unrelated_labels(demo_runs: tuple) -> None:
    runs, sizes, _ = demo_runs
    tree = Hierarchy.from_yaml(DEFAULT_DIR / "hierarchy.yaml")
    summary = classifiers.summary(tree, runs, sizes).to_pylist()
    for row in summary:
        assert row["soft"] >= row["e_hard"]
        assert 0 <= row["mean_e"] <= 1
        labels = sizes[row["subset"]]["labels"]
        unrelated = not any(tree.is_ancestor(a, b) for a in labels for b in labels)
        if unrelated:
            assert row["soft"] == row["e_hard"], row
    assert any(r["subset"] == "E" and r["soft"] > r["e_hard"] for r in summary)  # E has sky above sky-blue
    best = max(r["e_hard"] for r in summary if r["subset"] == "A" and r["classifier"] not in classifiers.BASELINES)
    assert best > max(r["e_hard"] for r in summary if r["subset"] == "A" and r["classifier"] == "random")


def test_predictions_cover_the_test_split(demo_runs: tuple) -> None:
    runs, sizes, _ = demo_runs
    for (subset, _), table in runs.items():
        assert table.num_rows == sizes[subset]["test"]


def test_two_runs_give_identical_bytes(demo_runs: tuple, demo_ingest: Path, tmp_path: Path) -> None:
    runs, sizes, table = demo_runs
    feats = tables.concat([tables.read_parquet(p) for p in sorted(demo_ingest.glob("*/features.parquet"))])
    tree = Hierarchy.from_yaml(DEFAULT_DIR / "hierarchy.yaml")
    again = {key: classifiers.run(key[1], table, feats, key[0], PARAMS.get(key[1], {}), seed=0)[0] for key in runs}
    tables.write_parquet(classifiers.summary(tree, runs, sizes), tmp_path / "one.parquet")
    tables.write_parquet(classifiers.summary(tree, again, sizes), tmp_path / "two.parquet")
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "two.parquet").read_bytes()


@pytest.mark.parametrize("name", ["rf", "neural", "zarbi"])
def test_subsets_on_several_workers_predict_what_one_process_predicts(
    demo_runs: tuple, demo_ingest: Path, name: str
) -> None:
    runs, _, table = demo_runs
    feats = tables.concat([tables.read_parquet(p) for p in sorted(demo_ingest.glob("*/features.parquet"))])
    names = ["A", "C", "E", "B"]  # not in size order: the results come back in this order
    done = classifiers.run_subsets(name, table, feats, names, PARAMS.get(name, {}), seed=0, workers=3)
    for subset, (predictions, seconds) in zip(names, done, strict=True):
        assert predictions.equals(runs[(subset, name)]) and seconds >= 0, subset


def test_soft_confusions_by_hand() -> None:
    tree = Hierarchy.from_yaml(DEFAULT_DIR / "hierarchy.yaml")

    def table(pairs: list[tuple[str, str]]) -> pa.Table:
        return pa.table({"label": [t for t, _ in pairs], "predicted": [p for _, p in pairs]})

    predictions = {
        # tree -> trees twice and food -> dish once by zarbi, tree -> trees once by rf; exact hits,
        # cross-branch errors (e = 1) and the baselines' soft errors do not count.
        ("H", "zarbi"): table([("tree", "trees"), ("tree", "trees"), ("food", "dish"), ("sky", "sky"), ("man", "rock")]),
        ("H", "rf"): table([("tree", "trees"), ("vegetation", "bush")]),
        ("H", "majority"): table([("food", "dish")] * 5),
        ("E", "zarbi"): table([("sky", "sky-light")] * 9),  # a smaller subset
    }  # fmt: skip
    report = classifiers.soft_confusions(tree, predictions, top=2)
    assert report["subset"] == "H" and report["classifiers"] == ["rf", "zarbi"]
    assert report["pairs"] == [
        {"label": "tree", "predicted": "trees", "e_hierarchy": 0.25, "regions": 3, "classifiers": ["rf", "zarbi"]},
        {"label": "food", "predicted": "dish", "e_hierarchy": 0.5, "regions": 1, "classifiers": ["zarbi"]},
    ]


@settings(max_examples=80, deadline=None)
@given(
    counts=st.lists(st.integers(1, 400), min_size=1, max_size=12),
    cap=st.integers(100, 1500),
    seed=st.integers(0, 2**16),
)
def test_the_training_sample_is_exact_stratified_and_seeded(counts: list[int], cap: int, seed: int) -> None:
    """Exactly min(n, cap) distinct rows; every label kept; each label's share of the sample
    within one row of its share of the split; the same rows for the same seed."""
    labels = np.array([f"label {k:02d}" for k, c in enumerate(counts) for _ in range(c)], dtype=object)
    np.random.default_rng(seed).shuffle(labels)
    n = len(labels)
    chosen = classifiers.training_sample(labels, cap, seed)
    assert len(chosen) == min(n, cap) and len(set(chosen.tolist())) == len(chosen)
    assert chosen.tolist() == sorted(chosen.tolist()) and (chosen < n).all()
    assert classifiers.training_sample(labels, cap, seed).tolist() == chosen.tolist()
    if n <= cap:
        return
    kept = dict(zip(*np.unique(labels[chosen], return_counts=True), strict=True))
    assert set(kept) == set(labels)
    for k, count in enumerate(counts):
        share = 1 + (cap - len(counts)) * (count - 1) / (n - len(counts))
        assert abs(kept[f"label {k:02d}"] - share) < 1


def test_the_cap_bounds_the_fit_and_the_reported_train_size(demo_runs: tuple, demo_ingest: Path) -> None:
    _, sizes, table = demo_runs
    feats = tables.concat([tables.read_parquet(p) for p in sorted(demo_ingest.glob("*/features.parquet"))])
    cap = sizes["E"]["train"] // 2
    capped, _ = classifiers.run("majority", table, feats, "E", {}, seed=0, max_train=cap)
    assert capped.num_rows == sizes["E"]["test"]  # the whole test split is still scored
    tree = Hierarchy.from_yaml(DEFAULT_DIR / "hierarchy.yaml")
    rows = classifiers.summary(tree, {("E", "majority"): capped}, sizes, max_train=cap).to_pylist()
    assert rows[0]["n_train"] == cap and rows[0]["n_test"] == sizes["E"]["test"]
    with pytest.raises(ValueError, match="below the 10 labels to learn"):
        classifiers.run("zarbi", table, feats, "E", {}, max_train=5)
