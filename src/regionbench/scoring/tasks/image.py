"""``image``: scored labels per scored image of a subset (Parquet or CSV).

Scored labels per scored image of a subset (the image split); the k best are the prediction, scored
per label and per image, ranked, example and label based, with the oracle, trivial baselines,
label-set diagnostics, the train-overlap analysis and, with a threshold, semantic matching.

Predictions: Parquet or CSV: ``image_id, label, score``, a row for every scored image.

Measures: top-k per label and per image (P, R, F1, N+), mAP, example and label based, the oracle,
baselines, train overlap; semantic matching with ``--semantic-threshold``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.core import errors, tables
from regionbench.core.hierarchy import Hierarchy
from regionbench.release.loader import Release
from regionbench.scoring import results
from regionbench.scoring.measures import bootstrap, label_sets, resampled_ranking
from regionbench.scoring.tasks import _labels as shared
from regionbench.scoring.tasks._base import Run, TaskError, option, unit_interval


@dataclass(frozen=True)
class Settings(shared.ImageSettings):
    """The image task's settings."""

    semantic_threshold: float | None = option(
        None, "--semantic-threshold", "also score with semantic matching, pairs of similarity above T in [0, 1]",
        type=unit_interval, metavar="T",
    )  # fmt: skip
    similarity: str = option(
        "hierarchy", "--similarity",
        "label similarity of semantic matching: hierarchy (default) or a hook package.module:factory", metavar="NAME",
    )  # fmt: skip
    image_features: Path | None = option(
        None, "--image-features", "Parquet/CSV of image_id and feature columns for the train-overlap analysis "
        "(default: the regions' features)", type=Path, metavar="FILE",
    )  # fmt: skip


scope_of = shared.image_scope_of  # the subset's images on the scored side


def read(predictions: Path, data: Release, settings: Settings) -> tuple[shared.Subset, list[dict[str, float]]]:
    """The subset's truth and, per scored image (by id), its {label: score} (``read_image_scores``)."""
    spec = shared.subset_truth(data, settings.subset, settings.annotator, settings.split)
    return spec, read_image_scores(predictions, spec)


def read_image_scores(path: Path, task: shared.Subset) -> list[dict[str, float]]:
    """Per test image (sorted by id), its {label: score}. Every test image needs a row, as the
    region and ImageCLEF tasks need every region and image: a run that skips images would be
    scored on the ones it chose (a method that ranks nothing for an image gives it one label
    at score 0)."""
    frame = results.read_table(path, ["image_id", "label", "score"], [], ids=("image_id",), values=("score",))
    problems = [f"row {row + 2}: empty label" for row in np.flatnonzero(frame["label"].isna())[: results.MAX_PROBLEMS]]
    bad = ~frame["score"].between(0, 1)
    for row in np.flatnonzero(bad)[: results.MAX_PROBLEMS]:
        problems.append(f"row {row + 2}: score {frame['score'].iloc[row]!r} is not in [0, 1]")
    for row in np.flatnonzero(frame.duplicated(["image_id", "label"]))[: results.MAX_PROBLEMS]:
        problems.append(
            f"row {row + 2}: label {frame['label'].iloc[row]!r} scored twice for image {frame['image_id'].iloc[row]}"
        )
    outside = ~frame["label"].astype(str).isin(task.vocabulary)
    for row in np.flatnonzero(outside)[: results.MAX_PROBLEMS]:
        problems.append(f"row {row + 2}: label {frame['label'].iloc[row]!r} is not in the release's vocabulary")
    given = set(frame["image_id"].astype(int))
    if left := given & task.left_out():
        rows = int(frame["image_id"].isin(left).sum())
        raise task.image_scope().refuse(path, rows, f"rows on {len(left)} images")
    unknown = sorted(given - set(task.test))
    if unknown:
        problems.append(f"{len(unknown)} images are no images of the subset, e.g. {unknown[0]}")
    if skipped := sorted(set(task.test) - given):
        problems.append(
            f"{len(skipped)} scored images have no row, e.g. {skipped[0]}; score every scored image "
            "(one label at score 0 for an image the method ranks nothing for)"
        )
    results.fail(Path(path), problems)
    scores: dict[int, dict[str, float]] = {i: {} for i in task.test}
    for image_id, label, score in frame[["image_id", "label", "score"]].itertuples(index=False):
        scores[int(image_id)][str(label)] = float(score)
    return [scores[i] for i in sorted(task.test)]


