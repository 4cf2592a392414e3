"""ADE20K as the scene-parsing benchmark distributes it: ``[ADEChallengeData2016/]`` holding
``images/{training,validation}/<name>.jpg``, ``annotations/<split>/<name>.png`` (8-bit, the
class index per pixel, 0 = other) and ``objectInfo150.txt`` (or ``.csv``: the 150 classes,
``Idx`` and ``Name``).

One annotator, ``ade20k``. This format has no instances: a region is a class's pixels in an
image (its ``category_id`` the class index). Value 0 ("other", no class of the 150) is the
image's ignore mask, as the benchmark ignores it. A class's label is the first of its names
as a vocabulary key (``building, edifice`` -> ``building``); the names stay in
``source_categories``. An image's id is the first 63 bits of the sha256 of its name (training
and validation number their images alike); its split the folder.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.io.coco.split import is_panoptic_file
from regionbench.io.labelmaps import (
    ImageRuns,
    Item,
    Listed,
    MapReader,
    Meaning,
    export_annotator,
    export_maps,
    safe_label,
    sampled_values,
    shard_run,
)
from regionbench.io.layouts import About, Exports, NamesCategories, Reading, ReleaseTables, TreeVocabulary, image_files
from regionbench.io.shards import IngestError, image_id_of

ANNOTATOR = "ade20k"
SAMPLE = 16  # maps a tree's class table is checked against before a build reads it
OTHER = 0
SPLITS = ("training", "validation")  # the benchmark's folders
INFO = ("objectInfo150.txt", "objectInfo150.csv")


def base(root: Path) -> Path:
    """The folder holding ``images/`` and ``annotations/``: the root or its ``ADEChallengeData2016/``."""
    root = Path(root)
    inner = root / "ADEChallengeData2016"
    return inner if (inner / "annotations").is_dir() else root


def info_file(folder: Path) -> Path | None:
    return next((folder / n for n in INFO if (folder / n).is_file()), None)


@cache
def classes(path: str, state: str) -> dict[int, tuple[str, str]]:
    """Class index -> (its names as the file gives them, its label) from an objectInfo150 file
    (tab-separated ``.txt`` or ``.csv``, columns ``Idx`` and ``Name``; ``state``: its
    fingerprint). A label two classes would share takes its index (``screen-130``). Raises
    IngestError naming the file when it lacks the columns."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    rows = list(csv.DictReader(text.splitlines(), delimiter="\t" if path.endswith(".txt") else ","))
    if not rows or not {"Idx", "Name"} <= set(rows[0]):
        raise IngestError(f"{Path(path).name}: no Idx and Name columns; use the file ADEChallengeData2016 ships")
    found: dict[int, tuple[str, str]] = {}
    taken: set[str] = set()
    for row in rows:
        try:
            index = int(row["Idx"])
        except (TypeError, ValueError):
            raise IngestError(f"{Path(path).name}: Idx {row['Idx']!r} is not a number") from None
        name = (row["Name"] or "").strip()
        label = safe_label(name.split(",")[0]) or f"class-{index}"
        label = f"{label}-{index}" if label in taken else label
        taken.add(label)
        found[index] = (name, label)
    return found


def table(root: Path) -> dict[int, tuple[str, str]]:
    """``classes`` of the tree's objectInfo150 file."""
    path = info_file(base(root))
    if path is None:
        raise IngestError(f"{root}: no {' or '.join(INFO)}")
    stat = path.stat()
    return classes(str(path), f"{stat.st_size}:{stat.st_mtime_ns}")


class Format:
    """The scene-parsing files (``labelmaps.MapFormat``)."""

    image_formats: tuple[str, ...] = ("JPEG",)
    image_modes: tuple[str, ...] = ("RGB", "L")
    map_modes: tuple[str, ...] = ("L", "P")
    ignore_values: tuple[int, ...] = (OTHER,)

    def __init__(self, known: dict[int, tuple[str, str]]) -> None:
        self.known = known

    def meaning(self, value: int) -> Meaning | str:
        if value not in self.known:
            return f"class index {value} is not in objectInfo150 (1-{max(self.known, default=0)}, 0 other)"
        return Meaning(value, self.known[value][1])


