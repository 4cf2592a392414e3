"""What the mask tasks (``instances``, ``segments``, ``semantic``) share: which images and whose
truth, the predictions' files, and the spread and human ceiling of several truths.

- **Which images.** The test side of the image split where the release has subsets A-H
  (``split="test"``), else, or with ``split="all"``, every image; with ``split="source"`` the
  source's own evaluation split (``recorded_split``: its annotated test split, else its
  validation split), which the map tasks (label maps, panoptic maps, segmentations,
  boundaries) score by default where the release has one (``default_split``), as each
  benchmark scores its runs. Predictions for images left out, or named for no image of the
  release, are refused in one line (``scope``).
- **Against whom.** Instances and label maps: the reference annotator (the consensus where
  there are several), or ``annotator``; ``all_annotators`` scores against each annotator and
  gives the mean, spread, min and max. Segments: every human who covered the image, as the BSDS
  benchmark does (``annotator``: that one only; ``exclude``: all but that one).
- **The human ceiling.** Each annotator scored as a prediction against the others the same way,
  beside the run's figures.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from regionbench.core import splits as own_splits
from regionbench.core import tables
from regionbench.release.loader import Release
from regionbench.scoring import scope
from regionbench.scoring.measures import bootstrap
from regionbench.scoring.tasks._base import Resampled, Settings, TaskError, option, positive_int

M = TypeVar("M", bound="MaskSettings")
T = TypeVar("T")


@dataclass(frozen=True)
class MaskSettings(Settings):
    """The mask tasks' settings: against every annotator."""

    all_annotators: bool = option(
        False, "--all-annotators", "score against each annotator: mean, spread, min, max", action="store_true"
    )

    def truths(self, data: Release) -> list[str]:
        """Whom the run is scored against: every human, or the one annotator (``reference``);
        an unknown name is a ``TaskError``."""
        who = humans(data) if self.all_annotators else [self.annotator or reference(data)]
        if any(a not in data.annotators() for a in who):
            raise TaskError(f"no annotator {who[0]!r}; annotators: {', '.join(data.annotators())}")
        return who


class Lazy(Mapping[int, T]):
    """Image id -> a map made when asked for (``make``), not kept: a batch's maps are not held."""

    def __init__(self, ids: list[int], make: Callable[[int], T]) -> None:
        self.ids, self.make = ids, make
        self.known = set(ids)

    def __getitem__(self, image_id: int) -> T:
        if image_id not in self.known:
            raise KeyError(image_id)
        return self.make(image_id)

    def __contains__(self, image_id: object) -> bool:  # without making the map (Mapping's would)
        return image_id in self.known

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class FileSettings(MaskSettings):
    """The settings of the mask tasks whose run is a file per image (label maps, segmentations,
    panoptic PNGs): a scored image without its file is refused unless allowed."""

    allow_missing: bool = option(
        False, "--allow-missing", "score an image without a prediction as an empty one (counted and said); "
        "without it a missing one is refused", action="store_true",
    )  # fmt: skip

    def refuse_missing(self, where: Path, scored: pd.DataFrame, predicted: set[int]) -> None:
        """A ``TaskError`` when images of ``scored`` (rows of the images table) have no prediction
        in ``predicted`` (their ids), unless ``allow_missing``: a run of no file never scores."""
        ids = [int(i) for i in scored["image_id"]]
        missing = [i for i in ids if i not in predicted]
        if not missing or (self.allow_missing and len(missing) < len(ids)):
            return
        path = dict(zip(scored["image_id"].astype(int), scored["path"], strict=True))[missing[0]]
        if len(missing) == len(ids):
            raise TaskError(
                f"{where}: no prediction for any of the {len(ids)} scored images (a file each, named by the image's id "
                f"or its file's stem, e.g. {missing[0]} or {Path(str(path)).stem}); give the run's files"
            )
        raise TaskError(
            f"{where}: {len(missing)} of the {len(ids)} scored images have no prediction, e.g. image {missing[0]} "
            f"({Path(str(path)).stem}); give them, or --allow-missing to score them as empty"
        )


