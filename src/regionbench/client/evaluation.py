"""Scoring a researcher's predictions against a release: read and validate runs, then measure.

Tasks (``regionbench evaluate --task``):

- ``region``: one label per test region of a subset; predictions as Parquet or CSV with
  ``image_id, region_id[, annotator], label[, score]``. Measures: e_hard, soft accuracy, mean
  e_hierarchy (any / specific / general), per-label accuracy, confusion matrix.
- ``image``: scored labels per test image, ``image_id, label, score``; the k best per image are
  the prediction. Measures: top-k per-label / per-image, example and label based (and their
  semantic variant with ``semantic_threshold``), diagnostics.
- ``imageclef``: an ImageCLEF run file (paper 003): per line an image id, then
  ``confidence binary`` per concept in concept order. Measures: ``metrics.imageclef``.

The region task scores the subset's test regions (the region split). Image-level tasks score
the test images of the image split: an image's truth is every label of the subset among its
regions, and no image is on both sides. ``split="all"`` scores both sides; predictions for the
side left out are refused in one line (``scope``). Concepts
are the subset's labels in vocabulary (label id) order. Nothing is scored from an invalid run:
every problem is reported with its line.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.client import metrics, scope
from regionbench.client.loader import Release
from regionbench.core import errors, numbers, tables
from regionbench.core.errors import InputError
from regionbench.core.hierarchy import Hierarchy, Node

KEY = tables.REGION_KEY
KEY_IDS = ("image_id", "region_id")
MAX_PROBLEMS = 20


class RunError(InputError):
    """An invalid predictions file; the message has one line per problem."""


def _fail(path: Path, problems: list[str]) -> None:
    if problems:
        shown = problems[:MAX_PROBLEMS]
        more = f"\n{path}: ... and {len(problems) - MAX_PROBLEMS} more problems" if len(problems) > MAX_PROBLEMS else ""
        raise RunError("\n".join(f"{path}: {p}" for p in shown) + more)


@dataclass
class Task:
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

    def image_scope(self) -> scope.Scope:
        """The scored images of the subset, as every task says it."""
        side = "the test side of the image split" if self.split == "test" else "both sides of the image split"
        total = len(set(self.test) | set(self.train))
        return scope.Scope(self.split, side, len(self.test), total, f"images of subset {self.subset}")

    def region_scope(self) -> scope.Scope:
        """The scored regions of the subset, as every task says it."""
        side = "the test side of the region split" if self.split == "test" else "both sides of the region split"
        return scope.Scope(self.split, side, len(self.regions), self.subset_regions, f"regions of subset {self.subset}")

    def left_out(self) -> set[int]:
        """The subset's images the scored side leaves out."""
        return set(self.train) - set(self.test)


def release_hierarchy(data: Release) -> Hierarchy:
    """The label hierarchy a release carries in its vocabulary table (parents, relations)."""
    vocabulary = data.vocabulary
    roots = sorted(set(vocabulary["parent"].dropna()) - set(vocabulary["label"]))
    if len(roots) != 1:
        raise RunError(f"the release's vocabulary has roots {roots}; expected exactly one")
    nodes = {roots[0]: Node(roots[0], None)}
    row: Any  # a row of the vocabulary table (pandas types its fields loosely)
    for row in vocabulary.itertuples(index=False):
        nodes[row.label] = Node(row.label, row.parent, row.relation or "is-a", bool(row.group))
    return Hierarchy(roots[0], nodes)


