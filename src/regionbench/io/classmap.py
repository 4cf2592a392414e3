"""Any collection of class maps, without code: a folder holding ``classes.csv``, ``images/`` and
``labels/`` (each flat, or one folder per split: ``images/<split>/``), an image and its map
sharing a stem (``images/val/0001.jpg``, ``labels/val/0001.png``).

``classes.csv`` names the values of the maps, a row each: ``id`` (the pixel value), ``name``,
and optionally ``parent`` (a class or group name above it: the hierarchy), ``ignore`` (1, true
or yes: the value is void, no class: the image's ignore mask; 0, false, no or empty: a class;
anything else is refused, and so is a class row without a name) and ``colour`` (``#rrggbb``,
read by viewers, not by the release). One annotator, ``labels``. A map is an 8- or 16-bit
one-channel PNG (or a palette PNG, whose indices are the values); each class present in an
image is one region (the format has no instances), its ``category_id`` the class id; a value
``classes.csv`` does not name is a rejected region with its reason. An image's id is its stem
when all digits, else the first 63 bits of the sha256 of its name; its split the folder.
``regionbench export --format classmap`` writes a release back as such a folder.
"""

from __future__ import annotations

import abc
import csv
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy, Node
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

ANNOTATOR = "labels"
CLASSES = "classes.csv"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
TRUE = ("1", "true", "yes")
FALSE = ("", "0", "false", "no")
COLOUR = re.compile(r"#[0-9a-fA-F]{6}")


class Class:
    """One row of ``classes.csv``: its id, name, label (``safe_label``), parent and flags."""

    def __init__(self, id: int, name: str, label: str, parent: str | None, ignore: bool, colour: str | None) -> None:
        self.id, self.name, self.label, self.parent, self.ignore, self.colour = id, name, label, parent, ignore, colour


@cache
def read_classes(path: str, state: str) -> dict[int, Class]:
    """Class id -> ``Class`` of a ``classes.csv`` (``state``: its fingerprint, for the cache).
    Raises IngestError naming the row and what to fix."""
    name = Path(path).name
    rows = list(csv.DictReader(Path(path).read_text(encoding="utf-8-sig", errors="replace").splitlines()))
    if not rows or not {"id", "name"} <= set(rows[0]):
        raise IngestError(f"{name}: no id and name columns; give a header id,name[,parent][,ignore][,colour]")
    found: dict[int, Class] = {}
    labels: set[str] = set()
    for line, row in enumerate(rows, start=2):
        text = (row.get("id") or "").strip()
        if not text.isdigit() or int(text) >= 2**16:
            raise IngestError(f"{name} line {line}: id {text!r} is not a pixel value (0-65535)")
        value = int(text)
        if value in found:
            raise IngestError(f"{name} line {line}: id {value} named twice; each pixel value names one class")
        said = (row.get("ignore") or "").strip().lower()
        if said not in TRUE + FALSE:
            raise IngestError(
                f"{name} line {line}: ignore {row.get('ignore')!r} is neither 1, true, yes (the value is void) nor "
                "0, false, no or empty (a class)"
            )
        ignore = said in TRUE
        if not safe_label(row.get("name") or "") and not ignore:
            raise IngestError(
                f"{name} line {line}: id {value} has no name; name its class, or give ignore=1 if it is void"
            )
        label = safe_label(row.get("name") or "") or f"class-{value}"
        if label in labels:
            raise IngestError(f"{name} line {line}: the name {row.get('name')!r} again; give each class its own")
        labels.add(label)
        colour = (row.get("colour") or row.get("color") or "").strip() or None
        if colour is not None and not COLOUR.fullmatch(colour):
            raise IngestError(f"{name} line {line}: colour {colour!r} is not #rrggbb")
        parent = safe_label(row.get("parent") or "") or None
        found[value] = Class(value, (row.get("name") or "").strip() or label, label, parent, ignore, colour)
    return found


def table(root: Path) -> dict[int, Class]:
    """``read_classes`` of the tree's ``classes.csv``."""
    path = Path(root) / CLASSES
    if not path.is_file():
        raise IngestError(f"{root}: no {CLASSES}")
    stat = path.stat()
    return read_classes(str(path), f"{stat.st_size}:{stat.st_mtime_ns}")


