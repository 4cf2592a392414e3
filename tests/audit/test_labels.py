"""The label audit: confident learning as cleanlab applies it, annotators' agreement, and
injected label errors ranked above clean regions on a generated collection."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from cleanlab.filter import find_label_issues
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.audit import labels


@st.composite
def probabilities(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Predicted probabilities of n regions over k labels, and the labels given (some wrong)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, k = draw(st.integers(20, 400)), draw(st.integers(2, 12))
    truth = np.concatenate([np.arange(k), rng.integers(0, k, n - k)]) if n >= k else rng.integers(0, k, n)
    logits = rng.normal(0, 1, (len(truth), k))
    logits[np.arange(len(truth)), truth] += draw(st.floats(0.0, 4.0))
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    given_labels = truth.copy()
    wrong = rng.random(len(truth)) < draw(st.floats(0.0, 0.3))
    given_labels[wrong] = rng.integers(0, k, int(wrong.sum()))
    return p, given_labels


def regions_of(names: list[str]) -> pa.Table:
    """The audited regions' keys: one region an image, all of annotator ``a``, labelled ``names``."""
    n = len(names)
    return pa.table(
        {
            "image_id": np.arange(n, dtype=np.int64),
            "annotator": ["a"] * n,
            "region_id": np.ones(n, dtype=np.int32),
            "label": names,
        }
    )


@settings(max_examples=80, deadline=None)
@given(probabilities())
def test_candidates_are_cleanlab_s_but_where_the_own_label_beats_every_confident_other(case: tuple) -> None:
    p, y = case
    if len(np.unique(y)) < p.shape[1]:  # cleanlab needs every label given once
        return
    candidate, own, suggested, _ = labels.confident_learning(p, y)
    issues = find_label_issues(y, p, filter_by="confident_learning")
    thresholds = np.array([p[y == j, j].mean() for j in range(p.shape[1])])
    near = np.any(np.abs(p - thresholds) < 1e-6, axis=1)  # cleanlab lowers each threshold by 1e-6
    assert not np.any(candidate & ~issues & ~near)  # every candidate of ours is one of cleanlab's
    for n in np.flatnonzero(issues & ~candidate & ~near):
        confident = [j for j in range(p.shape[1]) if j != y[n] and p[n, j] >= thresholds[j]]
        assert all(p[n, j] <= own[n] for j in confident)  # the one case the rules part
    assert np.all(suggested[candidate] != y[candidate]) and np.all(suggested[~candidate] == -1)
    assert np.allclose(own, p[np.arange(len(y)), y])


def test_annotators_agree_by_overlap_and_label() -> None:
    square = np.zeros((20, 20), bool)
    square[2:10, 2:10] = True
    moved = np.roll(square, 6, axis=1)  # IoU 2/14 with the square
    ours = [(1, square, "dog"), (2, ~square, "grass")]
    others = {"b": [(square, "dog"), (~square, "grass")], "c": [(square, "cat")], "d": [(moved, "dog")], "e": []}
    found = list(labels.annotator_agreement(ours, others))
    assert [(f.compared, f.agreeing, f.relabelling, f.suggestion) for f in found] == [(4, 1, 1, "cat"), (4, 1, 0, None)]
    # own IoU: the mean of each other's best overlap; peer IoU: their best regions with each other
    assert abs(found[0].own_iou - (1 + 1 + 2 / 14 + 0) / 4) < 1e-6
    assert found[0].peer_iou is not None and found[0].peer_iou < 1


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 8), st.floats(0.02, 0.1))
def test_injected_label_errors_rank_above_clean_regions(seed: int, k: int, share: float) -> None:
    """Generated regions of k labels (features around each label's centre) with a share of them
    relabelled: the errors fill the first ranks and the suggestions name their true labels."""
    rng = np.random.default_rng(seed)
    per = 120
    centres = rng.normal(0, 3, (k, 27))
    y = np.repeat(np.arange(k), per)
    x = centres[y] + rng.normal(0, 1, (len(y), 27))
    flipped = rng.choice(len(y), max(2, round(share * len(y))), replace=False)
    given_labels = y.copy()
    given_labels[flipped] = (y[flipped] + rng.integers(1, k, len(flipped))) % k
    names = [f"l{j}" for j in range(k)]
    keys = regions_of([names[j] for j in given_labels])
    table = labels.audit(keys, x, {}).table
    errors = set(flipped.tolist())
    top = set(table["image_id"].to_pylist()[: len(flipped)])
    # cleanlab on the same out-of-fold probabilities, its first k: ours finds at least as many
    p = labels.out_of_fold(x, given_labels, k)
    theirs = find_label_issues(
        given_labels, p, filter_by="confident_learning", return_indices_ranked_by="self_confidence"
    )
    # a candidate needs evidence (labels.audit: a margin, a second voice): fewer right labels
    # listed among ours than among cleanlab's first k, and most errors still found
    first = set(theirs[: len(flipped)].tolist())
    assert len(top - errors) <= len(first - errors)
    assert len(top & errors) >= 0.6 * len(flipped)  # by chance: about share x len(flipped)
    suggested = dict(zip(table["image_id"].to_pylist(), table["suggested_label"].to_pylist(), strict=True))
    # each suggestion is confident learning's, restated: the most probable label j above both its
    # threshold t_j (the mean p_j of the regions labelled j) and the given label's probability
    thresholds = np.array([p[given_labels == j, j].mean() for j in range(k)])
    for n in flipped:
        above = [
            j for j in range(k) if j != given_labels[n] and p[n, j] >= thresholds[j] and p[n, j] > p[n, given_labels[n]]
        ]
        # confident learning's choice, where the region has evidence enough to be listed
        assert suggested.get(int(n)) in (names[max(above, key=lambda j: p[n, j])] if above else None, None)
    assert sum(suggested.get(int(n)) == names[y[n]] for n in flipped) >= 0.4 * len(flipped)  # mostly the truth
    assert table["rank"].to_pylist() == list(range(1, table.num_rows + 1))
    assert table["score"].to_pylist() == sorted(table["score"].to_pylist(), reverse=True)
    flagged = table["classifier_candidate"].to_pylist()
    assert flagged == sorted(flagged, reverse=True)  # confident learning's candidates first


