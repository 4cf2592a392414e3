"""BSDS500 as distributed: ``[data/]images/{train,val,test}/<id>.jpg`` and
``[data/]groundTruth/<split>/<id>.mat``, each a cell ``groundTruth`` of structs, one per human,
whose ``Segmentation`` labels the image's pixels from 1 (``Boundaries`` is derivable from it and
not read). No converter: every human is an annotator (``human-1`` .. ``human-k``, in the cell's
order: the files do not name the subjects), every segment a region labelled ``segment``
(label-free, as the Berkeley benchmarks are), a shard a run of images in (split, name) order,
the split the image's ``split``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.io.labelmaps import ImageRuns, Listed, shard_run
from regionbench.io.layouts import About, ImageRecord, NamesCategories, Reading, TreeVocabulary
from regionbench.io.shards import Ledger, files_state, image_row, region_row, shard_report

SEGMENT = "segment"  # the label of every region: BSDS segmentations carry none
IMAGE_MODES = ("RGB", "L")


def base(root: Path) -> Path:
    """The folder holding ``images/`` and ``groundTruth/``: the root, or its ``data/``."""
    return root / "data" if (root / "data" / "groundTruth").is_dir() else root


def humans_of(path: Path) -> list[np.ndarray]:
    """The human segmentations of one ground-truth file; raises ValueError with a reason."""
    from regionbench.io.matlab import read_mat

    variables = read_mat(path)
    if "groundTruth" not in variables:
        raise ValueError(f"no cell 'groundTruth' (found {', '.join(sorted(variables)) or 'nothing'})")
    cell = np.asarray(variables["groundTruth"], dtype=object).ravel()
    out = []
    for entry in cell:
        try:
            segmentation = np.asarray(entry["Segmentation"]).squeeze()
            segmentation = np.asarray(segmentation.item() if segmentation.dtype == object else segmentation)
        except (KeyError, ValueError, IndexError, TypeError):
            raise ValueError("a groundTruth entry without a Segmentation matrix") from None
        if segmentation.ndim != 2 or not np.issubdtype(segmentation.dtype, np.integer):
            raise ValueError("a Segmentation that is not a 2-D integer matrix")
        out.append(segmentation)
    if not out:
        raise ValueError("an empty groundTruth cell")
    return out


@cache
def _most_humans(root: str, state: str) -> int:
    """The most humans any file of the tree has (``state``: the tree's fingerprint, so an edit
    reads again), counted from each file's header (``matlab.variable_shapes``): its segmentations
    are decoded once, by the shard that ingests it."""
    from regionbench.io.matlab import variable_shapes

    most = 0
    for path in sorted((base(Path(root)) / "groundTruth").glob("*/*.mat")):
        try:
            shape = variable_shapes(path).get("groundTruth")
        except ValueError:
            continue  # the shard that reads it rejects it, with the reason
        most = max(most, int(np.prod(shape)) if shape is not None else 0)
    return most


def items(root: Path) -> list[tuple[str, str]]:
    """Every (split, name) of the tree that has an image or a ground-truth file, sorted."""
    folder = base(Path(root))
    found = {(p.parent.name, p.stem) for p in folder.glob("images/*/*.jpg")}
    found |= {(p.parent.name, p.stem) for p in folder.glob("groundTruth/*/*.mat")}
    return sorted(found)


class Reader:
    """A run of BSDS500 images being read (``io.layouts.ShardReader``)."""

    def __init__(
        self, root: Path, shard: str, run: Sequence[tuple[str, str]], reading: Reading, annotators: Sequence[str]
    ) -> None:
        self.root, self.shard, self.run, self.reading = Path(root), shard, run, reading
        self.ledger = Ledger(self.root)
        self.annotators = tuple(annotators)
        self.counts = {"images": [0, 0], **{a: [0, 0] for a in self.annotators}}  # seen, accepted

    def records(self) -> Iterator[ImageRecord]:
        folder = base(self.root)
        for split, name in self.run:
            self.counts["images"][0] += 1
            path = folder / "images" / split / f"{name}.jpg"
            rel = path.relative_to(self.root).as_posix()
            truth = folder / "groundTruth" / split / f"{name}.mat"
            if not path.is_file():
                reason = f"ground truth without its image: {rel} is missing"
                self.ledger.reject(truth.relative_to(self.root).as_posix(), path.name, "image", reason)
                continue
            if not name.isascii() or not name.isdigit():
                self.ledger.reject(
                    rel, path.name, "image", "not named <id>.jpg (ASCII digits), as BSDS500 names its images"
                )
                continue
            try:
                image = self.reading.read_image(self.root, path, ("JPEG",), IMAGE_MODES)
            except ValueError as exc:
                self.ledger.reject(rel, path.name, "image", str(exc))
                continue
            try:
                people = humans_of(truth) if truth.is_file() else None
            except ValueError as exc:  # the .mat is what to fix: named, not its image
                where = truth.relative_to(self.root).as_posix()
                self.ledger.reject(where, path.name, "image", f"{truth.name}: {exc}")
                continue
            if people is None:
                self.ledger.reject(
                    rel, path.name, "image", f"no ground truth {truth.relative_to(self.root).as_posix()}"
                )
                continue
            if any(p.shape != (image.height, image.width) for p in people):
                reason = f"a human segmentation is not {image.height}x{image.width} like its image"
                self.ledger.reject(truth.relative_to(self.root).as_posix(), path.name, "image", reason)
                continue
            self.counts["images"][1] += 1
            row = image_row(int(name), self.shard, rel, image, split)
            found: list[tuple[dict[str, Any], np.ndarray | None]] = []
            label_id = self.reading.words.get(SEGMENT)
            for k, labels in enumerate(people):
                who = self.annotators[k]
                values = np.unique(labels)
                values = values[values > 0]  # 0 is no segment
                self.counts[who][0] += len(values)
                if label_id is None:
                    for value in values:
                        reason = f"label {SEGMENT!r} is not a vocabulary label; leave vocabulary_dir unset"
                        self.ledger.reject(
                            truth.relative_to(self.root).as_posix(), f"{path.stem}/{who}/{value}", "region", reason, who
                        )
                    continue
                self.counts[who][1] += len(values)
                for region_id, value in enumerate(values, start=1):
                    mask = labels == value
                    found.append((region_row(row["image_id"], who, region_id, label_id, SEGMENT, mask), mask))
            yield ImageRecord(path.name, image, row, found, tuple(self.annotators[: len(people)]))

    def report(self) -> dict[str, Any]:
        """Images and regions per human: seen, accepted, rejected (``Layout`` contract)."""
        return shard_report(self.shard, self.counts, self.ledger)


class Bsds500Layout(ImageRuns, NamesCategories):
    """BSDS500 as the Berkeley distribution lays it out (module docstring)."""

    name = "bsds500"
    expects = "images/<split>/*.jpg and groundTruth/<split>/*.mat, or BSDS500's data/ holding them"
    about = About(
        summary="from the Berkeley Segmentation Data Set (BSDS500) as distributed: several human segmentations "
        "of each image, without labels",
        tag="bsds500",
        keyword="BSDS500",
        baselines="segmentation",  # the segmenters and edges (regionbench.baselines)
        evaluation_splits=("test",),  # the published benchmark's 200 images
        name="BSDS500, the Berkeley Segmentation Data Set and Benchmarks 500",
        creators="crowdsourced",
        original="https://www2.eecs.berkeley.edu/Research/Projects/CS/vision/grouping/resources.html",
        citation=(
            "@article{arbelaez2011contour, title={Contour Detection and Hierarchical Image Segmentation}, "
            "author={Arbel{\\'a}ez, Pablo and Maire, Michael and Fowlkes, Charless and Malik, Jitendra}, "
            "journal={IEEE Transactions on Pattern Analysis and Machine Intelligence}, volume={33}, number={5}, "
            "pages={898--916}, year={2011}}"
        ),
        fields={"images.split": "the split folder (train, val or test)"},
    )
    official_measures = ()

    def detect(self, root: Path) -> bool:
        folder = base(Path(root))
        return (folder / "groundTruth").is_dir() and (folder / "images").is_dir()

    def check(self, root: Path) -> None:
        """Nothing beyond ``detect``: each file's problems are the shard's to report."""

    def listing(self, root: Path) -> list[Listed]:
        """Each (split, name) of ``items``: its image and its ground-truth file."""
        folder = base(Path(root))
        images = (folder / "images").relative_to(root).as_posix()
        truths = (folder / "groundTruth").relative_to(root).as_posix()
        return [
            Listed(f"{split}/{name}", f"{images}/{split}/{name}.jpg",
                   (f"{images}/{split}/{name}.jpg", f"{truths}/{split}/{name}.mat"))
            for split, name in items(root)
        ]  # fmt: skip

    def inputs(self, root: Path) -> list[str]:
        return []  # each run's files are tracked by its state

    def annotators(self, root: Path) -> list[str]:
        state = files_state(
            root, sorted(p.relative_to(root).as_posix() for p in (base(Path(root)) / "groundTruth").glob("*/*.mat"))
        )
        return [f"human-{k}" for k in range(1, _most_humans(str(root), state) + 1)]

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> Reader:
        return Reader(root, shard, shard_run(items(root), shard, reading.shard_size), reading, self.annotators(root))

    def category_files(self, root: Path) -> list[str]:
        return []  # the one label is the layout's, not the files'

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """The one label ``segment`` under ``entity``."""
        tree = Hierarchy("entity", {"entity": Node("entity", None), SEGMENT: Node(SEGMENT, "entity")})
        tree.write_yaml(
            Path(out) / "hierarchy.yaml", "BSDS500 segmentations carry no labels: every region is a segment."
        )
        (Path(out) / "category_names.tsv").write_text("name\tlabel\n", encoding="utf-8")
        return TreeVocabulary(tree.labels, {"labels": 1})

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        return []  # the files name no categories


LAYOUT = Bsds500Layout()