def task_of(data: Release, subset: str, annotator: str | None = None, split: str = "test") -> Task:
    """The subset's labels, the truth of its test and train images, and its test regions.

    Image-level tasks use the image split: the truth of an image is every label of the subset
    among its regions, and an image is on one side only. The region task keeps the region
    split. The truth is the reference annotator's (whose regions the subsets hold);
    ``annotator`` takes another annotator's regions on the same images, each on its image's
    side of the image split. ``split="all"`` scores both sides.
    """
    if split not in scope.SPLITS:
        raise RunError(f"--split {split}: use test or all")
    if data.subsets.empty:
        raise RunError(
            f"release {data.dataset} v{data.version} has no subsets A-H (a collection whose regions carry one"
            " label or none): the region, image and ImageCLEF tasks score against them"
        )
    members = data.subsets[data.subsets["subset"] == subset]
    if members.empty:
        raise RunError(f"subset {subset!r} is not in the release; subsets: {sorted(data.subsets['subset'].unique())}")
    if "image_split" not in members.columns:
        raise RunError(
            f"release {data.dataset} v{data.version} has no image split (subsets.image_split); "
            "score it with a release built by this version of regionbench"
        )
    reference = sorted(members["annotator"].unique())
    if annotator is not None and [annotator] != reference:
        side_of = members.drop_duplicates("image_id").set_index("image_id")["image_split"]
        regions = data.regions[(data.regions["annotator"] == annotator) & data.regions["image_id"].isin(side_of.index)]
        if regions.empty:
            raise RunError(
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
    return Task(labels, test, dict(truth["train"]), test_regions, vocabulary, split, others, subset, len(members))


def write_run_orders(data: Release, out: Path) -> dict[str, dict[str, int]]:
    """What an ImageCLEF run file for ``evaluate --task imageclef --subset X`` must follow, for
    every subset X of the release: ``<out>/<X>/concepts.txt`` (its concepts in column order, a
    line each) and ``<out>/<X>/images.txt`` (its test images of the image split, one line each
    in the run file, any order). Returns per subset the number of concepts and images."""
    counts = {}
    for subset in sorted(data.subsets["subset"].unique()):
        spec = task_of(data, subset)
        folder = Path(out) / subset
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "concepts.txt").write_text("".join(f"{c}\n" for c in spec.labels), encoding="utf-8")
        (folder / "images.txt").write_text("".join(f"{i}\n" for i in sorted(spec.test)), encoding="utf-8")
        counts[subset] = {"concepts": len(spec.labels), "images": len(spec.test)}
    return counts


def _strict(value: object, parse: Callable[[str, str], float], what: str) -> float:
    """One cell as ``parse`` reads it: strings strictly (``regionbench.core.numbers``); numbers from
    Parquet as they are, if finite (and whole and not negative for an id)."""
    if isinstance(value, str):
        return parse(value, what)
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        number = float(value)
        if not np.isfinite(number):
            raise ValueError(f"{what} {value!r} is not a finite number")
        if parse is numbers.parse_id:
            # Integers as they are (a float would round ids beyond 2**53), in the range ids take.
            whole = int(value) if isinstance(value, (int, np.integer)) else int(number) if number.is_integer() else -1
            if not 0 <= whole <= numbers.MAX_ID:
                raise ValueError(f"{what} {value!r} is not an id (a whole number from 0 to {numbers.MAX_ID})")
            return whole
        return number
    raise ValueError(f"{what} is empty")


def read_table(
    path: Path,
    required: list[str],
    optional: list[str],
    ids: tuple[str, ...] = (),
    values: tuple[str, ...] | None = (),
) -> pd.DataFrame:
    """A Parquet or CSV predictions file with the ``required`` columns; the ``ids`` and ``values``
    columns (``None``: every column but ``ids``) parsed strictly (ASCII digits, finite numbers),
    every bad cell a problem with its row. CSV cells are read as text, so nothing is guessed
    (``NA`` stays a label, ``1_0`` no number)."""
    path = Path(path)
    if problem := errors.file_problem(path, "a predictions file"):
        raise RunError(f"{path}: {problem}")
    try:
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
        elif path.suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
        else:
            raise RunError(f"{path}: predictions must be .parquet or .csv")
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        if isinstance(exc, RunError):
            raise
        raise RunError(f"{path}: unreadable as {path.suffix[1:]} ({errors.first_line(exc)})") from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise RunError(f"{path}: columns {missing} missing; expected {required} and optionally {optional}")
    if values is None:
        values = tuple(c for c in frame.columns if c not in ids)
    problems: list[str] = []
    parsed: dict[str, tuple[list, str]] = {}
    for columns, parse, dtype in ((ids, numbers.parse_id, "int64"), (values, numbers.parse_number, "float64")):
        for name in (c for c in columns if c in frame.columns):
            cells = []
            for row, value in enumerate(frame[name].tolist()):
                try:
                    cells.append(_strict(value, parse, name))
                except ValueError as exc:
                    if len(problems) < MAX_PROBLEMS:
                        problems.append(f"row {row + 2}: {exc}")
            parsed[name] = (cells, dtype)
    _fail(path, problems)
    for name, (cells, dtype) in parsed.items():
        frame[name] = np.array(cells, dtype=dtype)
    for name in ("label", "annotator"):
        if name in frame.columns:
            frame[name] = frame[name].map(lambda v: None if v is None or v == "" else str(v))
    return frame


