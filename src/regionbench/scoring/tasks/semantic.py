"""``semantic``: label-map PNGs of the release's label ids.

Label maps scored from one confusion matrix (``regionbench.scoring.measures.confusion``), flat and at each
level of the hierarchy, against one annotator's regions, every annotator's, and the human ceiling.

Predictions: a folder of label-map PNGs named by image id, file stem or the collection's key (a
Cityscapes frame), of the release's label ids or of its benchmark's values (``--method``), or named
by ``--label-names map.json`` (pixel value → label); the truth's unlabelled pixels are left out, a
prediction's ``--ignore`` value (255) is a wrong pixel.

Measures: pixel accuracy, mean class accuracy, mIoU, frequency-weighted IoU, per-class IoU and the
confusion matrix over the benchmark's classes (Cityscapes adds category IoU and iIoU), and the same
at each level of the hierarchy.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from regionbench.core import errors, geometry
from regionbench.release.loader import Release
from regionbench.scoring import protocols, results
from regionbench.scoring.measures import confusion as measures
from regionbench.scoring.runner import batches, image_batches, stream
from regionbench.scoring.tasks import _masks as masks
from regionbench.scoring.tasks._base import Method, Resampled, Run, Shape, TaskError, natural, option


@dataclass(frozen=True)
class Settings(masks.FileSettings, Resampled):
    """The label-map task's settings."""

    ignore: int = option(
        255, "--ignore", "the pixel value of no label (255): left out where the truth has it, wrong where a map has it",
        type=natural, metavar="VALUE",
    )  # fmt: skip
    label_names: Path | Mapping[str, str] | None = option(
        None, "--label-names", "pixel value -> label name, a JSON object", type=Path, metavar="JSON"
    )
    method: str | None = option(
        None, "--method", "score as the benchmark does; default: the one the release's layout names",
        aliases=("--protocol",), choices=list(protocols.METHODS),
    )  # fmt: skip
    train_ids: bool = option(False, "--train-ids", "the maps hold train ids (0-18), not label ids", action="store_true")
    reduce_zero_label: bool = option(
        False, "--reduce-zero-label", "the maps number the classes 0-149 (255 none), not 1-150", action="store_true"
    )

    methods = (
        Method(
            protocols.PLAIN, "every label of the release, its label ids as pixel values (--label-names: other values)"
        ),
        Method(
            protocols.CITYSCAPES,
            "cityscapesScripts' evaluation: its 19 classes, the category IoU and the instance-weighted iIoU",
            ("train_ids",),
        ),
        Method(
            protocols.ADE20K,
            "the ADE20K scene-parsing challenge's 150 classes (mmsegmentation's ADE20KDataset)",
            ("reduce_zero_label",),
        ),
        Method(protocols.VOC, "PASCAL VOC's 21 classes, its 255 border left out"),
    )

    def resolve(self, data: Release) -> Settings:
        """The reference annotator named where none is given, ``label_names`` read into the
        map itself (the report keeps it, so a rerun needs no file), and the method: the one
        given, else the one the release's layout names (``plain`` for maps named by ``label_names``)."""
        names = self.label_names
        if names is not None:
            label = dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"], strict=True))
            names = {str(v): label[i] for v, i in sorted(pixel_values(names, data).items())}
        annotator = self.annotator if self.annotator or self.all_annotators else masks.reference(data)
        if self.method is not None and self.method not in protocols.METHODS:
            raise TaskError(f"--method {self.method}: the semantic task's are {', '.join(protocols.METHODS)}")
        method = self.method or (protocols.PLAIN if names else protocols.of_layout(data.manifest.get("layout")))
        if names and method != protocols.PLAIN:
            raise TaskError("--label-names names a plain run's values; drop it, or give --method plain")
        resolved = dataclasses.replace(self, annotator=annotator, label_names=names, method=method)
        coding_of(data, resolved)  # a benchmark the release cannot be scored by is refused now
        return resolved

    def pixel_values(self, data: Release) -> dict[int, int] | None:
        """``label_names`` as pixel value -> label id (None: the values are label ids)."""
        return pixel_values(self.label_names, data) if self.label_names is not None else None