@dataclass(frozen=True)
class BenchmarkSettings(FileSettings):
    """The settings of BSDS's benchmarks (segments, boundaries): the truth is every human but
    ``exclude`` (or ``annotator``); a soft map or ucm2 is cut at ``thresholds`` levels."""

    exclude: str | None = option(None, "--exclude-annotator", "every human but NAME", metavar="NAME")
    thresholds: int | None = option(
        None, "--thresholds", "levels to cut a ucm2 (boundaries: or a probability map; 99 by default) at",
        type=positive_int, metavar="N",
    )  # fmt: skip


def few(items: list[str], most: int = 5) -> str:
    """The first ``most`` of ``items`` joined, and how many more there are: what a note shows."""
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


@dataclass
class AgainstHumans:
    """What a BSDS benchmark's measure (region or boundary) holds: the run, the humans it is
    scored against (``who``) and every human (``people``: the ceiling's), the scored images, who
    covered each image and its size."""

    run: Any
    who: list[str]
    people: list[str]
    images: pd.DataFrame

    def __post_init__(self) -> None:
        self.covered_by, self.shapes = covered(self.run.data), image_sizes(self.images)


def chosen_humans(data: Release, settings: BenchmarkSettings) -> tuple[list[str], list[str]]:
    """The humans of the release, and those a BSDS benchmark scores against: ``annotator``, or
    every human but ``exclude``; a name of no human is a ``TaskError``."""
    people = humans(data)
    who = [settings.annotator] if settings.annotator else [a for a in people if a != settings.exclude]
    if unknown := [a for a in (*who, settings.exclude) if a is not None and a not in people]:
        raise TaskError(f"no annotator {unknown[0]!r}; the humans are {', '.join(people)}")
    return people, who


def source_split_of(images: pd.DataFrame) -> dict[int, str]:
    """Image id -> its source split (``images.split``: COCO's val2017, VOC's val) of rows of the
    images table, for the images that have one: what ``per_source_split`` breaks figures down by."""
    return {int(i): s for i, s in zip(images["image_id"], images["split"], strict=True) if isinstance(s, str)}


def several(groups: dict[str, Any]) -> dict[str, Any]:
    """``groups`` (a breakdown by source split) where there are two or more, else none."""
    return dict(sorted(groups.items())) if len(groups) > 1 else {}


def image_sizes(images: pd.DataFrame) -> dict[int, tuple[int, int]]:
    """Image id -> (height, width) of rows of the release's images table."""
    return {int(i): (int(h), int(w)) for i, h, w in images[["image_id", "height", "width"]].itertuples(index=False)}


def humans(data: Release) -> list[str]:
    """The annotators who drew (the derived consensus aside)."""
    return [a for a in data.annotators() if a != tables.CONSENSUS]


def reference(data: Release) -> str:
    """The reference annotator: the subsets', else the consensus, else the only annotator."""
    if has_subsets(data):
        return str(data.arrow("subsets", ["annotator"])["annotator"][0])
    names = data.annotators()
    return tables.CONSENSUS if tables.CONSENSUS in names else names[0]


def has_subsets(data: Release) -> bool:
    """Whether the release has subsets A-H (and so an image split), read from its manifest."""
    return bool(data.manifest["tables"].get("subsets", {}).get("rows", 0))


def recorded_split(data: Release) -> str | None:
    """The split (``images.split``) the collection's benchmark scores, as the build decided it
    (the manifest's ``evaluation_split``: the config's ``subsets.test_split``, else BSDS500's
    test, VOC's and Cityscapes' val, COCO's val2017, ...); None when the collection has none.
    A release published before the manifest recorded it: the same rule
    (``regionbench.core.splits.evaluation_split``, its layout's declared splits first) over the
    splits of its annotated images."""
    if "evaluation_split" in data.manifest:
        recorded = data.manifest["evaluation_split"]
        return None if recorded is None else str(recorded)
    if "split" not in data.images.columns:
        return None
    annotated = set(data.table("regions", ["image_id"])["image_id"].astype(int))
    images = data.images[data.images["image_id"].astype(int).isin(annotated)]
    from regionbench.io import layouts  # every layout module: only for a release this old

    known = layouts.registry().get(str(data.manifest.get("layout")))
    declared = known.about.evaluation_splits if known is not None else ()
    return own_splits.evaluation_split((str(s) for s in images["split"].dropna()), declared=declared)


def default_split(data: Release) -> str:
    """A map task's default side: the source's evaluation split where there is one, else the
    test side of the image split."""
    return "source" if recorded_split(data) is not None else "test"


