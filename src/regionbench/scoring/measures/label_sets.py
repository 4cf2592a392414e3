"""Evaluation measures for researchers' predictions (docs/measures.md). Undefined ratios count as 0.

Notation: for image i, T_i is its true label set and P_i its predicted set; for label l,
tp_l, fp_l, fn_l count images. Every function takes plain Python iterables (label strings) or
NumPy arrays, so the measures work without a release.

- Region level: ``region_scores`` (e_hard, soft accuracy, mean e_hierarchy, with the
  hierarchy's direction and threshold variants), ``per_label_accuracy``, ``confusion``.
- Example / label based (Kubany et al.): ``example_based``, ``label_based``; the semantic
  variant matches predictions to truths through the hierarchy first (``semantic_counts``).
- Per-label / per-image with a fixed top-k (Dutta et al. 2018): ``top_k_metrics``;
  ``mean_average_precisions``; diagnostics ``trivial_baselines``, ``label_set_stats``,
  ``oracle_analysis`` and the train-overlap subsets (``train_distances``, ``overlap_subsets``).
- ImageCLEF photo annotation (paper 003): ``imageclef`` (MnAP, MiAP, GMnAP, GMiAP and the F1
  family under 003's own names), ``average_precision``, ``interpolated_average_precision``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from regionbench.core.hierarchy import Hierarchy

GMAP_EPSILON = 1e-8


def _ratio(a: float, b: float) -> float:
    return float(a) / float(b) if b else 0.0


def _f1(p: float, r: float) -> float:
    """Harmonic mean 2pr / (p + r); 0 when both are 0."""
    return _ratio(2 * p * r, p + r)


# --- region level ------------------------------------------------------------------------------


def region_scores(
    tree: Hierarchy,
    true: Sequence[str],
    pred: Sequence[str],
    direction: str = "any",
    threshold: float | None = None,
) -> dict[str, float]:
    """e_hard accuracy (share labelled exactly), soft accuracy (share with e_hierarchy < 1) and
    mean e_hierarchy, all in [0, 1]. ``direction`` and ``threshold`` select the e_hierarchy
    variant (see ``Hierarchy.e_hierarchy``)."""
    if len(true) == 0:
        return {"e_hard": 0.0, "soft": 0.0, "mean_e": 0.0}
    e = tree.e_hierarchy(list(true), list(pred), direction, threshold)
    exact = np.asarray(true, dtype=object) == np.asarray(pred, dtype=object)
    return {"e_hard": float(exact.mean()), "soft": float((e < 1).mean()), "mean_e": float(e.mean())}


def per_label_accuracy(true: Sequence[str], pred: Sequence[str]) -> dict[str, float]:
    """Per true label l: regions of l predicted l / regions of l."""
    seen, right = Counter(true), Counter(t for t, p in zip(true, pred, strict=True) if t == p)
    return {label: right[label] / n for label, n in sorted(seen.items())}


def confusion(
    true: Sequence[str], pred: Sequence[str], labels: Sequence[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """Confusion matrix C[i, j] = regions of label i predicted as label j (rows: truth)."""
    names = list(labels) if labels is not None else sorted(set(true) | set(pred))
    index = {label: n for n, label in enumerate(names)}
    matrix = np.zeros((len(names), len(names)), dtype=np.int64)
    for t, p in zip(true, pred, strict=True):
        matrix[index[t], index[p]] += 1
    return names, matrix


# --- per-image counts, plain and semantic --------------------------------------------------------


@dataclass(frozen=True)
class ImageCounts:
    """Matched (true positive) labels, unmatched predictions and unmatched truths of one image."""

    tp: tuple[str, ...]
    fp: tuple[str, ...]
    fn: tuple[str, ...]


def exact_counts(truth: Iterable[Iterable[str]], pred: Iterable[Iterable[str]]) -> list[ImageCounts]:
    """tp = T ∩ P, fp = P - T, fn = T - P per image."""
    out = []
    for t, p in zip(truth, pred, strict=True):
        t, p = set(t), set(p)
        out.append(ImageCounts(tuple(sorted(t & p)), tuple(sorted(p - t)), tuple(sorted(t - p))))
    return out


def semantic_counts(
    truth: Iterable[Iterable[str]],
    ranked: Iterable[Sequence[str]],
    similarity: Callable[[str, str], float],
    threshold: float,
) -> list[ImageCounts]:
    """Semantic matching per image (Kubany et al.): exact matches first; then the remaining
    predictions and truths are matched one to one among the pairs whose similarity exceeds
    ``threshold``: as many pairs as possible, and of those the largest total similarity (Hungarian
    assignment, ``scipy.optimize.linear_sum_assignment``, on weight n + similarity, n being more
    than the number of possible pairs). A matched prediction is a hit on its true label;
    an unmatched one a false positive of its own label. Exact hits are kept and semantic hits only
    added, so every measure is at least its exact value. ``ranked``'s order does not matter."""
    from scipy.optimize import linear_sum_assignment

    out = []
    for t, p in zip(truth, ranked, strict=True):
        true_set, pred_set = set(t), set(p)
        tp = sorted(true_set & pred_set)
        open_truths, open_preds = sorted(true_set - pred_set), sorted(pred_set - true_set)
        fp = []
        if open_truths and open_preds:
            score = np.array([[similarity(x, y) for x in open_truths] for y in open_preds], dtype=float)
            # A pair is worth more than any total of similarities, so the count comes first.
            gain = np.where(score > threshold, min(score.shape) + 1 + score, 0.0)
            rows, cols = linear_sum_assignment(gain, maximize=True)
            pairs = {(r, c) for r, c in zip(rows, cols, strict=True) if gain[r, c] > 0}
            matched_truths = {c for _, c in pairs}
            tp += [open_truths[c] for _, c in pairs]
            matched_preds = {r for r, _ in pairs}
            fp = [y for r, y in enumerate(open_preds) if r not in matched_preds]
            open_truths = [x for c, x in enumerate(open_truths) if c not in matched_truths]
        else:
            fp = open_preds
        out.append(ImageCounts(tuple(sorted(tp)), tuple(sorted(fp)), tuple(open_truths)))
    return out


