"""One-versus-all for every label at once: the reference classifiers' per-label models fitted as
one array program instead of one scikit-learn estimator a label.

``OneVsRestClassifier`` clones a binary model per label and fits each on the same features, so
everything that does not depend on the label is done again for every label: the forest's
bootstrap samples and feature draws, the network's initial weights and batch order (each clone has
the same seed), the kernel map. Here that work is done once, and the label-dependent part (class
counts, gradients, solves) is done for all labels as a matrix. Each model reproduces
scikit-learn's algorithm step for step, its random streams included, so the predictions are the
ones ``OneVsRestClassifier`` makes (tests/test_classifiers.py compares them on every model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

# scikit-learn's tree constants (sklearn/tree/_splitter.pyx, _utils.pxd, _tree.pyx).
_FEATURE_THRESHOLD = 1e-7
_RAND_R_MAX = 2147483647
_EPSILON = np.finfo(np.float64).eps


def best_label(scores: np.ndarray) -> np.ndarray:
    """The label of each row: the column of its highest score, the first such column on ties (as
    ``OneVsRestClassifier.predict`` breaks them, like ``numpy.argmax``)."""
    return np.argmax(scores, axis=1)


def _rand_r(state: int) -> tuple[int, int]:
    """scikit-learn's xorshift ``our_rand_r``: (the new state, the value drawn)."""
    if state == 0:
        state = 1
    state ^= (state << 13) & 0xFFFFFFFF
    state ^= state >> 17
    state ^= (state << 5) & 0xFFFFFFFF
    return state, state % (_RAND_R_MAX + 1)


def _root_features(values: np.ndarray, n_features: int, max_features: int, state: int) -> list[int]:
    """The non-constant features a best splitter evaluates at a tree's root, in its order.

    ``values`` are the root's samples (rows) in float32. The Fisher-Yates draw of
    ``node_split_best``: a drawn feature whose values span at most 1e-7 is constant and set
    aside; drawing stops after ``max_features`` draws once one non-constant feature was found.
    """
    features = list(range(n_features))
    f_i, found, visited, evaluated = n_features, 0, 0, []
    while f_i > found and (visited < max_features or visited <= found):
        visited += 1
        state, drawn = _rand_r(state)
        f_j = drawn % (f_i - found) + found
        feature = features[f_j]
        column = values[:, feature]
        if float(column.max()) <= float(column.min()) + _FEATURE_THRESHOLD:
            features[f_j], features[found] = features[found], features[f_j]
            found += 1
            continue
        f_i -= 1
        features[f_i], features[f_j] = features[f_j], features[f_i]
        evaluated.append(feature)
    return evaluated


