"""Label maps scored as each benchmark scores them (``evaluate --task semantic --method``).

A benchmark fixes which classes are evaluated and in which order, which of the truth's pixels are
left out, and what a prediction's pixel values mean:

- ``plain``: every label of the release, its label ids as pixel values; the truth's unlabelled
  pixels left out.
- ``cityscapes``: the 19 classes Cityscapes evaluates (``ignore_in_eval`` false in the release's
  ``source_categories``, in ``train_id`` order); every other label's pixels left out of the
  truth; predictions in label ids (0-33, cityscapesScripts' input) or, with ``--train-ids``, in
  train ids (0-18); a value naming a label Cityscapes does not evaluate is wrong. Beside the
  class IoU: the IoU of its 7 categories and the instance-weighted iIoU of the classes and
  categories with instances, as ``cityscapesscripts.evaluation.evalPixelLevelSemanticLabeling``
  computes them (Cordts et al., CVPR 2016).
- ``ade20k``: SceneParsing's 150 classes in ``objectInfo150`` order, the truth's 0 ("other")
  left out; predictions in 1-150 or, with ``--reduce-zero-label`` (as mmseg names it), 0-149
  with 255 for none.
- ``voc``: VOC's 21 classes (background included) in its order; void (255) left out;
  predictions 0-20.

A release's layout names the benchmark that scores it (its ``About.benchmark``; ``of_layout``);
every figure is then taken from one confusion matrix over the benchmark's classes
(``client.semantic.measures``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

PLAIN, CITYSCAPES, ADE20K, VOC = "plain", "cityscapes", "ade20k", "voc"
METHODS = (PLAIN, CITYSCAPES, ADE20K, VOC)

# cityscapesScripts' average instance size of each class with instances, in pixels (its
# ``args.avgClassSize``, measured on the training set): an instance's weight in iIoU is this
# over its own size.
CITYSCAPES_INSTANCE_SIZE = {
    "bicycle": 4672.3249222261, "caravan": 36771.8241758242, "motorcycle": 6298.7200839748,
    "rider": 3930.4788056518, "bus": 35732.1511111111, "train": 67583.7075812274, "car": 12794.0202738185,
    "person": 3462.4756337644, "truck": 27855.1264367816, "trailer": 16926.9763313609,
}  # fmt: skip
VOC_CLASSES = (
    "background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor",
)  # fmt: skip


class BenchmarkError(ValueError):
    """A release (or a run's options) that a benchmark cannot score: one line."""


@dataclass(frozen=True)
class Benchmark:
    """A benchmark's scoring of label maps: its ``classes`` (release labels, in its order), the
    truth (``truth``: release label id -> class; a label absent is left out), what a
    prediction's pixel values mean (``values``: value -> class; ``len(classes)``: a value the
    benchmark knows and counts wrong; any other value is wrong too, and reported), and, for
    Cityscapes, its ``categories`` (name -> classes) and the instance weighting (``instances``:
    label -> average size; ``category_values``: category -> the pixel values it takes in iIoU)."""

    name: str
    classes: list[str]
    truth: dict[int, int]
    values: dict[int, int]
    categories: dict[str, list[int]] = field(default_factory=dict)
    instances: dict[str, float] = field(default_factory=dict)
    category_values: dict[str, list[int]] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        """What the report keeps of the benchmark: its name and classes."""
        out: dict[str, Any] = {"name": self.name, "classes": len(self.classes)}
        if self.categories:
            out["categories"] = {name: [self.classes[k] for k in ks] for name, ks in self.categories.items()}
        return out


def of_layout(layout: str | None) -> str:
    """The benchmark that scores a release of ``layout``: the one the layout names
    (``io.layouts.About.benchmark``), ``plain`` for a layout that names none or is unknown (a
    release of a format this version does not read)."""
    from regionbench.io import layouts

    known = layouts.registry().get(str(layout))
    return (known.about.benchmark if known is not None else None) or PLAIN


def build(
    name: str,
    vocabulary: pd.DataFrame,
    source_categories: pd.DataFrame | None,
    train_ids: bool = False,
    reduce_zero_label: bool = False,
    layout: str | None = None,
) -> Benchmark | None:
    """The benchmark ``name`` for a release of this ``vocabulary`` (label, label_id),
    ``source_categories`` and ``layout``; None for ``plain``. Raises BenchmarkError when the
    release is not of the benchmark (its layout or its classes are not) or an option does not
    apply."""
    if train_ids and name != CITYSCAPES:
        raise BenchmarkError(f"--train-ids: Cityscapes' train ids; the method here is {name}")
    if reduce_zero_label and name != ADE20K:
        raise BenchmarkError(f"--reduce-zero-label: ADE20K's 0-149 maps; the method here is {name}")
    ids = dict(zip(vocabulary["label"].astype(str), vocabulary["label_id"].astype(int), strict=True))
    if name == PLAIN:
        return None
    if name == CITYSCAPES:
        return _cityscapes(ids, source_categories, train_ids)
    if name == ADE20K:
        if layout != "ade20k" and not all(i in ids.values() for i in range(1, 151)):
            raise BenchmarkError(
                f"--method ade20k: the release is not of ADE20K's scene-parsing files (layout {layout}) and lacks its "
                "150 classes; use --method plain"
            )
        return _ade20k(ids, reduce_zero_label)
    if name == VOC:
        missing = [c for c in VOC_CLASSES if c not in ids]
        if missing:
            raise BenchmarkError(f"--method voc: the release has no label {missing[0]!r} of VOC's 21 classes")
        truth = {ids[c]: k for k, c in enumerate(VOC_CLASSES)}
        return Benchmark(VOC, list(VOC_CLASSES), truth, {ids[c]: k for k, c in enumerate(VOC_CLASSES)})
    raise BenchmarkError(f"--method {name}: one of {', '.join(METHODS)}")


def _cityscapes(ids: dict[str, int], categories: pd.DataFrame | None, train_ids: bool) -> Benchmark:
    """Cityscapes' benchmark from the label table the release keeps (``source_categories``:
    ``category_id`` the label id, ``train_id``, ``ignore_in_eval``, ``has_instances`` and the
    category as ``supercategory``)."""
    needed = {"category_id", "label", "train_id", "ignore_in_eval", "has_instances", "supercategory"}
    if categories is None or not needed <= set(categories.columns) or categories["train_id"].isna().all():
        raise BenchmarkError(
            "--method cityscapes: the release keeps no Cityscapes label table (source_categories with train_id "
            "and ignore_in_eval); build it from a Cityscapes tree, or use --method plain"
        )
    table = categories.dropna(subset=["train_id"]).drop_duplicates("category_id").sort_values("category_id")
    evaluated = table[~table["ignore_in_eval"].astype(bool)].sort_values("train_id")
    classes = [str(x) for x in evaluated["label"]]
    index = {int(i): k for k, i in enumerate(evaluated["category_id"])}
    truth = {ids[c]: k for k, c in enumerate(classes) if c in ids}
    if train_ids:
        values = {int(t): k for k, t in enumerate(evaluated["train_id"])}
    else:
        values = {int(i): index.get(int(i), len(classes)) for i in table["category_id"]}
    groups: dict[str, list[int]] = {}
    for label, category in zip(evaluated["label"], evaluated["supercategory"], strict=True):
        groups.setdefault(str(category), []).append(classes.index(str(label)))
    # iIoU's categories: those whose every label has instances; their pixel values, the labels
    # Cityscapes does not evaluate among them too (cityscapesScripts' ``instanceStats``)
    category_values: dict[str, list[int]] = {}
    for category, rows in table.groupby("supercategory", sort=True):
        if rows["has_instances"].astype(bool).all():
            members = rows["category_id"].astype(int).tolist()
            if train_ids:  # a train id names an evaluated label only
                members = [int(t) for t in rows.loc[~rows["ignore_in_eval"].astype(bool), "train_id"]]
            category_values[str(category)] = sorted(members)
    instances = {
        str(label): CITYSCAPES_INSTANCE_SIZE[str(label)]
        for label, has in zip(evaluated["label"], evaluated["has_instances"], strict=True)
        if has and str(label) in CITYSCAPES_INSTANCE_SIZE
    }
    return Benchmark(CITYSCAPES, classes, truth, values, groups, instances, category_values)


def _ade20k(ids: dict[str, int], reduce_zero_label: bool) -> Benchmark:
    """SceneParsing's classes: the release's labels of ids 1-150 (``objectInfo150``'s Idx, all
    150 in the benchmark's own files), in that order."""
    by_id = {i: label for label, i in ids.items() if 1 <= i <= 150}
    if not by_id:
        raise BenchmarkError(
            "--method ade20k: the release has no label of id 1-150 (SceneParsing's classes, objectInfo150's Idx); "
            "build it from ADEChallengeData2016, or use --method plain"
        )
    order = sorted(by_id)
    classes = [by_id[i] for i in order]
    truth = {i: k for k, i in enumerate(order)}
    values = {i - 1: k for k, i in enumerate(order)} if reduce_zero_label else dict(truth)
    return Benchmark(ADE20K, classes, truth, values)


def category_iou(matrix: np.ndarray, benchmark: Benchmark) -> dict[str, float]:
    """Each category's IoU from the class confusion ``matrix`` (classes x classes + 1): the
    classes of a category merged, as cityscapesScripts' ``getIouScoreForCategory``; a category
    with nothing to count has none."""
    k = len(benchmark.classes)
    out = {}
    for name, members in benchmark.categories.items():
        others = [c for c in range(k) if c not in members]
        tp = int(matrix[np.ix_(members, members)].sum())
        fn = int(matrix[members].sum()) - tp
        fp = int(matrix[np.ix_(others, members)].sum())
        if tp + fp + fn:
            out[name] = tp / (tp + fp + fn)
    return out


@dataclass
class InstanceCounts:
    """iIoU's weighted counts over a run (``add`` an image at a time): per class and per
    category, the instance-weighted true positives and false negatives; per category, the
    false positives its pixel values make on the other evaluated classes."""

    tp: dict[str, float] = field(default_factory=dict)
    fn: dict[str, float] = field(default_factory=dict)
    category_tp: dict[str, float] = field(default_factory=dict)
    category_fn: dict[str, float] = field(default_factory=dict)
    category_fp: dict[str, int] = field(default_factory=dict)

    def add(
        self,
        benchmark: Benchmark,
        truth: np.ndarray,
        values: np.ndarray,
        predicted: np.ndarray,
        instances: list[tuple[str, np.ndarray]],
    ) -> None:
        """One image (``increments``)."""
        self.apply(self.increments(benchmark, truth, values, predicted, instances))

    @staticmethod
    def increments(
        benchmark: Benchmark,
        truth: np.ndarray,
        values: np.ndarray,
        predicted: np.ndarray,
        instances: list[tuple[str, np.ndarray]],
    ) -> list[tuple[str, str, float]]:
        """What one image adds, as (count, key, amount) in the order they add up (``apply``
        replays them: a run scored in batches sums its floats as one scored image by image):
        its ``truth`` class map, the run's pixel ``values`` and their classes (``predicted``),
        and its truth ``instances`` (label, mask) of the evaluated classes with instances."""
        k = len(benchmark.classes)
        category_of = {benchmark.classes[c]: name for name, cs in benchmark.categories.items() for c in cs}
        in_category = {name: np.isin(values, ids) for name, ids in benchmark.category_values.items()}
        out: list[tuple[str, str, float]] = []
        for label, mask in instances:
            size = int(np.count_nonzero(mask))
            if not size:
                continue
            weight = benchmark.instances[label] / size
            tp = int(np.count_nonzero(predicted[mask] == benchmark.classes.index(label)))
            out += [("tp", label, tp * weight), ("fn", label, (size - tp) * weight)]
            category = category_of.get(label)
            if category in in_category:
                hit = int(np.count_nonzero(in_category[category][mask]))
                out += [("category_tp", category, hit * weight), ("category_fn", category, (size - hit) * weight)]
        for name, taken in in_category.items():
            members = [benchmark.classes.index(c) for c, n in category_of.items() if n == name]
            others = (truth < k) & ~np.isin(truth, members)
            out.append(("category_fp", name, int(np.count_nonzero(taken & others))))
        return out

    def apply(self, increments: list[tuple[str, str, float]]) -> None:
        """``increments`` added, in order."""
        for count, key, amount in increments:
            totals: dict[str, Any] = getattr(self, count)
            totals[key] = totals.get(key, 0) + amount

    def figures(self, matrix: np.ndarray, benchmark: Benchmark) -> dict[str, Any]:
        """iIoU per class (weighted tp / (weighted tp + fp + weighted fn), fp the class's
        unweighted false positives from ``matrix``) and per category, and their means over the
        classes and categories that have one (cityscapesScripts' ``getInstanceIouScoreFor*``)."""
        per_class = {}
        for label in benchmark.instances:
            c = benchmark.classes.index(label)
            fp = int(matrix[:, c].sum()) - int(matrix[c, c])
            denom = self.tp.get(label, 0.0) + fp + self.fn.get(label, 0.0)
            if denom:
                per_class[label] = self.tp.get(label, 0.0) / denom
        per_category = {}
        for name in benchmark.category_values:
            denom = self.category_tp.get(name, 0.0) + self.category_fp.get(name, 0) + self.category_fn.get(name, 0.0)
            if denom:
                per_category[name] = self.category_tp.get(name, 0.0) / denom
        return {
            "iiou": float(np.mean(list(per_class.values()))) if per_class else None,
            "category_iiou": float(np.mean(list(per_category.values()))) if per_category else None,
            "per_class_iiou": per_class,
            "per_category_iiou": per_category,
        }


@dataclass(frozen=True)
class ImageTerms:
    """What one image adds to the benchmark's category IoU and iIoU, as a vector the bootstrap
    over images sums (``measures.bootstrap.additive``), and the figures of summed vectors:
    per category of ``benchmark.categories`` its tp, fn and fp pixels (``category_iou``'s
    counts on the image's matrix); per class with instances its weighted tp and fn, per category
    of ``benchmark.category_values`` its weighted tp and fn and its fp (``InstanceCounts``)."""

    benchmark: Benchmark

    @property
    def width(self) -> int:
        return (
            3 * len(self.benchmark.categories)
            + 2 * len(self.benchmark.instances)
            + 3 * len(self.benchmark.category_values)
        )

    def of(self, matrix: np.ndarray, increments: list[tuple[str, str, float]]) -> np.ndarray:
        """The vector of an image: its class confusion ``matrix`` and its iIoU ``increments``."""
        k = len(self.benchmark.classes)
        out = []
        for members in self.benchmark.categories.values():
            others = [c for c in range(k) if c not in members]
            tp = float(matrix[np.ix_(members, members)].sum())
            out += [tp, float(matrix[members].sum()) - tp, float(matrix[np.ix_(others, members)].sum())]
        weighted = InstanceCounts()
        weighted.apply(increments)
        for label in self.benchmark.instances:
            out += [weighted.tp.get(label, 0.0), weighted.fn.get(label, 0.0)]
        for name in self.benchmark.category_values:
            out += [weighted.category_tp.get(name, 0.0), weighted.category_fn.get(name, 0.0)]
            out.append(float(weighted.category_fp.get(name, 0)))
        return np.asarray(out, dtype=np.float64)

    def figures(self, sums: np.ndarray, class_fp: np.ndarray) -> dict[str, np.ndarray]:
        """``category_miou`` (the mean of the categories' IoU, 0 without one), ``iiou`` and
        ``category_iiou`` (means over those defined, NaN without one) of summed vectors (rows x
        ``width``); ``class_fp`` (rows x classes) each class's unweighted false positives."""
        bench, at = self.benchmark, 0
        out: dict[str, np.ndarray] = {}

        def mean(tp: np.ndarray, denominator: np.ndarray, empty: float) -> np.ndarray:
            defined = denominator > 0
            ratio = np.divide(tp, denominator, out=np.zeros_like(tp), where=defined)
            count = defined.sum(axis=1)
            return np.divide(ratio.sum(axis=1), count, out=np.full(len(tp), empty), where=count > 0)

        if bench.categories:
            found = sums[:, : 3 * len(bench.categories)].reshape(len(sums), -1, 3)
            out["category_miou"] = mean(found[:, :, 0], found.sum(axis=2), 0.0)
            at = 3 * len(bench.categories)
        if bench.instances:
            found = sums[:, at : at + 2 * len(bench.instances)].reshape(len(sums), -1, 2)
            fp = class_fp[:, [bench.classes.index(label) for label in bench.instances]]
            out["iiou"] = mean(found[:, :, 0], found[:, :, 0] + fp + found[:, :, 1], np.nan)
            at += 2 * len(bench.instances)
            found = sums[:, at:].reshape(len(sums), -1, 3)
            out["category_iiou"] = mean(found[:, :, 0], found[:, :, 0] + found[:, :, 2] + found[:, :, 1], np.nan)
        return out
