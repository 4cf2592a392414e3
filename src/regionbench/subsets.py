"""Subsets A-H and their train/test split (paper §4.1, Table 5; docs/subsets.md).

Subset k holds every region whose label is among the k most frequent labels (ties broken by
label name): A 2, B 3, C 4, D 5, E 10, F 25, G 50, H 100. The split is 70/30 and stratified
by label. A region's side is decided by its label's regions alone: within each label the
regions are ranked by a seeded hash of their key and the first round(0.3 n) go to test. A
label's regions are the same in every subset that holds the label, so subsets nest
(A ⊂ B ⊂ ... ⊂ H) and a region keeps its side in every subset.

With ``split_unit="image"`` every region of an image goes to the side its image draws (a
seeded hash of the image id below 0.3 means test), so no image straddles the split; the test
share per label is then only approximately 30 %.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regionbench import tables

SUBSET_SIZES = {"A": 2, "B": 3, "C": 4, "D": 5, "E": 10, "F": 25, "G": 50, "H": 100}
TEST_SHARE = 0.3
SPLIT_UNITS = ("region", "image")


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


def assign_splits(
    keys: list[tuple[int, str, int]], labels: list[str], seed: int = 0, split_unit: str = "region"
) -> list[str]:
    """``train`` or ``test`` for each region key (image_id, annotator, region_id)."""
    if split_unit not in SPLIT_UNITS:
        raise ValueError(f"split_unit must be one of {', '.join(SPLIT_UNITS)}, not {split_unit!r}")
    if split_unit == "image":
        return ["test" if _hash(seed, "image", k[0]) / 2**64 < TEST_SHARE else "train" for k in keys]
    by_label: dict[str, list[int]] = {}
    for n, label in enumerate(labels):
        by_label.setdefault(label, []).append(n)
    splits = ["train"] * len(keys)
    for members in by_label.values():
        order = sorted(members, key=lambda n: (_hash(seed, *keys[n]), keys[n]))
        for n in order[: round(TEST_SHARE * len(order))]:
            splits[n] = "test"
    return splits


def straddling_images(image_ids: list[int], splits: list[str]) -> int:
    """Images with regions on both sides of the split."""
    sides: dict[int, set[str]] = {}
    for image_id, split in zip(image_ids, splits, strict=True):
        sides.setdefault(image_id, set()).add(split)
    return sum(1 for s in sides.values() if len(s) == 2)


CONSENSUS = "consensus"  # the derived annotator of regionbench.consensus


def reference_regions(regions: pa.Table, reference: str | None, split_unit: str) -> tuple[pa.Table, str, str]:
    """The regions that subsets, splits and classifiers use, their annotator and the split unit.

    ``reference`` names the annotator; without it, the only annotator, else ``consensus``. With
    several annotators the split unit is the image, so that no image is on both sides.
    """
    names = sorted(set(regions.column("annotator").to_pylist()))
    humans = [n for n in names if n != CONSENSUS]
    if reference is None:
        reference = names[0] if len(names) == 1 else CONSENSUS
    if names and reference not in names:
        raise ValueError(
            f"reference_annotator {reference!r} annotated nothing here (annotators: {', '.join(names)}); "
            "set reference_annotator to one of them"
        )
    chosen = regions.filter(pc.equal(regions.column("annotator"), reference)) if names else regions
    return chosen, reference, "image" if len(humans) > 1 else split_unit


def make_subsets(regions: pa.Table, seed: int = 0, split_unit: str = "region") -> tuple[pa.Table, dict]:
    """Subsets A-H with splits, and a report (sizes, label lists, straddling images).

    ``regions`` needs the columns image_id, annotator, region_id and label.
    """
    cols = {c: regions.column(c).to_pylist() for c in (*tables.REGION_KEY, "label")}
    keys = list(zip(cols["image_id"], cols["annotator"], cols["region_id"], strict=True))
    splits = assign_splits(keys, cols["label"], seed, split_unit)
    members = subset_labels(cols["label"])
    out: dict[str, list] = {name: [] for name in tables.SUBSETS.names}
    report: dict = {"seed": seed, "split_unit": split_unit, "subsets": {}}
    order = np.lexsort((cols["region_id"], cols["annotator"], cols["image_id"]))
    for name, labels in members.items():
        wanted = set(labels)
        chosen = [int(n) for n in order if cols["label"][n] in wanted]
        for n in chosen:
            out["subset"].append(name)
            out["image_id"].append(keys[n][0])
            out["annotator"].append(keys[n][1])
            out["region_id"].append(keys[n][2])
            out["label"].append(cols["label"][n])
            out["split"].append(splits[n])
        sides = [splits[n] for n in chosen]
        report["subsets"][name] = {
            "labels": labels,
            "regions": len(chosen),
            "train": sides.count("train"),
            "test": sides.count("test"),
            "straddling_images": straddling_images([keys[n][0] for n in chosen], sides),
        }
    report["straddling_images"] = straddling_images(cols["image_id"], splits)
    return pa.table(out, schema=tables.SUBSETS), report
