"""The BSDS500 region benchmark: segmentations scored against several humans (docs/scoring.md,
"Segments").

Source: P. Arbeláez, M. Maire, C. Fowlkes, J. Malik, "Contour Detection and Hierarchical Image
Segmentation", IEEE TPAMI 33(5), 2011, and its code (``bench/benchmarks/evaluation_reg_image.m``,
``match_segmentations.m``, ``match_segmentations2.m``, ``collect_eval_reg.m`` of the BIDS/BSDS500
repository), followed to the operation so its published outputs on ``bench/data`` come back:

- for image i with human segmentations G_1..G_m (labels from 1) and a machine segmentation S_t
  per threshold t (its labels name segments: a 0-based map is shifted to start at 1; BSDS's
  own code reads its label 0 as no region for covering, which ``zero_is_unlabelled`` keeps), the overlap of a machine region r and a human region g is
  O(r, g) = |r n g| / |r u g|; cntR_t(i) = Σ_j Σ_{g ∈ G_j} |g| max_r O(r, g) and
  sumR(i) = Σ_j Σ_g |g|; cntP_t, sumP_t the same from the machine regions' side;
- covering ODS = max_t Σ_i cntR_t(i) / Σ_i sumR(i), OIS = Σ_i cntR_{t_i}(i) / Σ_i sumR_{t_i}(i)
  with t_i image i's best threshold (the first on ties), best = Σ_i Σ_g |g| max_t max_r O(r, g)
  / Σ_i sumR(i);
- PRI_t(i) = (1/m) Σ_j RI(S_t, G_j) and VI_t(i) = (1/m) Σ_j VI(S_t, G_j) in bits, over the
  contingency table n of the two label maps (labels shifted to start at 1):
  RI = 1 - (Σ_u n_u²/2 + Σ_v n_v²/2 - Σ n²) / (N(N-1)/2), VI = H(S) + H(G) - 2 I(S; G);
  ODS = the best threshold of the mean over images (the first on ties), OIS = the mean over
  images of each image's best.

A hierarchy given as an ultrametric contour map (``ucm2``, at double size) is cut at
``thresholds(n)``: S_t = the 8-connected components of ``ucm2 <= t`` (MATLAB's ``bwlabel``, as
the benchmark calls it; 4-connected components give the same figures on its data, whose
contours are closed), sampled at the pixel centres ``[1::2, 1::2]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


def thresholds(n: int) -> np.ndarray:
    """The benchmark's ``n`` thresholds of an ultrametric contour map: linspace(1/(n+1), 1 - 1/(n+1), n)."""
    return np.linspace(1 / (n + 1), 1 - 1 / (n + 1), n)


def cut_ucm(ucm2: np.ndarray, threshold: float) -> np.ndarray:
    """The segmentation of a double-size ultrametric contour map at ``threshold``: the
    8-connected components of ``ucm2 <= threshold`` (MATLAB's ``bwlabel``; the measures do not
    depend on the numbering), sampled at ``[1::2, 1::2]``."""
    from scipy import ndimage  # the build extra: scoring a contour map needs it

    labels, _ = ndimage.label(ucm2 <= threshold, structure=np.ones((3, 3), dtype=bool))
    return np.asarray(labels)[1::2, 1::2]


