"""``imageclef``: an ImageCLEF run file of confidences and decisions per concept.

An ImageCLEF photo-annotation run file (per line an image id, then ``confidence binary`` per concept
in concept order), scored overall and per concept category.

Predictions: an ImageCLEF run file: per line an image id, then ``confidence binary`` per concept in
concept order.

Measures: MAP and interpolated AP per concept (mnap, miap, geometric means), F1 per photo instance,
the same per concept category.

``io.imageclef.write_run_orders`` (``regionbench export --format imageclef``) writes what a
run file must follow, per subset: its concepts in column order and its test images.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy
from regionbench.release.loader import Release
from regionbench.scoring import results
from regionbench.scoring.measures import label_sets, resampled_ranking
from regionbench.scoring.tasks import _labels as shared
from regionbench.scoring.tasks._base import Run, option


@dataclass(frozen=True)
class Settings(shared.ImageSettings):
    """The ImageCLEF task's settings: the image tasks' (subset, split, annotator, k) and the concept
    categories its per-category results are grouped by."""

    categories: Path | None = option(
        None, "--categories", "lines '<concept> <category>' for per-category results (default: the hierarchy's branches)",
        type=Path, metavar="FILE",
    )  # fmt: skip


scope_of = shared.image_scope_of  # the subset's images on the scored side


def read(predictions: Path, data: Release, settings: Settings) -> tuple[shared.Subset, np.ndarray, np.ndarray]:
    """The subset's truth and the run's confidence and binary arrays (``read_imageclef_run``)."""
    spec = shared.subset_truth(data, settings.subset, settings.annotator, settings.split)
    images = sorted(spec.test)
    return spec, *results.read_imageclef_run(predictions, images, spec.labels, spec.image_scope(), spec.left_out())


def read_categories(path: Path, concepts: list[str]) -> dict[str, list[int]]:
    """Concept categories for per-category ImageCLEF results (as the 2010 task reported them):
    one ``<concept> <category>`` per line, whitespace separated, ``#`` comments. Returns category
    -> concept columns (in concept order), categories sorted; concepts the file does not name go
    to ``uncategorised``. A concept outside the subset, or named twice, is an error with its line."""
    path = Path(path)
    text = results.read_text(path)
    column = {concept: n for n, concept in enumerate(concepts)}
    category_of: dict[str, str] = {}
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            problems.append(f"line {number}: {len(fields)} fields, expected '<concept> <category>'")
        elif fields[0] not in column:
            problems.append(f"line {number}: concept {fields[0]!r} is not a concept of the subset")
        elif fields[0] in category_of:
            problems.append(f"line {number}: concept {fields[0]!r} already has category {category_of[fields[0]]!r}")
        else:
            category_of[fields[0]] = fields[1]
    results.fail(path, problems)
    groups: dict[str, list[int]] = {}
    for concept in concepts:
        groups.setdefault(category_of.get(concept, "uncategorised"), []).append(column[concept])
    return dict(sorted(groups.items()))


def branch_categories(tree: Hierarchy, concepts: list[str]) -> dict[str, list[int]]:
    """The default concept categories of per-category ImageCLEF results: each concept's branch,
    its first-level node in the hierarchy (``Hierarchy.branch``); category -> concept columns (in
    concept order), categories sorted. A concept the hierarchy does not hold is ``uncategorised``."""
    groups: dict[str, list[int]] = {}
    for n, concept in enumerate(concepts):
        groups.setdefault(tree.branch(concept) if concept in tree.nodes else "uncategorised", []).append(n)
    return dict(sorted(groups.items()))


def score(run: Run[Settings]) -> dict[str, Any]:
    """ImageCLEF task: a run file of confidences and decisions, scored overall and per concept
    category (``categories``, else the hierarchy's branches)."""
    spec, confidence, binary = run.given
    images, truth, _, _, report = shared.image_sides(spec, run.settings.k)
    truth_matrix = np.array([[c in t for c in spec.labels] for t in truth], dtype=bool)
    report["measures"] = label_sets.imageclef(truth_matrix, confidence, binary)
    decided = [sorted(c for c, yes in zip(spec.labels, row, strict=True) if yes) for row in binary]
    report |= shared.per_image(images, truth, decided)
    if run.settings.categories is not None:
        groups = read_categories(run.settings.categories, spec.labels)
        report["categories"] = Path(run.settings.categories).name
    else:
        groups = branch_categories(run.tree, spec.labels)
        report["categories"] = "hierarchy branches"
    report["per_category"] = {
        name: label_sets.imageclef(truth_matrix[:, columns], confidence[:, columns], binary[:, columns])
        | {"concepts": len(columns)}
        for name, columns in groups.items()
    }
    if run.settings.resamples:  # the ranking measures, each resample's images ranked again (ties together)
        found = resampled_ranking.resampled(truth_matrix, confidence, run.settings.resamples, run.settings.seed)
        report |= shared.intervals(images, found, run.settings)
    return report
