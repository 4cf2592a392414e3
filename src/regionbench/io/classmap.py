"""Any collection of class maps, without code: a folder holding ``classes.csv``, ``images/`` and
``labels/`` (each flat, or one folder per split: ``images/<split>/``), an image and its map
sharing a stem (``images/val/0001.jpg``, ``labels/val/0001.png``).

``classes.csv`` names the values of the maps, a row each: ``id`` (the pixel value), ``name``,
and optionally ``parent`` (a class or group name above it: the hierarchy), ``ignore`` (1, true
or yes: the value is void, no class: the image's ignore mask) and ``colour`` (``#rrggbb``,
read by viewers, not by the release). One annotator, ``labels``. A map is an 8- or 16-bit
one-channel PNG (or a palette PNG, whose indices are the values); each class present in an
image is one region (the format has no instances), its ``category_id`` the class id; a value
``classes.csv`` does not name is a rejected region with its reason. An image's id is its stem
when all digits, else the first 63 bits of the sha256 of its name; its split the folder.
``regionbench export --format classmap`` writes a release back as such a folder.
"""

from __future__ import annotations

import csv
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.io.labelmaps import ImageRuns, Item, Listed, MapReader, Meaning, safe_label, shard_run
from regionbench.io.layouts import About, Exports, NamesCategories, Reading, ReleaseTables, TreeVocabulary, image_files
from regionbench.io.shards import IngestError, image_id_of

ANNOTATOR = "labels"
CLASSES = "classes.csv"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
TRUE = ("1", "true", "yes")
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
        label = safe_label(row.get("name") or "") or f"class-{value}"
        if label in labels:
            raise IngestError(f"{name} line {line}: the name {row.get('name')!r} again; give each class its own")
        labels.add(label)
        colour = (row.get("colour") or row.get("color") or "").strip() or None
        if colour is not None and not COLOUR.fullmatch(colour):
            raise IngestError(f"{name} line {line}: colour {colour!r} is not #rrggbb")
        parent = safe_label(row.get("parent") or "") or None
        ignore = (row.get("ignore") or "").strip().lower() in TRUE
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

    def __init__(self, known: dict[int, Class]) -> None:
        self.known = known
        self.ignore_values = tuple(sorted(v for v, c in known.items() if c.ignore))

    def meaning(self, value: int) -> Meaning | str:
        if value not in self.known:
            return f"value {value} is not in {CLASSES}; add a row for it (ignore=1 if it is void)"
        return Meaning(value, self.known[value].label)