def read_region_predictions(path: Path, task: Task) -> pd.DataFrame:
    """Region predictions joined to the subset's test regions (every one exactly once)."""
    frame = read_table(path, ["image_id", "region_id", "label"], ["annotator", "score"], ids=KEY_IDS, values=("score",))
    if "annotator" not in frame.columns:
        names = sorted(task.regions["annotator"].unique())
        frame["annotator"] = names[0] if names else ""
    problems = []
    if frame["label"].isna().any():
        problems.append(f"row {int(np.flatnonzero(frame['label'].isna())[0]) + 2}: empty label")
    duplicated = frame.duplicated(KEY, keep="first")
    for row in np.flatnonzero(duplicated)[:MAX_PROBLEMS]:
        r = frame.iloc[row]
        problems.append(f"row {row + 2}: region {r['image_id']}/{r['region_id']} ({r['annotator']}) predicted twice")
    joined = task.regions.merge(frame[[*KEY, "label"]].drop_duplicates(KEY), on=KEY, how="outer", indicator=True,
                                suffixes=("", "_pred"))  # fmt: skip
    extra = joined[joined["_merge"] == "right_only"]
    missing = joined[joined["_merge"] == "left_only"]
    outside = extra.merge(task.others[KEY], on=KEY)
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
    _fail(Path(path), problems)
    return joined[joined["_merge"] == "both"].drop(columns="_merge").sort_values(KEY).reset_index(drop=True)


def read_image_scores(path: Path, task: Task) -> list[dict[str, float]]:
    """Per test image (sorted by id), its {label: score}. Every test image needs a row, as the
    region and ImageCLEF tasks need every region and image: a run that skips images would be
    scored on the ones it chose (a method that ranks nothing for an image gives it one label
    at score 0)."""
    frame = read_table(path, ["image_id", "label", "score"], [], ids=("image_id",), values=("score",))
    problems = [f"row {row + 2}: empty label" for row in np.flatnonzero(frame["label"].isna())[:MAX_PROBLEMS]]
    bad = ~frame["score"].between(0, 1)
    for row in np.flatnonzero(bad)[:MAX_PROBLEMS]:
        problems.append(f"row {row + 2}: score {frame['score'].iloc[row]!r} is not in [0, 1]")
    for row in np.flatnonzero(frame.duplicated(["image_id", "label"]))[:MAX_PROBLEMS]:
        problems.append(
            f"row {row + 2}: label {frame['label'].iloc[row]!r} scored twice for image {frame['image_id'].iloc[row]}"
        )
    outside = ~frame["label"].astype(str).isin(task.vocabulary)
    for row in np.flatnonzero(outside)[:MAX_PROBLEMS]:
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
    _fail(Path(path), problems)
    scores: dict[int, dict[str, float]] = {i: {} for i in task.test}
    for image_id, label, score in frame[["image_id", "label", "score"]].itertuples(index=False):
        scores[int(image_id)][str(label)] = float(score)
    return [scores[i] for i in sorted(task.test)]