def similarity_function(name: str, tree: Hierarchy) -> Callable[[str, str], float]:
    """The label similarity of semantic matching: ``hierarchy`` (1 - e_hierarchy), or a Python
    hook ``package.module:factory`` whose ``factory(tree)`` returns ``similarity(true, predicted)``
    in [0, 1] (an embedding model, say; the module must be importable)."""
    if name == "hierarchy":
        return label_sets.hierarchy_similarity(tree)
    module_name, sep, attribute = name.partition(":")
    if not sep or not module_name or not attribute:
        raise TaskError(f"similarity {name!r}: use 'hierarchy' or a hook 'package.module:factory'")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise TaskError(f"similarity {name!r}: cannot load the hook ({exc})") from None

    def said(what: str, exc: BaseException) -> TaskError:
        return TaskError(
            f"similarity {name!r}: the hook raised {type(exc).__name__} {what}: {errors.first_line(exc)}; fix the hook"
        )

    try:
        hook = factory(tree)
    except Exception as exc:  # the user's code: any failure is theirs to fix, in one line
        raise said("when made", exc) from None

    def similarity(true: str, predicted: str) -> float:
        try:
            value = float(hook(true, predicted))
        except Exception as exc:  # the user's code, as above
            raise said(f"on ({true!r}, {predicted!r})", exc) from None
        if not 0 <= value <= 1:
            raise TaskError(
                f"similarity {name!r}: the hook gives {value} for ({true!r}, {predicted!r}), not a value in [0, 1]"
            )
        return value

    return similarity


def region_descriptors(data: Release, images: list[int], annotator: str | None = None) -> np.ndarray:
    """One vector per image (rows in ``images`` order): the area-weighted mean of the 27
    ``saiapr27`` features of its regions by ``annotator`` (default: the reference annotator), so
    colour terms describe the labelled part of the image and shape terms its typical region. An
    image without such regions gets the mean over the other images."""
    regions = data.regions_of(annotator)
    names = list(tables.FEATURE_NAMES)
    weight = regions["area_px"].to_numpy(dtype=float)
    sums = pd.DataFrame(regions[names].to_numpy(dtype=float) * weight[:, None], columns=names)
    sums["image_id"], sums["weight"] = regions["image_id"].to_numpy(), weight
    grouped = sums.groupby("image_id").sum()
    means = grouped[names].div(grouped["weight"].where(grouped["weight"] > 0, 1.0), axis=0)
    out = means.reindex(images)
    return out.fillna(out.mean()).fillna(0.0).to_numpy()


def read_image_features(path: Path, images: list[int]) -> np.ndarray:
    """Image descriptors from a Parquet or CSV file (``image_id`` and one numeric column per
    dimension, e.g. a CNN's features as Dutta et al. used), rows in ``images`` order; every
    image needs exactly one row of finite numbers."""
    frame = results.read_table(path, ["image_id"], ["one numeric column per dimension"], ids=("image_id",), values=None)
    columns = [c for c in frame.columns if c != "image_id"]
    problems = []
    if not columns:
        problems.append("no feature column besides image_id")
    numeric = frame[columns].to_numpy(dtype=float)
    for row in np.flatnonzero(frame["image_id"].duplicated())[: results.MAX_PROBLEMS]:
        problems.append(f"row {row + 2}: image {frame['image_id'].iloc[row]} given twice")
    missing = sorted(set(images) - set(frame["image_id"].astype(int)))
    if missing:
        problems.append(f"{len(missing)} train or test images of the subset have no row, e.g. {missing[0]}")
    results.fail(Path(path), problems)
    by_id = dict(zip(frame["image_id"].astype(int), numeric, strict=True))
    return np.array([by_id[i] for i in images])


def overlap_analysis(
    descriptors: np.ndarray,
    n_train: int,
    truth: list[set[str]],
    ranked: list[list[str]],
    labels: list[str],
    neighbours: int = label_sets.OVERLAP_NEIGHBOURS,
    share: float = label_sets.OVERLAP_SHARE,
) -> dict[str, Any]:
    """Dutta et al. 2018 (section 4.2.2, Tables 9-12): the top-k measures over the ``share`` of
    test images most and least overlapping with the training images. ``descriptors`` has the
    ``n_train`` training images first, then the test images (in ``truth`` order); it is
    standardised with the training images' mean and standard deviation so that no dimension
    weighs by its unit. Label averages run over the ``labels`` present in each part."""
    train, test = descriptors[:n_train], descriptors[n_train:]
    centre, scale = train.mean(axis=0), train.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    distance = label_sets.train_distances((train - centre) / scale, (test - centre) / scale, neighbours)
    out: dict[str, Any] = {"neighbours": min(neighbours, n_train), "share": share}
    for name, rows in label_sets.overlap_subsets(distance, share).items():
        part_truth = [truth[r] for r in rows]
        present = set().union(*part_truth) if part_truth else set()
        counts = label_sets.exact_counts(part_truth, [ranked[r] for r in rows])
        out[f"{name}_overlapping"] = {
            "images": len(rows),
            "mean_distance": float(distance[rows].mean()) if rows else 0.0,
            **label_sets.top_k_counts(counts, [x for x in labels if x in present]),
        }
    return out