def scored_images(data: Release, split: str) -> pd.DataFrame:
    """The images of ``split`` (module docstring), by id."""
    images = data.images.sort_values("image_id")
    if split == "source":
        name = recorded_split(data)
        if name is None:
            raise TaskError(
                "--split source: the collection has no test or validation split of its own; use test or all"
            )
        return images[images["split"] == name]
    if split == "all" or not has_subsets(data):
        return images
    if split != "test":
        raise TaskError(f"--split {split}: use test, source or all")
    test = data.table("regions", ["image_id"], [("image_split", "=", "test")])["image_id"].unique()
    return images[images["image_id"].isin(test)]


def mask_scope(data: Release, split: str, images: pd.DataFrame | None = None) -> scope.Scope:
    """What a mask task scores of ``data`` (``scored_images``, or ``images`` where they are
    known), as every task says it."""
    if split not in scope.SPLITS:
        raise TaskError(f"--split {split}: use test, source or all")
    count = len(scored_images(data, split) if images is None else images)
    has_split = has_subsets(data)
    if split == "source":
        return scope.Scope(split, f"the source's {recorded_split(data)} split", count, len(data.images), "images")
    side = scope.image_side(split, has_split)
    return scope.Scope(split if has_split else "all", side, count, len(data.images), "images")


@dataclass(frozen=True)
class ScoredSide:
    """What a mask task's run is scored on, found once from the release: the images of the side
    (``scored_images``), what is said of them (``mask_scope``), whom the run is scored against
    (``MaskSettings.truths``), and the humans whose ceiling is measured: every human where two of
    them drew a scored image (``paired``), else none."""

    images: pd.DataFrame
    scope: scope.Scope
    truths: list[str]
    ceiling_humans: list[str]

    @classmethod
    def of(cls, data: Release, settings: MaskSettings) -> ScoredSide:
        """``settings``' side of ``data``, its truths and the ceiling's humans."""
        images = scored_images(data, settings.split)
        people = humans(data)
        ceiling = people if len(people) >= 2 and paired(data, images) else []
        return cls(images, mask_scope(data, settings.split, images), settings.truths(data), ceiling)


def scope_of(data: Release, settings: MaskSettings) -> scope.Scope:
    """What a mask task scores: the images of ``settings.split`` (``mask_scope``)."""
    return mask_scope(data, settings.split)


def refuse_files_outside(data: Release, folder: Path, scored: pd.DataFrame, split: str) -> None:
    """Prediction files (``.png``, ``.mat``) of ``folder`` and its scale folders that name no
    image of the release, or images that ``scored`` leaves out: refused in one line (the second
    kind by ``scope.Scope.refuse``), never dropped without a word."""
    if not folder.is_dir():
        return
    keys, chosen = file_keys(data.images), set(scored["image_id"].astype(int))
    files = [p for d in (folder, *(p for p in folder.iterdir() if p.is_dir())) for p in d.iterdir() if p.is_file()]
    files = sorted(p for p in files if p.suffix.lower() in (".png", ".mat"))
    if unknown := [p for p in files if p.stem not in keys]:
        raise TaskError(
            f"{folder}: {len(unknown)} prediction files name no image of the release, e.g. "
            f"{unknown[0].relative_to(folder)}; name each by its image's id, its file's stem or its Cityscapes frame "
            "(an image the build rejected is in the release's rejects table)"
        )
    if outside := [p for p in files if keys[p.stem] not in chosen]:
        images = len({keys[p.stem] for p in outside})
        raise mask_scope(data, split).refuse(folder, len(outside), f"prediction files for {images} images")


def covered(data: Release) -> dict[int, list[str]]:
    """Image id -> the annotators who covered it (``coverage``)."""
    coverage = data.table("coverage")
    out: dict[int, list[str]] = {}
    for image_id, annotator in coverage[["image_id", "annotator"]].itertuples(index=False):
        out.setdefault(int(image_id), []).append(str(annotator))
    return out


def paired(data: Release, images: pd.DataFrame) -> bool:
    """Whether two humans drew any of ``images`` (rows of the images table): a human ceiling
    scores one human against another on the images both drew, and without such a pair it is
    none, not zero."""
    people, looked = set(humans(data)), covered(data)
    return any(len(people.intersection(looked.get(int(i), []))) >= 2 for i in images["image_id"])