class Format:
    """The folder's files (``labelmaps.MapFormat``)."""

    image_formats: tuple[str, ...] = ("JPEG", "PNG")
    image_modes: tuple[str, ...] = ("RGB", "L")
    map_modes: tuple[str, ...] = ("L", "P", "I;16", "I")

    def __init__(
        self, known: dict[int, Class], unknown: str = f"is not in {CLASSES}; add a row for it (ignore=1 if it is void)"
    ) -> None:
        self.known, self.unknown = known, unknown  # unknown: what a value the table lacks is, and what to do
        self.ignore_values = tuple(sorted(v for v, c in known.items() if c.ignore))

    def meaning(self, value: int) -> Meaning | str:
        if value not in self.known:
            return f"value {value} {self.unknown}"
        return Meaning(value, self.known[value].label)


def paired(
    root: Path,
    folders: Sequence[tuple[str | None, Path, Path]],
    annotator: str,
    suffixes: tuple[str, ...] = IMAGE_SUFFIXES,
) -> list[Item]:
    """The items of a tree whose images and maps share their stems: for each (split, image
    folder, map folder) of ``folders`` (relative to ``root``), every image (``suffixes``) and
    every ``.png`` map, matched by stem, sorted; an image name seen in an earlier split is a
    copy (a reject)."""
    root = Path(root)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for split, images, maps in folders:
        for path in sorted((root / images).glob("*")) if (root / images).is_dir() else []:
            if path.is_file() and path.suffix.lower() in suffixes:
                found.setdefault((split or "", path.stem), {"maps": {}})["image"] = path.relative_to(root).as_posix()
        for path in sorted((root / maps).glob("*.png")) if (root / maps).is_dir() else []:
            entry = found.setdefault((split or "", path.stem), {"maps": {}})
            entry["maps"][annotator] = path.relative_to(root).as_posix()
    first: dict[str, str] = {}
    out = []
    for (split, stem), e in sorted(found.items()):
        key = f"{split}/{stem}" if split else stem
        copy_of = first.setdefault(stem, key)
        image = e.get("image")
        image_id = image_id_of(Path(image or stem).name)
        out.append(Item(key, image, e["maps"], split or None, image_id, None if copy_of == key else copy_of))
    return out


def items(root: Path) -> list[Item]:
    """Every image and map of a class-map folder, flat or one folder per split."""
    root = Path(root)
    splits = sorted({p.name for kind in ("images", "labels") for p in (root / kind).glob("*") if p.is_dir()})
    folders: list[tuple[str | None, Path, Path]] = [(None, Path("images"), Path("labels"))]
    folders += [(split, Path("images") / split, Path("labels") / split) for split in splits]
    return paired(root, folders, ANNOTATOR)


