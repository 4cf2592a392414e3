"""Subsets A-H and their train/test split (paper §4.1, Table 5; docs/subsets.md).

Subset k holds every region whose label is among the k most frequent labels (ties broken by
label name): A 2, B 3, C 4, D 5, E 10, F 25, G 50, H 100. The split is 70/30 and stratified
by label. A region's side is decided by its label's regions alone: within each label the
regions are ranked by a seeded hash of their key and the first round(0.3 n) go to test. A
label's regions are the same in every subset that holds the label, so subsets nest
(A ⊂ B ⊂ ... ⊂ H) and a region keeps its side in every subset.

Beside the region split every region carries its image's side of the **image split**, which
image-level tasks use: the truth of a test image is all of its labels, so no image may have
regions on both sides. The image split stratifies the images' label sets by iterative
stratification (Sechidis, Tsoumakas and Vlahavas 2011): labels are served rarest first, each
image of the label goes to the side that most lacks that label (then the side that most lacks
images; then a seeded hash), so every label's images split close to 70/30. One split of all
images serves every subset, so the image split nests exactly. With ``split_unit="image"`` the
region split is the image split.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.core.splits import evaluation_split

SUBSET_SIZES = {"A": 2, "B": 3, "C": 4, "D": 5, "E": 10, "F": 25, "G": 50, "H": 100}
TEST_SHARE = 0.3
SPLIT_UNITS = ("region", "image")
SPLITS = ("stratified", "source")  # the config's subsets.split


def source_test_split(splits: Iterable[str | None], wanted: str | None = None, declared: Sequence[str] = ()) -> str:
    """The collection's own split that is the test side under ``subsets.split: source`` (or auto):
    its evaluation split (``regionbench.core.splits.evaluation_split``).

    Parameters: ``splits`` the ``images.split`` of the images that have regions; ``wanted`` the
    config's ``subsets.test_split``; ``declared`` the layout's evaluation splits. Returns its name; raises InputError with what to set when
    there is no split, an image has none, or the wanted one is absent."""
    counts = Counter(splits)
    if None in counts:
        raise InputError(
            f"{counts[None]} images with regions have no split of their own (images.split is null: the layout "
            "or the file names give none); set subsets.split: stratified"
        )
    found = sorted(s for s in counts if s is not None)
    chosen = evaluation_split(found, wanted, declared)
    if wanted is None and len(found) < 2:
        chosen = None  # the evaluation split alone: no train side of the collection's own
    if chosen is None and wanted is not None:
        raise InputError(
            f"subsets.test_split {wanted!r} holds no image with regions (the splits: {', '.join(found) or 'none'}); "
            "set it to one of them"
        )
    if chosen is None:
        raise InputError(
            f"no test side can be told among the collection's splits {', '.join(found) or 'none'}; "
            "set subsets.test_split to the one published figures use, or subsets.split: stratified"
        )
    return chosen


def chosen_test_split(
    mode: str, splits: Iterable[str | None], wanted: str | None = None, declared: Sequence[str] = ()
) -> tuple[str | None, str | None]:
    """The collection's split that is the test side under ``subsets.split`` ``mode``, or None for
    the seeded stratified split, with why the collection's own is not taken (``auto`` alone).

    ``stratified``: (None, None). ``source``: ``source_test_split`` (raises where it cannot be).
    ``auto`` (the default): the collection's own split where it has one a test side can be told
    in (COCO's val2017, Cityscapes' val, BSDS500's test), else the stratified split: silently
    where no image has a split (SAIAPR TC-12), with the reason otherwise."""
    if mode == "stratified":
        return None, None
    splits = list(splits)
    if mode == "auto" and all(s is None for s in splits):
        return None, None
    try:
        return source_test_split(splits, wanted, declared), None
    except InputError as exc:
        if mode == "source":
            raise
        return None, f"the stratified split, not the collection's own: {exc}"


def source_sides(image_splits_of: dict[int, str], test_split: str) -> dict[int, str]:
    """``test`` for each image of the collection's own ``test_split``, ``train`` for the others."""
    return {image: "test" if split == test_split else "train" for image, split in image_splits_of.items()}


def ranked_labels(labels: list[str]) -> list[str]:
    """Labels from most to least frequent, ties by name."""
    counts = Counter(labels)
    return sorted(counts, key=lambda x: (-counts[x], x))


def subset_labels(labels: list[str]) -> dict[str, list[str]]:
    """Subset name -> its labels (the k most frequent)."""
    ranked = ranked_labels(labels)
    return {name: ranked[:k] for name, k in SUBSET_SIZES.items()}


def _hash(seed: int, *parts: object) -> int:
    text = "/".join(str(p) for p in (seed, *parts)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


def label_sets_of(image_ids: list[int], labels: list[str]) -> dict[int, set[str]]:
    """Image id -> the labels of its regions (``image_ids`` and ``labels`` per region)."""
    sets: dict[int, set[str]] = {}
    for image, label in zip(image_ids, labels, strict=True):
        sets.setdefault(image, set()).add(label)
    return sets


def image_splits(
    label_sets: dict[int, set[str]],
    seed: int = 0,
    test_share: float = TEST_SHARE,
    groups: dict[int, int] | None = None,
) -> dict[int, str]:
    """``train`` or ``test`` per image by iterative stratification of its label set (module
    docstring; Sechidis et al. 2011, Algorithm 1, two folds).

    Parameters: ``label_sets`` maps image id to its labels; ``seed`` orders ties; ``groups`` maps
    an image to its near-duplicate group (``audit.duplicates``): a group is placed as one item,
    with the union of its images' labels, so near-copies are never on both sides. Returns image
    id -> side. Desired counts start at share x |images of l| per side and label; placing an
    image takes one from each of its labels' counts on that side.
    """
    shares = {"test": test_share, "train": 1.0 - test_share}
    groups = groups or {}
    members: dict[int, list[int]] = {}  # the items placed: an image, or a group of images
    for image in label_sets:
        members.setdefault(groups.get(image, image), []).append(image)
    images_of: Counter[str] = Counter()
    units_of: dict[str, set[int]] = {}
    for unit, images in members.items():
        for image in images:
            images_of.update(label_sets[image])
            for label in label_sets[image]:
                units_of.setdefault(label, set()).add(unit)
    want = {side: {label: share * count for label, count in images_of.items()} for side, share in shares.items()}
    room = {side: share * len(label_sets) for side, share in shares.items()}
    side_of: dict[int, str] = {}
    placed: set[int] = set()

    def place(unit: int, label: str | None) -> None:
        def need(side: str) -> tuple:
            return (want[side][label] if label else 0.0, room[side], _hash(seed, "side", unit, side))

        side = max(shares, key=need)
        placed.add(unit)
        for image in members[unit]:
            side_of[image] = side
            room[side] -= 1
            for other in label_sets[image]:
                want[side][other] -= 1
                units_of[other].discard(unit)

    while any(units_of.values()):
        label = min((x for x in units_of if units_of[x]), key=lambda x: (len(units_of[x]), x))
        for unit in sorted(units_of[label], key=lambda i: (_hash(seed, "image", i), i)):
            if unit not in placed:
                place(unit, label)
    for unit in sorted(set(members) - placed, key=lambda i: (_hash(seed, "image", i), i)):
        place(unit, None)  # images without labels only balance the sides
    return side_of


def assign_splits(
    keys: list[tuple[int, str, int]],
    labels: list[str],
    seed: int = 0,
    split_unit: str = "region",
    fixed: dict[int, str] | None = None,
) -> list[str]:
    """``train`` or ``test`` for each region key (image_id, annotator, region_id).

    ``fixed`` (image id -> side) places every region of those images on their image's side (the
    images of a near-duplicate group); each label's other regions then fill its test share."""
    if split_unit not in SPLIT_UNITS:
        raise InputError(f"split_unit must be one of {', '.join(SPLIT_UNITS)}, not {split_unit!r}")
    if split_unit == "image":
        sides = image_splits(label_sets_of([k[0] for k in keys], labels), seed)
        return [sides[k[0]] for k in keys]
    fixed = fixed or {}
    by_label: dict[str, list[int]] = {}
    for n, label in enumerate(labels):
        by_label.setdefault(label, []).append(n)
    splits = ["train"] * len(keys)
    for members in by_label.values():
        free = [n for n in members if keys[n][0] not in fixed]
        taken = 0
        for n in members:
            if keys[n][0] in fixed:
                splits[n] = fixed[keys[n][0]]
                taken += splits[n] == "test"
        order = sorted(free, key=lambda n: (_hash(seed, *keys[n]), keys[n]))
        for n in order[: max(0, round(TEST_SHARE * len(members)) - taken)]:
            splits[n] = "test"
    return splits


def straddling_images(image_ids: list[int], splits: list[str]) -> int:
    """Images with regions on both sides of the split."""
    sides: dict[int, set[str]] = {}
    for image_id, split in zip(image_ids, splits, strict=True):
        sides.setdefault(image_id, set()).add(split)
    return sum(1 for s in sides.values() if len(s) == 2)


CONSENSUS = "consensus"  # the derived annotator of regionbench.pipeline.consensus


def reference_regions(
    regions: pa.Table, reference: str | None, split_unit: str, crowd: bool = False
) -> tuple[pa.Table, str, str]:
    """The regions that subsets, splits and classifiers use, their annotator and the split unit.

    ``reference`` names the annotator; without it, the only annotator, else ``consensus``. With
    several annotators the split unit is the image, so that no image is on both sides. Crowd
    regions (``iscrowd``: a group of objects under one mask, which COCO's own evaluation ignores)
    are left out unless ``crowd``.
    """
    names = sorted(pc.unique(regions.column("annotator")).to_pylist())  # not a Python string per region
    humans = [n for n in names if n != CONSENSUS]
    if reference is None:
        reference = names[0] if len(names) == 1 else CONSENSUS
    if names and reference not in names:
        raise InputError(
            f"reference_annotator {reference!r} annotated nothing here (annotators: {', '.join(names)}); "
            "set reference_annotator to one of them"
        )
    chosen = regions.filter(pc.equal(regions.column("annotator"), reference)) if names else regions
    if not crowd and "iscrowd" in chosen.column_names:
        chosen = chosen.filter(pc.invert(chosen.column("iscrowd")))
    return chosen, reference, "image" if len(humans) > 1 else split_unit


def image_split_report(label_sets: dict[int, set[str]], side: dict[int, str]) -> dict:
    """Images per side, and the share of each label's images in test: lowest, highest, and the
    labels with no test image (a label on a single image can only be on one side)."""
    images_of: Counter[str] = Counter()  # one pass: per label, its images and test images
    in_test: Counter[str] = Counter()  #: per label, its images and test images
    for image, labels in label_sets.items():
        images_of.update(labels)
        if side[image] == "test":
            in_test.update(labels)
    shares = {label: in_test[label] / images_of[label] for label in sorted(images_of)}
    values = list(shares.values())
    return {
        "images": len(label_sets),
        "test_images": sum(side[i] == "test" for i in label_sets),
        "train_images": sum(side[i] == "train" for i in label_sets),
        "label_test_share_min": round(min(values), 6) if values else 0.0,
        "label_test_share_max": round(max(values), 6) if values else 0.0,
        "labels_without_test_images": [label for label, share in shares.items() if share == 0],
    }


def skip_reason(regions: pa.Table, annotator: str) -> str | None:
    """Why subsets A-H and the reference classifiers do not apply to the reference annotator's
    ``regions``, or None when they do: subset A needs two labels, and a label-free collection
    (every segment under one category, or no region at all) has nothing to tell apart."""
    labels = sorted(set(regions.column("label").to_pylist()))
    if len(labels) >= 2:
        return None
    carried = (
        f"every region of {annotator} carries the one label {labels[0]!r}" if labels else f"{annotator} has no region"
    )
    return f"subsets A-H and the reference classifiers skipped: {carried}, so there are no labels to tell apart"


def make_subsets(
    regions: pa.Table,
    seed: int = 0,
    split_unit: str = "region",
    fixed_sides: dict[int, str] | None = None,
    groups: dict[int, int] | None = None,
) -> tuple[pa.Table, dict]:
    """Subsets A-H with splits, and a report (sizes, label lists, straddling images).

    ``regions`` needs the columns image_id, annotator, region_id and label. ``fixed_sides`` (image
    id -> train or test, ``source_sides``) replaces the stratified image split, and the split unit
    is then the image. ``groups`` (image id -> near-duplicate group) keeps each group on one side
    of the image split and of the region split; a fixed split is kept as it is, and the report
    counts the groups it cuts (``near_duplicates``).
    """
    cols = {c: regions.column(c).to_pylist() for c in ("image_id", "region_id")}
    cols |= {c: _shared_strings(regions.column(c)) for c in ("annotator", "label")}
    keys = list(zip(cols["image_id"], cols["annotator"], cols["region_id"], strict=True))
    label_sets = label_sets_of(cols["image_id"], cols["label"])
    if fixed_sides is not None:
        split_unit = "image"
    groups = {i: g for i, g in (groups or {}).items() if i in label_sets}
    if fixed_sides is None:
        image_side = image_splits(label_sets, seed, groups=groups)
    else:
        image_side = {i: fixed_sides[i] for i in label_sets}
    image_sides = [image_side[image_id] for image_id in cols["image_id"]]
    # With the image as split unit the region split is the image split: stratify once.
    grouped = {i: image_side[i] for i in groups}
    splits = image_sides if split_unit == "image" else assign_splits(keys, cols["label"], seed, split_unit, grouped)
    members = subset_labels(cols["label"])
    parts: list[pa.Table] = []
    report: dict = {"seed": seed, "split_unit": split_unit, "subsets": {}}
    order = np.lexsort((cols["region_id"], cols["annotator"], cols["image_id"]))
    # Every region once, in key order, with its sides: a subset is a filter of it, so the table
    # of a subset H of a million regions never becomes a million Python rows.
    ordered = (
        regions.select([*tables.REGION_KEY, "label"])
        .append_column("split", pa.array(splits, pa.string()))
        .append_column("image_split", pa.array(image_sides, pa.string()))
        .take(order)
    )
    for name, labels in members.items():
        wanted = set(labels)
        chosen = [int(n) for n in order if cols["label"][n] in wanted]
        part = ordered.filter(pc.is_in(ordered.column("label"), pa.array(labels, pa.string())))
        parts.append(part.add_column(0, "subset", pa.array([name] * part.num_rows, pa.string())))
        sides = [splits[n] for n in chosen]
        report["subsets"][name] = {
            "labels": labels,
            "regions": len(chosen),
            "train": sides.count("train"),
            "test": sides.count("test"),
            "straddling_images": straddling_images([keys[n][0] for n in chosen], sides),
            "image_split": image_split_report(
                {keys[n][0]: label_sets[keys[n][0]] & wanted for n in chosen}, image_side
            ),
        }
    report["straddling_images"] = straddling_images(cols["image_id"], splits)
    report["image_split"] = image_split_report(label_sets, image_side)
    report["near_duplicates"] = cut_groups(groups, image_side)
    return tables.concat(parts).cast(tables.SUBSETS), report


def cut_groups(groups: dict[int, int], side: dict[int, str]) -> dict:
    """How many near-duplicate groups (image -> group) the image split keeps whole, and the
    groups it cuts with their images on each side (only a fixed split can cut one)."""
    sides: dict[int, dict[str, list[int]]] = {}
    for image, group in sorted(groups.items()):
        sides.setdefault(group, {}).setdefault(side[image], []).append(image)
    cut = {group: by_side for group, by_side in sides.items() if len(by_side) > 1}
    return {
        "groups": len(sides),
        "images": len(groups),
        "groups_across_sides": len(cut),
        "across": [{"group_id": g, **dict(sorted(s.items()))} for g, s in sorted(cut.items())],
    }


def _shared_strings(column: pa.ChunkedArray) -> list[str | None]:
    """A string column's values as Python strings, one object per distinct value: a million
    regions carry a few hundred labels and one annotator, not a million strings."""
    encoded = column.combine_chunks().dictionary_encode()
    words = encoded.dictionary.to_pylist()
    return [None if i is None else words[i] for i in encoded.indices.to_pylist()]