def _table(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The full contingency table of two non-negative label maps: rows a's labels 0..max, columns b's."""
    a, b = a.ravel().astype(np.int64), b.ravel().astype(np.int64)
    columns = int(b.max()) + 1
    counts = np.bincount(a * columns + b, minlength=(int(a.max()) + 1) * columns)
    return counts.reshape(-1, columns).astype(np.float64)


def rand_index_and_vi(segmentation: np.ndarray, human: np.ndarray) -> tuple[float, float]:
    """``compare_segmentations`` of ``match_segmentations2.m``: the Rand index and the variation
    of information (bits) of two label maps, each shifted to start at 1 when it holds less."""
    a, b = (x.astype(np.int64) for x in (segmentation, human))
    a, b = (x - x.min() + 1 if x.min() < 1 else x for x in (a, b))
    n = _table(a, b)[1:, 1:]
    total = n.sum()
    rows, columns = n.sum(axis=1), n.sum(axis=0)
    pairs = total * (total - 1) / 2
    ri = 1 - ((rows * rows).sum() / 2 + (columns * columns).sum() / 2 - (n * n).sum()) / pairs if pairs else 1.0
    joint = n / total
    p1, p2 = joint.sum(axis=1), joint.sum(axis=0)
    h1 = -(p1 * np.log2(p1 + (p1 == 0))).sum()
    h2 = -(p2 * np.log2(p2 + (p2 == 0))).sum()
    outer = np.outer(p1, p2)
    mutual = (joint * np.log2((joint + (joint == 0) * outer + (outer == 0)) / (outer + (outer == 0)))).sum()
    return float(ri), float(h1 + h2 - 2 * mutual)


def overlaps(segmentation: np.ndarray, human: np.ndarray) -> np.ndarray:
    """``match_segmentations.m`` for one human: O(r, g) for every human region g (rows, labels
    1..max) and machine region r (columns, labels 1..max); label 0 of either is no region."""
    n = _table(segmentation, human)  # machine labels x human labels, 0 included
    machine, people = n.sum(axis=1)[1:], n.sum(axis=0)[1:]
    both = n[1:, 1:].T
    union = people[:, None] + machine[None, :] - both
    return np.divide(both, union, out=np.zeros_like(both), where=union > 0)


@dataclass
class ImageScores:
    """One image's figures per threshold (``evaluation_reg_image.m``): cntR, sumR, cntP, sumP,
    the mean RI and VI over the humans, and cntR_best (each human region at its best threshold)."""

    cnt_r: np.ndarray
    sum_r: np.ndarray
    cnt_p: np.ndarray
    sum_p: np.ndarray
    ri: np.ndarray
    vi: np.ndarray
    cnt_r_best: float


def as_segments(segmentation: np.ndarray, zero_is_unlabelled: bool = False) -> np.ndarray:
    """A machine segmentation whose labels name segments: shifted to start at 1 when it holds a
    label below 1, so a 0-based map (scikit-image's, most tools') scores as the same partition
    numbered from 1. ``zero_is_unlabelled`` keeps BSDS's reading instead: label 0 is no region
    for covering (``overlaps``), while the Rand index and VI still count it as a segment."""
    low = int(segmentation.min()) if segmentation.size else 1
    if zero_is_unlabelled or low >= 1:
        return segmentation
    return segmentation.astype(np.int64) - low + 1


def score_image(
    segmentations: Sequence[np.ndarray], humans: Sequence[np.ndarray], zero_is_unlabelled: bool = False
) -> ImageScores:
    """The benchmark's figures of one image: ``segmentations`` one per threshold (scale), read
    by ``as_segments``; ``humans`` the human label maps (labels from 1), all of one shape."""
    if not humans:
        raise ValueError("no human segmentation to score against")
    segmentations = [as_segments(s, zero_is_unlabelled) for s in segmentations]
    areas = [np.bincount(h.ravel().astype(np.int64), minlength=int(h.max()) + 1)[1:].astype(np.float64) for h in humans]
    sum_gt = float(sum(a.sum() for a in areas))
    best = [np.zeros(len(a)) for a in areas]
    k = len(segmentations)
    out = ImageScores(np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k), 0.0)
    for t, segmentation in enumerate(segmentations):
        pairs = [rand_index_and_vi(segmentation, h) for h in humans]
        out.ri[t] = np.mean([p[0] for p in pairs])
        out.vi[t] = np.mean([p[1] for p in pairs])
        machine = np.bincount(segmentation.ravel().astype(np.int64))[1:].astype(np.float64)
        per_machine = np.zeros(len(machine))
        for j, human in enumerate(humans):
            o = overlaps(segmentation, human)
            if o.size:
                matched = o.max(axis=1)
                out.cnt_r[t] += (areas[j] * matched).sum()
                best[j] = np.maximum(best[j], matched)
                per_machine = np.maximum(per_machine, o.max(axis=0))
        out.sum_r[t] = sum_gt
        out.cnt_p[t] = (machine * per_machine).sum()
        out.sum_p[t] = machine.sum()
    out.cnt_r_best = float(sum((a * b).sum() for a, b in zip(areas, best, strict=True)))
    return out


@dataclass
class Benchmark:
    """The collected figures (``collect_eval_reg.m``) and each image's best threshold."""

    thresholds: list[float]
    covering: dict[str, float]
    pri: dict[str, float]
    vi: dict[str, float]
    per_threshold: dict[str, list[float]] = field(default_factory=dict)
    per_image: list[dict[str, float]] = field(default_factory=list)


def printed(values: np.ndarray) -> np.ndarray:
    """``values`` as the benchmark's per-image files hold them: ``%g``, six significant digits."""
    return np.array([float(f"{v:g}") for v in np.ravel(values)]).reshape(np.shape(values))


def collect(levels: Sequence[float], images: Sequence[ImageScores], as_published: bool = True) -> Benchmark:
    """The benchmark over ``images`` (each scored at the thresholds ``levels``): covering ODS
    (and its threshold), OIS and best; PRI and VI ODS (each with its threshold) and OIS.

    The published code writes each image's figures to text (``%g``: six significant digits) and
    collects them from there; ``as_published`` does the same, so the figures are the ones it
    prints (they differ from the exact ones in the sixth digit); False collects exact figures."""
    if as_published:
        images = [
            ImageScores(
                printed(i.cnt_r), printed(i.sum_r), printed(i.cnt_p), printed(i.sum_p), printed(i.ri), printed(i.vi),
                float(printed(np.array(i.cnt_r_best))),
            )
            for i in images
        ]  # fmt: skip
    cnt_r = np.sum([i.cnt_r for i in images], axis=0)
    sum_r = np.sum([i.sum_r for i in images], axis=0)
    recall = cnt_r / (sum_r + (sum_r == 0))
    t = int(np.argmax(recall))
    per_image, oracle, oracle_sum, best_total = [], 0.0, 0.0, 0.0
    for k, image in enumerate(images, start=1):
        r = image.cnt_r / (image.sum_r + (image.sum_r == 0))
        p = image.cnt_p / (image.sum_p + (image.sum_p == 0))
        i = int(np.argmax(r))
        per_image.append({"image": k, "threshold": float(levels[i]), "covering": float(r[i]), "precision": float(p[i])})
        oracle += image.cnt_r[i]
        oracle_sum += image.sum_r[i]
        best_total += image.cnt_r_best
    ri = np.mean([i.ri for i in images], axis=0)
    vi = np.mean([i.vi for i in images], axis=0)
    t_ri, t_vi = int(np.argmax(ri)), int(np.argmin(vi))
    return Benchmark(
        thresholds=[float(x) for x in levels],
        covering={
            "ods_threshold": float(levels[t]),
            "ods": float(recall[t]),
            "ois": float(oracle / oracle_sum) if oracle_sum else 0.0,
            "best": float(best_total / oracle_sum) if oracle_sum else 0.0,
        },
        pri={
            "ods_threshold": float(levels[t_ri]),
            "ods": float(ri[t_ri]),
            "ois": float(np.mean([i.ri.max() for i in images])),
        },
        vi={
            "ods_threshold": float(levels[t_vi]),
            "ods": float(vi[t_vi]),
            "ois": float(np.mean([i.vi.min() for i in images])),
        },
        per_threshold={"covering": recall.tolist(), "pri": ri.tolist(), "vi": vi.tolist()},
        per_image=per_image,
    )