def _read_text(path: Path) -> str:
    """A run or category file's UTF-8 text; a missing file or other bytes are a ``RunError``."""
    if problem := errors.file_problem(path, "a run or category file"):
        raise RunError(f"{path}: {problem}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RunError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_imageclef_run(
    path: Path, images: list[int], concepts: list[str], within: scope.Scope | None = None, others: Collection[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence and binary arrays (image x concept, images in ``images`` order) of a run file.

    Each line: ``<image id> <confidence> <binary>`` for every concept, separated by single
    spaces; confidences are numbers in [0, 1], binaries 0 or 1; every scored image exactly
    once. Lines of ``others`` (images the scored side ``within`` leaves out) are refused in one
    line.
    """
    path = Path(path)
    index = {image: n for n, image in enumerate(images)}
    confidence = np.zeros((len(images), len(concepts)))
    binary = np.zeros((len(images), len(concepts)), dtype=bool)
    seen: dict[int, int] = {}
    problems, outside = [], set()
    fields_expected = 1 + 2 * len(concepts)
    lines = _read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    for number, line in enumerate(lines, start=1):
        where = f"line {number}"
        fields = line.split(" ")
        if len(fields) != fields_expected:
            problems.append(
                f"{where}: {len(fields)} fields, expected {fields_expected} (image id + confidence binary per each of {len(concepts)} concepts, single spaces)"
            )
            continue
        name = fields[0].removesuffix(".jpg")
        if numbers.is_id(name) and int(name) in others:
            outside.add(int(name))
            continue
        if not numbers.is_id(name) or int(name) not in index:
            problems.append(f"{where}: image {fields[0]!r} is no scored image of the subset")
            continue
        image = int(name)
        if image in seen:
            problems.append(f"{where}: image {image} already given on line {seen[image]}")
            continue
        seen[image] = number
        for c, concept in enumerate(concepts):
            raw_conf, raw_bin = fields[1 + 2 * c], fields[2 + 2 * c]
            try:
                value = numbers.parse_number(raw_conf)
            except ValueError:
                value = float("nan")
            if not 0.0 <= value <= 1.0:
                problems.append(
                    f"{where}: confidence {raw_conf!r} for concept {c} ({concept}) is not a number in [0, 1]"
                )
                break
            if raw_bin not in ("0", "1"):
                problems.append(f"{where}: binary {raw_bin!r} for concept {c} ({concept}) is not 0 or 1")
                break
            confidence[index[image], c] = value
            binary[index[image], c] = raw_bin == "1"
    if outside and within is not None:
        raise within.refuse(path, len(outside), f"lines on {len(outside)} images")
    missing = [i for i in images if i not in seen]
    if missing:
        problems.append(f"{len(missing)} scored images have no line, e.g. {missing[0]}")
    _fail(path, problems)
    return confidence, binary


def read_categories(path: Path, concepts: list[str]) -> dict[str, list[int]]:
    """Concept categories for per-category ImageCLEF results (as the 2010 task reported them):
    one ``<concept> <category>`` per line, whitespace separated, ``#`` comments. Returns category
    -> concept columns (in concept order), categories sorted; concepts the file does not name go
    to ``uncategorised``. A concept outside the subset, or named twice, is an error with its line."""
    path = Path(path)
    text = _read_text(path)
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
    _fail(path, problems)
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


def similarity_function(name: str, tree: Hierarchy) -> Callable[[str, str], float]:
    """The label similarity of semantic matching: ``hierarchy`` (1 - e_hierarchy), or a Python
    hook ``package.module:factory`` whose ``factory(tree)`` returns ``similarity(true, predicted)``
    in [0, 1] (an embedding model, say; the module must be importable)."""
    if name == "hierarchy":
        return metrics.hierarchy_similarity(tree)
    module_name, sep, attribute = name.partition(":")
    if not sep or not module_name or not attribute:
        raise RunError(f"similarity {name!r}: use 'hierarchy' or a hook 'package.module:factory'")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise RunError(f"similarity {name!r}: cannot load the hook ({exc})") from None

    def said(what: str, exc: BaseException) -> RunError:
        return RunError(
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
            raise RunError(
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
    frame = read_table(path, ["image_id"], ["one numeric column per dimension"], ids=("image_id",), values=None)
    columns = [c for c in frame.columns if c != "image_id"]
    problems = []
    if not columns:
        problems.append("no feature column besides image_id")
    numeric = frame[columns].to_numpy(dtype=float)
    for row in np.flatnonzero(frame["image_id"].duplicated())[:MAX_PROBLEMS]:
        problems.append(f"row {row + 2}: image {frame['image_id'].iloc[row]} given twice")
    missing = sorted(set(images) - set(frame["image_id"].astype(int)))
    if missing:
        problems.append(f"{len(missing)} train or test images of the subset have no row, e.g. {missing[0]}")
    _fail(Path(path), problems)
    by_id = dict(zip(frame["image_id"].astype(int), numeric, strict=True))
    return np.array([by_id[i] for i in images])


def overlap_analysis(
    descriptors: np.ndarray,
    n_train: int,
    truth: list[set[str]],
    ranked: list[list[str]],
    labels: list[str],
    neighbours: int = metrics.OVERLAP_NEIGHBOURS,
    share: float = metrics.OVERLAP_SHARE,
) -> dict:
    """Dutta et al. 2018 (section 4.2.2, Tables 9-12): the top-k measures over the ``share`` of
    test images most and least overlapping with the training images. ``descriptors`` has the
    ``n_train`` training images first, then the test images (in ``truth`` order); it is
    standardised with the training images' mean and standard deviation so that no dimension
    weighs by its unit. Label averages run over the ``labels`` present in each part."""
    train, test = descriptors[:n_train], descriptors[n_train:]
    centre, scale = train.mean(axis=0), train.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    distance = metrics.train_distances((train - centre) / scale, (test - centre) / scale, neighbours)
    out: dict = {"neighbours": min(neighbours, n_train), "share": share}
    for name, rows in metrics.overlap_subsets(distance, share).items():
        part_truth = [truth[r] for r in rows]
        present = set().union(*part_truth) if part_truth else set()
        counts = metrics.exact_counts(part_truth, [ranked[r] for r in rows])
        out[f"{name}_overlapping"] = {
            "images": len(rows),
            "mean_distance": float(distance[rows].mean()) if rows else 0.0,
            **metrics.top_k_counts(counts, [x for x in labels if x in present]),
        }
    return out


@dataclass(frozen=True)
class Run:
    """One scoring of ``predictions`` against a release: its settings (``evaluate``)."""

    data: Release
    tree: Hierarchy
    predictions: Path
    subset: str
    k: int
    semantic_threshold: float | None
    annotator: str | None
    similarity: str
    categories: Path | None
    image_features: Path | None


def _score_regions(run: Run, spec: Task) -> dict:
    """Region task: a label per test region, scored with e_hard and e_hierarchy both ways."""
    joined = read_region_predictions(run.predictions, spec)
    true, pred = joined["label"].tolist(), joined["label_pred"].tolist()
    unknown = sorted(set(pred) - set(run.tree.nodes))
    if unknown:
        raise RunError(f"{run.predictions}: labels {unknown[:5]} are not in the hierarchy")
    names, matrix = metrics.confusion(true, pred)
    return {
        "regions": len(joined),
        "measures": {
            direction: metrics.region_scores(run.tree, true, pred, direction)
            for direction in ("any", "specific", "general")
        },
        "per_label_accuracy": metrics.per_label_accuracy(true, pred),
        "confusion": {"labels": names, "matrix": matrix.tolist()},
        # Per image: the share of its test regions labelled exactly, and what the run said of each.
        **_per_region_image(joined),
    }


def _image_sides(run: Run, spec: Task) -> tuple[list[int], list[set[str]], list[set[str]], list[str], dict]:
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
        "k": run.k,
    }
    report["diagnostics"] = metrics.label_set_stats(train, truth) | {
        "baselines": metrics.trivial_baselines(train, truth, run.k, scored)
    }
    return images, truth, train, scored, report


def _score_images(run: Run, spec: Task) -> dict:
    """Image task: scores per label per test image, ranked to the top k; the oracle, the
    train-overlap analysis and, with a threshold, semantic matching."""
    images, truth, train, scored, report = _image_sides(run, spec)
    scores = read_image_scores(run.predictions, spec)
    ranked = [metrics.top_k(s, run.k) for s in scores]
    report |= _per_image(images, truth, ranked)
    report["measures"] = {
        "top_k": metrics.top_k_metrics(truth, scores, run.k, scored),
        "ranking": metrics.mean_average_precisions(truth, scores, scored),
        "example_based": metrics.example_based(truth, ranked),
        "label_based": metrics.label_based(truth, ranked, scored),
    }
    # What the run could score if it knew its wrong labels (JSON report only).
    report["oracle"] = metrics.oracle_analysis(train, truth, ranked, run.k, scored)
    if spec.train and spec.split == "test":  # with --split all the train images are scored too
        everyone = sorted(spec.train) + images
        if run.image_features is not None:
            descriptors = read_image_features(run.image_features, everyone)
        else:
            descriptors = region_descriptors(run.data, everyone, run.annotator)
        report["overlap"] = {"descriptors": Path(run.image_features).name if run.image_features else "regions"} | (
            overlap_analysis(descriptors, len(spec.train), truth, ranked, scored)
        )
    if run.semantic_threshold is not None:
        measure = similarity_function(run.similarity, run.tree)
        counts = metrics.semantic_counts(truth, ranked, measure, run.semantic_threshold)
        report["measures"]["semantic"] = {
            "similarity": run.similarity,
            "threshold": run.semantic_threshold,
            "example_based": metrics.example_based_counts(counts),
            "label_based": metrics.label_based_counts(counts, scored),
        }
    return report


def _per_region_image(joined: pd.DataFrame) -> dict:
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


def _per_image(images: list[int], truth: list[set[str]], predicted: Sequence[list[str]]) -> dict:
    """Per image, the F1 of the labels the run gave it (best first) against its truth,
    2|T and P| / (|T| + |P|) (1 when both are empty), and those labels."""
    scores = {}
    for image_id, true, given in zip(images, truth, predicted, strict=True):
        mine = set(given)
        scores[int(image_id)] = 2 * len(true & mine) / (len(true) + len(mine)) if true or mine else 1.0
    return {"per_image": scores, "predicted": {int(i): list(p) for i, p in zip(images, predicted, strict=True)}}


def _score_imageclef(run: Run, spec: Task) -> dict:
    """ImageCLEF task: a run file of confidences and decisions, scored overall and per concept
    category (``run.categories``, else the hierarchy's branches)."""
    images, truth, _, _, report = _image_sides(run, spec)
    confidence, binary = read_imageclef_run(run.predictions, images, spec.labels, spec.image_scope(), spec.left_out())
    truth_matrix = np.array([[c in t for c in spec.labels] for t in truth], dtype=bool)
    report["measures"] = metrics.imageclef(truth_matrix, confidence, binary)
    decided = [sorted(c for c, yes in zip(spec.labels, row, strict=True) if yes) for row in binary]
    report |= _per_image(images, truth, decided)
    if run.categories is not None:
        groups = read_categories(run.categories, spec.labels)
        report["categories"] = Path(run.categories).name
    else:
        groups = branch_categories(run.tree, spec.labels)
        report["categories"] = "hierarchy branches"
    report["per_category"] = {
        name: metrics.imageclef(truth_matrix[:, columns], confidence[:, columns], binary[:, columns])
        | {"concepts": len(columns)}
        for name, columns in groups.items()
    }
    return report


TASKS: dict[str, Callable[[Run, Task], dict]] = {
    "region": _score_regions,
    "image": _score_images,
    "imageclef": _score_imageclef,
}


def evaluate(
    data: Release,
    tree: Hierarchy,
    predictions: Path,
    task: str,
    subset: str = "H",
    k: int = 5,
    semantic_threshold: float | None = None,
    annotator: str | None = None,
    similarity: str = "hierarchy",
    categories: Path | None = None,
    image_features: Path | None = None,
    split: str = "test",
) -> dict:
    """The report of one run: settings, sizes and every measure of the task (``TASKS``), against
    the reference annotator, or ``annotator``; ``similarity`` names the semantic matching's label
    similarity (``similarity_function``); ``categories``, a concept-category file
    (``read_categories``), groups the per-category ImageCLEF results (default: the hierarchy's
    branches, ``branch_categories``); ``image_features`` (``read_image_features``) replaces the
    region-feature descriptors of the image task's train-overlap analysis (``overlap_analysis``);
    ``split`` scores the test side (``test``) or both sides (``all``) of the subset's split."""
    if task not in TASKS:
        raise RunError(f"task {task!r}: use region, image or imageclef")
    spec = task_of(data, subset, annotator, split)
    within = spec.region_scope() if task == "region" else spec.image_scope()
    run = Run(data, tree, predictions, subset, k, semantic_threshold, annotator, similarity, categories, image_features)
    report: dict = {
        "release": {"dataset": data.dataset, "version": data.version},
        "task": task,
        "subset": subset,
        "split": split,
        "scored": within.to_report(),
        "predictions": Path(predictions).name,
    }
    return report | TASKS[task](run, spec)


def render(report: dict) -> str:
    """The report as a readable table of its headline measures."""
    head = (
        f"{report['release']['dataset']} v{report['release']['version']}  task {report['task']}  "
        f"subset {report['subset']}  predictions {report['predictions']}"
    )
    rows: list[tuple[str, float]] = []

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            rows.append((prefix, value))

    walk("", report["measures"])
    for section in ("overlap", "per_category"):
        if section in report:
            walk(section, report[section])
    width = max((len(name) for name, _ in rows), default=10)
    lines = [scope.Scope(**report["scored"]).line(), head, "-" * len(head)]
    lines += [
        f"{name:<{width}}  {value:.4f}" if isinstance(value, float) else f"{name:<{width}}  {value}"
        for name, value in rows
    ]
    return "\n".join(lines)
