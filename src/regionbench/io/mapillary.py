"""Mapillary Vistas as distributed: ``config.json`` (v1.2; ``config_v2.0.json`` for v2.0), whose
``labels`` list names each class by its index (``name``, ``readable``, ``evaluate``,
``instances``, ``color``), and per split (``training``, ``validation``) ``images/<key>.jpg``
with ``labels/<key>.png`` (v2.0: ``v2.0/labels/``), 8-bit palette PNGs of the class index.

One annotator, ``mapillary``; a region per class present in an image (the class maps: the
``instances/`` PNGs are not read), ``void--unlabeled`` the ignore mask; a class under the first
part of its name (``object--vehicle--car`` under ``object``); the split the folder.
``regionbench export --format mapillary`` writes a release back with its ``config.json``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from regionbench.io.classmap import Class, TableMaps, paired
from regionbench.io.labelmaps import Item, safe_label
from regionbench.io.layouts import About
from regionbench.io.shards import IngestError

CONFIGS = (("config.json", "labels"), ("config_v2.0.json", "v2.0/labels"))
SPLITS = ("training", "validation")
UNLABELED = "void--unlabeled"


def config(root: Path) -> tuple[Path, str] | None:
    """The tree's label table and the folder (below a split) of its maps."""
    return next(((Path(root) / c, m) for c, m in CONFIGS if (Path(root) / c).is_file()), None)


@cache
def read_config(path: str, state: str) -> dict[int, Class]:
    """Class index -> ``Class`` of a Vistas config (``state``: its fingerprint). Raises
    IngestError naming the file when it has no ``labels`` list of named classes."""
    name = Path(path).name
    try:
        labels = json.loads(Path(path).read_text(encoding="utf-8")).get("labels")
    except (ValueError, AttributeError):
        labels = None
    if not isinstance(labels, list) or not all(isinstance(x, dict) and x.get("name") for x in labels):
        raise IngestError(f"{name}: no labels list of named classes; use the config.json Mapillary Vistas ships")
    found: dict[int, Class] = {}
    taken: set[str] = set()
    for k, entry in enumerate(labels):
        full = str(entry["name"])
        label = safe_label(str(entry.get("readable") or full.split("--")[-1]))
        label = f"{label}-{k}" if label in taken else label
        taken.add(label)
        parent = full.split("--")[0] if "--" in full else None
        found[k] = Class(k, full, label, safe_label(parent) if parent else None, full == UNLABELED, None)
    return found


class MapillaryLayout(TableMaps):
    """Mapillary Vistas (module docstring)."""

    name = "mapillary"
    annotator = "mapillary"
    expects = "config.json (or config_v2.0.json) with training/ and validation/ images/ and labels/ (Mapillary Vistas)"
    about = About(
        summary="from Mapillary Vistas' class maps: a region per class present in a street-level image, its "
        "unlabelled pixels the ignore mask",
        tag="mapillary-vistas",
        keyword="Mapillary Vistas",
        name="Mapillary Vistas",
        creators="expert-generated",
        original="https://www.mapillary.com/dataset/vistas",
        citation=(
            "@inproceedings{neuhold2017mapillary, title={The Mapillary Vistas Dataset for Semantic Understanding of "
            "Street Scenes}, author={Neuhold, Gerhard and Ollmann, Tobias and Rota Bul{\\\\`o}, Samuel and "
            "Kontschieder, Peter}, booktitle={ICCV}, year={2017}}"
        ),
        fields={"regions.category_id": "the class index in config.json's labels", "images.split": "the folder"},
    )

    def detect(self, root: Path) -> bool:
        found = config(root)
        return found is not None and any((Path(root) / s / found[1]).is_dir() for s in SPLITS)

    def classes(self, root: Path) -> dict[int, Class]:
        found = config(root)
        if found is None:
            raise IngestError(f"{root}: no {' or '.join(c for c, _ in CONFIGS)}")
        stat = found[0].stat()
        return read_config(str(found[0]), f"{stat.st_size}:{stat.st_mtime_ns}")

    def items(self, root: Path) -> list[Item]:
        found = config(root)
        maps = found[1] if found else CONFIGS[0][1]
        return paired(Path(root), [(s, Path(s) / "images", Path(s) / maps) for s in SPLITS], self.annotator)

    def table_files(self, root: Path) -> list[str]:
        found = config(root)
        return [str(found[0])] if found else []

    def map_target(self, row: dict[str, Any]) -> Path:
        return Path(row["split"] or "training") / "labels" / f"{Path(row['path']).stem}.png"

    def image_target(self, row: dict[str, Any]) -> Path:
        return Path(row["split"] or "training") / "images" / Path(row["path"]).name

    def write_table(self, out: Path, classes: list[dict[str, Any]]) -> None:
        labels = [
            {"name": c["name"], "readable": c["name"].split("--")[-1].replace("-", " ").capitalize(),
             "evaluate": not c["ignore"]}
            for c in sorted(classes, key=lambda c: int(c["id"]))
        ]  # fmt: skip
        (out / CONFIGS[0][0]).write_text(json.dumps({"labels": labels}, indent=2) + "\n", encoding="utf-8")


LAYOUT = MapillaryLayout()
