"""``panoptic``: COCO panoptic PNGs and their segments JSON.

Panoptic segmentations scored by panoptic quality (``regionbench.scoring.measures.panoptic_quality``), as the COCO
panoptic API scores them, with what it does not give: several crowd segments of a category taken
together, PQ at each level of the release's hierarchy, against each annotator, the human ceiling and
each image's PQ.

Predictions: the COCO panoptic results format every panoptic model writes, a JSON file
(``annotations``: per image ``image_id``, ``file_name`` and ``segments_info`` of ``id`` and
``category_id``) and a folder of RGB PNGs (segment id = R + 256 G + 256^2 B, 0 VOID): the folder
named as the JSON without ``.json`` (as the API defaults), else the JSON's own folder; or a folder
holding one JSON and the PNGs.

Measures: PQ, SQ, RQ (all, things, stuff, per class; the COCO panoptic API's rules), PQ at each
level of the hierarchy, per image.

The truth is the annotator's regions, painted in region order; pixels of no region are VOID.
Category ids are the source's (``source_categories``; a release without them: the label ids);
``isthing`` its ``has_instances`` (a category without one is a thing).
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

from regionbench.core import errors
from regionbench.release.loader import Release
from regionbench.scoring import results
from regionbench.scoring.measures import panoptic_quality as measures
from regionbench.scoring.measures.confusion import at_level
from regionbench.scoring.runner import batches, image_batches, stream
from regionbench.scoring.tasks import _masks as masks
from regionbench.scoring.tasks._base import Resampled, Run, Shape, TaskError

CONVENTIONS = [
    "a predicted and a truth segment of one category match when IoU > 0.5; VOID pixels are left out of the union",
    "truth pixels of no region are VOID; a predicted segment more than half in VOID and its category's crowds is not a false positive",
    "every crowd segment of a category counts together (the COCO panoptic API takes one per category)",
    "a category counts in the averages when it has a TP, FP or FN: a category only predicted has PQ 0",
    "an image without a prediction (--allow-missing): its truth segments are false negatives",
]


@dataclass(frozen=True)
class Settings(masks.FileSettings, Resampled):
    """The panoptic task's settings: the file-per-image mask tasks' (split, annotator, every
    annotator, missing images allowed) and the bootstrap's resamples."""

    def resolve(self, data: Release) -> Settings:
        """The reference annotator named where none is given."""
        annotator = self.annotator if self.annotator or self.all_annotators else masks.reference(data)
        return dataclasses.replace(self, annotator=annotator)


scope_of = masks.scope_of  # the images of the split
default_split = masks.default_split  # the source's evaluation split, where the release has one


@dataclass(frozen=True)
class Classes:
    """The categories scored: ``names`` (labels) in index order, ``things`` per index, the source's
    category id -> index (``by_id``) and label -> index."""

    names: list[str]
    things: np.ndarray
    by_id: dict[int, int]
    by_label: dict[str, int]


def classes(data: Release) -> Classes:
    """The release's categories (module docstring): one per vocabulary label, the source's ids
    (each annotator's, where they agree) naming them, else the label ids."""
    vocabulary = data.vocabulary.sort_values("label_id")
    names = [str(v) for v in vocabulary["label"]]
    by_label = {name: k for k, name in enumerate(names)}
    try:
        source = data.arrow("source_categories").to_pylist()
    except errors.InputError:  # a release made before the table
        source = []
    source = [r for r in source if r["label"] in by_label]
    by_id = {int(r["category_id"]): by_label[r["label"]] for r in source}
    if not by_id:
        by_id = {
            int(i): by_label[str(label)] for i, label in zip(vocabulary["label_id"], vocabulary["label"], strict=True)
        }
    things = np.ones(len(names), dtype=bool)
    for row in source:
        if row["has_instances"] is not None:
            things[by_label[row["label"]]] = bool(row["has_instances"])
    return Classes(names, things, by_id, by_label)


@dataclass(frozen=True)
class Predicted:
    """What ``read`` found: per release image id its PNG and segments (id -> category index)."""

    files: dict[int, tuple[Path, dict[int, int]]]


def image_keys(data: Release) -> dict[str, int]:
    """What a prediction may call an image -> its release id: the id, each annotator's own id
    (``coverage.source_image_id``), its file's name and stem (Cityscapes' without ``_leftImg8bit``)."""
    keys: dict[str, int] = {}
    for image_id, path in data.images[["image_id", "path"]].itertuples(index=False):
        name = Path(str(path)).name
        stem = Path(name).stem
        for key in (str(int(image_id)), name, stem, stem.removesuffix("_leftImg8bit")):
            keys.setdefault(key, int(image_id))
    coverage = data.table("coverage", ["image_id", "source_image_id"])
    for image_id, source_id in coverage.itertuples(index=False):
        if pd.notna(source_id):
            keys.setdefault(str(int(source_id)), int(image_id))
    return keys