scope_of = masks.scope_of  # the images of the split
default_split = masks.default_split  # the source's evaluation split, where the release has one


@dataclass(frozen=True)
class Coding:
    """How the truth and a run's maps become class indices: the ``names`` of the classes, the
    truth's release label id -> class (``truth``: ``len(names)`` leaves a label out) and a
    prediction's pixel value (or label id, through ``--label-names``) -> class (``values``:
    ``len(names)`` is a value known and counted wrong); the ``benchmark`` (None: plain)."""

    names: list[str]
    truth: dict[int, int]
    values: dict[int, int]
    benchmark: protocols.Benchmark | None = None

    @property
    def classes(self) -> int:
        return len(self.names)


def coding_of(data: Release, settings: Settings) -> Coding:
    """The ``Coding`` of ``settings.method`` for ``data``; a benchmark the release is not of
    is a ``TaskError`` in one line."""
    labels = dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"], strict=True))
    name = settings.method or protocols.PLAIN
    categories = data.table("source_categories") if "source_categories" in data.manifest.get("tables", {}) else None
    try:
        benchmark = protocols.build(
            name, data.vocabulary, categories, settings.train_ids, settings.reduce_zero_label,
            layout=data.manifest.get("layout"),
        )  # fmt: skip
    except protocols.BenchmarkError as exc:
        raise TaskError(str(exc)) from None
    if benchmark is None:
        names, index = measures.label_codes(labels)
        return Coding(names, index, index)
    left_out = len(benchmark.classes)
    truth = {label_id: benchmark.truth.get(label_id, left_out) for label_id in labels}
    return Coding(benchmark.classes, truth, benchmark.values, benchmark)


def read(predictions: Path, data: Release, settings: Settings) -> dict[int, int] | None:
    """The folder checked (no file for an image outside the scored side or of no image), and
    the pixel value -> label id map; the maps themselves are read a batch at a time."""
    if not predictions.is_dir():
        problem = errors.file_problem(predictions, "a folder of label maps") or "not a folder"
        raise TaskError(f"{predictions}: {problem}")
    scored = masks.scored_images(data, settings.split)
    masks.refuse_files_outside(data, predictions, scored, settings.split)
    keys = masks.file_keys(scored)
    settings.refuse_missing(predictions, scored, {keys[p.stem] for p in predictions.glob("*.png") if p.stem in keys})
    return settings.pixel_values(data)


def codes(classes: int) -> type:
    """The smallest unsigned type of a map of ``classes`` classes and the two codes past them:
    ``classes`` (no label: no region, or a prediction that abstains) and ``classes + 1`` (regions
    of different labels overlap)."""
    return np.uint8 if classes + 2 <= 256 else np.uint16 if classes + 2 <= 65536 else np.uint32


def class_maps(
    data: Release, annotator: str, images: pd.DataFrame, index: dict[int, int], classes: int | None = None
) -> Mapping[int, np.ndarray]:
    """``annotator``'s label map of each image as class indices (``index``: label id -> class,
    ``classes`` of them, default ``len(index)``; a label of index ``classes`` is left out),
    rasterised into the smallest type (``codes``) when asked for (``Lazy``: one map in memory at
    a time): ``classes`` where no region lies, ``classes + 1`` where regions of different
    labels overlap (both ignored)."""
    classes = len(index) if classes is None else classes
    none, clash, dtype = classes, classes + 1, codes(classes)
    ids = [int(i) for i in images["image_id"]]
    columns = ["image_id", "annotator", "label_id", "mask"]
    regions = data.image_regions(ids, annotator, columns)
    regions = regions[regions["mask"].notna()]
    drawn: dict[int, list[tuple[dict[str, Any], int]]] = {}
    for image_id, rle, label_id in zip(regions["image_id"], regions["mask"], regions["label_id"], strict=True):
        drawn.setdefault(int(image_id), []).append((rle, index[int(label_id)]))
    shapes = masks.image_sizes(images)

    def rasterised(image_id: int) -> np.ndarray:
        label: np.ndarray = np.full(shapes[image_id], none, dtype=dtype)
        for rle, k in drawn.get(image_id, []):
            mask = geometry.from_rle(rle)
            under = label[mask]  # a pixel another label holds is ignored, whatever comes after
            label[mask] = np.where((under == none) | (under == k), k, clash).astype(dtype)
        return label

    return masks.Lazy(list(shapes), rasterised)