def test_other_evidence_ranks_a_shrunken_mask_the_others_agree_on() -> None:
    """A region the two other annotators draw alike while ours covers half of it: kept by the
    annotators' evidence though the classifier sees nothing (all regions alike)."""
    rng = np.random.default_rng(0)
    n = 200
    x = rng.normal(0, 1, (n, 27))
    keys = pa.table(
        {
            "image_id": np.arange(n, dtype=np.int64),
            "annotator": ["a"] * n,
            "region_id": np.ones(n, dtype=np.int32),
            "label": ["sky"] * (n // 2) + ["sea"] * (n // 2),
        }
    )
    agree = labels.Annotators(2, 2, 0, None, 0.9, 0.9)
    said = {(i, 1): agree for i in range(n)}
    said[(17, 1)] = labels.Annotators(2, 0, 0, None, 0.45, 0.92)
    said[(18, 1)] = labels.Annotators(2, 0, 2, "sea", 0.9, 0.9)
    table = labels.audit(keys, x, said).table
    others = table.filter(pa.compute.invert(table["classifier_candidate"]))
    assert {17, 18} <= set(others["image_id"].to_pylist())
    row = others.filter(pa.compute.equal(others["image_id"], 18)).to_pylist()[0]
    assert row["suggested_label"] == "sea" and row["label_vote"] == 1.0 and "2 say sea" in row["evidence"]


def test_trusted_annotators_rank_their_evidence_with_the_classifier_s() -> None:
    """When the other annotators agree with most regions, a region two of them relabel alike
    ranks above the classifier's mildest candidates; when they often disagree, the classifier's
    candidates all come first."""
    rng = np.random.default_rng(1)
    k, per = 4, 150
    y = np.repeat(np.arange(k), per)
    x = rng.normal(0, 1, (k, 27))[y] + rng.normal(0, 4, (len(y), 27))  # a weak classifier
    keys = regions_of([f"l{j}" for j in y])
    relabelled = 7

    def ranks(agreeing: int) -> tuple[int, int]:
        said = {(i, 1): labels.Annotators(2, agreeing, 0, None, 0.95, 0.95) for i in range(len(y))}
        said[(relabelled, 1)] = labels.Annotators(2, 0, 2, "l3", 0.95, 0.95)
        table = labels.audit(keys, x, said).table
        order = table["image_id"].to_pylist()
        candidates = sum(table["classifier_candidate"].to_pylist())
        return order.index(relabelled), candidates

    trusted, candidates = ranks(agreeing=2)
    assert trusted < candidates  # among the candidates, not after them
    doubted, candidates = ranks(agreeing=1)  # the others agree on half the regions
    assert doubted >= candidates


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 9))
def test_blocks_give_what_the_whole_matrix_gives(seed: int, k: int) -> None:
    """The audit reads the out-of-fold probabilities block by block: the same candidates,
    self-confidences and suggestions as from the whole matrix, labels too rare to hold out
    included."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, int(rng.integers(30, 300)))
    y[: min(3, len(y))] = k  # a label of three regions: no fold can hold it out
    x = rng.normal(0, 1, (len(y), 27)) + y[:, None]
    whole = labels.confident_learning(labels.out_of_fold(x, y, k + 1), y)
    blocks = labels.confident_learning(labels.out_of_fold_blocks(x, y, k + 1), y, k + 1)
    for a, b in zip(whole, blocks, strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    assert np.isnan(whole[1][y == k]).all()


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(10, 40), st.floats(0.0, 0.1))
def test_features_that_cannot_tell_the_labels_apart_judge_no_region(seed: int, k: int, signal: float) -> None:
    """Regions whose features barely depend on their labels (as 27 colour and shape features of
    80 COCO categories do), labels all right, one annotator: no region is listed, and the audit
    says why in one line (the classifier's kappa under its floor)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, 1500)
    x = signal * rng.normal(0, 1, (k, 27))[y] + rng.normal(0, 1, (len(y), 27))
    keys = regions_of([f"l{j:02d}" for j in y])
    found = labels.audit(keys, x, {})
    assert found.kappa < labels.SKILL_KAPPA
    assert found.table.num_rows == 0 and found.too_little is not None and "\n" not in found.too_little
    assert f"kappa {found.kappa:.2f}" in found.too_little and labels.summary(found, len(y))["too_little"]


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 8))
def test_clean_labels_a_skilled_classifier_knows_are_rarely_flagged(seed: int, k: int) -> None:
    """Labels all right, features that tell them apart well (kappa high): at most 2 % of the
    regions are listed, each with a margin and enough regions of both labels."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), 150)
    x = rng.normal(0, 1.5, (k, 27))[y] + rng.normal(0, 1, (len(y), 27))
    keys = regions_of([f"l{j}" for j in y])
    found = labels.audit(keys, x, {})
    assert found.kappa >= labels.SKILL_KAPPA and found.too_little is None
    assert found.table.num_rows <= 0.02 * len(y)