def read(predictions: Path, data: Release, settings: Settings) -> Predicted:
    """The results JSON checked: every entry names an image of the scored side once, each
    segment an integer id (not 0, once) of a known category; the PNGs are read when scored."""
    document_path, folder = results.panoptic_files(predictions)
    try:
        document = errors.read_json(document_path, "a COCO panoptic results JSON")
    except ValueError as exc:
        raise TaskError(f"{document_path}: {exc}") from None
    entries = document.get("annotations") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        raise TaskError(f"{document_path}: no annotations list; write the COCO panoptic results format")
    keys, known = image_keys(data), classes(data)
    scored = set(masks.scored_images(data, settings.split)["image_id"].astype(int))
    files: dict[int, tuple[Path, dict[int, int]]] = {}
    unknown, outside = [], 0
    for k, entry in enumerate(entries):
        where = f"{document_path.name}: annotations[{k}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("file_name"), str):
            raise TaskError(f"{where}: an entry without image_id, file_name and segments_info")
        image_id = keys.get(str(entry.get("image_id")), keys.get(Path(entry["file_name"]).stem))
        if image_id is None:
            unknown.append(entry.get("image_id"))
            continue
        if image_id not in scored:
            outside += 1
            continue
        if image_id in files:
            raise TaskError(f"{where}: image {entry.get('image_id')} has a second entry; give each image one")
        files[image_id] = (folder / entry["file_name"], _segments(where, entry.get("segments_info"), known))
    if unknown:
        raise TaskError(
            f"{document_path}: {len(unknown)} entries name no image of the release, e.g. image_id {unknown[0]!r}; "
            "name each by its image's id or file name (an image the build rejected is in the rejects table)"
        )
    if outside:
        raise masks.mask_scope(data, settings.split).refuse(document_path, outside, "predicted images")
    settings.refuse_missing(document_path, masks.scored_images(data, settings.split), set(files))
    return Predicted(files)


def _segments(where: str, listed: object, known: Classes) -> dict[int, int]:
    """An entry's ``segments_info`` as segment id -> category index; a TaskError names the first
    problem (what the COCO panoptic API would stop on)."""
    if not isinstance(listed, list):
        raise TaskError(f"{where}: segments_info is not a list")
    out: dict[int, int] = {}
    for segment in listed:
        number = segment.get("id") if isinstance(segment, dict) else None
        category = segment.get("category_id") if isinstance(segment, dict) else None
        if not isinstance(number, int) or isinstance(number, bool) or not 0 < number < 1 << 24:
            raise TaskError(f"{where}: segment id {number!r} is not an integer in 1 .. 2^24 - 1 (0 is VOID)")
        if not isinstance(category, int) or category not in known.by_id:
            raise TaskError(f"{where}: segment {number} has unknown category_id {category!r}; use the release's ids")
        if number in out:
            raise TaskError(f"{where}: segment id {number} is listed twice")
        out[number] = known.by_id[category]
    return out


def _predicted(path: Path, segments: dict[int, int], shape: tuple[int, int]) -> measures.Segments:
    """A prediction's ``Segments`` from its PNG; a TaskError for a PNG that is not the image's
    RGB map or holds an id the JSON lacks (``refuse_empty`` then checks each segment has pixels)."""
    from regionbench.io.panoptic import read_png

    try:
        return measures.dense(read_png(path, shape), {i: (c, False) for i, c in segments.items()})
    except ValueError as exc:
        raise TaskError(f"{path}: {exc}") from None


def refuse_empty(path: Path, segments: dict[int, int], areas: np.ndarray) -> None:
    """A TaskError naming the segments of a JSON entry without pixels in its PNG (``areas``: each
    predicted segment's, in id order after VOID: a histogram's column sums)."""
    if empty := [i for k, i in enumerate(sorted(segments), start=1) if areas[k] == 0]:
        raise TaskError(f"{path}: segments {empty[:5]} of its JSON entry have no pixels in the PNG")