def confusion_of(
    truth: Mapping[int, np.ndarray], predicted: Mapping[int, np.ndarray], classes: int
) -> tuple[np.ndarray, int, int, int, dict[int, float]]:
    """The confusion matrix of ``predicted`` class maps (image id -> classes, ``classes`` where
    the run abstains; a missing image abstains everywhere) against ``truth`` (``class_maps``),
    one ``bincount`` an image, with the pixels the truth ignores, its overlapped pixels, the
    pixels the run abstains on where the truth is labelled, and each image's pixel accuracy (0
    without a prediction, 1 with no pixel to score). Only the truth ignores: an abstaining pixel
    is wrong (the matrix's last column), as mmseg and cityscapesScripts count it."""
    matrix = np.zeros((classes, classes + 1), dtype=np.int64)
    overlapped = ignored = abstained = 0
    accuracy: dict[int, float] = {}
    for image_id, label in truth.items():
        mapped = predicted.get(image_id)
        if mapped is None:
            counts = np.bincount(label.ravel(), minlength=classes + 2)
            joint = np.zeros((classes + 2, classes + 1), dtype=np.int64)
            joint[:, classes] = counts
        else:
            pairs = label.astype(np.int64) * (classes + 1) + mapped
            joint = np.bincount(pairs.ravel(), minlength=(classes + 2) * (classes + 1)).reshape(
                classes + 2, classes + 1
            )
        scored = joint[:classes]
        matrix += scored
        ignored += int(joint[classes:].sum())
        overlapped += int(joint[classes + 1].sum())
        abstained += int(scored[:, classes].sum()) if mapped is not None else 0
        total = int(scored.sum())
        right = int(np.trace(scored[:, :classes]))
        accuracy[int(image_id)] = 0.0 if mapped is None else right / total if total else 1.0
    return matrix, ignored, overlapped, abstained, accuracy


def prediction_files(run: Run[Settings], images: pd.DataFrame) -> dict[int, Path]:
    """Image id -> its map in ``run.predictions`` (``<key>.png``, ``key`` the image id, its
    file's stem or its collection's key: ``file_keys``), for the images of ``images`` that have
    one; a file named by the id comes first."""
    keys = masks.file_keys(images)
    files: dict[int, Path] = {}
    for path in sorted(run.predictions.glob("*.png"), key=lambda p: (not p.stem.isdigit(), p.name)):
        if path.stem in keys:
            files.setdefault(keys[path.stem], path)
    return files


def read_label_maps(
    run: Run[Settings],
    images: pd.DataFrame,
    coding: Coding,
    unknown: Counter[int] | None = None,
    files: Mapping[int, Path] | None = None,
) -> Mapping[int, np.ndarray]:
    """The run's label maps (``prediction_files``) as class indices (``coding.values``;
    ``coding.classes`` where the run abstains: the ignore value, or a value naming no class,
    whose pixels ``unknown`` counts by value), by image id, each read when asked for (``Lazy``:
    read it once); an image without one is absent. ``files``: the run's, listed already (else
    the folder is listed for ``images``)."""
    ids = set(images["image_id"].astype(int))
    files = {i: f for i, f in (files or prediction_files(run, images)).items() if i in ids}
    shapes = masks.image_sizes(images)
    return masks.Lazy(
        list(files),
        lambda i: class_values(
            results.read_label_map(files[i], shapes[i], dtype=None), coding.values, run.given, run.settings.ignore, unknown,
            coding.classes,
        ),
    )  # fmt: skip


