"""What the label tasks (``region``, ``image``, ``imageclef``) share: a subset's truth on the
scored side of its split, its settings, and strict reading of predictions files.

The region task scores the subset's test regions (the region split). Image-level tasks score
the test images of the image split: an image's truth is every label of the subset among its
regions, and no image is on both sides. ``split="all"`` scores both sides; predictions for the
side left out are refused in one line (``scope``). Concepts are the subset's labels in
vocabulary (label id) order. Nothing is scored from an invalid run: every problem is reported
with its line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.core import errors, tables
from regionbench.release.loader import Release
from regionbench.scoring import scope
from regionbench.scoring.measures import bootstrap, label_sets
from regionbench.scoring.tasks._base import Resampled, TaskError, option, positive_int

KEY = tables.REGION_KEY
KEY_IDS = ("image_id", "region_id")


@dataclass(frozen=True)
class LabelSettings(Resampled):
    """The label tasks' settings: which subset, and the bootstrap's resamples."""

    subset: str = option("H", "--subset", "the subset whose split is scored (default H)", choices=list("ABCDEFGH"))


@dataclass(frozen=True)
class ImageSettings(LabelSettings):
    """The image-level tasks' settings: the labels an image (the top k, and the baselines')."""

    k: int = option(5, "--k", "labels per image of the top-k measures and baselines (default 5)", type=positive_int)


@dataclass
class Subset:
    """What a subset of a release asks: its labels and the truth per scored (``test``) and train
    image; with ``split="all"`` the scored images and regions are both sides, ``train`` still
    the train side (its label frequencies drive the trivial baselines)."""

    labels: list[str]  # concepts, in label id order
    test: dict[int, set[str]]
    train: dict[int, set[str]]
    regions: pd.DataFrame  # the subset's scored regions: KEY + label
    vocabulary: frozenset[str]  # every label of the release
    split: str = "test"
    others: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=[*KEY, "label"]))  # left out: KEY
    subset: str = "H"
    subset_regions: int = 0
    own_test: str | None = None  # the collection's split that is the test side, where it is the release's

    def _own(self) -> str:
        """`` (the collection's val2017)`` where the test side is the collection's own split."""
        return f" (the collection's {self.own_test})" if self.own_test and self.split == "test" else ""

    def image_scope(self) -> scope.Scope:
        """The scored images of the subset, as every task says it."""
        side = "the test side of the image split" if self.split == "test" else "both sides of the image split"
        side += self._own()
        total = len(set(self.test) | set(self.train))
        return scope.Scope(self.split, side, len(self.test), total, f"images of subset {self.subset}")

    def region_scope(self) -> scope.Scope:
        """The scored regions of the subset, as every task says it."""
        side = "the test side of the region split" if self.split == "test" else "both sides of the region split"
        side += self._own()
        return scope.Scope(self.split, side, len(self.regions), self.subset_regions, f"regions of subset {self.subset}")

    def left_out(self) -> set[int]:
        """The subset's images the scored side leaves out."""
        return set(self.train) - set(self.test)


def subset_truth(data: Release, subset: str, annotator: str | None = None, split: str = "test") -> Subset:
    """The subset's labels, the truth of its test and train images, and its test regions.

    Image-level tasks use the image split: the truth of an image is every label of the subset
    among its regions, and an image is on one side only. The region task keeps the region
    split. The truth is the reference annotator's (whose regions the subsets hold);
    ``annotator`` takes another annotator's regions on the same images, each on its image's
    side of the image split. ``split="all"`` scores both sides.
    """
    if split not in scope.SPLITS or split == "source":
        raise TaskError(f"--split {split}: a label task scores the subsets' split; use test or all")
    if data.subsets.empty:
        raise TaskError(
            f"release {data.dataset} v{data.version} has no subsets A-H (a collection whose regions carry one"
            " label or none): the region, image and ImageCLEF tasks score against them"
        )
    members = data.subsets[data.subsets["subset"] == subset]
    if members.empty:
        raise TaskError(f"subset {subset!r} is not in the release; subsets: {sorted(data.subsets['subset'].unique())}")
    if "image_split" not in members.columns:
        raise TaskError(
            f"release {data.dataset} v{data.version} has no image split (subsets.image_split); "
            "score it with a release built by this version of regionbench"
        )
    reference = sorted(members["annotator"].unique())
    if annotator is not None and [annotator] != reference:
        side_of = members.drop_duplicates("image_id").set_index("image_id")["image_split"]
        regions = data.regions[(data.regions["annotator"] == annotator) & data.regions["image_id"].isin(side_of.index)]
        if regions.empty:
            raise TaskError(
                f"annotator {annotator!r} has no region on the subset's images; annotators: {data.annotators()}"
            )
        regions = regions[regions["label"].isin(set(members["label"]))]
        sides = regions["image_id"].map(side_of)
        members = regions.assign(subset=subset, split=sides, image_split=sides)[[*KEY, "label", "split", "image_split"]]
    order = data.vocabulary.set_index("label")["label_id"]
    labels = sorted(members["label"].unique(), key=lambda x: (order.get(x, 1 << 30), x))
    truth: dict[str, dict[int, set[str]]] = {"train": defaultdict(set), "test": defaultdict(set)}
    for side, image_id, label in members[["image_split", "image_id", "label"]].itertuples(index=False):
        truth[side][int(image_id)].add(label)
    scored = members["split"] == "test" if split == "test" else np.ones(len(members), dtype=bool)
    test_regions = members[scored][[*KEY, "label"]].reset_index(drop=True)
    others = members[~scored][[*KEY, "label"]].reset_index(drop=True)
    vocabulary = frozenset(data.vocabulary["label"])
    test = dict(truth["test"])
    if split == "all":
        for image_id, labels_of in truth["train"].items():
            test.setdefault(image_id, set()).update(labels_of)
    return Subset(
        labels,
        test,
        dict(truth["train"]),
        test_regions,
        vocabulary,
        split,
        others,
        subset,
        len(members),
        own_split(data),
    )


def own_split(data: Release) -> str | None:
    """The collection's split that is the release's test side (``source_split`` of the subsets'
    report: COCO's val2017), or None where the split is the build's own stratified one."""
    path = Path(data.folder) / "results" / "subsets.json"
    report = errors.parse_json(path.read_text(encoding="utf-8")) if path.is_file() else {}
    own = report.get("source_split") if isinstance(report, dict) else None
    return str(own["test"]) if isinstance(own, dict) and own.get("test") else None


def image_scope_of(data: Release, settings: LabelSettings) -> scope.Scope:
    """What an image-level task scores: the subset's images on the side of ``settings.split``."""
    return subset_truth(data, settings.subset, settings.annotator, settings.split).image_scope()


def region_scope_of(data: Release, settings: LabelSettings) -> scope.Scope:
    """What the region task scores: the subset's regions on the side of ``settings.split``."""
    return subset_truth(data, settings.subset, settings.annotator, settings.split).region_scope()


def image_sides(spec: Subset, k: int) -> tuple[list[int], list[set[str]], list[set[str]], list[str], dict[str, Any]]:
    """The test images, their truth, the train label sets, the labels scored and the report's
    sizes and diagnostics, shared by the image-level tasks."""
    images = sorted(spec.test)
    truth = [spec.test[i] for i in images]
    train = [spec.train[i] for i in sorted(spec.train)]
    # Label averages run over the labels present in the test images: a label no test image shows
    # has no recall to measure, and counting it as 0 would mark down even a perfect run.
    present = set().union(*truth) if truth else set()
    scored = [label for label in spec.labels if label in present]
    report = {
        "images": len(images),
        "concepts": len(spec.labels),
        "concepts_in_test": len(scored),
        "concepts_without_test_images": [label for label in spec.labels if label not in present],
        "k": k,
    }
    report["diagnostics"] = label_sets.label_set_stats(train, truth) | {
        "baselines": label_sets.trivial_baselines(train, truth, k, scored)
    }
    return images, truth, train, scored, report


def intervals(images: Sequence[int], values: dict[str, np.ndarray], settings: Resampled) -> dict[str, Any]:
    """The report's ``intervals`` and ``resampled`` (``measures.bootstrap.report``) of a label
    task's resampled ``values``, its scored ``images`` resampled in id order, as its predictions
    name them."""
    return bootstrap.report(values, [str(i) for i in images], settings.resamples, settings.seed)


def per_image(images: list[int], truth: list[set[str]], predicted: Sequence[list[str]]) -> dict[str, Any]:
    """Per image, the F1 of the labels the run gave it (best first) against its truth,
    2|T and P| / (|T| + |P|) (1 when both are empty), and those labels."""
    scores = {}
    for image_id, true, given in zip(images, truth, predicted, strict=True):
        mine = set(given)
        scores[int(image_id)] = 2 * len(true & mine) / (len(true) + len(mine)) if true or mine else 1.0
    return {"per_image": scores, "predicted": {int(i): list(p) for i, p in zip(images, predicted, strict=True)}}
