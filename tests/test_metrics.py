"""Evaluation measures: agreement with scikit-learn, hand-computed cases, properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, f1_score, jaccard_score, precision_score, recall_score
from sklearn.preprocessing import MultiLabelBinarizer

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.scoring.measures import label_sets as metrics


def tree_of(parents: dict[str, str]) -> Hierarchy:
    """A hierarchy from child -> parent (the root is 'entity')."""
    return Hierarchy("entity", {"entity": Node("entity", None), **{c: Node(c, p) for c, p in parents.items()}})


VOCAB = [f"l{i}" for i in range(8)]
label_sets = st.lists(st.sets(st.sampled_from(VOCAB), min_size=1, max_size=5), min_size=1, max_size=12)


def binarise(*collections: list[set[str]]) -> list[np.ndarray]:
    mlb = MultiLabelBinarizer(classes=VOCAB).fit([VOCAB])
    return [mlb.transform(c) for c in collections]


@settings(max_examples=60, deadline=None)
@given(label_sets, st.data())
def test_example_and_label_based_agree_with_sklearn(truth: list[set[str]], data: st.DataObject) -> None:
    pred = data.draw(st.lists(st.sets(st.sampled_from(VOCAB), max_size=5), min_size=len(truth), max_size=len(truth)))
    y, p = binarise(truth, pred)
    ex = metrics.example_based(truth, pred)
    assert ex["accuracy"] == pytest.approx(jaccard_score(y, p, average="samples", zero_division=0))
    assert ex["precision"] == pytest.approx(precision_score(y, p, average="samples", zero_division=0))
    assert ex["recall"] == pytest.approx(recall_score(y, p, average="samples", zero_division=0))
    assert ex["f1"] == pytest.approx(f1_score(y, p, average="samples", zero_division=0))
    lb = metrics.label_based(truth, pred, VOCAB)
    for avg in ("macro", "micro"):
        assert lb[f"{avg}_p"] == pytest.approx(precision_score(y, p, average=avg, zero_division=0))
        assert lb[f"{avg}_r"] == pytest.approx(recall_score(y, p, average=avg, zero_division=0))
        assert lb[f"{avg}_f1"] == pytest.approx(f1_score(y, p, average=avg, zero_division=0))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])), min_size=1, max_size=30))
def test_average_precision_with_ties_agrees_with_sklearn(pairs: list[tuple[bool, float]]) -> None:
    relevant = np.array([r for r, _ in pairs])
    confidence = np.array([c for _, c in pairs])
    if not relevant.any():
        assert metrics.average_precision(relevant, confidence) == 0.0
        return
    assert metrics.average_precision(relevant, confidence) == pytest.approx(
        average_precision_score(relevant, confidence)
    )


def test_interpolated_ap_by_hand() -> None:
    # Ranking: R N R N N (distinct scores). Points: (P 1, R .5) and (P 2/3, R 1).
    relevant = np.array([1, 0, 1, 0, 0], bool)
    confidence = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    assert metrics.average_precision(relevant, confidence) == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)
    # Levels 0..0.5 take max precision 1; levels 0.6..1.0 take 2/3.
    assert metrics.interpolated_average_precision(relevant, confidence) == pytest.approx((6 * 1 + 5 * 2 / 3) / 11)
    # Ties scored together: all four images share one score -> one point (P 2/4, R 1).
    tied = np.array([1, 0, 1, 0], bool)
    assert metrics.average_precision(tied, np.full(4, 0.3)) == pytest.approx(0.5)
    assert metrics.interpolated_average_precision(tied, np.full(4, 0.3)) == pytest.approx(0.5)


def test_imageclef_by_hand() -> None:
    truth = np.array([[1, 0], [0, 1], [1, 1]], bool)
    confidence = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.3]])
    binary = np.array([[1, 0], [1, 1], [0, 1]], bool)
    out = metrics.imageclef(truth, confidence, binary)
    # Concept 0 ranks images 0, 2, 1: R R N -> AP 1. Concept 1 ranks 1, 2, 0: R R N -> AP 1.
    assert out["mnap"] == out["miap"] == pytest.approx(1.0)
    assert out["gmnap"] == pytest.approx(1.0)
    # Photos: (tp, fp, fn) = (1,0,0), (1,1,0), (1,0,1): P = 1, 1/2, 1; R = 1, 1, 1/2.
    assert out["f1_photo_instance"] == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
    assert out["f1_photo_micro"] == pytest.approx(metrics._f1(2.5 / 3, 2.5 / 3))
    assert out["f1_photo_macro"] == pytest.approx(2 * 3 / (2 * 3 + 1 + 1))  # pooled: tp 3, fp 1, fn 1
    # Concepts: c0 (tp 1, fp 1, fn 1), c1 (tp 2, fp 0, fn 0).
    assert out["f1_concept_instance"] == pytest.approx((0.5 + 1) / 2)
    assert out["f1_concept_micro"] == pytest.approx(metrics._f1(0.75, 0.75))
    assert out["f1_concept_macro"] == out["f1_photo_macro"]


def test_geometric_mean_adds_and_removes_epsilon() -> None:
    truth = np.array([[1, 1], [0, 0]], bool)
    confidence = np.array([[0.9, 0.1], [0.1, 0.9]])  # concept 0: AP 1; concept 1: AP 1/2
    out = metrics.imageclef(truth, confidence, truth, eps=1e-8)
    assert out["gmnap"] == pytest.approx(np.sqrt(0.5), rel=1e-6)
    zero = metrics._geometric_mean(np.array([0.0, 1.0]), 1e-8)
    assert zero == pytest.approx(np.sqrt(1e-8 * (1 + 1e-8)) - 1e-8)


def test_top_k_by_hand() -> None:
    truth = [{"a", "b"}, {"c"}]
    scores = [{"a": 0.9, "c": 0.5, "b": 0.1}, {"c": 0.7, "a": 0.6, "b": 0.0}]
    out = metrics.top_k_metrics(truth, scores, k=2, vocabulary=["a", "b", "c", "d"])
    # Top-2: {a, c} and {c, a}. Per label: a P 1/2 R 1; b P 0 R 0; c P 1/2 R 1; d 0 0.
    assert out["p_l"] == pytest.approx(0.25) and out["r_l"] == pytest.approx(0.5)
    assert out["f1_l"] == pytest.approx(2 * 0.25 * 0.5 / 0.75)
    assert out["n_plus"] == 2
    # Per image: P 1/2, 1/2; R 1/2, 1.
    assert out["p_i"] == pytest.approx(0.5) and out["r_i"] == pytest.approx(0.75)
    assert out["f1_i"] == pytest.approx(2 * 0.5 * 0.75 / 1.25)


@settings(max_examples=60, deadline=None)
@given(label_sets, st.data())
def test_properties(truth: list[set[str]], data: st.DataObject) -> None:
    scores = [
        {x: data.draw(st.floats(0, 1)) for x in data.draw(st.sets(st.sampled_from(VOCAB), min_size=1))} for _ in truth
    ]
    for k in (1, 3, 5):
        out = metrics.top_k_metrics(truth, scores, k, VOCAB)
        assert all(0 <= v <= 1 for key, v in out.items() if key != "n_plus")
        assert 0 <= out["n_plus"] <= len(VOCAB)
    top1 = [metrics.top_k(s, 1) for s in scores]
    ex = metrics.example_based(truth, top1)
    assert ex["accuracy"] == pytest.approx(ex["recall"])  # at top-1 Jaccard accuracy equals recall
    assert all(0 <= v <= 1 for v in [*ex.values(), *metrics.label_based(truth, top1, VOCAB).values()])
    # The same k labels for every image: R_L = k / |V| when each label has a test positive.
    covered = [*truth, set(VOCAB)]
    k = data.draw(st.integers(1, len(VOCAB)))
    chosen = {x: 1.0 for x in data.draw(st.permutations(VOCAB))[:k]}
    assert metrics.top_k_metrics(covered, [chosen] * len(covered), k, VOCAB)["r_l"] == pytest.approx(k / len(VOCAB))
    # A perfect run scores 1 on every measure.
    perfect = [dict.fromkeys(t, 1.0) for t in truth]
    assert set(metrics.example_based(truth, truth).values()) == {1.0}
    used = sorted(set().union(*truth))
    assert set(metrics.label_based(truth, truth, used).values()) == {1.0}
    best = metrics.top_k_metrics(truth, perfect, max(map(len, truth)), used)
    assert best["p_l"] == 1.0 and best["r_l"] == 1.0 and best["r_i"] == 1.0
    y = binarise(truth)[0].astype(bool)
    y = y[:, y.any(axis=0)]
    clef = metrics.imageclef(y, y.astype(float), y)
    assert all(v == pytest.approx(1.0) for key, v in clef.items() if key != "concepts_scored")


def test_region_measures_by_hand() -> None:
    tree = tree_of({"food": "entity", "dish": "food", "animal": "entity", "dog": "animal", "cat": "animal"})
    true = ["dog", "cat", "dish", "dog"]
    pred = ["dog", "dog", "food", "cat"]
    scores = metrics.region_scores(tree, true, pred)
    assert scores["e_hard"] == pytest.approx(0.25)
    assert 0 <= scores["mean_e"] <= 1 and scores["soft"] >= scores["e_hard"]
    assert metrics.per_label_accuracy(true, pred) == {"cat": 0.0, "dish": 0.0, "dog": 0.5}
    names, matrix = metrics.confusion(true, pred)
    assert names == ["cat", "dish", "dog", "food"]
    assert matrix[names.index("dog"), names.index("cat")] == 1 and matrix.sum() == 4


def test_semantic_matching_takes_exact_matches_first() -> None:
    # As in the bundled hierarchy: tree lies under trees, bush beside trees.
    tree = tree_of({"vegetation": "entity", "trees": "vegetation", "tree": "trees", "bush": "vegetation"})
    similarity = metrics.hierarchy_similarity(tree)
    truth, ranked = [{"tree", "bush"}], [["trees", "tree"]]
    # A greedy pass in confidence order gave 'tree' to the more confident 'trees' and made the
    # exact 'tree' a false positive of label tree: its semantic precision fell below the exact one.
    counts = metrics.semantic_counts(truth, ranked, similarity, threshold=0.5)
    assert counts[0] == metrics.ImageCounts(tp=("tree",), fp=("trees",), fn=("bush",))
    exact = metrics.exact_counts(truth, ranked)
    assert metrics.label_based_counts(counts, ["tree", "trees", "bush"]) == metrics.label_based_counts(
        exact, ["tree", "trees", "bush"]
    )
    # With both predictions near a truth each, both are hits.
    counts = metrics.semantic_counts([{"tree", "bush"}], [["trees", "bush"]], similarity, threshold=0.5)
    assert counts[0] == metrics.ImageCounts(tp=("bush", "tree"), fp=(), fn=())


def test_semantic_matching_counts_pairs_before_similarity() -> None:
    # 'food' is closest to 'dish', but matching it there leaves 'fruit' without a partner; two
    # pairs above the threshold beat one closer pair.
    scores = {("dish", "food"): 0.9, ("fruit", "food"): 0.6, ("dish", "meal"): 0.6}
    counts = metrics.semantic_counts([{"dish", "fruit"}], [["food", "meal"]], lambda t, p: scores.get((t, p), 0.0), 0.5)
    assert counts[0] == metrics.ImageCounts(tp=("dish", "fruit"), fp=(), fn=())


SEMANTIC_TREE = tree_of({f"l{i}": ("entity" if i < 2 else f"l{i % 2}") for i in range(8)})


@settings(max_examples=150, deadline=None)
@given(label_sets, st.data(), st.sampled_from([0.0, 0.2, 0.5, 0.8]))
def test_semantic_scores_are_never_below_exact(truth: list[set[str]], data: st.DataObject, threshold: float) -> None:
    ranked = [data.draw(st.lists(st.sampled_from(VOCAB), max_size=5, unique=True)) for _ in truth]
    exact = metrics.exact_counts(truth, ranked)
    semantic = metrics.semantic_counts(truth, ranked, metrics.hierarchy_similarity(SEMANTIC_TREE), threshold)
    for e, s in zip(exact, semantic, strict=True):
        assert set(e.tp) <= set(s.tp) and len(s.tp) + len(s.fp) == len(e.tp) + len(e.fp)
        assert len(s.tp) + len(s.fn) == len(e.tp) + len(e.fn)
    for name, value in metrics.example_based_counts(exact).items():
        assert metrics.example_based_counts(semantic)[name] >= value - 1e-12, name
    for name, value in metrics.label_based_counts(exact, VOCAB).items():
        assert metrics.label_based_counts(semantic, VOCAB)[name] >= value - 1e-12, name


def test_random_baseline_draws_afresh_for_each_image() -> None:
    vocabulary = [f"w{i:02d}" for i in range(40)]
    test = [{vocabulary[i % 40], vocabulary[(7 * i + 3) % 40]} for i in range(200)]
    baselines = metrics.trivial_baselines(test, test, 5, vocabulary, seed=3)
    # One fixed set can recall at most k labels; fresh draws reach far more of the vocabulary.
    assert baselines["most_frequent"]["n_plus"] <= 5 and baselines["rarest"]["n_plus"] <= 5
    assert baselines["random"]["n_plus"] > 5
    assert baselines["random"] == metrics.trivial_baselines(test, test, 5, vocabulary, seed=3)["random"]
    assert baselines["random"] != metrics.trivial_baselines(test, test, 5, vocabulary, seed=4)["random"]


def test_fixed_baselines_by_hand() -> None:
    train = [{"a", "b"}, {"a"}, {"a", "c"}, {"b"}]  # a 3, b 2, c 1, d 0
    test = [{"a"}, {"c", "d"}]
    b = metrics.trivial_baselines(train, test, 2, ["a", "b", "c", "d"])
    assert b["most_frequent"]["labels"] == ["a", "b"] and b["rarest"]["labels"] == ["d", "c"]
    # most_frequent predicts {a, b} twice: label a P 1/2 R 1; b P 0; c, d R 0 -> P_L 1/8, R_L 1/4;
    # image 1 P 1/2 R 1, image 2 P 0 R 0 -> P_I 1/4, R_I 1/2.
    assert b["most_frequent"]["p_l"] == pytest.approx(1 / 8) and b["most_frequent"]["r_l"] == pytest.approx(1 / 4)
    assert b["most_frequent"]["p_i"] == pytest.approx(1 / 4) and b["most_frequent"]["r_i"] == pytest.approx(1 / 2)
    assert b["most_frequent"]["n_plus"] == 1 and b["rarest"]["n_plus"] == 2


def test_mean_average_precisions_by_hand() -> None:
    truth = [{"a"}, {"a", "b"}, set()]
    scores = [{"a": 0.2, "b": 0.9}, {"a": 0.8, "b": 0.1}, {"a": 0.5}]
    ranking = metrics.mean_average_precisions(truth, scores, ["a", "b", "c"])
    # Label a: images ranked 2 (rel), 3, 1 (rel): AP = (1/1 + 2/3) / 2; label b: images 1, 2 (rel),
    # 3: AP = 1/2; label c has no relevant image and is left out.
    assert ranking["map_l"] == pytest.approx(((1 + 2 / 3) / 2 + 1 / 2) / 2)
    # Image 1: b, a (rel) -> 1/2; image 2: a, b both relevant -> 1; image 3: nothing relevant -> 0.
    assert ranking["map_i"] == pytest.approx((1 / 2 + 1 + 0) / 3)


def test_oracle_analysis_by_hand() -> None:
    # Dutta et al. 2018, 5.2: each method keeps its correct top-k labels; its wrong ones are
    # replaced by rare / frequent / random INCORRECT labels (not true, not already present).
    vocabulary = ["a", "b", "c", "d", "e"]
    train = [{"a"}, {"a", "b"}, {"a", "c"}]  # a 3, b 1, c 1, d 0, e 0: rarest d, e, b, c, a
    test = [{"a"}, {"b", "c"}]

    def scored(chosen: list[list[str]]) -> dict:
        return metrics.top_k_counts(metrics.exact_counts(test, chosen), vocabulary)

    # Image 1 keeps its hit a and replaces b; image 2 has no hit: both of its slots are refilled.
    predicted = [["b", "a"], ["a", "d"]]
    oracle = metrics.oracle_analysis(train, test, predicted, 2, vocabulary, seed=1)
    assert oracle["true"] == scored(predicted)
    assert oracle["rare"] == scored([["a", "d"], ["d", "e"]])
    assert oracle["frequent"] == scored([["a", "b"], ["a", "d"]])
    assert oracle["rare"]["r_i"] == oracle["true"]["r_i"] == 0.5  # the oracle adds no hit
    # A method with no hit and a method with every hit it can have get different figures.
    none = metrics.oracle_analysis(train, test, [["b", "c"], ["a", "d"]], 2, vocabulary, seed=1)
    best = metrics.oracle_analysis(train, test, [["a", "b"], ["b", "c"]], 2, vocabulary, seed=1)
    assert none["rare"] == scored([["d", "e"], ["d", "e"]])
    assert best["rare"] == scored([["a", "d"], ["b", "c"]])
    for name in metrics.ORACLE_FILLS:
        assert none[name]["f1_i"] == 0.0 < best[name]["f1_i"]
    # Ground: the truth itself scores 100 %; padded to k, image 1 gets one incorrect label.
    assert oracle["ground"]["true"] == scored([["a"], ["b", "c"]])
    assert oracle["ground"]["true"]["f1_i"] == 1.0
    assert oracle["ground"]["rare"] == scored([["a", "d"], ["b", "c"]])
    assert oracle["ground"]["frequent"] == scored([["a", "b"], ["b", "c"]])
    assert oracle["ground"]["random"]["r_i"] == 1.0 and oracle["ground"]["random"]["p_i"] == 0.75


label_sets = st.lists(st.sets(st.sampled_from("abcdefgh"), min_size=1, max_size=4), min_size=1, max_size=8)


@given(train=label_sets, test=label_sets, k=st.integers(1, 5), seed=st.integers(0, 3), data=st.data())
@settings(max_examples=150, deadline=None)
def test_oracle_keeps_the_hits_and_fills_only_incorrect_labels(train, test, k, seed, data) -> None:
    vocabulary = list("abcdefgh")
    predicted = [data.draw(st.permutations(vocabulary)).copy()[:k] for _ in test]
    oracle = metrics.oracle_analysis(train, test, predicted, k, vocabulary, seed=seed)
    for name in metrics.ORACLE_FILLS:
        # Recall per image and per label is the method's own: only its errors moved.
        assert oracle[name]["r_i"] == pytest.approx(oracle["true"]["r_i"])
        assert oracle[name]["r_l"] == pytest.approx(oracle["true"]["r_l"])
        assert oracle[name]["n_plus"] == oracle["true"]["n_plus"]
        assert oracle[name]["p_i"] == pytest.approx(oracle["true"]["p_i"])
        assert oracle["ground"][name]["r_i"] == 1.0
    assert oracle["ground"]["true"]["p_i"] == oracle["ground"]["true"]["r_i"] == 1.0


def test_train_distances_by_hand() -> None:
    train = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    test = np.array([[0.0, 0.0], [3.0, 0.0]])
    # Test image 1: distances 0, 5, 10; test image 2: 3, 4, sqrt(9 + 64).
    assert metrics.train_distances(train, test, neighbours=2) == pytest.approx([2.5, 3.5])
    assert metrics.train_distances(train, test, neighbours=50) == pytest.approx([5.0, (7 + 73**0.5) / 3])
    # Blocks of test rows give the same answer as one block.
    many = np.random.default_rng(0).normal(size=(301, 2))
    assert metrics.train_distances(train, many, 2) == pytest.approx(
        [np.sort(np.linalg.norm(train - t, axis=1))[:2].mean() for t in many]
    )


def test_overlap_subsets_by_hand() -> None:
    distance = [0.3, 0.1, 0.9, 0.5, 0.1, 0.7, 0.2, 0.8, 0.6, 0.4]
    # 20 % of 10 images: the two smallest distances (ties by position) and the two largest.
    assert metrics.overlap_subsets(distance) == {"most": [1, 4], "least": [2, 7]}
    assert metrics.overlap_subsets([0.5, 0.5, 0.5]) == {"most": [0], "least": [2]}
    assert metrics.overlap_subsets([]) == {"most": [], "least": []}


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda dim: st.tuples(
            st.lists(st.lists(st.floats(-1e3, 1e3), min_size=dim, max_size=dim), min_size=1, max_size=30),
            st.lists(st.lists(st.floats(-1e3, 1e3), min_size=dim, max_size=dim), min_size=0, max_size=30),
        )
    ),
    st.integers(1, 60),
    st.floats(0.05, 0.5),
)
def test_overlap_matches_brute_force(data: tuple[list, list], neighbours: int, share: float) -> None:
    train = np.array(data[0], dtype=float)
    test = np.array(data[1], dtype=float).reshape(len(data[1]), train.shape[1])
    distance = metrics.train_distances(train, test, neighbours)
    n = min(neighbours, len(train))
    expected = [np.sort(np.linalg.norm(train - t, axis=1))[:n].mean() for t in test]
    np.testing.assert_allclose(distance, expected, rtol=1e-12, atol=1e-9)
    parts = metrics.overlap_subsets(distance, share)
    size = max(1, round(share * len(test))) if len(test) else 0
    assert len(parts["most"]) == len(parts["least"]) == size
    # Every most-overlapping image is at least as close as every least-overlapping one.
    if size:
        assert max(distance[parts["most"]]) <= min(distance[parts["least"]])
    if 2 * size <= len(test):
        assert not set(parts["most"]) & set(parts["least"])
