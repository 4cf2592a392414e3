"""Mapillary Vistas as distributed: ``config.json`` (v1.2; ``config_v2.0.json`` for v2.0), whose
``labels`` list names each class by its index (``name``, ``readable``, ``evaluate``,
``instances``, ``color``), and per split (``training``, ``validation``) ``images/<key>.jpg``
with ``labels/<key>.png`` (v2.0: ``v2.0/labels/``), 8-bit palette PNGs of the class index, and
``instances/<key>.png`` (v2.0: ``v2.0/instances/``), 16-bit: class index x 256 + instance.

One annotator, ``mapillary``. Where the instance maps are there they are read: each instance of
a class ``config.json`` marks ``instances`` is a region (``annotation_id`` its value), each other
class's pixels one region; else the class maps, a region per class. ``void--unlabeled`` is the
ignore mask; a class sits under the first part of its name (``object--vehicle--car`` under
``object``); the split is the folder. ``regionbench export --format mapillary`` writes a release
back (class maps, instance maps where its regions carry instances, and its ``config.json``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.io.classmap import Class, Format, TableMaps, paired
from regionbench.io.labelmaps import Item, Meaning, export_maps, read_map, safe_label
from regionbench.io.layouts import About, Reading, ReleaseTables
from regionbench.io.shards import IngestError

CONFIGS = (("config.json", "labels"), ("config_v2.0.json", "v2.0/labels"))
INSTANCE_BASE = 256  # an instance map's value: class index x 256 + instance
SPLITS = ("training", "validation")
UNLABELED = "void--unlabeled"


def config(root: Path) -> tuple[Path, str] | None:
    """The tree's label table and the folder (below a split) of its maps."""
    return next(((Path(root) / c, m) for c, m in CONFIGS if (Path(root) / c).is_file()), None)


@cache
def read_config(path: str, state: str) -> dict[int, Class]:
    """Class index -> ``Class`` of a Vistas config (``state``: its fingerprint). Raises
    IngestError naming the file when it is not JSON (cut short, say) or has no ``labels`` list
    of named classes."""
    name = Path(path).name
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise IngestError(f"{name}: not UTF-8 text; use the config.json Mapillary Vistas ships") from None
    except ValueError as exc:  # cut short, or not JSON at all: said so, with where it stops
        raise IngestError(
            f"{name}: not readable JSON ({' '.join(str(exc).split())}); use the config.json Mapillary Vistas ships"
        ) from None
    labels = data.get("labels") if isinstance(data, dict) else None
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


@cache
def read_things(path: str, state: str) -> frozenset[int]:
    """The class indices a Vistas config marks ``instances`` (``state``: its fingerprint)."""
    labels = json.loads(Path(path).read_text(encoding="utf-8")).get("labels") or []
    return frozenset(k for k, entry in enumerate(labels) if isinstance(entry, dict) and entry.get("instances"))


