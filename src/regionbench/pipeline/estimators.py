"""The reference classifiers' per-label binary models, as scikit-learn estimators (the table of
names and their paper parameters is ``regionbench.pipeline.classifiers``'): what
``regionbench.pipeline.onevsall`` fits for all labels at once (the tests compare the two), and
what fits the linear SVM and a forest deeper than stumps, one a label. A module of its own so that
only the jobs that need one import scikit-learn."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import RandomForestClassifier
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from regionbench.core.errors import InputError


class Zarbi(ClassifierMixin, BaseEstimator):
    """Naive linear binary classifier: w = (mean+ - mean-) / pooled variance, bias at the midpoint."""

    def fit(self, x: np.ndarray, y: np.ndarray) -> Zarbi:
        self.classes_ = np.unique(y)
        positive = y == self.classes_[-1]
        mp, mn = x[positive].mean(axis=0), x[~positive].mean(axis=0)
        pooled = (x[positive].var(axis=0) * positive.sum() + x[~positive].var(axis=0) * (~positive).sum()) / len(y)
        self.coef_ = (mp - mn) / np.maximum(pooled, 1e-12)
        self.intercept_ = -self.coef_ @ (mp + mn) / 2
        return self

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        return x @ self.coef_ + self.intercept_

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.classes_[(self.decision_function(x) > 0).astype(int)]


def binary_estimator(name: str, params: dict, seed: int, n_train: int) -> BaseEstimator:
    """The per-label binary model of a classifier, from its config parameters."""
    if name == "zarbi":
        return Zarbi()
    if name == "naive":
        return GaussianNB()
    if name == "klogistic":
        return make_pipeline(
            Nystroem(gamma=params.get("gamma"), n_components=params["n_components"], random_state=seed),
            LogisticRegression(C=params["C"], max_iter=params["max_iter"]),
        )
    if name == "neural":
        return MLPClassifier(
            hidden_layer_sizes=(params["units"],),
            alpha=params["shrinkage"],
            max_iter=params["epochs"],
            random_state=seed,
        )
    if name == "svc":
        return LinearSVC(C=1.0 / (2 * params["shrinkage"] * n_train), random_state=seed)
    if name == "kridge":
        return RidgeClassifier(alpha=params["shrinkage"])
    if name == "rf":
        return RandomForestClassifier(
            n_estimators=params["trees"], max_depth=params.get("max_depth"), random_state=seed, n_jobs=1
        )
    # classifiers.fit checks the name against classifiers.NAMES first: only a caller of this
    # function alone gets here.
    raise InputError(f"{name!r} has no binary model (classifiers.NAMES lists the classifiers)")
