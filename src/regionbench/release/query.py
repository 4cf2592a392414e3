"""Spatial questions over a release's tables: which images have a region of label X in a
relation to one of label Y ("person above horse"), and which regions of X lie within d pixels
of a region of Y. The relations are the release's (docs/relations.md); distances are between
the regions' exact polygons (the union of their pixel squares), so touching regions are 0 apart.
"""

from __future__ import annotations

import pandas as pd
import shapely

from regionbench.core.errors import InputError

# Each relation word and the relations column (group) that holds it.
RELATIONS = {
    "adjacent": "topological",
    "disjoint": "topological",
    "beside": "horizontal",
    "x_aligned": "horizontal",
    "above": "vertical",
    "below": "vertical",
    "y_aligned": "vertical",
}
PAIR = ["image_id", "region_id", "other_region_id"]


class QueryError(InputError):
    """A question the release cannot answer as asked: an unknown label or relation."""


def parse(question: str) -> tuple[str, str, str]:
    """``"X relation Y"`` -> (X, relation, Y); labels as the vocabulary writes them."""
    words = question.split()
    if len(words) != 3 or words[1] not in RELATIONS:
        raise QueryError(f"ask 'LABEL RELATION LABEL' with a relation among {', '.join(RELATIONS)}; got {question!r}")
    return words[0], words[1], words[2]


def _check_labels(regions: pd.DataFrame, *labels: str) -> None:
    known = set(regions["label"])
    for label in labels:
        if label not in known:
            raise QueryError(
                f"no region is labelled {label!r} (labels are written as in the vocabulary, e.g. sky-blue)"
            )


def related(regions: pd.DataFrame, relations: pd.DataFrame, subject: str, relation: str, other: str) -> pd.DataFrame:
    """Ordered pairs of one annotator's regions (``regions`` and ``relations`` already of that
    annotator) where a region labelled ``subject`` is ``relation`` to one labelled ``other``.

    Returns columns image_id, region_id (the subject's), other_region_id, sorted.
    """
    if relation not in RELATIONS:
        raise QueryError(f"unknown relation {relation!r}; relations: {', '.join(RELATIONS)}")
    _check_labels(regions, subject, other)
    if relations.empty and (regions.groupby("image_id").size() >= 2).any():
        # Pairs exist but no relation between them: an empty answer would claim none holds.
        raise QueryError(
            "the release holds no spatial relations between these regions (none were computed for this "
            "annotator when it was built); ask of the reference annotator, or rebuild the release"
        )
    labels = regions[["image_id", "region_id", "label"]]
    hits = relations[relations[RELATIONS[relation]] == relation][PAIR]
    hits = hits.merge(labels[labels["label"] == subject][["image_id", "region_id"]], on=["image_id", "region_id"])
    others = labels[labels["label"] == other].rename(columns={"region_id": "other_region_id"})
    hits = hits.merge(others[["image_id", "other_region_id"]], on=["image_id", "other_region_id"])
    return hits.sort_values(PAIR).reset_index(drop=True)


def within(regions: pd.DataFrame, subject: str, other: str, pixels: float) -> pd.DataFrame:
    """Regions labelled ``subject`` within ``pixels`` of a region labelled ``other`` in the
    same image (one annotator's ``regions``), by ``shapely.dwithin`` on their polygons.

    Returns columns image_id, region_id, other_region_id and distance (pixels), sorted.
    """
    if not pixels >= 0:
        raise QueryError(f"a distance is 0 or more pixels, not {pixels}")
    _check_labels(regions, subject, other)
    a = regions[regions["label"] == subject][["image_id", "region_id", "geometry"]]
    b = regions[regions["label"] == other][["image_id", "region_id", "geometry"]]
    pairs = a.merge(b, on="image_id", suffixes=("", "_other"))
    pairs = pairs[(pairs["region_id"] != pairs["region_id_other"])]
    ga, gb = shapely.from_wkb(pairs["geometry"].to_numpy()), shapely.from_wkb(pairs["geometry_other"].to_numpy())
    near = shapely.dwithin(ga, gb, pixels)
    out = pairs[near].rename(columns={"region_id_other": "other_region_id"})[PAIR].copy()
    out["distance"] = shapely.distance(ga[near], gb[near])
    return out.sort_values(PAIR).reset_index(drop=True)