def truth_segments(data: Release, who: str, batch: pd.DataFrame, known: Classes) -> Mapping[int, measures.Segments]:
    """``who``'s segments of each image of ``batch``, made when asked for (``Lazy``): its regions
    in region order (a later one keeps a pixel two hold), pixels of none VOID, painted from their
    runs (``panoptic.paint``; faster-coco-eval's C++ mask module reads the compressed RLE)."""
    from faster_coco_eval import mask_api_new_cpp

    ids = [int(i) for i in batch["image_id"]]
    columns = ["image_id", "region_id", "label", "iscrowd", "mask"]
    regions = data.image_regions(ids, who, columns)
    regions = regions[regions["mask"].notna()].sort_values(["image_id", "region_id"])
    grouped = dict(iter(regions.groupby("image_id", sort=True)))
    shapes = masks.image_sizes(batch)

    def segments(image_id: int) -> measures.Segments:
        own = grouped.get(image_id)
        if own is None:
            return measures.Segments(np.zeros(shapes[image_id], np.int32), np.zeros(1, np.int64), np.zeros(1, bool))
        runs = [r["counts"] for r in mask_api_new_cpp.toUncompressedRLE(list(own["mask"]))]
        category = [0, *(known.by_label[str(label)] for label in own["label"])]
        crowd = [False, *(bool(c) for c in own["iscrowd"])]
        return measures.Segments(measures.paint(shapes[image_id], runs), np.array(category), np.array(crowd))

    return masks.Lazy(list(shapes), segments)


def _levels(run: Run[Settings], known: Classes) -> dict[str, np.ndarray]:
    """Per depth of the hierarchy above the deepest label's: category index -> its ancestor's index."""
    tree = run.tree
    deepest = max((tree.depth(n) for n in known.names if n in tree.nodes), default=0)
    return {
        str(depth): np.array([known.by_label[a] for a in at_level(tree, known.names, depth)], dtype=np.int64)
        for depth in range(1, deepest)
    }


@dataclass(frozen=True)
class Matched:
    """One image scored: whether the run has it, its predicted segments, its tally (category x
    TP, FP, FN, IoU sum) against each truth and at each hierarchy level against the first, the
    first truth's segments and crowd segments, and its PQ (None: nothing to score)."""

    image_id: int
    predicted: bool
    segments: int
    tallies: dict[str, np.ndarray]
    levels: dict[str, np.ndarray]
    truth_segments: int
    crowds: int
    quality: float | None


