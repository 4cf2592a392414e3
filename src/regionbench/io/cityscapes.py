"""Cityscapes as distributed: ``leftImg8bit/<split>/<city>/<name>_leftImg8bit.png`` and
``gtFine/<split>/<city>/<name>_gtFine_instanceIds.png`` (16-bit), with
``gtCoarse/.../<name>_gtCoarse_instanceIds.png`` where present.

Two annotators: ``fine`` (gtFine) and ``coarse`` (gtCoarse, on the images it covers). A value of
an instance map is a region: class x 1000 + instance for an object of a class with instances,
the class id for stuff, and for a thing class's pixels without an instance id (Cityscapes'
groups, such as ``cargroup``) a crowd region, which COCO-style scoring ignores. Value 0
(``unlabeled``) is the annotator's ignore mask. The official label table (the 34 labels of
``cityscapesscripts.helpers.labels``) is the vocabulary: each label under its category, its id,
``trainId``, ``hasInstances`` and ``ignoreInEval`` kept in ``source_categories``. The split is
the folder (train, val, test, train_extra).
"""

from __future__ import annotations

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
    export_maps,
    read_map,
    safe_label,
    shard_run,
)
from regionbench.io.layouts import About, Exports, NamesCategories, Reading, ReleaseTables, TreeVocabulary, image_files
from regionbench.io.shards import image_id_of

# (id, name, trainId, category, hasInstances, ignoreInEval): cityscapesscripts/helpers/labels.py
LABELS = (
    (0, "unlabeled", 255, "void", False, True), (1, "ego vehicle", 255, "void", False, True),
    (2, "rectification border", 255, "void", False, True), (3, "out of roi", 255, "void", False, True),
    (4, "static", 255, "void", False, True), (5, "dynamic", 255, "void", False, True),
    (6, "ground", 255, "void", False, True), (7, "road", 0, "flat", False, False),
    (8, "sidewalk", 1, "flat", False, False), (9, "parking", 255, "flat", False, True),
    (10, "rail track", 255, "flat", False, True), (11, "building", 2, "construction", False, False),
    (12, "wall", 3, "construction", False, False), (13, "fence", 4, "construction", False, False),
    (14, "guard rail", 255, "construction", False, True), (15, "bridge", 255, "construction", False, True),
    (16, "tunnel", 255, "construction", False, True), (17, "pole", 5, "object", False, False),
    (18, "polegroup", 255, "object", False, True), (19, "traffic light", 6, "object", False, False),
    (20, "traffic sign", 7, "object", False, False), (21, "vegetation", 8, "nature", False, False),
    (22, "terrain", 9, "nature", False, False), (23, "sky", 10, "sky", False, False),
    (24, "person", 11, "human", True, False), (25, "rider", 12, "human", True, False),
    (26, "car", 13, "vehicle", True, False), (27, "truck", 14, "vehicle", True, False),
    (28, "bus", 15, "vehicle", True, False), (29, "caravan", 255, "vehicle", True, True),
    (30, "trailer", 255, "vehicle", True, True), (31, "train", 16, "vehicle", True, False),
    (32, "motorcycle", 17, "vehicle", True, False), (33, "bicycle", 18, "vehicle", True, False),
)  # fmt: skip
UNLABELED = 0
INSTANCE_BASE = 1000
ANNOTATORS = {"fine": "gtFine", "coarse": "gtCoarse"}
IMAGES = "leftImg8bit"