def natural_order(name: str) -> list[Any]:
    """A sort key that orders the numbers in ``name`` by value (scale 2 before scale 10)."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


# Cityscapes names a frame city_sequence_frame and its files by it with a suffix of their own
# (aachen_000000_000019_leftImg8bit.png): what cityscapesScripts matches a prediction by.
FRAME = re.compile(r"[A-Za-z][A-Za-z-]*_\d{6}_\d{6}")


class FileKeys(dict[str, int]):
    """Prediction file stem -> image id: the image's id, its file's stem, or the collection's
    own key the stem begins with (a Cityscapes frame, whatever follows it)."""

    def __missing__(self, stem: str) -> int:
        found = FRAME.match(stem)
        if found is None or found.group(0) == stem or found.group(0) not in self:
            raise KeyError(stem)
        return self[found.group(0)]

    def __contains__(self, stem: object) -> bool:
        if super().__contains__(stem):
            return True
        found = FRAME.match(stem) if isinstance(stem, str) else None
        return found is not None and super().__contains__(found.group(0))


def scale_files(folder: Path, keys: Mapping[str, int]) -> tuple[int, dict[int, list[Path]]]:
    """A hierarchy's files in ``folder``: its scale subfolders (sorted naturally; 0 when it has
    none) and each image's PNG in every one, in scale order (``keys``: file stem -> image id);
    an image that lacks one in some scale is one line."""
    scales = sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: natural_order(p.name))
    found: dict[int, list[Path]] = {}
    for scale in scales:
        for path in sorted(scale.glob("*.png")):
            if path.stem in keys:
                found.setdefault(keys[path.stem], []).append(path)
    if short := [i for i, paths in found.items() if len(paths) != len(scales)]:
        raise TaskError(f"{folder}: image {short[0]} lacks a PNG in some of the {len(scales)} scale folders")
    return len(scales), found


def file_keys(images: pd.DataFrame) -> FileKeys:
    """Prediction file stem -> image id (``FileKeys``): the id itself, the stem of the image's
    file, or the collection's key of it (a Cityscapes frame)."""
    out = FileKeys()
    for image_id, path in images[["image_id", "path"]].itertuples(index=False):
        out[str(int(image_id))] = int(image_id)
        stem = Path(str(path)).stem
        out.setdefault(stem, int(image_id))
        if frame := FRAME.match(stem):
            out.setdefault(frame.group(0), int(image_id))
    return out


def resampled(
    images: pd.DataFrame,
    per_image: Mapping[int, np.ndarray] | Sequence[Mapping[int, np.ndarray]],
    figures: Callable[[np.ndarray], dict[str, np.ndarray]],
    settings: Resampled,
) -> dict[str, Any]:
    """The report's ``intervals`` and ``resampled`` (``measures.bootstrap``) of a mask task's
    ``figures`` over the scored images that have counts (``per_image``: image id -> what it adds
    to the measure's sums), resampled in the order of their files' stems, as a run names its
    maps and PNGs (ties by image id). Several truths' counts (a run scored against every
    annotator): each truth's figures on the same resamples, averaged figure by figure, as the
    headline averages them."""
    truths = [per_image] if isinstance(per_image, Mapping) else list(per_image)
    stems = dict(zip(images["image_id"].astype(int), (Path(str(p)).stem for p in images["path"]), strict=True))
    order = sorted((stems[i], i) for i in truths[0])
    each = [
        bootstrap.additive(np.stack([counts[i] for _, i in order]), figures, settings.resamples, settings.seed)
        for counts in truths
    ]
    return bootstrap.report(bootstrap.averaged(each), [key for key, _ in order], settings.resamples, settings.seed)


def spread(values: list[dict[str, float]], keys: list[str]) -> dict[str, dict[str, float]]:
    """Mean, standard deviation, min and max of each figure over several truths."""
    return {
        k: {
            "mean": float(np.mean([v[k] for v in values])),
            "std": float(np.std([v[k] for v in values])),
            "min": float(np.min([v[k] for v in values])),
            "max": float(np.max([v[k] for v in values])),
        }
        for k in keys
    }


def ceiling(each: dict[str, dict[str, float]]) -> dict[str, Any]:
    """A human ceiling: each annotator's figures against the others, and their mean over the
    annotators (none without two annotators)."""
    if not each:
        return {}
    keys = next(iter(each.values()))
    return {"per_annotator": each} | {k: float(np.mean([v[k] for v in each.values()])) for k in keys}