def fit_stump_forest(
    x: np.ndarray, y: np.ndarray, n_labels: int, trees: int, seed: int
) -> Callable[[np.ndarray], np.ndarray]:
    """``RandomForestClassifier(n_estimators=trees, max_depth=1, random_state=seed)`` fitted on
    each label against the rest; returns the scorer of new rows: (rows x labels) mean over trees
    of the positive class's leaf fraction (the forest's ``predict_proba[:, 1]``).

    Every label's forest draws the same bootstrap samples and the same features at the root (they
    depend on the seed and the rows only), so each tree's candidate splits are sorted once and
    scored for all labels by cumulative class counts: Gini's proxy ``-w_r g_r - w_l g_l`` with
    ``g = 1 - (n_neg^2 + n_pos^2) / w^2``, the first best position of the first best feature kept.
    """
    x32 = np.asarray(x, dtype=np.float32)
    n, n_features = x32.shape
    max_features = max(1, int(np.sqrt(n_features)))
    positive = np.zeros((n, n_labels), dtype=np.float64)
    positive[np.arange(n), y] = 1.0
    order = np.argsort(x32, axis=0, kind="stable")
    draw = np.random.RandomState(seed)
    tree_seeds = [draw.randint(np.iinfo(np.int32).max) for _ in range(trees)]
    stumps = []  # per tree: (feature per label, threshold per label, left value, right value)
    for tree_seed in tree_seeds:
        counts = np.bincount(np.random.RandomState(tree_seed).randint(0, n, n), minlength=n).astype(np.float64)
        state = np.random.RandomState(tree_seed).randint(0, _RAND_R_MAX)
        rows = np.flatnonzero(counts)
        total = counts.sum()
        pos_total = counts @ positive  # per label
        neg_total = total - pos_total
        root = pos_total / total
        impurity = 1.0 - (neg_total * neg_total + pos_total * pos_total) / (total * total)
        feature = np.full(n_labels, -1)
        threshold = np.zeros(n_labels)
        left, right = root.copy(), root.copy()
        splits = impurity > _EPSILON
        if rows.size >= 2 and splits.any():
            best = np.full(n_labels, -np.inf)
            best_pos = np.zeros(n_labels)
            best_w = np.zeros(n_labels)
            for f in _root_features(x32[rows], n_features, max_features, state):
                sorted_rows = order[:, f][counts[order[:, f]] > 0]
                values = x32[sorted_rows, f].astype(np.float64)
                weights = counts[sorted_rows]
                cut = np.flatnonzero(values[1:] > values[:-1] + _FEATURE_THRESHOLD) + 1
                w_left = np.cumsum(weights)[cut - 1]
                pos_left = np.cumsum(weights[:, None] * positive[sorted_rows], axis=0)[cut - 1]
                w_l = w_left[:, None]
                w_r = total - w_l
                neg_left = w_l - pos_left
                pos_right = pos_total - pos_left
                neg_right = w_r - pos_right
                gini_left = 1.0 - (neg_left * neg_left + pos_left * pos_left) / (w_l * w_l)
                gini_right = 1.0 - (neg_right * neg_right + pos_right * pos_right) / (w_r * w_r)
                proxy = -w_r * gini_right - w_l * gini_left
                at = np.argmax(proxy, axis=0)
                value = proxy[at, np.arange(n_labels)]
                better = value > best
                best[better] = value[better]
                feature[better] = f
                threshold[better] = values[cut[at] - 1][better] / 2.0 + values[cut[at]][better] / 2.0
                best_pos[better] = pos_left[at, np.arange(n_labels)][better]
                best_w[better] = w_left[at][better]
            splits &= feature >= 0
            w_r = total - best_w
            improvement = impurity - (
                w_r / total * (1.0 - ((w_r - (pos_total - best_pos)) ** 2 + (pos_total - best_pos) ** 2) / (w_r * w_r))
                + best_w / total * (1.0 - ((best_w - best_pos) ** 2 + best_pos**2) / (best_w * best_w))
            )
            splits &= ~(improvement + _EPSILON < 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                left = np.where(splits, best_pos / best_w, root)
                right = np.where(splits, (pos_total - best_pos) / w_r, root)
        feature[~splits] = 0
        threshold[~splits] = np.inf
        stumps.append((feature, threshold, left, right))

    def score(new: np.ndarray) -> np.ndarray:
        new32 = np.asarray(new, dtype=np.float32).astype(np.float64)
        total = np.zeros((len(new), n_labels))
        for feature, threshold, left, right in stumps:
            goes_left = new32[:, feature] <= threshold
            total += np.where(goes_left, left, right)
        return total / trees

    return score


def fit_network(
    x: np.ndarray, y: np.ndarray, n_labels: int, units: int, alpha: float, epochs: int, seed: int
) -> Callable[[np.ndarray], np.ndarray]:
    """``MLPClassifier(hidden_layer_sizes=(units,), alpha=alpha, max_iter=epochs,
    random_state=seed)`` fitted on each label against the rest; returns the scorer of new rows:
    (rows x labels) positive probabilities.

    scikit-learn's algorithm: Glorot-uniform weights, ReLU units, a logistic output, log loss plus
    ``alpha/2 |W|^2`` per sample, Adam (rate 0.001, betas 0.9 and 0.999) on batches of
    ``min(200, rows)`` shuffled every epoch, a stop once the epoch's loss has not fallen by 1e-4 for
    more than 10 epochs. Every label's network starts from the same weights and sees the same
    batches (one seed), so the labels' networks are one stack (labels first) trained together, a
    label frozen once its own loss stalls. Each label's products and sums are the very ones
    scikit-learn computes (stacked matrix products, sums over contiguous rows): where probabilities
    saturate and labels tie, a rounding apart would send a region to another label.
    """
    from scipy.special import expit

    n, n_features = x.shape
    draw = np.random.RandomState(seed)
    bound_in = np.sqrt(6.0 / (n_features + units))
    bound_out = np.sqrt(6.0 / (units + 1))
    # Stacked per label: w1 labels x features x units, b1 labels x units, w2 labels x units x 1, b2 labels x 1.
    params = [
        np.repeat(part[None], n_labels, axis=0)
        for part in (
            draw.uniform(-bound_in, bound_in, (n_features, units)),
            draw.uniform(-bound_in, bound_in, units),
            draw.uniform(-bound_out, bound_out, (units, 1)),
            draw.uniform(-bound_out, bound_out, 1),
        )
    ]
    w1, b1, w2, b2 = params
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    target = (y[None, :] == np.arange(n_labels)[:, None]).astype(np.float64)  # labels x rows
    batch = min(200, n)
    eps = np.finfo(np.float64).eps
    active = np.ones(n_labels, dtype=bool)
    best_loss = np.full(n_labels, np.inf)
    stalled = np.zeros(n_labels, dtype=np.int64)
    order = np.arange(n)
    step = 0
    for _ in range(epochs):
        shuffled = np.arange(n)
        draw.shuffle(shuffled)
        order = order[shuffled]
        epoch_loss = np.zeros(n_labels)
        for start in range(0, n, batch):
            rows = order[start : start + batch]
            xb, yb, size = x[rows], target[:, rows], len(rows)
            hidden = xb @ w1 + b1[:, None, :]  # labels x batch x units
            np.maximum(hidden, 0, out=hidden)
            prob = expit(hidden @ w2 + b2[:, None, :])[:, :, 0]  # labels x batch
            clipped = np.clip(prob, eps, 1 - eps)
            loss = -np.mean(np.where(yb > 0, np.log(clipped), np.log(1 - clipped)), axis=1)
            values = np.array(
                [np.dot(a.ravel(), a.ravel()) + np.dot(b.ravel(), b.ravel()) for a, b in zip(w1, w2, strict=True)]
            )
            epoch_loss += (loss + (0.5 * alpha) * values / size) * size
            delta_out = (prob - yb)[:, :, None]  # labels x batch x 1
            delta_hidden = delta_out @ w2.transpose(0, 2, 1)
            delta_hidden[hidden == 0] = 0
            grads = (
                (xb.T @ delta_hidden + alpha * w1) / size,
                np.sum(delta_hidden, axis=1) / size,
                (hidden.transpose(0, 2, 1) @ delta_out + alpha * w2) / size,
                np.sum(delta_out, axis=1) / size,
            )
            step += 1
            rate = 0.001 * np.sqrt(1 - 0.999**step) / (1 - 0.9**step)
            for param, grad, m, v in zip(params, grads, moments, squares, strict=True):
                m[active] = 0.9 * m[active] + (1 - 0.9) * grad[active]
                v[active] = 0.999 * v[active] + (1 - 0.999) * grad[active] ** 2
                param[active] += -rate * m[active] / (np.sqrt(v[active]) + 1e-8)
        epoch_loss /= n
        stalled = np.where(active & (epoch_loss > best_loss - 1e-4), stalled + 1, np.where(active, 0, stalled))
        best_loss = np.where(active & (epoch_loss < best_loss), epoch_loss, best_loss)
        active &= stalled <= 10
        if not active.any():
            break

    def score(new: np.ndarray) -> np.ndarray:
        hidden = np.maximum(np.asarray(new, dtype=np.float64) @ w1 + b1[:, None, :], 0)
        return expit(hidden @ w2 + b2[:, None, :])[:, :, 0].T

    return score


def fit_zarbi(x: np.ndarray, y: np.ndarray, n_labels: int) -> Callable[[np.ndarray], np.ndarray]:
    """The paper's simple linear classifier (``estimators.Zarbi``) for each label against the
    rest: ``w = (mean+ - mean-) / pooled variance``, the bias at the midpoint of the two means;
    returns the scorer of new rows, (rows x labels) ``x . w + bias``."""
    coef = np.empty((n_labels, x.shape[1]))
    intercept = np.empty(n_labels)
    for label in range(n_labels):
        positive = y == label
        mp, mn = x[positive].mean(axis=0), x[~positive].mean(axis=0)
        pooled = (x[positive].var(axis=0) * positive.sum() + x[~positive].var(axis=0) * (~positive).sum()) / len(y)
        coef[label] = (mp - mn) / np.maximum(pooled, 1e-12)
        intercept[label] = -coef[label] @ (mp + mn) / 2
    return lambda new: new @ coef.T + intercept


def fit_naive_bayes(x: np.ndarray, y: np.ndarray, n_labels: int) -> Callable[[np.ndarray], np.ndarray]:
    """``GaussianNB()`` for each label against the rest; returns the scorer of new rows: (rows x
    labels) the positive class's posterior. Per class the features' means and variances (plus
    scikit-learn's ``1e-9`` times the largest feature variance), the class's share of the rows as
    its prior; the posterior ``exp(jll - logsumexp(jll))`` from the two classes' Gaussian joint
    log-likelihoods ``log prior + (-sum(log(2 pi var)) / 2 - sum((x - mean)^2 / var) / 2)``.

    Computed in scikit-learn's order of operations: far from the training rows the posteriors
    saturate, labels tie at 1.0, and one rounding apart would send a tie to another label.
    """
    from scipy.special import logsumexp

    smoothing = 1e-9 * np.var(x, axis=0).max()
    stats = []  # per label: (prior, mean, variance) of the negative then the positive class
    for label in range(n_labels):
        positive = y == label
        sides = []
        for side in (~positive, positive):
            mean = np.average(x[side], axis=0)
            sides.append((side.sum() / len(y), mean, np.average((x[side] - mean) ** 2, axis=0) + smoothing))
        stats.append(sides)

    def score(new: np.ndarray) -> np.ndarray:
        out = np.empty((len(new), n_labels))
        for label, sides in enumerate(stats):
            joint = []
            for prior, mean, var in sides:
                n_ij = -0.5 * np.sum(np.log(2.0 * np.pi * var))
                n_ij -= 0.5 * np.sum(((new - mean) ** 2) / var, 1)
                joint.append(np.log(prior) + n_ij)
            jll = np.array(joint).T
            out[:, label] = np.exp(jll - np.atleast_2d(logsumexp(jll, axis=1)).T)[:, 1]
        return out

    return score


def fit_ridge(x: np.ndarray, y: np.ndarray, n_labels: int, alpha: float) -> Callable[[np.ndarray], np.ndarray]:
    """``RidgeClassifier(alpha)`` for each label against the rest, as one multi-output solve:
    targets +1 (the label) and -1 (the rest), rows and targets centred, ``(X'X + alpha I) W = X'Y``,
    the intercepts ``mean(Y) - mean(X) W``; returns the scorer of new rows, ``x W + b``."""
    from scipy.linalg import solve

    target = np.full((len(y), n_labels), -1.0)
    target[np.arange(len(y)), y] = 1.0
    x_mean, y_mean = x.mean(axis=0), target.mean(axis=0)
    centred = x - x_mean
    gram = centred.T @ centred
    gram[np.diag_indices_from(gram)] += alpha
    coef = solve(gram, centred.T @ (target - y_mean), assume_a="pos")
    intercept = y_mean - x_mean @ coef
    return lambda new: new @ coef + intercept


def fit_kernel_logistic(
    x: np.ndarray,
    y: np.ndarray,
    n_labels: int,
    n_components: int,
    gamma: float | None,
    c: float,
    max_iter: int,
    seed: int,
) -> Callable[[np.ndarray], np.ndarray]:
    """``Nystroem(gamma, n_components, random_state=seed)`` then ``LogisticRegression(C=c,
    max_iter=max_iter)`` for each label against the rest; returns the scorer of new rows, the
    logistic models' decision values. Every label's Nystroem map is the same (one seed, the same
    rows), so it is fitted and applied once; the logistic fits stay scikit-learn's, one a label."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import LogisticRegression

    kernel = Nystroem(gamma=gamma, n_components=n_components, random_state=seed).fit(x)
    mapped = kernel.transform(x)
    models = [LogisticRegression(C=c, max_iter=max_iter).fit(mapped, y == label) for label in range(n_labels)]

    def score(new: np.ndarray) -> np.ndarray:
        """Each label's decision values as its model computes them, one product a label (one
        product for all sums in another order: a last-bit difference flips a near tie)."""
        features = kernel.transform(new)
        return np.column_stack([(features @ model.coef_.T + model.intercept_).ravel() for model in models])

    return score


def fit_one_per_label(
    estimator: BaseEstimator, x: np.ndarray, y: np.ndarray, n_labels: int
) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """A scikit-learn binary ``estimator`` cloned and fitted on each label against the rest, as
    ``OneVsRestClassifier`` does; returns the scorer of new rows (rows x labels: the models'
    ``decision_function``, else their positive ``predict_proba``) and the score above which a
    two-label problem takes the second label (0 for decision values, 0.5 for probabilities).
    For the models no batched fit replaces (the linear SVM, a forest deeper than stumps)."""
    import warnings

    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    models = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # fixed iteration budgets, as in the paper
        models = [clone(estimator).fit(x, y == label) for label in range(n_labels)]
    decides = hasattr(models[0], "decision_function")

    def score(new: np.ndarray) -> np.ndarray:
        if decides:
            return np.column_stack([model.decision_function(new) for model in models])
        return np.column_stack([model.predict_proba(new)[:, 1] for model in models])

    return score, 0.0 if decides else 0.5