def items(root: Path) -> list[Item]:
    """Every image and map of the folder by (split, stem), sorted."""
    root = Path(root)
    found: dict[tuple[str | None, str], dict[str, Any]] = {}
    for kind, pattern in (("image", "images"), ("map", "labels")):
        for path in sorted((root / pattern).rglob("*")):
            if not path.is_file() or len(path.relative_to(root / pattern).parts) > 2:
                continue
            if (kind == "image" and path.suffix.lower() not in IMAGE_SUFFIXES) or (
                kind == "map" and path.suffix != ".png"
            ):
                continue
            split = path.parent.name if path.parent != root / pattern else None
            entry = found.setdefault((split, path.stem), {"maps": {}})
            if kind == "image":
                entry["image"] = path.relative_to(root).as_posix()
            else:
                entry["maps"][ANNOTATOR] = path.relative_to(root).as_posix()
    first: dict[str, str] = {}
    out = []
    for (split, stem), e in sorted(found.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        key = f"{split}/{stem}" if split else stem
        copy_of = first.setdefault(stem, key)
        image = e.get("image")
        out.append(
            Item(
                key, image, e["maps"], split, image_id_of(Path(image or stem).name), None if copy_of == key else copy_of
            )
        )
    return out


class ClassMapLayout(ImageRuns, NamesCategories, Exports):
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
    official_measures = ()

    def detect(self, root: Path) -> bool:
        root = Path(root)
        return (root / CLASSES).is_file() and (root / "images").is_dir() and (root / "labels").is_dir()

    def check(self, root: Path) -> None:
        """The class table must read, and name a class that is not void."""
        known = table(Path(root))
        if not any(not c.ignore for c in known.values()):
            raise IngestError(f"{CLASSES} names only void values (ignore=1); name the classes too")

    def listing(self, root: Path) -> list[Listed]:
        return [item.listed for item in items(Path(root))]

    def inputs(self, root: Path) -> list[str]:
        path = Path(root) / CLASSES
        return [str(path)] if path.is_file() else []

    def annotators(self, root: Path) -> list[str]:
        return [ANNOTATOR]

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> MapReader:
        run = shard_run(items(Path(root)), shard, reading.shard_size)
        return MapReader(root, shard, run, reading, Format(table(Path(root))), [ANNOTATOR])

    def category_files(self, root: Path) -> list[str]:
        return self.inputs(root)

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """The classes under their parents (a parent that is no class is a group), the rest
        under ``entity``; the class ids as label ids."""
        known = [c for c in table(Path(root)).values() if not c.ignore]
        labels = {c.label for c in known}
        nodes = {"entity": Node("entity", None)}
        for c in known:
            if c.parent and c.parent not in labels and c.parent not in nodes:
                nodes[c.parent] = Node(c.parent, "entity")
        for c in known:
            parent = c.parent if c.parent and c.parent != c.label else "entity"
            nodes[c.label] = Node(c.label, parent)
        tree = Hierarchy("entity", nodes)
        tree.write_yaml(Path(out) / "hierarchy.yaml", f"The classes of {CLASSES}, under their parents.")
        names = "".join(f"{c.name}\t{c.label}\n" for c in known if c.name != c.label)
        (Path(out) / "category_names.tsv").write_text(f"name\tlabel\n{names}", encoding="utf-8")
        return TreeVocabulary(tree.labels, {"labels": len(known)}, {c.label: c.id for c in known})

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        return [
            {"annotator": ANNOTATOR, "category_id": c.id, "name": c.name, "supercategory": c.parent,
             "label": c.label if c.label in reading.words and not c.ignore else None, "ignore_in_eval": c.ignore}
            for c in sorted(table(Path(root)).values(), key=lambda c: c.id)
        ]  # fmt: skip

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release as a class-map folder (``export_release``)."""
        counts = export_release(release, Path(out), images, annotator)
        return [
            f"{out}: {counts['images']} images of {counts['annotator']}, {counts['classes']} classes"
            + ("" if images else "; images/ is empty: copy the image files in, or pass --images ROOT")
        ]


def export_release(release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> dict[str, Any]:
    """Write ``annotator``'s regions (default: ``labels``, else the only annotator) as class maps
    (``labels/[<split>/]<stem>.png``: each region's ``category_id``, else its label id; the
    ignore mask the first void value of the source's classes, else 0 where that is no class,
    else 65535), ``classes.csv`` (the source's class table where the release keeps it, else the
    vocabulary's labels and ids) and, with ``images``, the image files checked against their
    sha256. A map is 8-bit where every value fits, else 16-bit."""
    from PIL import Image

    from regionbench.core import geometry
    from regionbench.core.errors import InputError

    columns = ["image_id", "annotator", "region_id", "label_id", "label", "category_id", "mask"]
    regions = release.arrow("regions", columns).to_pylist()
    people = sorted({r["annotator"] for r in regions} - {"consensus"})
    who = annotator or (ANNOTATOR if ANNOTATOR in people else people[0] if len(people) == 1 else None)
    if who is None or who not in [*people, "consensus"]:
        raise InputError(f"choose whose regions to export with --annotator (one of {', '.join(people)})")
    mine = [r for r in regions if r["annotator"] == who and r["mask"] is not None]
    classes = _class_rows(release, who, mine)
    void = next((int(c["id"]) for c in classes if c["ignore"]), None)
    used = {int(c["id"]) for c in classes}
    if void is None:
        void = 0 if 0 not in used else 65535
        classes.append({"id": void, "name": "void", "parent": "", "ignore": True})
    ignored = {
        r["image_id"]: r["ignore_mask"]
        for r in release.arrow("coverage", ["image_id", "annotator", "ignore_mask"]).to_pylist()
        if r["annotator"] == who and r["ignore_mask"] is not None
    }
    rows = release.arrow("images", ["image_id", "path", "split", "width", "height"]).to_pylist()
    by_image: dict[int, list[dict[str, Any]]] = {}
    for r in mine:
        by_image.setdefault(r["image_id"], []).append(r)
    wide = max(used | {void}) > 255
    named: dict[int, Path] = {}
    for row in sorted(rows, key=lambda r: r["image_id"]):
        folder = Path(row["split"]) if row["split"] else Path()
        stem = Path(row["path"]).stem
        values = np.full((row["height"], row["width"]), void, dtype=np.uint16 if wide else np.uint8)
        for r in sorted(by_image.get(row["image_id"], []), key=lambda r: r["region_id"]):
            value = r["category_id"] if r["category_id"] is not None else r["label_id"]
            values[geometry.from_rle(r["mask"])] = value
        if (mask := ignored.get(row["image_id"])) is not None:
            values[geometry.from_rle(mask)] = void
        target = out / "labels" / folder / f"{stem}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(values).save(target)
        named[row["image_id"]] = out / "images" / folder / f"{stem}{Path(row['path']).suffix.lower()}"
    with (out / CLASSES).open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["id", "name", "parent", "ignore"])
        for c in sorted(classes, key=lambda c: int(c["id"])):
            writer.writerow([c["id"], c["name"], c["parent"] or "", 1 if c["ignore"] else 0])
    (out / "images").mkdir(parents=True, exist_ok=True)
    if images is not None:
        for image_id, content in image_files(release, Path(images), sorted(named)):
            named[image_id].parent.mkdir(parents=True, exist_ok=True)
            named[image_id].write_bytes(content)
    return {"images": len(rows), "annotator": who, "classes": sum(not c["ignore"] for c in classes)}


def _class_rows(release: ReleaseTables, who: str, mine: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The class table to write: the source's (``source_categories`` of ``who``, or of the only
    annotator that has one), else each label of the regions by its id, under its parent."""
    tables = release.arrow("source_categories").to_pylist() if _has(release, "source_categories") else []
    owners = sorted({r["annotator"] for r in tables})
    owner = who if who in owners else owners[0] if len(owners) == 1 else None
    if owner is not None:
        return [
            {"id": int(r["category_id"]), "name": r["name"], "parent": r["supercategory"] or "",
             "ignore": bool(r.get("ignore_in_eval"))}
            for r in tables
            if r["annotator"] == owner
        ]  # fmt: skip
    found = {int(r["label_id"]): r["label"] for r in mine}
    return [{"id": i, "name": label, "parent": "", "ignore": False} for i, label in sorted(found.items())]


def _has(release: ReleaseTables, name: str) -> bool:
    manifest = getattr(release, "manifest", {}) or {}
    return name in manifest.get("tables", {})


LAYOUT = ClassMapLayout()