@dataclass
class Quality:
    """The panoptic measure the runner streams (``runner.Measure``): a batch's images matched
    against each truth (``Matched``, image by image), their tallies added in image order (a run
    scored in batches sums its floats as one scored image by image), the figures at the end."""

    run: Run[Settings]
    known: Classes
    truths: list[str]
    images: pd.DataFrame

    def __post_init__(self) -> None:
        size = len(self.known.names)
        self.levels = _levels(self.run, self.known)
        self.tallies = {who: np.zeros((size, 4)) for who in self.truths}
        self.level_tallies = {depth: np.zeros((size, 4)) for depth in self.levels}
        self.per_image: dict[int, float] = {}
        self.tally_by_image: dict[str, dict[int, np.ndarray]] = {who: {} for who in self.truths}  # the bootstrap's sums
        self.resampling = bool(self.run.settings.resamples)
        self.split_of, self.counted = masks.source_split_of(self.images), Counter[str]()
        self.split_tallies: dict[str, np.ndarray] = {}  # the first truth's tallies per source split
        self.counts: Counter[str] = Counter()

    def process(self, batch: pd.DataFrame) -> list[Matched]:
        given: Predicted = self.run.given
        size, first = len(self.known.names), self.truths[0]
        truth = {who: truth_segments(self.run.data, who, batch, self.known) for who in self.truths}
        out = []
        for image_id, shape in masks.image_sizes(batch).items():
            files = given.files.get(image_id)
            if files is not None:
                predicted = _predicted(*files, shape)
            else:
                predicted = measures.Segments(np.zeros(shape, np.int32), np.zeros(1, np.int64), np.zeros(1, bool))
            tallies, levels = {}, {}
            painted = {who: truth[who][image_id] for who in self.truths}  # each painted once (Lazy)
            for who, mine in painted.items():
                histogram = measures.joint(mine, predicted)
                if who == first and files is not None:
                    refuse_empty(*files, histogram.sum(axis=0))
                tallies[who] = measures.match(mine, predicted, size, histogram).tally
                if who == first:
                    for depth, up in self.levels.items():
                        lifted = measures.match(
                            mine, predicted, size, histogram, up[mine.category], up[predicted.category]
                        )
                        levels[depth] = lifted.tally
            mine = painted[first]
            out.append(Matched(image_id, files is not None, predicted.count, tallies, levels,
                               int((~mine.crowd[1:]).sum()), int(mine.crowd[1:].sum()),
                               measures.image_quality(tallies[first])))  # fmt: skip
        return out

    def add(self, part: list[Matched]) -> None:
        for image in part:
            self.counts.update(without=not image.predicted, predicted=image.segments, truth=image.truth_segments,
                               crowds=image.crowds)  # fmt: skip
            for who, tally in image.tallies.items():
                self.tallies[who] += tally
            if self.resampling:  # kept only for the bootstrap (against every annotator, each one's)
                for who in self.truths if self.run.settings.all_annotators else self.truths[:1]:
                    self.tally_by_image[who][image.image_id] = image.tallies[who]
            if (split := self.split_of.get(image.image_id)) is not None:
                self.split_tallies[split] = self.split_tallies.get(split, 0) + image.tallies[self.truths[0]]
                self.counted[split] += 1
            if image.quality is not None:
                self.per_image[image.image_id] = image.quality
            for depth, tally in image.levels.items():
                self.level_tallies[depth] += tally

    def compute(self) -> dict[str, Any]:
        """The report's figures (``score``), the human ceiling aside."""
        known, tally, counts = self.known, self.tallies[self.truths[0]], self.counts
        report: dict[str, Any] = {
            "truth": self.truths if self.run.settings.all_annotators else self.truths[0],
            "images": len(self.images),
            "images_without_prediction": counts["without"],
            "truth_segments": counts["truth"],
            "crowd_segments": counts["crowds"],
            "predicted_segments": counts["predicted"],
            "measures": measures.summary(tally, known.things),
            "per_class": measures.per_class(tally, known.names, known.things),
            "levels": {depth: measures.average(t) for depth, t in self.level_tallies.items()},
            "per_image": self.per_image,
            "per_source_split": masks.several(
                {
                    s: {"images": self.counted[s]} | measures.summary(t, known.things)
                    for s, t in self.split_tallies.items()
                }
            ),
            "conventions": CONVENTIONS,
            "notes": _notes(tally, counts["without"], len(self.images)),
        }
        if self.resampling:
            # the figures the run has a value of (no stuff category: no stuff PQ)
            defined = {
                f"{g}.{k}" for g, figures in report["measures"].items() for k, v in figures.items() if v is not None
            }
            resampled = lambda sums: {k: v for k, v in summary_figures(sums, known.things).items() if k in defined}  # noqa: E731
            report |= masks.resampled(self.images, self.tally_by_image[self.truths[0]], resampled, self.run.settings)
        if self.run.settings.all_annotators:
            each = {who: measures.average(t) for who, t in self.tallies.items()}
            figures = [k for k in ("pq", "sq", "rq") if all(e[k] is not None for e in each.values())]
            report["per_annotator"] = each
            report["spread"] = masks.spread(list(each.values()), figures)
            report["measures"]["all"] = {k: v["mean"] for k, v in report["spread"].items()}
            if self.resampling:  # "all": each annotator's on the same resamples, averaged; the groups the first's
                whole = {f"all.{k}" for k in figures}
                mean = lambda sums: {k: v for k, v in summary_figures(sums, known.things).items() if k in whole}  # noqa: E731
                tallies = [self.tally_by_image[who] for who in self.truths]
                report |= all_averaged(report, masks.resampled(self.images, tallies, mean, self.run.settings))
        return report


