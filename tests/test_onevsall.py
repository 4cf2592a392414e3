"""The reference classifiers fitted for all labels at once predict what scikit-learn's
one-versus-all of the same binary models predicts, on generated problems of every shape the
grid meets: two labels (scikit-learn then fits one model), rare labels, constant and tied feature
values (the forest's feature draws and split positions), networks that stop early."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.multiclass import OneVsRestClassifier

from regionbench.pipeline import classifiers, estimators, onevsall

PARAMS = {
    "zarbi": {},
    "naive": {},
    "klogistic": {"n_components": 10, "gamma": None, "C": 1.0, "max_iter": 200},
    "neural": {"units": 4, "shrinkage": 0.1, "epochs": 60},
    "svc": {"shrinkage": 0.001},
    "kridge": {"shrinkage": 0.001},
    "rf": {"trees": 15, "max_depth": 1},
}


@st.composite
def problems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Rows of features with a few constant columns and coarse (tied) values, labels of very
    unequal sizes, each label present, and new rows to predict; with a seed."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n, n_features, n_labels = draw(st.integers(12, 90)), draw(st.integers(2, 9)), draw(st.integers(2, 6))
    y = np.concatenate([np.arange(n_labels), rng.integers(0, n_labels, n - n_labels) ** draw(st.integers(1, 2))])
    y = np.minimum(y, n_labels - 1)
    # Far apart labels saturate posteriors: labels tie at 1.0 or 0.0, and a rounding decides.
    centres = rng.normal(0, draw(st.sampled_from([0.5, 2.0, 40.0])), (n_labels, n_features))
    x = centres[y] + rng.normal(0, 1, (n, n_features))
    x = np.round(x, draw(st.integers(0, 3)))  # ties between rows
    x[:, rng.random(n_features) < 0.2] = 1.5  # constant columns
    labels = np.array([f"label{k}" for k in y], dtype=object)
    return (
        x,
        labels,
        np.round(rng.normal(0, 1.5, (25, n_features)) * draw(st.sampled_from([1.0, 30.0])), 2),
        draw(st.integers(0, 1000)),
    )


def standardised(x: np.ndarray, new: np.ndarray) -> np.ndarray:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    return (new - mean) / scale


def fitted(name: str, x: np.ndarray, labels: np.ndarray, seed: int) -> tuple[np.ndarray, OneVsRestClassifier]:
    """The classes and what the grid was before it was batched: scikit-learn's
    ``OneVsRestClassifier`` of the binary models, fitted."""
    classes, y = np.unique(labels, return_inverse=True)
    model = OneVsRestClassifier(clone(estimators.binary_estimator(name, PARAMS[name], seed, len(x))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(standardised(x, x), y)
    return classes, model


# Kernel ridge solves every label's system at once: its sums run in another order than one solve
# a label, so where two labels' decision values tie to the last bits either may win.
SUMMED_ANOTHER_WAY = {"kridge"}
NEAR_TIE = 1e-9


@settings(max_examples=30, deadline=None)
@given(problems())
def test_every_batched_model_predicts_what_one_model_a_label_predicts(problem: tuple) -> None:
    x, labels, new, seed = problem
    for name in PARAMS:
        ours = classifiers.fit(name, x, labels, PARAMS[name], seed=seed).predict(new)
        classes, model = fitted(name, x, labels, seed)
        theirs = classes[model.predict(standardised(x, new))]
        same = np.asarray(ours) == np.asarray(theirs)
        if name in SUMMED_ANOTHER_WAY and len(classes) > 2:
            decided = np.sort(model.decision_function(standardised(x, new)), axis=1)
            near = decided[:, -1] - decided[:, -2] <= NEAR_TIE * np.maximum(1.0, np.abs(decided[:, -1]))
            same |= near
        assert same.all(), (name, list(ours), list(theirs))


def test_networks_that_stall_stop_as_scikit_learn_stops_them() -> None:
    # Well separated labels and many epochs: the training loss stalls, each label at its own epoch.
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 120)
    x = rng.normal(0, 6, (4, 5))[y] + rng.normal(0, 1, (120, 5))
    score = onevsall.fit_network(x, y, 4, units=5, alpha=0.1, epochs=400, seed=7)
    stopped = []
    for label in range(4):
        single = MLPClassifier(hidden_layer_sizes=(5,), alpha=0.1, max_iter=400, random_state=7).fit(x, y == label)
        stopped.append(single.n_iter_)
        np.testing.assert_allclose(score(x)[:, label], single.predict_proba(x)[:, 1], rtol=0, atol=1e-12)
    assert min(stopped) < 400 and len(set(stopped)) > 1  # labels stop early, each at its own epoch


def test_the_stump_forest_is_scikit_learns_forest_tree_for_tree() -> None:
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(5)
    y = rng.integers(0, 5, 200)
    x = np.round(rng.normal(0, 1, (5, 8))[y] + rng.normal(0, 1, (200, 8)), 1)
    x[:, 3] = 0.0
    score = onevsall.fit_stump_forest(x, y, 5, trees=40, seed=11)
    for label in range(5):
        forest = RandomForestClassifier(n_estimators=40, max_depth=1, random_state=11, n_jobs=1).fit(x, y == label)
        assert np.array_equal(score(x)[:, label], forest.predict_proba(x)[:, 1])


def test_ties_go_to_the_first_label_as_one_versus_all_sends_them() -> None:
    # scikit-learn's own rule on real ties is checked above, where saturated posteriors tie.
    scores = np.array([[0.2, 0.5, 0.5], [0.9, 0.1, 0.9], [0.0, 0.0, 0.0], [0.1, 0.2, 0.6]])
    assert list(onevsall.best_label(scores)) == [1, 0, 0, 2]