class InstanceFormat(Format):
    """Vistas' instance maps (``labelmaps.MapFormat``): a value is class x 256 + instance; an
    instance of a class with instances is a region of its own, a class without them one."""

    map_modes: tuple[str, ...] = ("I;16", "I")

    def __init__(self, known: dict[int, Class], things: frozenset[int]) -> None:
        super().__init__(known)
        self.things = things
        void = [v for v, c in known.items() if c.ignore]
        self.ignore_values = tuple(v * INSTANCE_BASE + i for v in void for i in range(INSTANCE_BASE))

    def meaning(self, value: int) -> Meaning | str:
        class_id = value // INSTANCE_BASE
        if class_id not in self.known:
            return f"value {value}: class {class_id} is not in config.json's labels"
        return Meaning(class_id, self.known[class_id].label, value if class_id in self.things else None)

    def agrees(self, root: Path, item: Item, maps: dict[str, np.ndarray]) -> tuple[str, str] | None:
        """Each instance map's classes (value // 256) must be those of the class map beside it
        (``labels/`` for ``instances/``), where there is one, as Cityscapes' label ids must be its
        instance ids'; (the class map, the reason) where they are not; a ValueError for one that
        cannot be read."""
        for who, values in maps.items():
            labels = class_map_of(item.maps[who])
            if labels == item.maps[who] or not (Path(root) / labels).is_file():
                continue
            given = read_map(Path(root) / labels, ("L", "P"), values.shape).astype(np.int64)
            if (differ := int(np.count_nonzero(given != values // INSTANCE_BASE))) > 0:
                return labels, f"{labels} gives {differ} pixels another class than the instance map {item.maps[who]}"
        return None


def instance_folder(maps: str) -> str:
    """The instance maps' folder beside a class maps' folder (``labels`` -> ``instances``)."""
    return maps.replace("labels", "instances")


def class_map_of(instance_map: str) -> str:
    """The class map beside an instance map (its last ``instances`` folder ``labels``; paths
    relative to the root)."""
    parts = list(Path(instance_map).parts)
    for k in range(len(parts) - 1, -1, -1):
        if parts[k] == "instances":
            parts[k] = "labels"
            break
    return Path(*parts).as_posix()


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

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        """The classes (``TableMaps``), each with whether config.json gives it instances."""
        found = config(root)
        state = f"{found[0].stat().st_size}:{found[0].stat().st_mtime_ns}" if found else ""
        things = read_things(str(found[0]), state) if found else frozenset()
        return [
            row | {"has_instances": row["category_id"] in things} for row in super().source_categories(root, reading)
        ]

    def instances(self, root: Path) -> bool:
        """Whether the tree has instance maps (then they are read)."""
        found = config(root)
        maps = instance_folder(found[1] if found else CONFIGS[0][1])
        return any((Path(root) / s / maps).is_dir() for s in SPLITS)

    def items(self, root: Path) -> list[Item]:
        found = config(root)
        maps = found[1] if found else CONFIGS[0][1]
        if self.instances(root):
            maps = instance_folder(maps)
        return paired(Path(root), [(s, Path(s) / "images", Path(s) / maps) for s in SPLITS], self.annotator)

    def map_format(self, root: Path) -> Format:
        if not self.instances(root):
            return Format(self.classes(root))
        found = config(root)
        assert found is not None
        stat = found[0].stat()
        return InstanceFormat(self.classes(root), read_things(str(found[0]), f"{stat.st_size}:{stat.st_mtime_ns}"))

    def class_values(self, root: Path, values: set[int]) -> set[int]:
        return {v // INSTANCE_BASE for v in values} if self.instances(root) else values

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The class maps and images (``TableMaps.export``), and the instance maps where the
        regions carry instances (16-bit: an instance's value, a class's index x 256 elsewhere)."""
        lines = super().export(release, out, images, annotator)
        regions = release.arrow("regions", ["annotator", "annotation_id"]).to_pylist()
        who = str(annotator or next((r["annotator"] for r in regions if r["annotator"] != "consensus"), self.annotator))
        if any(r["annotation_id"] is not None for r in regions if r["annotator"] == who):
            void = next(
                int(r["category_id"]) for r in release.arrow("source_categories").to_pylist() if r["ignore_in_eval"]
            )
            export_maps(
                release, who,
                lambda row: Path(out) / (row["split"] or "training") / "instances" / f"{Path(row['path']).stem}.png",
                lambda r: int(r["annotation_id"] if r["annotation_id"] is not None else r["category_id"] * INSTANCE_BASE),
                void * INSTANCE_BASE, np.uint16,
            )  # fmt: skip
        return lines

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
             "evaluate": not c["ignore"]} | ({"instances": True} if c.get("has_instances") else {})
            for c in sorted(classes, key=lambda c: int(c["id"]))
        ]  # fmt: skip
        (out / CONFIGS[0][0]).write_text(json.dumps({"labels": labels}, indent=2) + "\n", encoding="utf-8")


LAYOUT = MapillaryLayout()
