"""Label-error candidates: the regions whose label or mask is likely wrong, ranked from evidence
the build already has.

The evidence:

- **classifier** (confident learning, Northcutt, Jiang and Chuang, JAIR 2021): out-of-fold
  probabilities p̂(label | region) from a logistic regression on the region's 27 features
  (``folds``-fold, stratified, seeded). With per-label thresholds t_j = mean p̂_j over the
  regions labelled j, a region labelled i is a candidate when some j ≠ i has p̂_j ≥ t_j and
  p̂_j > p̂_i; its suggested label is the most probable such j. Its classifier score is
  1 - p̂_i (self-confidence). cleanlab's ``find_label_issues(filter_by="confident_learning")``
  applies nearly the same rule (it also takes a region whose own label is below its threshold
  while another's is above); a test measures how far they agree.
- **annotators** (several annotators): for each other annotator who covered the image, the
  region of theirs that overlaps it most. Label evidence: the share of them whose region
  overlaps it (IoU >= 0.5) under one other label (that label is a suggestion). Mask evidence:
  how much less the others' regions overlap it than they overlap each other,
  max(0, (peer IoU - own IoU) / peer IoU) (with two others or more).
- **features**: how far the region's features lie from its label's (median absolute deviation
  per feature, robust z averaged over the features), as a rank among the label's regions.

Ranking. Each kind's value becomes an empirical tail probability among the audited regions
(the share at least as extreme), and kinds are joined by Fisher's method (-2 sum log p,
chi-squared with 2 degrees of freedom a kind: two kinds of evidence rank above one). How the
classifier's evidence joins depends on how far the other annotators can be trusted, measured
on injected errors (``benchmarks/label_errors.py``):

- when the other annotators agree with the audited regions (IoU >= 0.5, the same label) on
  at least ``TRUSTED_AGREEMENT`` of them on average, their disagreement singles a region out,
  and the four kinds (1 - p̂_i among them) are joined: score 1 - Fisher's p;
- otherwise (one annotator, or annotators who often disagree) confident learning's candidates
  come first, by self-confidence, score 0.5 + 0.5 (1 - p̂_i); the other regions follow by the
  other three kinds joined, score 0.5 (1 - Fisher's p). Mixing them in ranked fewer errors first
  than confident learning alone when the annotators agreed on 61 % of the regions, and more when
  they agreed on 84 %.

A region that is no candidate is listed when the other annotators speak against it (a
relabelling or a mask deficit) and its strongest other kind alone is unlikely (3 x its smallest
tail probability, Bonferroni) or, with the four joined, their Fisher's p is: at most ``P_KEEP``.
The features never list a region alone: some regions are always the farthest from their label's.
The ``rank`` column is the order; ``score`` the evidence's strength.

Evidence enough (``audit``). On photographs whose labels are right (the real COCO 2017 subset,
80 labels), 27 colour and shape features tell the labels apart barely better than chance, and
confident learning then flagged 45 % of the regions on probabilities of 0.00 against 0.01. So
the classifier counts only where it has skill (out-of-fold Cohen's kappa at least
``SKILL_KAPPA``), and a candidate needs a margin (``MARGIN``) and ``MIN_REGIONS`` regions of both
labels and a second voice (its features far from its label's, or the other annotators); without
a skilled classifier or other annotators the audit says it had too little to judge and lists
nothing.

Memory: the regions' features and a few numbers a region; the out-of-fold probabilities are
predicted again block by block where they are needed (``out_of_fold_blocks``), never held as a
regions x labels matrix; the masks one image at a time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

FOLDS = 5
AGREE_IOU = 0.5
OUTLIER_FROM = 0.9  # the evidence line names a feature distance above this rank
TRUSTED_AGREEMENT = 0.75  # the other annotators' evidence joins the classifier's above this agreement
P_KEEP = 0.05  # a region confident learning does not flag is kept when its strongest other evidence is this unlikely
# The evidence a candidate needs (measured on the real COCO subset, benchmarks/label_errors.py):
SKILL_KAPPA = 0.2  # the classifier's out-of-fold agreement with the labels beyond chance (Cohen's kappa)
MARGIN = 0.2  # p̂ of the suggested label above p̂ of the given one
MIN_REGIONS = 20  # regions of each of the two labels a suggestion rests on
_CHUNK = 65_536  # regions per block of the confident-learning rule

AUDIT = pa.schema(
    [
        ("rank", pa.int64()),
        ("image_id", pa.int64()),
        ("annotator", pa.string()),
        ("region_id", pa.int32()),
        ("label", pa.string()),
        ("suggested_label", pa.string()),
        ("score", pa.float64()),
        ("classifier_candidate", pa.bool_()),
        ("self_confidence", pa.float64()),
        ("label_vote", pa.float64()),
        ("mask_deficit", pa.float64()),
        ("feature_rank", pa.float64()),
        ("other_p", pa.float64()),
        ("annotators_compared", pa.int32()),
        ("annotators_agreeing", pa.int32()),
        ("evidence", pa.string()),
    ]
)


Blocks = Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]


def out_of_fold_blocks(
    x: np.ndarray, y: np.ndarray, classes: int, folds: int = FOLDS, seed: int = 0, max_train: int | None = 20_000
) -> Blocks:
    """The out-of-fold probabilities of a standardised multinomial logistic regression, as a
    function that yields them block by block, (rows, probabilities of those rows over
    ``classes``), as often as it is called: the ``folds`` models are fitted once (each on at most
    ``max_train`` rows, a stratified seeded sample) and predict again on each call, so the
    n x classes matrix never exists whole. Rows of a label with fewer than ``folds`` regions are
    in no block (no fold could hold them out)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from regionbench.pipeline.classifiers import training_sample

    usable = np.flatnonzero(np.bincount(y, minlength=classes)[y] >= folds)
    fitted = []
    if len(np.unique(y[usable])) >= 2:
        split = StratifiedKFold(folds, shuffle=True, random_state=seed)
        for train, test in split.split(x[usable], y[usable]):
            fit_rows = usable[train][training_sample(y[usable[train]], max_train, seed)]
            scaler = StandardScaler().fit(x[fit_rows])
            model = LogisticRegression(max_iter=300).fit(scaler.transform(x[fit_rows]), y[fit_rows])
            fitted.append((np.sort(usable[test]), scaler, model))
    step = max(1, _CHUNK // max(classes, 1))

    def blocks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for rows, scaler, model in fitted:
            for first in range(0, len(rows), step):
                part = rows[first : first + step]
                block = np.zeros((len(part), classes))
                block[:, model.classes_] = model.predict_proba(scaler.transform(x[part]))
                yield part, block

    return blocks


def out_of_fold(
    x: np.ndarray, y: np.ndarray, classes: int, folds: int = FOLDS, seed: int = 0, max_train: int | None = 20_000
) -> np.ndarray:
    """The out-of-fold probabilities (``out_of_fold_blocks``) as one n x ``classes`` matrix,
    NaN in the rows no fold holds out (what cleanlab takes; the audit never builds it)."""
    p = np.full((len(y), classes), np.nan)
    for rows, block in out_of_fold_blocks(x, y, classes, folds, seed, max_train)():
        p[rows] = block
    return p


def _matrix_blocks(p: np.ndarray) -> Blocks:
    def blocks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        known = np.flatnonzero(~np.isnan(p[:, 0])) if p.shape[1] else np.zeros(0, np.int64)
        for first in range(0, len(known), _CHUNK):
            rows = known[first : first + _CHUNK]
            yield rows, p[rows]

    return blocks


def confident_learning(
    p: np.ndarray | Blocks, y: np.ndarray, classes: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(candidate, self-confidence p̂_i, suggested label index or -1, its probability) per
    region (module docstring), from the probabilities ``p``: a matrix (NaN rows: none), or
    blocks of them (``out_of_fold_blocks``; ``classes`` labels), read twice: once for each
    region's own probability, whose means per label are the thresholds, once for the rule.
    Memory: four numbers a region and one block. Regions in no block are no candidates and have
    NaN self-confidence."""
    blocks = p if callable(p) else _matrix_blocks(p)
    k = classes if classes is not None else int(p.shape[1])  # type: ignore[union-attr]
    n = len(y)
    own = np.full(n, np.nan)
    for rows, block in blocks():
        own[rows] = block[np.arange(len(rows)), y[rows]]
    known = ~np.isnan(own)
    # t_j: the mean p̂_j of the regions labelled j, which is their own probability
    totals = np.bincount(y[known], weights=own[known], minlength=k)
    counts = np.bincount(y[known], minlength=k)
    thresholds = np.where(counts > 0, totals / np.maximum(counts, 1), np.inf)
    candidate = np.zeros(n, bool)
    suggested = np.full(n, -1, np.int64)
    suggested_p = np.full(n, np.nan)
    for rows, block in blocks():
        above = (block >= thresholds[None, :]) & (block > own[rows, None])
        above[np.arange(len(rows)), y[rows]] = False
        hit = above.any(axis=1)
        candidate[rows] = hit
        best = np.argmax(np.where(above, block, -1.0), axis=1)
        suggested[rows[hit]] = best[hit]
        suggested_p[rows[hit]] = block[np.flatnonzero(hit), best[hit]]
    return candidate, own, suggested, suggested_p


def kappa(p: Blocks, y: np.ndarray, classes: int) -> float:
    """Cohen's kappa of the out-of-fold predictions (each region's most probable label) against
    the given labels: (p_o - p_e) / (1 - p_e), p_o the share predicted as labelled, p_e the
    share chance would give (sum over labels of predicted share x given share); 0 where no
    region is held out. A classifier near 0 tells the labels apart no better than chance on
    these features: its probabilities say nothing of one region's label."""
    predicted, given = np.zeros(classes), np.zeros(classes)
    hits = total = 0
    for rows, block in p():
        guess = block.argmax(axis=1)
        predicted += np.bincount(guess, minlength=classes)
        given += np.bincount(y[rows], minlength=classes)
        hits += int((guess == y[rows]).sum())
        total += len(rows)
    if not total:
        return 0.0
    expected = float((predicted / total) @ (given / total))
    return (hits / total - expected) / (1.0 - expected) if expected < 1.0 else 0.0


def feature_outliers(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each region's rank (0-1) among its label's regions by robust distance from their median:
    per feature |x - median| / (1.4826 MAD), capped at 10, averaged over the features. Computed
    label by label on the label's rows alone (no standardised copy of every region)."""
    scale = x.std(axis=0) if len(x) else np.ones(x.shape[1])
    floor = 1e-6 * np.where(scale > 0, scale, 1.0)
    rank = np.zeros(len(y))
    order = np.argsort(y, kind="stable")
    for rows in np.split(order, np.flatnonzero(np.diff(y[order])) + 1):
        if len(rows) < 3:
            continue
        part = x[rows]
        centre = np.median(part, axis=0)
        spread = np.maximum(1.4826 * np.median(np.abs(part - centre), axis=0), floor)
        distance = np.minimum(np.abs(part - centre) / spread, 10.0).mean(axis=1)
        rank[rows] = np.argsort(np.argsort(distance, kind="stable"), kind="stable") / (len(rows) - 1)
    return rank


@dataclass(frozen=True)
class Annotators:
    """Per region, what the other annotators say: how many were compared, how many agree (IoU
    at least 0.5 and the same label), how many of them overlap it (IoU at least 0.5) under one
    other label, the most common such (``relabelling``, ``suggestion``), the mean IoU of their best-overlapping regions with it
    (``own_iou``) and with each other (``peer_iou``; None with fewer than two of them)."""

    compared: int
    agreeing: int
    relabelling: int = 0
    suggestion: str | None = None
    own_iou: float = 1.0
    peer_iou: float | None = None


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every row mask of ``a`` with every row mask of ``b`` (flattened, float32)."""
    inter = a @ b.T
    union = a.sum(axis=1)[:, None] + b.sum(axis=1)[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


def annotator_agreement(
    reference: list[tuple[int, np.ndarray, str]], others: dict[str, list[tuple[np.ndarray, str]]]
) -> Iterator[Annotators]:
    """For each region of one image (``reference``: region id, mask, label), what the other
    annotators who covered it say (``others``: annotator -> their regions' masks and labels; an
    annotator who drew nothing there has an empty list)."""
    if not reference:
        return
    flat = np.stack([m.ravel() for _, m, _ in reference]).astype(np.float32)
    # per region and other annotator: (IoU of their best-overlapping region, its label, its mask)
    best: list[list[tuple[float, str | None, np.ndarray | None]]] = [[] for _ in reference]
    for regions in others.values():
        if not regions:
            for entry in best:
                entry.append((0.0, None, None))
            continue
        theirs = np.stack([m.ravel() for m, _ in regions]).astype(np.float32)
        iou = _iou(flat, theirs)
        for n, k in enumerate(iou.argmax(axis=1)):
            best[n].append((float(iou[n, k]), regions[k][1], theirs[k]))
    for (_, _, label), matches in zip(reference, best, strict=True):
        agreeing = sum(1 for iou, other, _ in matches if iou >= AGREE_IOU and other == label)
        named = Counter(other for iou, other, _ in matches if iou >= AGREE_IOU and other not in (None, label))
        masks = [m for _, _, m in matches if m is not None]
        peer = None
        if len(masks) >= 2:
            between = _iou(np.stack(masks), np.stack(masks))
            peer = float(between[np.triu_indices(len(masks), 1)].mean())
        yield Annotators(
            len(matches),
            agreeing,
            named.most_common(1)[0][1] if named else 0,
            named.most_common(1)[0][0] if named else None,
            float(np.mean([iou for iou, _, _ in matches])) if matches else 1.0,
            peer,
        )


def tail_probability(values: np.ndarray) -> np.ndarray:
    """Each value's share of ``values`` at least as large (an empirical p-value; 1 for the least)."""
    ordered = np.sort(values)
    return (len(values) - np.searchsorted(ordered, values, side="left")) / max(len(values), 1)


def scores(
    candidate: np.ndarray, self_confidence: np.ndarray, evidence: list[np.ndarray], together: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, score, p) per region (module docstring): ``order`` sorts the list (largest
    first); ``together`` puts the classifier's self-confidence among the evidence joined by
    Fisher's method instead of first; p, the other ``evidence``'s Bonferroni p (and, joined, the
    smaller of it and Fisher's p) decides whether a region that is no candidate is listed."""
    from scipy.stats import chi2

    classifier = 1.0 - np.nan_to_num(self_confidence, nan=1.0)
    tails = np.array([tail_probability(e) for e in evidence])
    strongest = np.minimum(1.0, len(evidence) * tails.min(axis=0))
    if together:
        joined = np.vstack([tails, tail_probability(classifier)])
        statistic = -2.0 * np.log(joined).sum(axis=0)
        fisher = chi2.sf(statistic, 2 * len(joined))
        return statistic, 1.0 - fisher, np.minimum(strongest, fisher)
    fisher = chi2.sf(-2.0 * np.log(tails).sum(axis=0), 2 * len(evidence))
    score = np.where(candidate, 0.5 + 0.5 * classifier, 0.5 * (1.0 - fisher))
    return score, score, strongest


def evidence_text(
    label: str,
    self_confidence: float,
    classifier_suggestion: str | None,
    suggested_p: float,
    said: Annotators | None,
    outlier: float,
) -> str:
    """One line of what speaks against a region's label or mask."""
    parts = []
    if classifier_suggestion is not None:
        parts.append(f"classifier: p({label}) {self_confidence:.2f} < p({classifier_suggestion}) {suggested_p:.2f}")
    if said is not None and said.compared:
        words = f"annotators: {said.agreeing} of {said.compared} agree"
        if said.relabelling:
            words += f", {said.relabelling} say {said.suggestion}"
        if said.peer_iou is not None:
            words += f", IoU with them {said.own_iou:.2f} (theirs with each other {said.peer_iou:.2f})"
        parts.append(words)
    if outlier > OUTLIER_FROM:
        parts.append(f"features: farther from its label's than {100 * outlier:.0f}% of them")
    return "; ".join(parts)


def annotator_evidence(regions: pa.Table, coverage: pa.Table, reference: str) -> dict[tuple[int, int], Annotators]:
    """(image id, region id) of each ``reference`` region -> what the other annotators say, from
    one shard's ``regions`` (image_id, annotator, region_id, label, mask) and ``coverage``
    (image_id, annotator). The derived consensus is no other annotator."""
    from regionbench.core import geometry, tables

    covered: dict[int, set[str]] = {}
    for image, annotator in zip(coverage["image_id"].to_pylist(), coverage["annotator"].to_pylist(), strict=True):
        covered.setdefault(image, set()).add(annotator)
    by_image: dict[int, list[dict]] = {}
    for row in regions.select(["image_id", "annotator", "region_id", "label", "mask"]).to_pylist():
        if row["mask"] is not None:
            by_image.setdefault(row["image_id"], []).append(row)
    out: dict[tuple[int, int], Annotators] = {}
    for image, rows in sorted(by_image.items()):
        ours = [(r["region_id"], geometry.from_rle(r["mask"]), r["label"]) for r in rows if r["annotator"] == reference]
        names = sorted(covered.get(image, set()) - {reference, tables.CONSENSUS})
        if not ours or not names:
            continue
        others = {
            name: [(geometry.from_rle(r["mask"]), r["label"]) for r in rows if r["annotator"] == name] for name in names
        }
        for (region, _, _), found in zip(ours, annotator_agreement(ours, others), strict=True):
            out[(image, region)] = found
    return out


@dataclass(frozen=True)
class Audit:
    """The audit's outcome: the ``AUDIT`` table of candidates, the classifier's ``kappa`` (its
    skill on these features), and ``too_little``: why the audit judged no region (the table is
    then empty), or None."""

    table: pa.Table
    kappa: float
    too_little: str | None = None


def audit(
    keys: pa.Table,
    x: np.ndarray,
    annotators: dict[tuple[int, int], Annotators],
    folds: int = FOLDS,
    seed: int = 0,
    max_train: int | None = 20_000,
) -> Audit:
    """The ``AUDIT`` table of the regions ``keys`` (image_id, annotator, region_id, label; their
    features ``x`` row by row), ``annotators`` the evidence of ``annotator_evidence``: the
    candidates, ranked (module docstring; ties by region key). Per region it holds numbers in
    arrays, no Python object, but where another annotator's evidence was given.

    A candidate needs evidence. The classifier's counts only where it tells the labels apart
    (out-of-fold ``kappa`` at least ``SKILL_KAPPA``), and then for a region whose suggested label
    is ``MARGIN`` more probable than its own, both labels having ``MIN_REGIONS`` regions, and a
    second voice (its features farther from its label's than ``OUTLIER_FROM`` of them, or the
    other annotators relabelling it or drawing it otherwise). A
    region no such classifier flags is listed only where the other annotators speak against it
    (a relabelling or a mask deficit), the features adding to their evidence, never alone. With
    neither a skilled classifier nor other annotators, the audit judges nothing: an empty table
    and the reason (``Audit.too_little``)."""
    import pyarrow.compute as pc

    label_column = keys.column("label")
    names = np.array(sorted(pc.unique(label_column).to_pylist()), dtype=object)
    y = np.asarray(pc.index_in(label_column, value_set=pa.array(names.tolist(), pa.string())).to_numpy(), np.int64)
    probabilities = out_of_fold_blocks(x, y, len(names), folds, seed, max_train)
    candidate, own, suggested, suggested_p = confident_learning(probabilities, y, len(names))
    skill = kappa(probabilities, y, len(names))
    counts = np.bincount(y, minlength=len(names))
    supported = (counts[y] >= MIN_REGIONS) & (counts[np.maximum(suggested, 0)] >= MIN_REGIONS)
    candidate &= (skill >= SKILL_KAPPA) & supported & (np.nan_to_num(suggested_p - own) >= MARGIN)
    if skill < SKILL_KAPPA:
        own = np.full(len(y), np.nan)  # no evidence: the ranking leaves the classifier out
        if not any(a.compared for a in annotators.values()):
            return Audit(
                AUDIT.empty_table(),
                skill,
                f"too little to judge: a classifier on the regions' features tells their {len(names)} labels apart "
                f"no better than chance (out-of-fold kappa {skill:.2f}, under {SKILL_KAPPA}), and no other "
                "annotator traced the images",
            )
    outlier = feature_outliers(x, y)
    images = np.asarray(keys.column("image_id").to_numpy(), np.int64)
    regions = np.asarray(keys.column("region_id").to_numpy(), np.int64)
    vote, deficit = np.zeros(len(y)), np.zeros(len(y))
    agreements = []
    if annotators:  # several annotators: each region's row, to place what the others said
        row_of = {(i, r): n for n, (i, r) in enumerate(zip(images.tolist(), regions.tolist(), strict=True))}
        for key, a in annotators.items():
            n = row_of.get(key)
            if n is None or not a.compared:
                continue
            vote[n] = a.relabelling / a.compared
            deficit[n] = max(0.0, (a.peer_iou - a.own_iou) / a.peer_iou) if a.peer_iou else 0.0
            agreements.append(a.agreeing / a.compared)
    agreement = float(np.mean(agreements)) if agreements else 0.0
    # A classifier's candidate needs a second voice: its features far from its label's, or the
    # other annotators relabelling it or drawing it otherwise (a weak classifier's confusions
    # on right labels seldom coincide with either).
    candidate &= (outlier >= OUTLIER_FROM) | (vote > 0) | (deficit > 0)
    together = agreement >= TRUSTED_AGREEMENT and skill >= SKILL_KAPPA
    order, score, other_p = scores(candidate, own, [vote, deficit, outlier], together)
    keep = np.flatnonzero(candidate | ((other_p <= P_KEEP) & ((vote > 0) | (deficit > 0))))
    who = np.asarray(keys.column("annotator").take(pa.array(keep, pa.int64())).to_pylist(), dtype=str)
    by_key = np.lexsort((regions[keep], who, images[keep]))
    keep, who = keep[by_key], who[by_key]
    ranked = np.argsort(-order[keep], kind="stable")
    keep, who = keep[ranked], who[ranked]
    rows = []
    for rank, (n, name) in enumerate(zip(keep.tolist(), who.tolist(), strict=True), start=1):
        from_classifier = str(names[suggested[n]]) if candidate[n] else None
        heard = annotators.get((int(images[n]), int(regions[n])))
        rows.append(
            {
                "rank": rank,
                "image_id": int(images[n]),
                "annotator": name,
                "region_id": int(regions[n]),
                "label": str(names[y[n]]),
                "suggested_label": from_classifier or (heard.suggestion if heard is not None else None),
                "score": round(float(score[n]), 6),
                "classifier_candidate": bool(candidate[n]),
                "self_confidence": None if np.isnan(own[n]) else round(float(own[n]), 6),
                "label_vote": round(float(vote[n]), 6),
                "mask_deficit": round(float(deficit[n]), 6),
                "feature_rank": round(float(outlier[n]), 6),
                "other_p": round(float(other_p[n]), 6),
                "annotators_compared": heard.compared if heard else 0,
                "annotators_agreeing": heard.agreeing if heard else 0,
                "evidence": evidence_text(
                    str(names[y[n]]),
                    float(own[n]),
                    from_classifier,
                    float(suggested_p[n]) if candidate[n] else 0.0,
                    heard,
                    float(outlier[n]),
                ),
            }
        )
    return Audit(pa.Table.from_pylist(rows, schema=AUDIT), skill)


def summary(found: Audit, regions: int) -> dict:
    """Counts for a report and the card: regions audited, candidates, and by which evidence; the
    classifier's kappa; why nothing was judged, where so (``too_little``)."""
    table = found.table
    flagged = np.asarray(table.column("classifier_candidate").to_numpy(zero_copy_only=False), dtype=bool)
    return {
        "regions": regions,
        "kappa": round(found.kappa, 4),
        **({"too_little": found.too_little} if found.too_little else {}),
        "candidates": table.num_rows,
        "by_classifier": int(flagged.sum()),
        "by_other_evidence": int((~flagged).sum()),
        "with_suggestion": int(table.num_rows - table.column("suggested_label").null_count),
    }