def hierarchy_similarity(tree: Hierarchy) -> Callable[[str, str], float]:
    """1 - e_hierarchy(t, p): 1 for the same label, 0 across branches."""
    return lambda t, p: 1.0 - float(tree.e_hierarchy(t, p))


# --- example and label based (Kubany et al.) ------------------------------------------------------


def example_based_counts(counts: Sequence[ImageCounts]) -> dict[str, float]:
    """Means over images: accuracy |tp| / |T union P| (Jaccard), precision |tp| / |P|, recall
    |tp| / |T|, f1 = 2|tp| / (|T| + |P|)."""
    if not counts:
        return {"accuracy": 0.0, "precision": 0.0, "recall": 0.0, "f1": 0.0}
    acc, prec, rec, f1 = [], [], [], []
    for c in counts:
        tp, fp, fn = len(c.tp), len(c.fp), len(c.fn)
        acc.append(_ratio(tp, tp + fp + fn))
        prec.append(_ratio(tp, tp + fp))
        rec.append(_ratio(tp, tp + fn))
        f1.append(_ratio(2 * tp, 2 * tp + fp + fn))
    return {
        "accuracy": float(np.mean(acc)),
        "precision": float(np.mean(prec)),
        "recall": float(np.mean(rec)),
        "f1": float(np.mean(f1)),
    }


def example_based(truth: Iterable[Iterable[str]], pred: Iterable[Iterable[str]]) -> dict[str, float]:
    """Example-based accuracy (Jaccard), precision, recall and F1: means of per-image values."""
    return example_based_counts(exact_counts(truth, pred))


def _label_tallies(counts: Sequence[ImageCounts]) -> tuple[Counter, Counter, Counter]:
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for c in counts:
        tp.update(c.tp)
        fp.update(c.fp)
        fn.update(c.fn)
    return tp, fp, fn