class TableMaps(ImageRuns, NamesCategories, Exports):
    """What the layouts of one class map an image and a class table share: a region per class
    present (no instances), the table's void values the ignore mask, the classes under their
    parents as the vocabulary (the table's ids as label ids), and the maps written back pixel for
    pixel. A layout says how its tree is laid out (``items``, ``detect``), where its table comes
    from (``classes``; ``table_files`` the files it is read from) and where export writes a map
    (``map_target``) and an image (``image_target``)."""

    annotator = ANNOTATOR
    official_measures: tuple[str, ...] = ()
    SAMPLE = 16  # maps checked against the table before a build reads the tree
    # What a map's value the table lacks is, in the words of the format's own table, and what to do.
    unknown = f"is not in {CLASSES}; add a row for it (ignore=1 if it is void)"

    @abc.abstractmethod
    def classes(self, root: Path) -> dict[int, Class]:
        """The class table: pixel value -> ``Class``."""

    @abc.abstractmethod
    def items(self, root: Path) -> list[Item]:
        """Every image of the tree with its map, in shard order."""

    def table_files(self, root: Path) -> list[str]:
        return []

    @abc.abstractmethod
    def map_target(self, row: dict[str, Any]) -> Path:
        """Where export writes an image's map, relative to the export's folder."""

    @abc.abstractmethod
    def image_target(self, row: dict[str, Any]) -> Path:
        """Where export writes an image's file, relative to the export's folder."""

    def write_table(self, out: Path, classes: list[dict[str, Any]]) -> None:
        """Write the class table export read from (a layout whose table is fixed writes none)."""

    def map_format(self, root: Path) -> Format:
        """How the tree's maps are read: a value a class (a layout whose maps encode instances
        says otherwise)."""
        return Format(self.classes(Path(root)), self.unknown)

    def class_values(self, root: Path, values: set[int]) -> set[int]:
        """The classes a map's ``values`` name (the values themselves, where a value is a class)."""
        return values

    def check(self, root: Path) -> None:
        """The table must name a class, and a sample of the maps only values it names: a tree of
        another collection laid out alike is refused, never read as this one."""
        known = self.classes(Path(root))
        if not any(not c.ignore for c in known.values()):
            raise IngestError("its class table names only void values; name the classes too")
        for path, values in sampled_values(Path(root), self.items(Path(root)), self.annotator, self.SAMPLE):
            if unknown := sorted(self.class_values(Path(root), values) - set(known)):
                raise IngestError(
                    f"{path.relative_to(root)} holds values {unknown[:5]} that {self.name}'s classes do not name: this "
                    f"is not a {self.name} tree; set layout to the collection's, or lay it out as a class-map folder "
                    "with its classes.csv (layout: classmap)"
                )

    def listing(self, root: Path) -> list[Listed]:
        return [item.listed for item in self.items(Path(root))]

    def inputs(self, root: Path) -> list[str]:
        return self.table_files(root)

    def annotators(self, root: Path) -> list[str]:
        return [self.annotator]

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> MapReader:
        run = shard_run(self.items(Path(root)), shard, reading.shard_size)
        return MapReader(root, shard, run, reading, self.map_format(Path(root)), [self.annotator])

    def category_files(self, root: Path) -> list[str]:
        return self.table_files(root)

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """The classes under their parents (a parent that is no class is a group), the rest
        under ``entity``; the class ids as label ids."""
        known = [c for c in self.classes(Path(root)).values() if not c.ignore]
        labels = {c.label for c in known}
        nodes = {"entity": Node("entity", None)}
        for c in known:
            if c.parent and c.parent not in labels and c.parent not in nodes:
                nodes[c.parent] = Node(c.parent, "entity")
        for c in known:
            parent = c.parent if c.parent and c.parent != c.label else "entity"
            nodes[c.label] = Node(c.label, parent)
        tree = Hierarchy("entity", nodes)
        tree.write_yaml(Path(out) / "hierarchy.yaml", f"The classes of {self.name}, under their parents.")
        names = "".join(f"{c.name}\t{c.label}\n" for c in known if c.name != c.label)
        (Path(out) / "category_names.tsv").write_text(f"name\tlabel\n{names}", encoding="utf-8")
        return TreeVocabulary(tree.labels, {"labels": len(known)}, {c.label: c.id for c in known})

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        return [
            {"annotator": self.annotator, "category_id": c.id, "name": c.name, "supercategory": c.parent,
             "label": c.label if c.label in reading.words and not c.ignore else None, "ignore_in_eval": c.ignore}
            for c in sorted(self.classes(Path(root)).values(), key=lambda c: c.id)
        ]  # fmt: skip

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release in the layout's files (``export_release``)."""
        counts = export_release(self, release, Path(out), images, annotator)
        return [
            f"{out}: {counts['images']} maps of {counts['annotator']}, {counts['classes']} classes"
            + ("" if images else "; no image files: copy them in, or pass --images ROOT")
        ]