def intervals(
    labels: list[str],
    images: list[int],
    truth: list[set[str]],
    scores: list[dict[str, float]],
    ranked: list[list[str]],
    settings: Settings,
) -> dict[str, Any]:
    """The bootstrap over images of the top-k F1 over labels and over images, and of the mAP over
    labels, each on the drawn images as the task scores them: over the labels with a relevant
    image among them. The top-k figures are per-label and per-image sums (``bootstrap.additive``);
    the mAP ranks each resample's images again, ties together (``resampled_ranking``)."""
    relevant = np.array([[label in t for label in labels] for t in truth], dtype=bool).reshape(len(truth), len(labels))
    given = np.array([[label in set(r) for label in labels] for r in ranked], dtype=bool).reshape(
        len(truth), len(labels)
    )
    score = np.array([[s.get(label, 0.0) for label in labels] for s in scores], dtype=float).reshape(
        len(scores), len(labels)
    )
    found = np.array([[len(t & set(r)), len(r), len(t)] for t, r in zip(truth, ranked, strict=True)], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):  # each image's precision and recall, over every label given
        p_i, r_i = (np.where(found[:, k] > 0, found[:, 0] / found[:, k], 0.0) for k in (1, 2))
    per_image = np.hstack([relevant & given, given & ~relevant, relevant & ~given, relevant, np.c_[p_i, r_i]])
    width = len(labels)

    def figures(sums: np.ndarray) -> dict[str, np.ndarray]:
        tp, fp, fn, present = (sums[:, k * width : (k + 1) * width] for k in range(4))
        scored = present > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            p_l = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
            r_l = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
            count = np.maximum(scored.sum(axis=1), 1)  # none scored: 0, as the task gives it
            mean_p, mean_r = (np.where(scored, v, 0.0).sum(axis=1) / count for v in (p_l, r_l))
            p, r = sums[:, -2] / len(images), sums[:, -1] / len(images)
            return {
                "top_k.f1_l": np.where(mean_p + mean_r > 0, 2 * mean_p * mean_r / (mean_p + mean_r), 0.0),
                "top_k.f1_i": np.where(p + r > 0, 2 * p * r / (p + r), 0.0),
            }

    values = bootstrap.additive(per_image.astype(float), figures, settings.resamples, settings.seed)
    values["ranking.map_l"] = resampled_ranking.resampled(relevant, score, settings.resamples, settings.seed)["mnap"]
    return shared.intervals(images, values, settings)


def score(run: Run[Settings]) -> dict[str, Any]:
    """Image task: scores per label per test image, ranked to the top k; the oracle, the
    train-overlap analysis and, with a threshold, semantic matching."""
    spec, scores = run.given
    images, truth, train, scored, report = shared.image_sides(spec, run.settings.k)
    settings = run.settings
    ranked = [label_sets.top_k(s, settings.k) for s in scores]
    report |= shared.per_image(images, truth, ranked)
    report["measures"] = {
        "top_k": label_sets.top_k_metrics(truth, scores, settings.k, scored),
        "ranking": label_sets.mean_average_precisions(truth, scores, scored),
        "example_based": label_sets.example_based(truth, ranked),
        "label_based": label_sets.label_based(truth, ranked, scored),
    }
    if settings.resamples:
        report |= intervals(spec.labels, images, truth, scores, ranked, settings)
    # What the run could score if it knew its wrong labels (JSON report only).
    report["oracle"] = label_sets.oracle_analysis(train, truth, ranked, settings.k, scored)
    if spec.train and spec.split == "test":  # with --split all the train images are scored too
        everyone = sorted(spec.train) + images
        if settings.image_features is not None:
            descriptors = read_image_features(settings.image_features, everyone)
        else:
            descriptors = region_descriptors(run.data, everyone, settings.annotator)
        report["overlap"] = {
            "descriptors": Path(settings.image_features).name if settings.image_features else "regions"
        } | (overlap_analysis(descriptors, len(spec.train), truth, ranked, scored))
    if settings.semantic_threshold is not None:
        measure = similarity_function(settings.similarity, run.tree)
        counts = label_sets.semantic_counts(truth, ranked, measure, settings.semantic_threshold)
        report["measures"]["semantic"] = {
            "similarity": settings.similarity,
            "threshold": settings.semantic_threshold,
            "example_based": label_sets.example_based_counts(counts),
            "label_based": label_sets.label_based_counts(counts, scored),
        }
    return report