def label_based_counts(counts: Sequence[ImageCounts], vocabulary: Iterable[str] | None = None) -> dict[str, float]:
    """Macro P/R/F1: means over labels of tp_l/(tp_l+fp_l), tp_l/(tp_l+fn_l) and per-label F1,
    over ``vocabulary`` (else every label seen); micro P/R/F1 from the counts pooled over every
    label, so a false positive outside ``vocabulary`` still counts."""
    tp, fp, fn = _label_tallies(counts)
    labels = sorted(set(vocabulary) if vocabulary is not None else set(tp) | set(fp) | set(fn))
    if not labels:
        return dict.fromkeys(("macro_p", "macro_r", "macro_f1", "micro_p", "micro_r", "micro_f1"), 0.0)
    p = [_ratio(tp[x], tp[x] + fp[x]) for x in labels]
    r = [_ratio(tp[x], tp[x] + fn[x]) for x in labels]
    f = [_ratio(2 * tp[x], 2 * tp[x] + fp[x] + fn[x]) for x in labels]
    TP, FP, FN = (sum(c.values()) for c in (tp, fp, fn))
    micro_p, micro_r = _ratio(TP, TP + FP), _ratio(TP, TP + FN)
    return {
        "macro_p": float(np.mean(p)),
        "macro_r": float(np.mean(r)),
        "macro_f1": float(np.mean(f)),
        "micro_p": micro_p,
        "micro_r": micro_r,
        "micro_f1": _ratio(2 * TP, 2 * TP + FP + FN),
    }


def label_based(
    truth: Iterable[Iterable[str]], pred: Iterable[Iterable[str]], vocabulary: Iterable[str] | None = None
) -> dict[str, float]:
    """Label-based macro (means of per-label values) and micro (pooled counts) P, R and F1."""
    return label_based_counts(exact_counts(truth, pred), vocabulary)


# --- fixed top-k (Dutta et al. 2018) -------------------------------------------------------------