class Format:
    """Cityscapes' files (``labelmaps.MapFormat``)."""

    image_formats: tuple[str, ...] = ("PNG",)
    image_modes: tuple[str, ...] = ("RGB",)
    map_modes: tuple[str, ...] = ("I;16", "I", "L")  # 16-bit instance ids; Pillow opens them as I;16 or I
    ignore_values: tuple[int, ...] = (UNLABELED,)

    def meaning(self, value: int) -> Meaning | str:
        class_id, instance = (value // INSTANCE_BASE, value) if value >= INSTANCE_BASE else (value, None)
        if not 0 <= class_id < len(LABELS):
            return f"value {value}: class id {class_id} is outside Cityscapes' label table (0-33)"
        _, name, _, _, has_instances, _ = LABELS[class_id]
        if instance is not None and not has_instances:
            return f"value {value}: {name!r} (class {class_id}) has no instances in Cityscapes' label table"
        return Meaning(class_id, safe_label(name), instance, crowd=has_instances and instance is None)

    def agrees(self, root: Path, item: Item, maps: dict[str, np.ndarray]) -> tuple[str, str] | None:
        """Each annotator's ``*_labelIds.png`` beside its instance map, where there is one, must
        give every pixel the class its instance id does (``class x 1000 + instance`` or the class);
        (the label map, the reason) where it does not; a ValueError for one that cannot be read."""
        for who, values in maps.items():
            labels = label_ids_of(item.maps[who])
            if labels not in item.also:
                continue
            given = read_map(Path(root) / labels, ("L", "P"), values.shape).astype(np.int64)
            classes = np.where(values >= INSTANCE_BASE, values // INSTANCE_BASE, values)
            if (differ := int(np.count_nonzero(given != classes))) > 0:
                return (
                    labels,
                    f"{Path(labels).name} gives {differ} pixels another class than {Path(item.maps[who]).name}",
                )
        return None


FORMAT = Format()


def label_ids_of(instance_map: str) -> str:
    """The ``*_labelIds.png`` beside an ``*_instanceIds.png`` (paths relative to the root)."""
    return instance_map.removesuffix("_instanceIds.png") + "_labelIds.png"


def stem_of(path: Path, suffix: str) -> str:
    """``aachen_000000_000019`` of ``aachen_000000_000019_<suffix>.png``."""
    return path.name[: -len(f"_{suffix}.png")]


@cache
def _items(root: str, state: str) -> tuple[Item, ...]:
    """Every image and map of the tree by (split, city, name), sorted (``state``: the listing's
    fingerprint, so an edit lists again)."""
    base = Path(root)
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for path in base.glob(f"{IMAGES}/*/*/*_{IMAGES}.png"):
        key = (path.parts[-3], path.parts[-2], stem_of(path, IMAGES))
        found.setdefault(key, {"maps": {}})["image"] = path.relative_to(base).as_posix()
    for who, folder in ANNOTATORS.items():
        for path in base.glob(f"{folder}/*/*/*_{folder}_instanceIds.png"):
            key = (path.parts[-3], path.parts[-2], stem_of(path, f"{folder}_instanceIds"))
            found.setdefault(key, {"maps": {}})["maps"][who] = path.relative_to(base).as_posix()
    return tuple(
        Item(
            f"{split}/{city}/{name}", entry.get("image"), entry["maps"], split, image_id_of(name),
            also=tuple(sorted(label_ids_of(m) for m in entry["maps"].values() if (base / label_ids_of(m)).is_file())),
        )
        for (split, city, name), entry in sorted(found.items())
    )  # fmt: skip


def items(root: Path) -> tuple[Item, ...]:
    """``_items`` of the tree as it is now."""
    listing = sorted(str(p) for folder in (IMAGES, *ANNOTATORS.values()) for p in Path(root).glob(f"{folder}/*/*"))
    return _items(str(root), "\n".join(listing))


class CityscapesLayout(ImageRuns, NamesCategories, Exports):
    """Cityscapes as distributed (module docstring)."""

    name = "cityscapes"
    expects = "leftImg8bit/<split>/<city>/*_leftImg8bit.png and gtFine/<split>/<city>/*_gtFine_instanceIds.png"
    about = About(
        benchmark="cityscapes",  # what scores its label maps (regionbench.scoring.protocols)
        baselines="labels",  # the learnt pixel classifier (regionbench.baselines)
        evaluation_splits=("val",),  # its test labels are the server's
        summary="from Cityscapes files as distributed: each object and stuff class a region of the fine "
        "(and where present coarse) instance maps, the unlabelled pixels each annotator's ignore mask",
        tag="cityscapes",
        keyword="Cityscapes",
        name="The Cityscapes Dataset for Semantic Urban Scene Understanding",
        creators="expert-generated",
        original="https://www.cityscapes-dataset.com/",
        citation=(
            "@inproceedings{cordts2016cityscapes, title={The Cityscapes Dataset for Semantic Urban Scene "
            "Understanding}, author={Cordts, Marius and Omran, Mohamed and Ramos, Sebastian and Rehfeld, Timo and "
            "Enzweiler, Markus and Benenson, Rodrigo and Franke, Uwe and Roth, Stefan and Schiele, Bernt}, "
            "booktitle={Proceedings of the IEEE Conference on Computer Vision and Pattern Recognition (CVPR)}, "
            "year={2016}}"
        ),
        fields={
            "regions.category_id": "Cityscapes' label id (the official label table)",
            "regions.annotation_id": "the instance id as the map stores it (class x 1000 + instance); null for stuff",
            "regions.iscrowd": "a thing class's pixels without an instance id (a group of objects)",
            "images.split": "the split folder (train, val, test, train_extra)",
        },
    )
    official_measures = ()

    def detect(self, root: Path) -> bool:
        return (Path(root) / IMAGES).is_dir() and any((Path(root) / f).is_dir() for f in ANNOTATORS.values())

    def check(self, root: Path) -> None:
        """Nothing beyond ``detect``: each file's problems are the shard's to report."""

    def listing(self, root: Path) -> list[Listed]:
        """Every item's image and maps (``items``)."""
        return [item.listed for item in items(Path(root))]

    def inputs(self, root: Path) -> list[str]:
        return []

    def annotators(self, root: Path) -> list[str]:
        return [who for who, folder in ANNOTATORS.items() if (Path(root) / folder).is_dir()]

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> MapReader:
        run = shard_run(items(root), shard, reading.shard_size)
        return MapReader(root, shard, run, reading, FORMAT, self.annotators(root))

    def category_files(self, root: Path) -> list[str]:
        return []  # the label table is the format's

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """The 34 labels with their ids, each under its category."""
        tree = hierarchy()
        tree.write_yaml(Path(out) / "hierarchy.yaml", "Cityscapes' label table: each label under its category.")
        names = "".join(f"{n}\t{safe_label(n)}\n" for _, n, *_ in LABELS if safe_label(n) != n)
        (Path(out) / "category_names.tsv").write_text(f"name\tlabel\n{names}", encoding="utf-8")
        return TreeVocabulary(tree.labels, {"labels": len(LABELS)}, {safe_label(n): i for i, n, *_ in LABELS})

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        return [
            {"annotator": who, "category_id": i, "name": name, "supercategory": category,
             "label": safe_label(name) if safe_label(name) in reading.words else None,
             "train_id": train_id, "has_instances": has, "ignore_in_eval": ignored}
            for who in self.annotators(root)
            for i, name, train_id, category, has, ignored in LABELS
        ]  # fmt: skip

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release as a Cityscapes tree (``export_release``)."""
        counts = export_release(release, Path(out), images, annotator)
        return [f"{out}: {n} maps of {who}" for who, n in counts.items()] + (
            [] if images else [f"{out}: {IMAGES}/ is empty: copy the image files in, or pass --images ROOT"]
        )


def frame_of(path: str) -> tuple[str, str]:
    """A release image's (city, frame): its file's folder and its stem less ``_leftImg8bit``."""
    p = Path(path)
    return p.parent.name, p.stem.removesuffix(f"_{IMAGES}")


def export_release(release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> dict[str, int]:
    """Write each annotator's regions (``annotator``: only theirs; default: fine and coarse, those
    the release has) as Cityscapes' ``<kind>/<split>/<city>/<frame>_<kind>_instanceIds.png``
    (16-bit: an instance's value as the source gave it, class x 1000 + instance; a class id
    elsewhere; 0 unlabelled where the ignore mask or no region lies) and ``_labelIds.png`` (8-bit
    class ids), and with ``images`` the image files, checked against their sha256, under
    ``leftImg8bit/``. Returns the maps written per annotator."""
    from regionbench.core.errors import InputError

    present = set(release.arrow("regions", ["annotator"]).column("annotator").to_pylist())
    if not present & set(ANNOTATORS):  # no annotator is Cityscapes': the release is another collection's
        raise InputError(
            f"export --format cityscapes writes a Cityscapes release (annotators {' and '.join(ANNOTATORS)}); this "
            f"one's are {', '.join(sorted(present)) or 'none'}: export it in its own format (the card names it), or "
            "as coco or classmap"
        )
    chosen = [annotator] if annotator else [a for a in ANNOTATORS if a in present]
    if any(a not in ANNOTATORS for a in chosen):
        raise InputError(
            f"--annotator {annotator}: Cityscapes' maps are fine or coarse (the release has "
            f"{', '.join(sorted(present & set(ANNOTATORS)))})"
        )
    counts = {}
    for who in chosen:
        kind = ANNOTATORS[who]

        def target(row: dict[str, Any], suffix: str, kind: str = kind) -> Path:
            city, frame = frame_of(row["path"])
            return out / kind / str(row["split"] or "train") / city / f"{frame}_{kind}_{suffix}.png"

        counts[who] = export_maps(
            release, who, lambda row: target(row, "instanceIds"),
            lambda r: int(r["annotation_id"] if r["annotation_id"] is not None else r["category_id"]),
            UNLABELED, np.uint16,
        )  # fmt: skip
        export_maps(
            release, who, lambda row: target(row, "labelIds"), lambda r: int(r["category_id"]), UNLABELED, np.uint8
        )
    if images is not None:
        rows = {r["image_id"]: r for r in release.arrow("images", ["image_id", "path", "split"]).to_pylist()}
        for image_id, content in image_files(release, Path(images), sorted(rows)):
            city, frame = frame_of(rows[image_id]["path"])
            path = out / IMAGES / str(rows[image_id]["split"] or "train") / city / f"{frame}_{IMAGES}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return counts


def hierarchy() -> Hierarchy:
    """entity -> the label table's categories -> its labels (``sky`` is both: the label stands
    for its category)."""
    nodes = {"entity": Node("entity", None)}
    for _, name, _, category, _, _ in LABELS:
        label = safe_label(name)
        if category != label:
            nodes.setdefault(category, Node(category, "entity"))
        nodes[label] = Node(label, "entity" if category == label else category)
    return Hierarchy("entity", nodes)


LAYOUT = CityscapesLayout()