@dataclass
class Part:
    """What a batch of images adds to a label-map run: the confusion matrix against each truth,
    the first truth's counts of pixels ignored, overlapped and abstained on, images without a
    map, values naming no label, each image's pixel accuracy, its matrix per source split, and
    iIoU's weighted counts (``protocols.InstanceCounts.increments``, in image order)."""

    matrices: dict[str, np.ndarray]
    counts: Counter[str] = dataclasses.field(default_factory=Counter)
    unknown: Counter[int] = dataclasses.field(default_factory=Counter)
    per_image: dict[int, float] = dataclasses.field(default_factory=dict)
    by_split: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    counted: Counter[str] = dataclasses.field(default_factory=Counter)
    weighted: list[tuple[str, str, float]] = dataclasses.field(default_factory=list)
    # truth -> image id -> its (hit, true, predicted) pixels per class (and the benchmark's terms,
    # against the first truth): what the bootstrap over images sums (``class_counts``)
    counts_by_image: dict[str, dict[int, np.ndarray]] = dataclasses.field(default_factory=dict)


@dataclass
class LabelMaps:
    """The label-map measure the runner streams (``runner.Measure``): each image's map against
    each truth (``Settings.truths``), one confusion matrix an image (``confusion_of``), added up
    batch by batch; the figures flat, per hierarchy level and per source split at the end."""

    run: Run[Settings]
    coding: Coding
    truths: list[str]
    images: pd.DataFrame

    def __post_init__(self) -> None:
        classes = self.coding.classes
        self.total = Part({who: np.zeros((classes, classes + 1), dtype=np.int64) for who in self.truths})
        self.files = prediction_files(self.run, self.images)  # the folder listed once, not once a batch
        self.resampling = bool(self.run.settings.resamples)
        self.split_of = masks.source_split_of(self.images)
        self.weighted = (
            protocols.InstanceCounts() if self.coding.benchmark and self.coding.benchmark.instances else None
        )

    def process(self, batch: pd.DataFrame) -> Part:
        """A batch's part: one image's maps at a time, each read once."""
        data, coding, classes, first = self.run.data, self.coding, self.coding.classes, self.truths[0]
        shapes = masks.image_sizes(batch)
        truth = {who: class_maps(data, who, batch, coding.truth, classes) for who in self.truths}
        bench = coding.benchmark
        instances = _instances(data, batch, first, bench) if self.weighted is not None and bench else {}
        part = Part({who: np.zeros((classes, classes + 1), dtype=np.int64) for who in self.truths})
        for image_id in batch["image_id"].astype(int).tolist():
            path = self.files.get(image_id)
            values = results.read_label_map(path, shapes[image_id], dtype=None) if path is not None else None
            given = {}
            if values is not None:
                ignore = self.run.settings.ignore
                given[image_id] = class_values(values, coding.values, self.run.given, ignore, part.unknown, classes)
            for who in self.truths:
                label = truth[who][image_id]
                matrix, skipped, clashing, abstaining, accuracy = confusion_of({image_id: label}, given, classes)
                part.matrices[who] += matrix
                if who != first:
                    if self.resampling:  # against every annotator: the headline is their mean
                        part.counts_by_image.setdefault(who, {})[image_id] = class_counts(matrix).ravel()
                    continue
                if (split := self.split_of.get(image_id)) is not None:
                    part.by_split[split] = part.by_split.get(split, 0) + matrix
                    part.counted[split] += 1
                part.counts.update(ignored=skipped, overlapped=clashing, abstained=abstaining, without=not given)
                part.per_image |= accuracy
                added: list[tuple[str, str, float]] = []
                if self.weighted is not None and bench is not None:  # iIoU: an image without a map abstains
                    mapped = given.get(image_id, np.full(shapes[image_id], classes))
                    raw = values if values is not None else np.full(shapes[image_id], -1)
                    added = self.weighted.increments(bench, label, raw, mapped, instances.get(image_id, []))
                    part.weighted += added
                if self.resampling:  # kept only for the bootstrap: 3 x classes an image, and the benchmark's terms
                    found = class_counts(matrix).ravel()
                    if bench is not None and (bench.categories or bench.instances):
                        found = np.r_[found, protocols.ImageTerms(bench).of(matrix, added)]
                    part.counts_by_image.setdefault(who, {})[image_id] = found
        return part

    def add(self, part: Part) -> None:
        total = self.total
        for who, matrix in part.matrices.items():
            total.matrices[who] += matrix
        for split, matrix in part.by_split.items():
            total.by_split[split] = total.by_split.get(split, 0) + matrix
        total.counts.update(part.counts)
        total.unknown.update(part.unknown)
        total.counted.update(part.counted)
        total.per_image |= part.per_image
        for who, counts in part.counts_by_image.items():
            total.counts_by_image.setdefault(who, {}).update(counts)
        if self.weighted is not None:
            self.weighted.apply(part.weighted)

    def compute(self) -> dict[str, Any]:
        """The report's figures (``score``), the human ceiling aside."""
        names, classes, bench, total = self.coding.names, self.coding.classes, self.coding.benchmark, self.total
        matrix = total.matrices[self.truths[0]]
        used = [int(k) for k in np.flatnonzero(matrix[:, :classes].sum(axis=0) + matrix.sum(axis=1))]
        flat = measures.measures(matrix, names)
        report: dict[str, Any] = {
            "truth": self.truths if self.run.settings.all_annotators else self.truths[0],
            "benchmark": bench.report() if bench is not None else {"name": protocols.PLAIN, "classes": classes},
            "images": len(self.images),
            "images_without_prediction": total.counts["without"],
            "ignored_pixels": total.counts["ignored"],
            "overlapping_labels_pixels": total.counts["overlapped"],
            # Where the truth is labelled and the run gives the ignore value or a value naming no
            # label: wrong pixels, not left out (the values naming no label, with their pixels).
            "abstained_pixels": total.counts["abstained"],
            "unknown_values": {str(v): n for v, n in sorted(total.unknown.items())},
            "measures": headline(flat),
            "per_class_iou": flat["per_class_iou"],
            "predicted_not_in_truth": flat["predicted_not_in_truth"],  # each in miou at IoU 0 (measures.measures)
            "confusion": measures.sparse_confusion(matrix, names),
            "levels": measures.hierarchical(
                matrix[np.ix_(used, [*used, classes])], [names[k] for k in used], self.run.tree
            ),
            "per_image": total.per_image,
            # each source split's figures (images.split), from the same per-image matrices
            "per_source_split": masks.several(
                {
                    s: {"images": total.counted[s]} | headline(measures.measures(m, names))
                    for s, m in total.by_split.items()
                }
            ),
        }
        if bench is not None and bench.categories:
            per_category = protocols.category_iou(matrix, bench)
            report["measures"]["category_miou"] = float(np.mean(list(per_category.values()))) if per_category else 0.0
            report["per_category_iou"] = per_category
        if self.weighted is not None and bench is not None:
            found = self.weighted.figures(matrix, bench)
            report["measures"] |= {"iiou": found["iiou"], "category_iiou": found["category_iiou"]}
            report["per_class_iiou"], report["per_category_iiou"] = found["per_class_iiou"], found["per_category_iiou"]
        report["notes"] = _notes(self.run.settings.ignore, self.run.given, self.coding, total.unknown, flat)
        if self.resampling and not self.run.settings.all_annotators:
            report |= masks.resampled(
                self.images, total.counts_by_image[self.truths[0]], self.figures, self.run.settings
            )
        if self.run.settings.all_annotators:
            figures = ("pixel_accuracy", "mean_class_accuracy", "miou", "fwiou")
            each = {who: {k: measures.measures(m, names)[k] for k in figures} for who, m in total.matrices.items()}
            report["per_annotator"] = each
            report["spread"] = masks.spread(list(each.values()), list(figures))
            report["measures"] = {k: v["mean"] for k, v in report["spread"].items()}  # the headline: the mean
            if self.resampling:  # each annotator's figures on the same resamples, averaged

                def mean(sums: np.ndarray) -> dict[str, np.ndarray]:
                    found = flat_figures(sums.reshape(len(sums), 3, classes))
                    return {k: v for k, v in found.items() if k in figures}

                counts = [{i: c[: 3 * classes] for i, c in total.counts_by_image[who].items()} for who in self.truths]
                report |= masks.resampled(self.images, counts, mean, self.run.settings)
        return report

    def figures(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        """The headline figures of summed per-image vectors (``process``: ``class_counts`` flat,
        then the benchmark's ``protocols.ImageTerms``), rows of resamples."""
        classes, bench = self.coding.classes, self.coding.benchmark
        counts = sums[:, : 3 * classes].reshape(len(sums), 3, classes)
        found = flat_figures(counts)
        if bench is not None and (bench.categories or bench.instances):
            found |= protocols.ImageTerms(bench).figures(sums[:, 3 * classes :], counts[:, 2] - counts[:, 0])
        return found


def class_counts(matrix: np.ndarray) -> np.ndarray:
    """Per class, the pixels predicted right (hit), the truth's (true) and the prediction's
    (predicted) of a confusion matrix (``confusion_of``: its last column no prediction): shape
    (3, classes), all the flat figures need."""
    classes = matrix.shape[0]
    counts: np.ndarray = np.stack([np.diag(matrix[:, :classes]), matrix.sum(axis=1), matrix[:, :classes].sum(axis=0)])
    return counts


def flat_figures(sums: np.ndarray) -> dict[str, np.ndarray]:
    """``measures.measures``' headline figures of many summed ``class_counts`` at once (shape
    (k, 3, classes)): each figure's k values, by the same formulas."""
    hit, true, predicted = sums[:, 0], sums[:, 1], sums[:, 2]
    union = true + predicted - hit
    present, labelled = union > 0, true > 0
    iou = np.divide(hit, union, out=np.zeros_like(hit), where=present)
    accuracy = np.divide(hit, true, out=np.zeros_like(hit), where=labelled)
    total = true.sum(axis=1)

    def mean(values: np.ndarray, where: np.ndarray) -> np.ndarray:
        n = where.sum(axis=1)
        found: np.ndarray = np.divide((values * where).sum(axis=1), n, out=np.zeros(len(values)), where=n > 0)
        return found

    share = np.divide(true, total[:, None], out=np.zeros_like(true), where=total[:, None] > 0)
    return {
        "pixel_accuracy": np.divide(hit.sum(axis=1), total, out=np.zeros(len(hit)), where=total > 0),
        "mean_class_accuracy": mean(accuracy, labelled),
        "miou": mean(iou, present),
        "fwiou": (share * iou).sum(axis=1),
        "miou_truth_classes": mean(iou, labelled),
    }


def headline(flat: dict[str, Any]) -> dict[str, Any]:
    """The figures of ``measures.measures`` the report heads with (its per-class lists apart)."""
    return {k: v for k, v in flat.items() if k not in ("per_class_iou", "predicted_not_in_truth")}


def score(run: Run[Settings]) -> dict[str, Any]:
    """The confusion matrix of the run against each truth, its figures flat and per hierarchy
    level, per image pixel accuracy and the human ceiling, as the settings' benchmark scores them
    (``client.benchmarks``: Cityscapes adds its category IoU and iIoU), streamed by the runner."""
    images = masks.scored_images(run.data, run.settings.split)
    coding = coding_of(run.data, run.settings)
    measure = LabelMaps(run, coding, run.settings.truths(run.data), images)
    report = stream(measure, image_batches(images), run.cores)
    report["human_ceiling"] = semantic_ceiling(run.data, images, coding, run.cores)
    return report


def _instances(
    data: Release, batch: pd.DataFrame, who: str, benchmark: protocols.Benchmark
) -> dict[int, list[tuple[str, np.ndarray]]]:
    """Per image of ``batch``, ``who``'s instances of the classes the benchmark weighs in iIoU
    (regions of those labels, crowds aside): (label, mask)."""
    ids = [int(i) for i in batch["image_id"]]
    columns = ["image_id", "label", "iscrowd", "mask"]
    regions = data.image_regions(ids, who, columns)
    chosen = regions["mask"].notna() & ~regions["iscrowd"].astype(bool) & regions["label"].isin(benchmark.instances)
    out: dict[int, list[tuple[str, np.ndarray]]] = {}
    for image_id, label, rle in regions.loc[chosen, ["image_id", "label", "mask"]].itertuples(index=False):
        out.setdefault(int(image_id), []).append((str(label), geometry.from_rle(rle)))
    return out


def _notes(
    ignore: int, value_of: dict[int, int] | None, coding: Coding, unknown: Counter[int], flat: dict[str, Any]
) -> list[str]:
    """What the output says of how the maps were read: an ignore value that is a label's id
    (its pixels read as abstaining), the values naming no label (counted wrong), and the
    classes predicted that the truth lacks (``flat``: ``measures.measures``)."""
    notes = []
    index, names = coding.values, coding.names
    named = value_of if value_of is not None else {i: i for i in index}
    if coding.benchmark is None and ignore in named and named[ignore] in index:
        notes.append(
            f"the ignore value {ignore} is the id of label {names[index[named[ignore]]]}: its pixels in a map "
            "are read as abstaining (wrong); give --ignore with a value no label has, e.g. 65535"
        )
    if unknown:
        shown = masks.few([f"{v} ({n} px)" for v, n in sorted(unknown.items())])
        hint = "; 0 is 'other' in ADE20K's maps: --ignore 0 names it" if 0 in unknown and ignore != 0 else ""
        notes.append(
            f"pixel values naming no label of the release, counted wrong: {shown}; "
            f"give --label-names if the maps number labels otherwise{hint}"
        )
    if absent := flat["predicted_not_in_truth"]:
        notes.append(
            f"{len(absent)} classes the truth lacks are predicted ({masks.few(absent)}): each counts as IoU 0 in miou, the mean "
            "over the classes in the truth or the prediction (mmseg's and cityscapesScripts' rule); over the truth's "
            f"classes alone miou_truth_classes {flat['miou_truth_classes']:.4f}"
        )
    return notes


@dataclass
class Ceiling:
    """The human ceiling as a measure the runner streams: each human's label maps scored against
    each other human's, one confusion matrix a pair, added batch by batch; pixel accuracy and mIoU
    of each human (the mean over the others) and over them at the end."""

    data: Release
    coding: Coding
    people: list[str]

    def __post_init__(self) -> None:
        k = self.coding.classes
        self.pairs = {(a, b): np.zeros((k, k + 1), dtype=np.int64) for a in self.people for b in self.people if a != b}

    def process(self, batch: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
        classes, truth = self.coding.classes, self.coding.truth
        maps = {
            a: dict(class_maps(self.data, a, batch, truth, classes)) for a in self.people
        }  # each used by every other
        out = {}
        for a, b in self.pairs:
            predicted = {i: np.minimum(label, classes) for i, label in maps[a].items()}  # unlabelled by a: abstains
            out[(a, b)] = confusion_of(maps[b], predicted, classes)[0]
        return out

    def add(self, part: dict[tuple[str, str], np.ndarray]) -> None:
        for pair, matrix in part.items():
            self.pairs[pair] += matrix

    def compute(self) -> dict[str, Any]:
        each = {}
        for a in self.people:
            runs = [measures.measures(self.pairs[(a, b)], self.coding.names) for b in self.people if b != a]
            each[a] = {k: float(np.mean([r[k] for r in runs])) for k in ("pixel_accuracy", "miou")}
        return masks.ceiling(each)


def semantic_ceiling(data: Release, images: pd.DataFrame, coding: Coding, cores: int = 1) -> dict[str, Any]:
    """Each human's label maps scored against each other human's (``Ceiling``), over the
    benchmark's classes (``coding``); none where no two humans drew a scored image."""
    people = masks.humans(data)
    if len(people) < 2 or not masks.paired(data, images):
        return {}
    return stream(Ceiling(data, coding, people), image_batches(images), cores)


def pixel_values(names: Path | Mapping[str, str], data: Release) -> dict[int, int]:
    """A map of pixel value -> label name (a JSON file, or the map itself), as label id per value."""
    path = names if isinstance(names, Path) else "--label-names"
    try:
        given = errors.read_json(names, "a JSON map of pixel values to labels") if isinstance(names, Path) else names
    except ValueError as exc:
        raise TaskError(f"{path}: {exc}") from None
    ids = dict(zip(data.vocabulary["label"], data.vocabulary["label_id"].astype(int), strict=True))
    if not isinstance(given, dict):
        raise TaskError(f"{path}: a JSON object of pixel value -> label name")
    out = {}
    for value, label in given.items():
        if not str(value).isdigit() or label not in ids:
            raise TaskError(f"{path}: {value!r}: {label!r} is not a pixel value and a label of the release")
        out[int(value)] = ids[label]
    return out


def class_values(
    values: np.ndarray,
    index: dict[int, int],
    value_of: dict[int, int] | None,
    ignore: int,
    unknown: Counter[int] | None = None,
    classes: int | None = None,
) -> np.ndarray:
    """Pixel values -> class indices in the smallest type (``codes``); ``classes`` (default
    ``len(index)``: abstains) for the ignore value and for a value naming no label
    (``value_of``: pixel value -> label id, else the values are label ids; ``index``: label id
    -> class), whose pixels ``unknown`` counts by value; a value ``index`` sends to ``classes``
    is known, and wrong."""
    classes = len(index) if classes is None else classes
    low = min(int(values.min()), 0) if values.size else 0  # a 32-bit PNG may hold negative values
    counts = np.bincount((values - low).ravel()) if values.size else np.zeros(0, dtype=np.int64)
    lookup: np.ndarray = np.full(len(counts), classes, dtype=codes(classes))  # pixel value - low -> class
    for k in np.flatnonzero(counts).tolist():
        value = k + low
        label_id = value_of.get(value) if value_of is not None else value
        if value == ignore:
            continue
        if label_id is None or label_id not in index:
            if unknown is not None:
                unknown[value] += int(counts[k])
            continue
        lookup[k] = index[label_id]
    mapped: np.ndarray = lookup[values - low] if low else lookup[values]
    return mapped


def shapes(run: Run[Settings], report: dict[str, Any]) -> Iterator[tuple[int, list[Shape]]]:
    """(image id, its labels) for every scored image, in id order, a batch of images at a time:
    each label the map gives, its pixels as one shape, with its area, the share of them the
    truth labels the same and the truth's labels under them (``truth``: label -> pixels; pixels
    the truth ignores aside)."""
    data = run.data
    coding = coding_of(data, run.settings)
    names = coding.names
    images = masks.scored_images(data, run.settings.split)
    files = prediction_files(run, images)  # the folder listed once
    for batch in batches(images):
        predicted = read_label_maps(run, batch, coding, files=files)
        chosen = batch[batch["image_id"].isin(list(predicted))]
        truth = class_maps(data, str(run.settings.annotator), chosen, coding.truth, coding.classes)
        for image_id in batch["image_id"].astype(int):
            classes = predicted.get(int(image_id))
            if classes is None:
                yield int(image_id), []
                continue
            label = truth[int(image_id)]
            ignore = label >= len(names)
            areas = np.bincount(classes.ravel(), minlength=len(names) + 1)[: len(names)]  # abstaining aside
            scored = np.bincount(classes[~ignore].ravel(), minlength=len(names) + 1)[: len(names)]
            agreeing = np.bincount(classes[~ignore & (label == classes)].ravel(), minlength=len(names) + 1)[
                : len(names)
            ]
            under = np.bincount(
                classes[~ignore].astype(np.int64) * (len(names) + 1) + label[~ignore], minlength=(len(names) + 1) ** 2
            ).reshape(len(names) + 1, len(names) + 1)  # predicted x true
            yield int(image_id), [
                Shape(names[k], classes == k,
                      facts={"area": int(areas[k]), "right": float(agreeing[k] / scored[k]) if scored[k] else None,
                             "truth": {names[t]: int(under[k, t]) for t in np.flatnonzero(under[k, : len(names)])}})
                for k in np.flatnonzero(areas).tolist()
            ]  # fmt: skip