def items(root: Path) -> list[Item]:
    """Every image and map of the tree by (split, name), sorted."""
    folder = base(root)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in folder.glob("images/*/*.jpg"):
        found.setdefault((path.parent.name, path.stem), {"maps": {}})["image"] = path.relative_to(root).as_posix()
    for path in folder.glob("annotations/*/*.png"):
        entry = found.setdefault((path.parent.name, path.stem), {"maps": {}})
        entry["maps"][ANNOTATOR] = path.relative_to(root).as_posix()
    first: dict[str, str] = {}  # image name -> the first item of it (training before validation)
    out = []
    for (split, name), e in sorted(found.items()):
        key = f"{split}/{name}"
        copy_of = first.setdefault(name, key)
        out.append(Item(key, e.get("image"), e["maps"], split, image_id_of(name), None if copy_of == key else copy_of))
    return out


class Ade20kLayout(ImageRuns, NamesCategories, Exports):
    """ADE20K's scene-parsing benchmark files (module docstring)."""

    name = "ade20k"
    expects = "images/<split>/*.jpg, annotations/<split>/*.png and objectInfo150.txt (ADEChallengeData2016)"
    about = About(
        benchmark="ade20k",  # what scores its label maps (regionbench.scoring.protocols)
        baselines="labels",  # the learnt pixel classifier (regionbench.baselines)
        evaluation_splits=("validation",),  # the challenge's published figures
        summary="from the ADE20K scene-parsing benchmark files (ADEChallengeData2016): a region per class "
        "present in an image (the format has no instances), the pixels of no class each image's ignore mask",
        tag="ade20k",
        keyword="ADE20K",
        name="ADE20K, the MIT Scene Parsing Benchmark (ADEChallengeData2016)",
        creators="expert-generated",
        original="https://groups.csail.mit.edu/vision/datasets/ADE20K/",
        citation=(
            "@inproceedings{zhou2017scene, title={Scene Parsing through ADE20K Dataset}, author={Zhou, Bolei and "
            "Zhao, Hang and Puig, Xavier and Fidler, Sanja and Barriuso, Adela and Torralba, Antonio}, "
            "booktitle={Proceedings of the IEEE Conference on Computer Vision and Pattern Recognition (CVPR)}, "
            "year={2017}}"
        ),
        fields={
            "regions.category_id": "the class index of objectInfo150 (1-150)",
            "images.split": "the folder: training or validation",
        },
    )
    official_measures = ()

    def detect(self, root: Path) -> bool:
        """Its images and maps, and its own class table or split names: a tree of another
        collection laid out alike (COCO-Stuff's train2017/) is not claimed."""
        folder = base(Path(root))
        maps = [p for p in (folder / "annotations").glob("*/") if not is_panoptic_file(p.with_suffix(".json"))]
        own = info_file(folder) is not None or any(p.name in SPLITS for p in maps)
        return own and (folder / "images").is_dir() and any(any(p.glob("*.png")) for p in maps)

    def check(self, root: Path) -> None:
        """The class table must be there (without it no value has a name), and a sample of the
        maps must hold only values it names: another collection laid out alike (COCO-Stuff's
        maps hold 0-181) is refused, never read as ADE20K."""
        other = (
            "another collection of class maps (COCO-Stuff, ...) enters as a class-map folder: its classes.csv beside "
            "images/ and labels/ (layout: classmap)"
        )
        info = info_file(base(Path(root)))
        if info is None:
            raise IngestError(
                f"has images/ and annotations/ as ADE20K's scene-parsing files do but no {' or '.join(INFO)}; if it "
                f"is ADEChallengeData2016, its objectInfo150.txt names the 150 classes: put it there; {other}"
            )
        known = table(Path(root))
        for path, values in sampled_values(Path(root), items(Path(root)), ANNOTATOR, SAMPLE):
            if unknown := sorted(values - set(known) - {OTHER}):
                raise IngestError(
                    f"{path.relative_to(root)} holds values {unknown[:5]} that {info.name} does "
                    f"not name (1-{max(known, default=0)}, 0 other): this is not ADE20K's scene-parsing tree; {other}"
                )

    def listing(self, root: Path) -> list[Listed]:
        """Every item's image and maps (``items``)."""
        return [item.listed for item in items(Path(root))]

    def inputs(self, root: Path) -> list[str]:
        path = info_file(base(Path(root)))
        return [str(path)] if path else []

    def annotators(self, root: Path) -> list[str]:
        return [ANNOTATOR]

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> MapReader:
        run = shard_run(items(Path(root)), shard, reading.shard_size)
        return MapReader(root, shard, run, reading, Format(table(Path(root))), [ANNOTATOR])

    def category_files(self, root: Path) -> list[str]:
        path = info_file(base(Path(root)))
        return [str(path)] if path else []

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """The 150 classes with their indices as ids, flat under ``entity`` (the benchmark has no hierarchy)."""
        known = table(Path(root))
        nodes = {"entity": Node("entity", None)} | {label: Node(label, "entity") for _, label in known.values()}
        tree = Hierarchy("entity", nodes)
        tree.write_yaml(Path(out) / "hierarchy.yaml", "ADE20K's scene-parsing classes (objectInfo150), flat.")
        names = "".join(f"{name}\t{label}\n" for name, label in known.values() if name != label)
        (Path(out) / "category_names.tsv").write_text(f"name\tlabel\n{names}", encoding="utf-8")
        return TreeVocabulary(tree.labels, {"labels": len(known)}, {label: i for i, (_, label) in known.items()})

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        return [
            {"annotator": ANNOTATOR, "category_id": i, "name": name, "supercategory": None,
             "label": label if label in reading.words else None}
            for i, (name, label) in sorted(table(Path(root)).items())
        ]  # fmt: skip

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release as ADEChallengeData2016 (``export_release``)."""
        written = export_release(release, Path(out), images, annotator)
        return [
            f"{out}: {written} maps"
            + ("" if images else "; images/ is empty: copy the image files in, or pass --images ROOT")
        ]


def export_release(release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> int:
    """Write ``annotator``'s regions (default ``ade20k``, else the only annotator) as
    ``ADEChallengeData2016/annotations/<split>/<name>.png`` (8-bit class indices, the regions'
    ``category_id``; 0 "other" where the ignore mask or no region lies), ``objectInfo150.txt``
    (``Idx`` and ``Name`` of the source's classes, else of the vocabulary's labels by id) and,
    with ``images``, the image files checked against their sha256. Returns the maps written.
    Raises InputError for a class index an 8-bit map cannot hold."""
    from regionbench.core.errors import InputError

    regions = release.arrow("regions", ["annotator", "label_id", "label", "category_id"]).to_pylist()
    who = export_annotator({r["annotator"] for r in regions}, ANNOTATOR, annotator)
    mine = [r for r in regions if r["annotator"] == who]
    if too_big := sorted(
        {r["category_id"] for r in mine if r["category_id"] is not None and not 0 < r["category_id"] < 256}
    ):
        raise InputError(f"class indices {too_big[:5]} do not fit ADE20K's 8-bit maps (1-255); export as classmap")
    root = out / "ADEChallengeData2016"

    def target(row: dict[str, Any]) -> Path:
        return root / "annotations" / str(row["split"] or "training") / f"{Path(row['path']).stem}.png"

    def value(r: dict[str, Any]) -> int:
        return int(r["category_id"] if r["category_id"] is not None else r["label_id"])

    written = export_maps(release, who, target, value, OTHER, np.uint8)
    names = {value(r): r["label"] for r in mine}
    if "source_categories" in getattr(release, "manifest", {}).get("tables", {}):
        names |= {
            int(r["category_id"]): r["name"]
            for r in release.arrow("source_categories", ["annotator", "category_id", "name"]).to_pylist()
            if r["annotator"] == who
        }
    rows = "".join(f"{i}\t{name}\n" for i, name in sorted(names.items()) if i != OTHER)
    root.mkdir(parents=True, exist_ok=True)
    (root / INFO[0]).write_text(f"Idx\tName\n{rows}", encoding="utf-8")
    if images is not None:
        found = {r["image_id"]: r for r in release.arrow("images", ["image_id", "path", "split"]).to_pylist()}
        for image_id, content in image_files(release, Path(images), sorted(found)):
            row = found[image_id]
            path = root / "images" / str(row["split"] or "training") / Path(row["path"]).name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return written


LAYOUT = Ade20kLayout()
