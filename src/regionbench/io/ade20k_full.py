"""ADE20K's full release (``ADE20K_2021_17_01``): ``images/ADE/<split>/<scene>/.../<name>.jpg``
with, beside each image, ``<name>_seg.png`` (its objects), ``<name>_parts_<k>.png`` (the parts
of level k, where there are any) and ``<name>.json`` (its objects' names).

One annotator, ``ade20k``. A mask PNG encodes a pixel's class as (R / 10) x 256 + G and its
instance as B (the encoding of the dataset's ``utils_ade20k.loadAde20K``): every (class,
instance) with a class is a region; class 0 (unlabelled) is the ignore mask. A part of level k
is a region whose ``parent_region_id`` is the region of level k - 1 it overlaps most and whose
``part_level`` is k (whole objects 0). A class's label is the first of the names the JSON files
give its ``name_ndx``, as a vocabulary key; a class no JSON names is a reject. An image's id is
the first 63 bits of the sha256 of its name, its split the folder under ``images/ADE/``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.io.labelmaps import (
    ImageRuns,
    Listed,
    masks_by_value,
    read_map,
    safe_label,
    shard_run,
)
from regionbench.io.layouts import About, ImageRecord, NamesCategories, Reading, TreeVocabulary
from regionbench.io.shards import Ledger, files_state, image_id_of, image_row, region_row, shard_report

ANNOTATOR = "ade20k"
MASK_MODES = ("RGB", "RGBA")
Found = list[tuple[dict[str, Any], np.ndarray]]


def base(root: Path) -> Path:
    """The folder holding ``images/ADE``: the root or the one release folder inside it."""
    root = Path(root)
    if (root / "images" / "ADE").is_dir() or not root.is_dir():
        return root
    inner = sorted(p for p in root.iterdir() if (p / "images" / "ADE").is_dir())
    return inner[0] if inner else root


def decode(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class, instance) per pixel of a mask PNG's RGB values: (R / 10) x 256 + G, and B."""
    rgb = values[..., :3].astype(np.int64)
    return (rgb[..., 0] // 10) * 256 + rgb[..., 1], rgb[..., 2]


def image_paths(root: Path) -> list[Path]:
    """Every image of the tree (not a mask), sorted."""
    return sorted(p for p in (base(root) / "images" / "ADE").rglob("*.jpg"))


@cache
def _names(root: str, state: str) -> dict[int, tuple[str, str]]:
    """Class index -> (the first name the JSON files give its ``name_ndx``, reading them in path
    order, and that name's first part as a ``safe_label`` key; ``state``: their fingerprint). A
    file that is not such JSON names nothing; a key two classes share takes its index after the
    first."""
    found: dict[int, str] = {}
    for path in sorted((base(Path(root)) / "images" / "ADE").rglob("*.json")):
        try:
            objects = json.loads(path.read_text(encoding="utf-8", errors="replace"))["annotation"]["object"]
            pairs = [(int(o["name_ndx"]), str(o["name"])) for o in objects]
        except (ValueError, KeyError, TypeError):
            continue
        for index, name in pairs:
            found.setdefault(index, name)
    named: dict[int, tuple[str, str]] = {}
    taken: set[str] = set()
    for index in sorted(found):
        label = safe_label(found[index].split(",")[0]) or f"class-{index}"
        label = f"{label}-{index}" if label in taken else label
        taken.add(label)
        named[index] = (found[index], label)
    return named


def class_names(root: Path) -> dict[int, tuple[str, str]]:
    """``_names`` of the tree's JSON files as they are now."""
    files = sorted(p.relative_to(root).as_posix() for p in (base(root) / "images" / "ADE").rglob("*.json"))
    return _names(str(root), files_state(root, files))


def json_problem(path: Path, has_objects: bool) -> str | None:
    """Why an image's JSON (its objects' names and ids) cannot stand beside its masks: missing,
    not JSON, without an ``annotation.object`` list, or listing no object while the mask holds
    some (``has_objects``); None when it can."""
    if not path.is_file():
        return f"{path.name} is missing: the full release gives each image its JSON of objects"
    try:
        objects = json.loads(path.read_text(encoding="utf-8"))["annotation"]["object"]
    except (ValueError, UnicodeDecodeError):
        return f"{path.name} is not readable JSON; take the file from the release again"
    except (KeyError, TypeError):
        return f"{path.name} has no annotation.object list"
    if not isinstance(objects, list):
        return f"{path.name}: annotation.object is not a list"
    if not objects and has_objects:
        return f"{path.name} lists no object while its mask holds objects"
    return None


class Reader:
    """A run of ADE20K images being read (``io.layouts.ShardReader``)."""

    annotators = (ANNOTATOR,)

    def __init__(self, root: Path, shard: str, paths: Sequence[Path], reading: Reading) -> None:
        self.root, self.shard, self.paths, self.reading = Path(root), shard, paths, reading
        self.ledger = Ledger(self.root)
        self.labels = {i: label for i, (_, label) in class_names(self.root).items()}
        self.counts = {"images": [0, 0], ANNOTATOR: [0, 0]}  # seen, accepted

    def records(self) -> Iterator[ImageRecord]:
        for path in self.paths:
            self.counts["images"][0] += 1
            rel = path.relative_to(self.root).as_posix()
            try:
                image = self.reading.read_image(self.root, path, ("JPEG",), ("RGB", "L"))
                shape = (image.height, image.width)
                levels = [read_map(path.with_name(f"{path.stem}_seg.png"), MASK_MODES, shape)]
                while (part := path.with_name(f"{path.stem}_parts_{len(levels)}.png")).is_file():
                    levels.append(read_map(part, MASK_MODES, shape))
            except ValueError as exc:
                self.ledger.reject(rel, path.name, "image", str(exc))
                continue
            if (problem := json_problem(path.with_suffix(".json"), bool((decode(levels[0])[0] > 0).any()))) is not None:
                self.ledger.reject(
                    path.with_suffix(".json").relative_to(self.root).as_posix(), path.name, "image", problem
                )
                continue
            self.counts["images"][1] += 1
            split = path.relative_to(base(self.root) / "images" / "ADE").parts[0]
            row = image_row(image_id_of(path.stem), self.shard, rel, image, split)
            found: Found = []
            ignore = np.zeros(shape, dtype=bool)
            above: list[tuple[int, np.ndarray]] = []  # (region id, mask) of the level above
            for level, values in enumerate(levels):
                classes, instances = decode(values)
                if level == 0:
                    ignore = classes == 0
                source = path.with_name(f"{path.stem}_seg.png" if level == 0 else f"{path.stem}_parts_{level}.png")
                here = []
                for key, mask in masks_by_value(np.where(classes > 0, classes * 256 + instances, -1), skip=(-1,)):
                    region = self._region(row["image_id"], source, key, mask, level, above, found)
                    if region is not None:
                        here.append(region)
                above = here
            yield ImageRecord(path.name, image, row, found, (ANNOTATOR,), ignore={ANNOTATOR: ignore})

    def _region(
        self,
        image_id: int,
        source: Path,
        key: int,
        mask: np.ndarray,
        level: int,
        above: list[tuple[int, np.ndarray]],
        found: Found,
    ) -> tuple[int, np.ndarray] | None:
        """One (class, instance) of a level: a region in ``found``, or a reject."""
        class_id, instance = divmod(key, 256)
        self.counts[ANNOTATOR][0] += 1
        label = self.labels.get(class_id)
        reason = None
        if label is None:
            reason = (
                f"class {class_id} has no name in any image's JSON (name_ndx); keep the JSON files beside the images"
            )
        elif label not in self.reading.words:
            reason = f"label {label!r} is not a vocabulary label; leave vocabulary_dir unset to take ADE20K's classes"
        if reason is not None or label is None:
            name = f"{source.name}/class-{class_id}/instance-{instance}"
            self.ledger.reject(source.relative_to(self.root).as_posix(), name, "region", reason or "", ANNOTATOR)
            return None
        parent = None
        if level:
            overlaps = [(int(np.count_nonzero(mask & m)), -rid, rid) for rid, m in above]
            best = max(overlaps, default=(0, 0, None))
            parent = best[2] if best[0] else None
            if parent is None:  # kept as a part of nothing, and counted
                self.ledger.quirks["part_outside_every_object"] += 1
        region_id = len(found) + 1
        row = region_row(
            image_id, ANNOTATOR, region_id, self.reading.words[label], label, mask,
            annotation_id=instance, category_id=class_id, parent_region_id=parent, part_level=level,
        )  # fmt: skip
        found.append((row, mask))
        self.counts[ANNOTATOR][1] += 1
        return region_id, mask

    def report(self) -> dict[str, Any]:
        """Images and regions: seen, accepted, rejected (``Layout`` contract)."""
        return shard_report(self.shard, self.counts, self.ledger)


class Ade20kFullLayout(ImageRuns, NamesCategories):
    """ADE20K's full release (module docstring)."""

    name = "ade20k-full"
    expects = "images/ADE/<split>/.../<name>.jpg with <name>_seg.png (ADE20K_2021_17_01 or its parent)"
    about = About(
        summary="from ADE20K's full release: every object instance a region, its parts (and theirs) child "
        "regions, the unlabelled pixels each image's ignore mask",
        tag="ade20k",
        keyword="ADE20K",
        name="ADE20K",
        creators="expert-generated",
        original="https://groups.csail.mit.edu/vision/datasets/ADE20K/",
        citation=(
            "@inproceedings{zhou2017scene, title={Scene Parsing through ADE20K Dataset}, author={Zhou, Bolei and "
            "Zhao, Hang and Puig, Xavier and Fidler, Sanja and Barriuso, Adela and Torralba, Antonio}, "
            "booktitle={Proceedings of the IEEE Conference on Computer Vision and Pattern Recognition (CVPR)}, "
            "year={2017}}"
        ),
        fields={
            "regions.category_id": "ADE20K's class index (name_ndx; the mask's (R / 10) x 256 + G)",
            "regions.annotation_id": "the instance as the mask's B channel stores it",
            "images.split": "the folder under images/ADE (training or validation)",
        },
    )
    official_measures = ()

    def detect(self, root: Path) -> bool:
        return (base(Path(root)) / "images" / "ADE").is_dir()

    def check(self, root: Path) -> None:
        """Nothing beyond ``detect``: each file's problems are the shard's to report."""

    def listing(self, root: Path) -> list[Listed]:
        """Each image of ``image_paths``: its file, its class and part masks and its JSON (the part
        masks found in one pass over the tree)."""
        root = Path(root)
        parts: dict[str, list[str]] = {}
        for path in sorted((base(root) / "images" / "ADE").rglob("*_parts_*.png")):
            rel = path.relative_to(root).as_posix()
            parts.setdefault(rel[: rel.rindex("_parts_")], []).append(rel)
        listed = []
        for path in image_paths(root):
            rel = path.relative_to(root).as_posix()
            stem = rel.removesuffix(".jpg")
            listed.append(Listed(rel, rel, (rel, f"{stem}_seg.png", f"{stem}.json", *parts.get(stem, []))))
        return listed

    def inputs(self, root: Path) -> list[str]:
        return []

    def annotators(self, root: Path) -> list[str]:
        return [ANNOTATOR]

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> Reader:
        return Reader(root, shard, shard_run(image_paths(Path(root)), shard, reading.shard_size), reading)

    def category_files(self, root: Path) -> list[str]:
        return [str(p) for p in sorted((base(Path(root)) / "images" / "ADE").rglob("*.json"))]

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """The classes the JSON files name, with their indices as ids, flat under ``entity``."""
        labels = {i: label for i, (_, label) in class_names(Path(root)).items()}
        tree = Hierarchy("entity", {"entity": Node("entity", None)} | {x: Node(x, "entity") for x in labels.values()})
        tree.write_yaml(Path(out) / "hierarchy.yaml", "ADE20K's classes as its JSON files name them, flat.")
        names = "".join(f"{n}\t{x}\n" for n, x in class_names(Path(root)).values() if n != x)
        (Path(out) / "category_names.tsv").write_text(f"name\tlabel\n{names}", encoding="utf-8")
        return TreeVocabulary(tree.labels, {"labels": len(labels)}, {label: i for i, label in labels.items()})

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        return [
            {"annotator": ANNOTATOR, "category_id": i, "name": name, "supercategory": None,
             "label": label if label in reading.words else None}
            for i, (name, label) in sorted(class_names(Path(root)).items())
        ]  # fmt: skip


LAYOUT = Ade20kFullLayout()
