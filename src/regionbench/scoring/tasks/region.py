"""``region``: a label per scored region of a subset (Parquet or CSV).

One label per scored region of a subset (the region split), scored with e_hard, soft accuracy and
e_hierarchy in three directions, per-label accuracy and the confusion matrix.

Predictions: Parquet or CSV: ``image_id, region_id[, annotator], label[, score]``, every scored
region once.

Measures: e_hard, soft accuracy and mean e_hierarchy (any, specific, general directions), per-label
accuracy, the confusion matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.release.loader import Release
from regionbench.scoring import results
from regionbench.scoring.measures import bootstrap, label_sets
from regionbench.scoring.tasks import _labels as shared
from regionbench.scoring.tasks._base import Run, TaskError


@dataclass(frozen=True)
class Settings(shared.LabelSettings):
    """The region task's settings: the label tasks' (subset, split, annotator)."""


scope_of = shared.region_scope_of  # the subset's regions on the scored side


def read(predictions: Path, data: Release, settings: Settings) -> pd.DataFrame:
    """The predictions joined to the subset's scored regions (``read_region_predictions``)."""
    return read_region_predictions(
        predictions, shared.subset_truth(data, settings.subset, settings.annotator, settings.split)
    )


def read_region_predictions(path: Path, task: shared.Subset) -> pd.DataFrame:
    """Region predictions joined to the subset's test regions (every one exactly once)."""
    frame = results.read_table(
        path, ["image_id", "region_id", "label"], ["annotator", "score"], ids=shared.KEY_IDS, values=("score",)
    )
    if "annotator" not in frame.columns:
        names = sorted(task.regions["annotator"].unique())
        frame["annotator"] = names[0] if names else ""
    problems = []
    if frame["label"].isna().any():
        problems.append(f"row {int(np.flatnonzero(frame['label'].isna())[0]) + 2}: empty label")
    duplicated = frame.duplicated(shared.KEY, keep="first")
    for row in np.flatnonzero(duplicated)[: results.MAX_PROBLEMS]:
        r = frame.iloc[row]
        problems.append(f"row {row + 2}: region {r['image_id']}/{r['region_id']} ({r['annotator']}) predicted twice")
    joined = task.regions.merge(frame[[*shared.KEY, "label"]].drop_duplicates(shared.KEY), on=shared.KEY, how="outer", indicator=True,
                                suffixes=("", "_pred"))  # fmt: skip
    extra = joined[joined["_merge"] == "right_only"]
    missing = joined[joined["_merge"] == "left_only"]
    outside = extra.merge(task.others[shared.KEY], on=shared.KEY)
    if len(outside):
        raise task.region_scope().refuse(
            path, len(outside), f"predicted regions on {outside['image_id'].nunique()} images"
        )
    if len(extra):
        e = extra.iloc[0]
        problems.append(
            f"{len(extra)} predicted regions are no regions of the subset, e.g. {e['image_id']}/{e['region_id']}"
        )
    if len(missing):
        m = missing.iloc[0]
        problems.append(f"{len(missing)} scored regions have no prediction, e.g. {m['image_id']}/{m['region_id']}")
    results.fail(Path(path), problems)
    return joined[joined["_merge"] == "both"].drop(columns="_merge").sort_values(shared.KEY).reset_index(drop=True)


def score(run: Run[Settings]) -> dict[str, Any]:
    """Region task: a label per test region, scored with e_hard and e_hierarchy both ways."""
    joined = run.given
    true, pred = joined["label"].tolist(), joined["label_pred"].tolist()
    unknown = sorted(set(pred) - set(run.tree.nodes))
    if unknown:
        raise TaskError(f"{run.predictions}: labels {unknown[:5]} are not in the hierarchy")
    names, matrix = label_sets.confusion(true, pred)
    return {
        "regions": len(joined),
        "measures": {direction: label_sets.region_scores(run.tree, true, pred, direction) for direction in DIRECTIONS},
        "per_label_accuracy": label_sets.per_label_accuracy(true, pred),
        "confusion": {"labels": names, "matrix": matrix.tolist()},
        # Per image: the share of its test regions labelled exactly, and what the run said of each.
        **per_region_image(joined),
        **(intervals(run, joined) if run.settings.resamples else {}),
    }


DIRECTIONS = ("any", "specific", "general")


def intervals(run: Run[Settings], joined: pd.DataFrame) -> dict[str, Any]:
    """The bootstrap over images of e_hard, soft accuracy and mean e_hierarchy in each direction:
    each a share of the drawn images' regions, so a resample sums, per image, its regions, those
    labelled exactly and, per direction, those with e_hierarchy < 1 and their e_hierarchy."""
    true, pred = joined["label"].tolist(), joined["label_pred"].tolist()
    images, inverse = np.unique(joined["image_id"].to_numpy(), return_inverse=True)
    terms = [np.ones(len(joined)), (joined["label"] == joined["label_pred"]).to_numpy(dtype=float)]
    for direction in DIRECTIONS:
        distance = np.asarray(run.tree.e_hierarchy(true, pred, direction, None), dtype=float)
        terms += [(distance < 1).astype(float), distance]
    per_image = np.zeros((len(images), len(terms)))
    for column, values in enumerate(terms):
        per_image[:, column] = np.bincount(inverse, weights=values, minlength=len(images))

    def figures(sums: np.ndarray) -> dict[str, np.ndarray]:
        regions = sums[:, 0]
        out = {}
        for k, direction in enumerate(DIRECTIONS):
            out[f"{direction}.e_hard"] = sums[:, 1] / regions
            out[f"{direction}.soft"] = sums[:, 2 + 2 * k] / regions
            out[f"{direction}.mean_e"] = sums[:, 3 + 2 * k] / regions
        return out

    resampled = bootstrap.additive(per_image, figures, run.settings.resamples, run.settings.seed)
    return shared.intervals(images.tolist(), resampled, run.settings)


def per_region_image(joined: pd.DataFrame) -> dict[str, Any]:
    """Per image of the region task: the share of its test regions the run labelled exactly
    (``per_image``), and the label it gave each, by "annotator/region" (``predicted``)."""
    ids = joined["image_id"].to_numpy()
    images, inverse = np.unique(ids, return_inverse=True)
    right = np.bincount(inverse, weights=(joined["label"] == joined["label_pred"]).to_numpy(), minlength=len(images))
    shares = right / np.bincount(inverse, minlength=len(images))
    predicted: dict[int, dict[str, str]] = {}
    for image_id, annotator, region_id, label in zip(
        ids.tolist(),
        joined["annotator"].tolist(),
        joined["region_id"].tolist(),
        joined["label_pred"].tolist(),
        strict=True,
    ):
        predicted.setdefault(int(image_id), {})[f"{annotator}/{region_id}"] = str(label)
    return {
        "per_image": {int(i): float(v) for i, v in zip(images.tolist(), shares.tolist(), strict=True)},
        "predicted": predicted,
    }
