"""A labelme semantic-segmentation export (``labelme2voc.py``): ``JPEGImages/<name>.jpg``,
``SegmentationClassPNG/<name>.png`` (palette PNGs of class indices, 255 where labelme's
``__ignore__`` lies) and ``class_names.txt``, which names the classes a line each, the first
(``_background_``) 0. It looks like Pascal VOC but its classes are its own: this layout, not
VOC's, reads it.

One annotator, ``labelme``; a region per class present in an image; the ignore value the
ignore mask; no split (labelme2voc writes none). ``regionbench export --format labelme`` writes
a release back as such a folder.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from regionbench.io.classmap import Class, TableMaps, paired
from regionbench.io.labelmaps import Item, safe_label
from regionbench.io.layouts import About
from regionbench.io.shards import IngestError

NAMES = "class_names.txt"
IGNORE_NAME = "__ignore__"  # labelme2voc's first line: the value -1, saved as 255
VOID = 255
MAPS = ("SegmentationClassPNG", "SegmentationClass")


@cache
def read_names(path: str, state: str) -> dict[int, Class]:
    """Class value -> ``Class`` of a ``class_names.txt`` (``state``: its fingerprint): a name a
    line, ``__ignore__`` (void, 255) aside, the others numbered from 0 in order."""
    names = [line.strip() for line in Path(path).read_text(encoding="utf-8-sig", errors="replace").splitlines()]
    names = [n for n in names if n]
    found: dict[int, Class] = {VOID: Class(VOID, IGNORE_NAME, "ignore", None, True, None)}
    labels: set[str] = set()
    for value, name in enumerate(n for n in names if n != IGNORE_NAME):
        label = "background" if name == "_background_" else safe_label(name)
        if label in labels or value >= VOID:
            raise IngestError(f"{NAMES}: {name!r} named twice, or past 254 classes; one class a line, once")
        labels.add(label)
        found[value] = Class(value, name, label, None, False, None)
    return found


def map_folder(root: Path) -> str | None:
    """The folder of the PNG class maps: labelme2voc's ``SegmentationClassPNG``, else
    ``SegmentationClass`` when it holds PNGs (its own holds ``.npy`` arrays)."""
    return next((m for m in MAPS if (Path(root) / m).is_dir() and any((Path(root) / m).glob("*.png"))), None)


class LabelmeLayout(TableMaps):
    """labelme2voc's export (module docstring)."""

    name = "labelme"
    unknown = "is not in class_names.txt (a class a line, numbered from 0 after __ignore__, which is 255); add its line to class_names.txt"
    annotator = "labelme"
    expects = "class_names.txt beside JPEGImages/ and SegmentationClassPNG/ (labelme2voc's export)"
    about = About(
        summary="from a labelme semantic-segmentation export (labelme2voc): a region per class present in an "
        "image, the classes its class_names.txt names",
        tag="labelme",
        keyword="labelme",
        creators="found",
    )

    def detect(self, root: Path) -> bool:
        return (Path(root) / NAMES).is_file() and (Path(root) / "JPEGImages").is_dir() and map_folder(root) is not None

    def classes(self, root: Path) -> dict[int, Class]:
        path = Path(root) / NAMES
        stat = path.stat()
        return read_names(str(path), f"{stat.st_size}:{stat.st_mtime_ns}")

    def items(self, root: Path) -> list[Item]:
        maps = map_folder(root)
        return paired(Path(root), [(None, Path("JPEGImages"), Path(maps))], self.annotator) if maps else []

    def table_files(self, root: Path) -> list[str]:
        path = Path(root) / NAMES
        return [str(path)] if path.is_file() else []

    def map_target(self, row: dict[str, Any]) -> Path:
        return Path(MAPS[0]) / f"{Path(row['path']).stem}.png"

    def image_target(self, row: dict[str, Any]) -> Path:
        return Path("JPEGImages") / Path(row["path"]).name

    def write_table(self, out: Path, classes: list[dict[str, Any]]) -> None:
        named = sorted((int(c["id"]), c["name"]) for c in classes if not c["ignore"])
        (out / NAMES).write_text(
            "".join(f"{n}\n" for n in [IGNORE_NAME, *(name for _, name in named)]), encoding="utf-8"
        )


LAYOUT = LabelmeLayout()