def top_k(scores: Mapping[str, float], k: int) -> list[str]:
    """The k labels of highest score (ties: first by name), best first."""
    return [label for label, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def top_k_counts(counts: Sequence[ImageCounts], vocabulary: Iterable[str]) -> dict[str, float]:
    labels = sorted(set(vocabulary))
    tp, fp, fn = _label_tallies(counts)
    p_l = [_ratio(tp[x], tp[x] + fp[x]) for x in labels]
    r_l = [_ratio(tp[x], tp[x] + fn[x]) for x in labels]
    P_L, R_L = (float(np.mean(v)) if v else 0.0 for v in (p_l, r_l))
    p_i = [_ratio(len(c.tp), len(c.tp) + len(c.fp)) for c in counts]
    r_i = [_ratio(len(c.tp), len(c.tp) + len(c.fn)) for c in counts]
    P_I, R_I = (float(np.mean(v)) if v else 0.0 for v in (p_i, r_i))
    return {
        "p_l": P_L,
        "r_l": R_L,
        "f1_l": _f1(P_L, R_L),
        "n_plus": int(sum(r > 0 for r in r_l)),
        "p_i": P_I,
        "r_i": R_I,
        "f1_i": _f1(P_I, R_I),
    }


def top_k_metrics(
    truth: Iterable[Iterable[str]], scores: Iterable[Mapping[str, float]], k: int, vocabulary: Iterable[str]
) -> dict[str, float]:
    """Per-label and per-image measures with the k best-scored labels of every image.

    Per label l of the whole ``vocabulary``: P_l = correct / predicted, R_l = correct / relevant
    (undefined = 0); P_L and R_L are their means over the vocabulary, F1_L = 2 P_L R_L /
    (P_L + R_L) (not the mean of per-label F1), N+ = labels with R_l > 0. Per image likewise:
    P_I, R_I the means of per-image precision and recall, F1_I their harmonic mean.
    """
    predicted = [top_k(s, k) for s in scores]
    return top_k_counts(exact_counts(truth, predicted), vocabulary)


def _by_train_frequency(train: Sequence[Iterable[str]], labels: list[str]) -> dict[str, list[str]]:
    """``labels`` from rarest to most frequent in train and the reverse (ties by name)."""
    freq = Counter(x for t in train for x in t)
    return {
        "rare": sorted(labels, key=lambda x: (freq[x], x)),
        "frequent": sorted(labels, key=lambda x: (-freq[x], x)),
    }


def trivial_baselines(
    train: Sequence[Iterable[str]], test: Sequence[Iterable[str]], k: int, vocabulary: Iterable[str], seed: int = 0
) -> dict[str, dict]:
    """``top_k_metrics`` of three trivial annotators (Dutta et al. 2018, section 4): every test
    image gets the k rarest labels of train, or the k most frequent (ties by name), or k labels
    drawn at random afresh for each image ("we pick different randomly chosen labels for each
    image", seeded), which is why the random annotator's N+ exceeds k."""
    labels = sorted(set(vocabulary))
    orders = _by_train_frequency(train, labels)
    rng = np.random.default_rng(seed)
    size = min(k, len(labels))
    fixed = {"rarest": orders["rare"][:k], "most_frequent": orders["frequent"][:k]}
    out: dict[str, dict] = {
        name: top_k_counts(exact_counts(test, [chosen] * len(test)), labels) | {"labels": chosen}
        for name, chosen in fixed.items()
    }
    drawn = [[labels[i] for i in rng.choice(len(labels), size=size, replace=False)] for _ in test]
    out["random"] = top_k_counts(exact_counts(test, drawn), labels) | {"seed": seed}
    return out


ORACLE_FILLS = ("rare", "frequent", "random")


def _oracle_fills(
    kept: Sequence[Sequence[str]],
    test: Sequence[Iterable[str]],
    k: int,
    orders: Mapping[str, list[str]],
    rng: np.random.Generator,
) -> dict[str, list[list[str]]]:
    """Per fill rule, each image's ``kept`` labels followed by as many incorrect labels as bring
    it to k: not a true label of the image and not one already kept, taken rarest first, most
    frequent first, or at random (drawn afresh for each image)."""
    filled: dict[str, list[list[str]]] = {name: [] for name in ORACLE_FILLS}
    for labels, truth in zip(kept, test, strict=True):
        taken = set(truth) | set(labels)
        slots = max(0, k - len(labels))
        for name in ("rare", "frequent"):
            filled[name].append([*labels, *[x for x in orders[name] if x not in taken][:slots]])
        wrong = [x for x in orders["rare"] if x not in taken]
        drawn = rng.permutation(len(wrong))[:slots]
        filled["random"].append([*labels, *[wrong[i] for i in sorted(drawn)]])
    return filled


def oracle_analysis(
    train: Sequence[Iterable[str]],
    test: Sequence[Iterable[str]],
    predicted: Sequence[Sequence[str]],
    k: int,
    vocabulary: Iterable[str],
    seed: int = 0,
) -> dict[str, dict]:
    """Dutta et al. 2018, section 5.2 (Tables 5-6): "replacing incorrect predictions with
    rare/frequent/random incorrect labels". Per image, the method keeps its correct labels among
    its top k and its wrong ones are replaced by incorrect labels (neither a true label of the
    image nor one already predicted): the rarest in train, the most frequent, or random ones
    (seeded, drawn afresh for each image), one variant each. The oracle moves the method's errors
    between labels and never adds a hit, so each method keeps its own hits. ``ground`` scores the
    true labels themselves (``true``, 100 %: the fixed k relaxed) and the truth padded to k by
    the same fills (an image with k or more true labels keeps them all).

    Returns ``top_k_counts`` of the method as given (``true``), of each fill, and ``ground``, a
    dict of the same keys for the truth.
    """
    labels = sorted(set(vocabulary))
    orders = _by_train_frequency(train, labels)
    test = [set(t) for t in test]
    hits = [[x for x in ranked if x in truth] for ranked, truth in zip(predicted, test, strict=True)]
    out: dict[str, dict] = {"true": top_k_counts(exact_counts(test, predicted), labels)}
    method = _oracle_fills(hits, test, k, orders, np.random.default_rng(seed))
    out |= {name: top_k_counts(exact_counts(test, chosen), labels) for name, chosen in method.items()}
    truths = [sorted(t) for t in test]
    ground = _oracle_fills(truths, test, k, orders, np.random.default_rng(seed))
    out["ground"] = {"true": top_k_counts(exact_counts(test, truths), labels)} | {
        name: top_k_counts(exact_counts(test, chosen), labels) for name, chosen in ground.items()
    }
    return out


OVERLAP_NEIGHBOURS = 50
OVERLAP_SHARE = 0.2


def train_distances(train: np.ndarray, test: np.ndarray, neighbours: int = OVERLAP_NEIGHBOURS) -> np.ndarray:
    """Dutta et al. 2018, section 4.2.2: per test image (row of ``test``), the mean Euclidean
    distance to its ``neighbours`` closest training images (rows of ``train``; all of them when
    there are fewer). A larger distance means less visual overlap with the training set.
    Distances are taken from the differences themselves (not |a|^2 + |b|^2 - 2ab), in blocks of
    test rows that keep the difference array near 32 MB."""
    train, test = np.asarray(train, dtype=float), np.asarray(test, dtype=float)
    if len(train) == 0:
        raise ValueError("train_distances needs at least one training image")
    n = min(neighbours, len(train))
    block = max(1, (32 << 20) // (8 * max(1, train.size)))
    out = np.empty(len(test))
    for start in range(0, len(test), block):
        chunk = test[start : start + block]
        d = np.sqrt(((chunk[:, None, :] - train[None, :, :]) ** 2).sum(axis=2))
        out[start : start + block] = np.sort(np.partition(d, n - 1, axis=1)[:, :n], axis=1).mean(axis=1)
    return out


def overlap_subsets(distance: Sequence[float] | np.ndarray, share: float = OVERLAP_SHARE) -> dict[str, list[int]]:
    """Positions of the ``share`` most and least train-overlapping test images (Dutta et al.
    2018, Tables 9-12): the smallest and the largest ``train_distances``, round(share * n) of
    each (at least one), ties by position; each list in ascending position order."""
    values = np.asarray(distance, dtype=float)
    size = max(1, round(share * len(values))) if len(values) else 0
    order = np.lexsort((np.arange(len(values)), values))
    return {"most": sorted(order[:size].tolist()), "least": sorted(order[len(order) - size :].tolist())}


def label_set_stats(train: Sequence[Iterable[str]], test: Sequence[Iterable[str]]) -> dict[str, float]:
    """% of test label sets that are unique within test, % never seen in train, labels per image."""
    train_sets = {frozenset(t) for t in train}
    test_sets = [frozenset(t) for t in test]
    seen = Counter(test_sets)
    n = len(test_sets)
    return {
        "unique_test_sets_pct": 100 * _ratio(sum(1 for s in test_sets if seen[s] == 1), n),
        "unseen_in_train_pct": 100 * _ratio(sum(1 for s in test_sets if s not in train_sets), n),
        "labels_per_image_test": _ratio(sum(len(s) for s in test_sets), n),
        "labels_per_image_train": _ratio(sum(len(set(t)) for t in train), len(train)),
    }


# --- ImageCLEF photo annotation (paper 003) ------------------------------------------------------


def _tie_points(relevant: np.ndarray, confidence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall after each group of equal confidence (ties scored together)."""
    order = np.argsort(-confidence, kind="stable")
    rel, conf = relevant[order].astype(np.int64), confidence[order]
    hits = np.cumsum(rel)
    ends = np.r_[np.nonzero(np.diff(conf))[0], len(conf) - 1]  # last index of each tie group
    total = rel.sum()
    return hits[ends] / (ends + 1), hits[ends] / total


def average_precision(relevant: np.ndarray, confidence: np.ndarray) -> float:
    """Non-interpolated AP: sum over tie groups of (recall gained) x (precision after the group).
    0 for a concept without relevant images."""
    relevant, confidence = np.asarray(relevant, bool), np.asarray(confidence, float)
    if not relevant.any():
        return 0.0
    precision, recall = _tie_points(relevant, confidence)
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def mean_average_precisions(
    truth: Sequence[Iterable[str]], scores: Sequence[Mapping[str, float]], vocabulary: Sequence[str]
) -> dict[str, float]:
    """Dutta et al. 2018 (section 3): mAP_L, the mean over labels of the AP of ranking the images
    by their score for the label, and mAP_I, the mean over images of the AP of ranking the labels
    by score. AP is non-interpolated with ties scored together (``average_precision``); an
    unscored label counts as score 0. Labels without a relevant image are left out of mAP_L."""
    labels, truth, scores = list(vocabulary), list(truth), list(scores)
    relevant = np.array([[label in set(t) for label in labels] for t in truth], dtype=bool).reshape(
        len(truth), len(labels)
    )
    score = np.array([[s.get(label, 0.0) for label in labels] for s in scores], dtype=float).reshape(
        len(scores), len(labels)
    )
    per_label = [average_precision(relevant[:, j], score[:, j]) for j in range(len(labels)) if relevant[:, j].any()]
    per_image = [average_precision(relevant[i], score[i]) for i in range(len(relevant))]
    return {
        "map_l": float(np.mean(per_label)) if per_label else 0.0,
        "map_i": float(np.mean(per_image)) if per_image else 0.0,
    }


def interpolated_average_precision(relevant: np.ndarray, confidence: np.ndarray) -> float:
    """11-point interpolated AP: at recall levels 0, 0.1, ..., 1 the highest precision measured
    at any recall at or above the level (0 if none), averaged."""
    relevant, confidence = np.asarray(relevant, bool), np.asarray(confidence, float)
    if not relevant.any():
        return 0.0
    precision, recall = _tie_points(relevant, confidence)
    levels = np.linspace(0.0, 1.0, 11)
    return float(np.mean([precision[recall >= r - 1e-12].max(initial=0.0) for r in levels]))


def _geometric_mean(values: np.ndarray, eps: float) -> float:
    """exp(mean(log(v + eps))) - eps: zeros do not send the mean to 0 outright."""
    return float(np.exp(np.mean(np.log(np.asarray(values) + eps))) - eps) if len(values) else 0.0


def _f1_family(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> dict[str, float]:
    """003's F1 family along one axis of per-item counts (photos or concepts):
    instance = mean of per-item F1; "micro" = F1 of the mean per-item precision and recall;
    "macro" = F1 of the pooled counts (003's naming, the reverse of the usual one). Items with
    nothing relevant and nothing predicted have no F1 and are left out of the averages."""
    active = (tp + fp + fn) > 0
    tp, fp, fn = tp[active], fp[active], fn[active]
    p = np.array([_ratio(a, a + b) for a, b in zip(tp, fp, strict=True)])
    r = np.array([_ratio(a, a + b) for a, b in zip(tp, fn, strict=True)])
    f = np.array([_ratio(2 * a, 2 * a + b + c) for a, b, c in zip(tp, fp, fn, strict=True)])
    pooled = _ratio(2 * tp.sum(), 2 * tp.sum() + fp.sum() + fn.sum())
    return {
        "instance": float(f.mean()) if len(f) else 0.0,
        "micro": _f1(float(p.mean()), float(r.mean())) if len(p) else 0.0,
        "macro": pooled,
    }


def imageclef(
    truth: np.ndarray, confidence: np.ndarray, binary: np.ndarray, eps: float = GMAP_EPSILON
) -> dict[str, float]:
    """ImageCLEF photo-annotation measures of a run (paper 003); arrays are image x concept.

    mnap / miap: mean over the concepts with a relevant image of non-interpolated / 11-point interpolated AP (images
    ranked by confidence, ties scored together). gmnap / gmiap: their geometric means with
    ``eps`` added then removed. F1 from the binary decisions: f1_photo_* and f1_concept_*,
    each ``instance``, ``micro`` and ``macro`` in 003's sense (see ``_f1_family``).
    """
    truth, confidence, binary = np.asarray(truth, bool), np.asarray(confidence, float), np.asarray(binary, bool)
    scored = [c for c in range(truth.shape[1]) if truth[:, c].any()]  # AP is undefined without positives
    ap = np.array([average_precision(truth[:, c], confidence[:, c]) for c in scored])
    iap = np.array([interpolated_average_precision(truth[:, c], confidence[:, c]) for c in scored])
    tp, fp, fn = truth & binary, ~truth & binary, truth & ~binary
    out = {
        "mnap": float(ap.mean()) if len(ap) else 0.0,
        "miap": float(iap.mean()) if len(iap) else 0.0,
        "gmnap": _geometric_mean(ap, eps),
        "gmiap": _geometric_mean(iap, eps),
        "concepts_scored": len(scored),
    }
    for axis, name in ((1, "photo"), (0, "concept")):
        family = _f1_family(tp.sum(axis=axis), fp.sum(axis=axis), fn.sum(axis=axis))
        out |= {f"f1_{name}_{kind}": value for kind, value in family.items()}
    return out