def all_averaged(report: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
    """A report's bootstrap (``intervals``, ``resampled``) with its "all" figures those of
    ``found`` (the mean over the annotators), its things and stuff the first truth's."""

    def mine(values: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if not k.startswith("all.")}

    resampled = report["resampled"] | {"values": mine(report["resampled"]["values"]) | found["resampled"]["values"]}
    return {"intervals": mine(report["intervals"]) | found["intervals"], "resampled": resampled}


def summary_figures(sums: np.ndarray, things: np.ndarray) -> dict[str, np.ndarray]:
    """``measures.summary``'s PQ, SQ and RQ (all, things, stuff) of many summed tallies at once
    (shape (k, categories, 4)): each figure's k values (NaN where no category counts)."""
    each = np.stack([measures.per_category(t) for t in sums])  # (k, categories, 3)
    counted = sums[:, :, measures.TP] + sums[:, :, measures.FP] + sums[:, :, measures.FN] > 0
    out = {}
    for group, members in (("all", np.ones_like(things)), ("things", things), ("stuff", ~things)):
        where = counted & members[None, :]
        n = where.sum(axis=1)
        for j, name in enumerate(("pq", "sq", "rq")):
            total = (each[:, :, j] * where).sum(axis=1)
            out[f"{group}.{name}"] = np.divide(total, n, out=np.full(len(n), np.nan), where=n > 0)
    return out


def score(run: Run[Settings]) -> dict[str, Any]:
    """Each image's predicted segments matched against each truth; PQ, SQ, RQ overall, things,
    stuff, per class, per hierarchy level, per image; the human ceiling; streamed by the runner."""
    known, images = classes(run.data), masks.scored_images(run.data, run.settings.split)
    report = stream(Quality(run, known, run.settings.truths(run.data), images), image_batches(images), run.cores)
    report["human_ceiling"] = ceiling(run.data, images, known, run.cores)
    return report


def _notes(tally: np.ndarray, without: int, images: int) -> list[str]:
    """What a reader of the figures should know: images scored without a prediction, and
    categories that count only false positives (PQ 0 that no truth segment explains)."""
    notes = []
    if without:
        notes.append(
            f"{without} of {images} scored images have no prediction: their truth segments count as false negatives"
        )
    only_predicted = int(((tally[:, measures.TP] + tally[:, measures.FN] == 0) & (tally[:, measures.FP] > 0)).sum())
    if only_predicted:
        notes.append(
            f"{only_predicted} categories are predicted but absent from the truth of the scored images: each counts PQ 0"
        )
    return notes


@dataclass
class HumanQuality:
    """The human ceiling as a measure the runner streams: each human's segments scored against
    each other human's on the images both covered, each (image, human, other human) tally added
    in order, pooled and per human."""

    data: Release
    known: Classes
    people: list[str]

    def __post_init__(self) -> None:
        size = len(self.known.names)
        self.looked = masks.covered(self.data)
        self.pooled, self.each = np.zeros((size, 4)), {who: np.zeros((size, 4)) for who in self.people}

    def process(self, batch: pd.DataFrame) -> list[tuple[str, np.ndarray]]:
        size = len(self.known.names)
        segments = {who: truth_segments(self.data, who, batch, self.known) for who in self.people}
        out = []
        for image_id in masks.image_sizes(batch):
            present = [who for who in self.people if who in self.looked.get(image_id, [])]
            painted = {who: segments[who][image_id] for who in present}  # each painted once, used by every other
            for a in present:
                for b in (b for b in present if b != a):
                    predicted = painted[a]
                    plain = measures.Segments(predicted.ids, predicted.category, np.zeros_like(predicted.crowd))
                    out.append((a, measures.match(painted[b], plain, size).tally))
        return out

    def add(self, part: list[tuple[str, np.ndarray]]) -> None:
        for a, found in part:
            self.pooled += found
            self.each[a] += found

    def compute(self) -> dict[str, Any]:
        return {"per_annotator": {who: measures.average(t) for who, t in self.each.items()}} | {
            k: v for k, v in measures.average(self.pooled).items() if k != "n"
        }


def ceiling(data: Release, images: pd.DataFrame, known: Classes, cores: int = 1) -> dict[str, Any]:
    """Each human's segments scored against each other human's on the images both covered
    (``HumanQuality``): PQ, SQ and RQ pooled over every (image, human, other human) triple, and
    per human (against the others, pooled); none with fewer than two humans."""
    people = masks.humans(data)
    if len(people) < 2 or not masks.paired(data, images):
        return {}
    return stream(HumanQuality(data, known, people), image_batches(images), cores)


def shapes(run: Run[Settings], report: dict[str, Any]) -> Iterator[tuple[int, list[Shape]]]:
    """(image id, its predicted segments) for every scored image, in id order: each segment's
    label, pixels, area, matched IoU and outcome (a match, a false positive, or left out: mostly
    VOID or a crowd of its category)."""
    data, given = run.data, run.given
    assert isinstance(given, Predicted)
    known = classes(data)
    for batch in batches(masks.scored_images(data, run.settings.split)):
        truth = truth_segments(data, str(run.settings.annotator), batch, known)
        for image_id, shape in masks.image_sizes(batch).items():
            if image_id not in given.files:
                yield image_id, []
                continue
            predicted = _predicted(*given.files[image_id], shape)
            histogram = measures.joint(truth[image_id], predicted)
            areas = histogram.sum(axis=0)
            refuse_empty(*given.files[image_id], areas)
            matched = measures.match(truth[image_id], predicted, len(known.names), histogram)
            found = []
            for k in range(1, predicted.count + 1):
                outcome = "matched" if matched.iou[k] > 0 else "unmatched" if matched.false_positive[k] else "left out"
                kind = "thing" if known.things[predicted.category[k]] else "stuff"
                facts = {"kind": kind, "outcome": outcome, "iou": float(matched.iou[k]), "area": int(areas[k])}
                found.append(Shape(known.names[predicted.category[k]], predicted.ids == k, facts=facts))
            yield image_id, found