class ClassMapLayout(TableMaps):
    """A folder of images, class maps and ``classes.csv`` (module docstring)."""

    name = "classmap"
    expects = "classes.csv (id,name[,parent][,ignore][,colour]), images/[<split>/]<stem>.jpg|png and labels/[<split>/]<stem>.png"
    about = About(
        summary="from a folder of class maps described by its classes.csv: a region per class present in an image "
        "(the format has no instances), the void values each image's ignore mask",
        tag="class-maps",
        keyword="class maps",
        creators="found",
    )

    def detect(self, root: Path) -> bool:
        root = Path(root)
        return (root / CLASSES).is_file() and (root / "images").is_dir() and (root / "labels").is_dir()

    def classes(self, root: Path) -> dict[int, Class]:
        return table(root)

    def items(self, root: Path) -> list[Item]:
        return items(root)

    def table_files(self, root: Path) -> list[str]:
        path = Path(root) / CLASSES
        return [str(path)] if path.is_file() else []

    def map_target(self, row: dict[str, Any]) -> Path:
        return Path("labels") / (row["split"] or "") / f"{Path(row['path']).stem}.png"

    def image_target(self, row: dict[str, Any]) -> Path:
        return Path("images") / (row["split"] or "") / Path(row["path"]).name

    def write_table(self, out: Path, classes: list[dict[str, Any]]) -> None:
        with (out / CLASSES).open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["id", "name", "parent", "ignore"])
            for c in sorted(classes, key=lambda c: int(c["id"])):
                writer.writerow([c["id"], c["name"], c["parent"] or "", 1 if c["ignore"] else 0])


def export_release(
    layout: TableMaps, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None
) -> dict[str, Any]:
    """Write ``annotator``'s regions (default: the layout's, else the only annotator) as the
    layout's class maps (``layout.map_target``: each region's ``category_id``, else its label id;
    the first void value of the class table where the ignore mask or no region lies, else 0 where
    that is no class, else 65535), the class table (``layout.write_table``: the source's where
    the release keeps it, else the regions' labels and ids) and, with ``images``, the image files
    checked against their sha256 (``layout.image_target``). A map is 8-bit where every value
    fits, else 16-bit."""

    regions = release.arrow("regions", ["annotator", "label_id", "label", "category_id", "mask"]).to_pylist()
    who = export_annotator({r["annotator"] for r in regions}, layout.annotator, annotator)
    mine = [r for r in regions if r["annotator"] == who and r["mask"] is not None]
    classes = _class_rows(release, who, mine)
    void = next((int(c["id"]) for c in classes if c["ignore"]), None)
    used = {int(c["id"]) for c in classes}
    if void is None:
        void = 0 if 0 not in used else 65535
        classes.append({"id": void, "name": "void", "parent": "", "ignore": True})
    wide = max(used | {void}) > 255

    def value(r: dict[str, Any]) -> int:
        return int(r["category_id"] if r["category_id"] is not None else r["label_id"])

    written = export_maps(
        release, who, lambda row: out / layout.map_target(row), value, void, np.uint16 if wide else np.uint8
    )
    out.mkdir(parents=True, exist_ok=True)
    layout.write_table(out, classes)
    if images is not None:
        rows = {r["image_id"]: r for r in release.arrow("images", ["image_id", "path", "split"]).to_pylist()}
        for image_id, content in image_files(release, Path(images), sorted(rows)):
            target = out / layout.image_target(rows[image_id])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    return {"images": written, "annotator": who, "classes": sum(not c["ignore"] for c in classes)}


def _class_rows(release: ReleaseTables, who: str, mine: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The class table to write: the source's (``source_categories`` of ``who``, or of the only
    annotator that has one), else each label of the regions by its id, under its parent."""
    tables = release.arrow("source_categories").to_pylist() if _has(release, "source_categories") else []
    owners = sorted({r["annotator"] for r in tables})
    owner = who if who in owners else owners[0] if len(owners) == 1 else None
    if owner is not None:
        return [
            {"id": int(r["category_id"]), "name": r["name"], "parent": r["supercategory"] or "",
             "ignore": bool(r.get("ignore_in_eval")), "has_instances": bool(r.get("has_instances"))}
            for r in tables
            if r["annotator"] == owner
        ]  # fmt: skip
    found = {int(r["label_id"]): r["label"] for r in mine}
    return [{"id": i, "name": label, "parent": "", "ignore": False} for i, label in sorted(found.items())]


def _has(release: ReleaseTables, name: str) -> bool:
    manifest = getattr(release, "manifest", {}) or {}
    return name in manifest.get("tables", {})


LAYOUT = ClassMapLayout()
