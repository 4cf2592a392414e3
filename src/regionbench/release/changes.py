"""What changed between two versions of a release beyond its records: images added and removed,
regions whose mask moved (with the IoU of the two masks), labels changed, categories renamed.

``versions.diff_releases`` says which records differ; this says how, for the changes a user of
a benchmark asks about first ("is my score comparable?"). Only the differing masks are decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from regionbench.core import geometry, tables
from regionbench.release.manifest import read_manifest

EXAMPLES = 3


@dataclass
class Changes:
    """Counts and up to ``examples`` examples of each kind of change."""

    images_added: list[int] = field(default_factory=list)
    images_removed: list[int] = field(default_factory=list)
    labels_changed: list[tuple[tuple, str, str]] = field(default_factory=list)
    masks_changed: list[tuple[tuple, float]] = field(default_factory=list)
    renamed_labels: list[tuple[int, str, str]] = field(default_factory=list)
    renamed_categories: list[tuple[str, int, str, str]] = field(default_factory=list)

    def lines(self, examples: int = EXAMPLES) -> list[str]:
        """The changes as ``regionbench diff`` prints them after the records."""
        out = []
        for what, ids in (("images added", self.images_added), ("images removed", self.images_removed)):
            shown = ", ".join(str(i) for i in ids[:examples])
            out.append(f"{what}: {len(ids):,}" + (f" (e.g. {shown})" if ids else ""))
        out.append(f"regions relabelled: {len(self.labels_changed):,}")
        out += [f"  {_key(key)}: {a!r} -> {b!r}" for key, a, b in self.labels_changed[:examples]]
        if self.masks_changed:
            ious = np.array([iou for _, iou in self.masks_changed])
            out.append(
                f"region masks changed: {len(ious):,} (IoU old/new: min {ious.min():.3f}, median {np.median(ious):.3f})"
            )
        else:
            out.append("region masks changed: 0")
        out += [
            f"  {_key(key)}: IoU {iou:.3f}" for key, iou in sorted(self.masks_changed, key=lambda c: c[1])[:examples]
        ]
        out.append(f"labels renamed: {len(self.renamed_labels):,}")
        out += [f"  label id {i}: {a!r} -> {b!r}" for i, a, b in self.renamed_labels[:examples]]
        out.append(f"source categories renamed: {len(self.renamed_categories):,}")
        out += [f"  {who} category {i}: {a!r} -> {b!r}" for who, i, a, b in self.renamed_categories[:examples]]
        return out


def _key(key: tuple) -> str:
    return f"image {key[0]} {key[1]} region {key[2]}"


def _table(folder: Path, manifest: dict, name: str, columns: list[str]) -> pa.Table:
    """Table ``name`` of the release in ``folder`` (its ``columns`` that it has; none: empty)."""
    entry = manifest["tables"].get(name)
    if entry is None:
        return pa.table({c: pa.array([], pa.null()) for c in columns})
    path = folder / entry["path"]
    present = [c for c in columns if c in pq.read_schema(path).names]
    return pq.read_table(path, columns=present)


def _flat_masks(regions: pa.Table) -> pa.Table:
    """``regions`` with its mask struct as three columns, ``counts``, ``height`` and ``width``
    (Arrow joins take no struct or list column)."""
    if "mask" not in regions.column_names:
        return regions
    mask, size = regions["mask"], pc.struct_field(regions["mask"], "size")
    flat = regions.drop_columns(["mask"]).append_column("counts", pc.struct_field(mask, "counts"))
    return flat.append_column("height", pc.list_element(size, 0)).append_column("width", pc.list_element(size, 1))


def _renamed(old: pa.Table, new: pa.Table, keys: list[str], name: str) -> list[dict]:
    if not {*keys, name} <= set(old.column_names) & set(new.column_names):
        return []
    joined = old.join(new, keys, right_suffix="_new", join_type="inner")
    differ = joined.filter(pc.not_equal(joined[name], joined[f"{name}_new"]))
    return differ.sort_by([(k, "ascending") for k in keys]).to_pylist()


def changes(old: Path, new: Path) -> Changes:
    """The changes from release folder ``old`` to ``new`` (one dataset's two versions)."""
    out = Changes()
    folders = (Path(old), Path(new))
    manifests = [read_manifest(f) for f in folders]

    def both(name: str, columns: list[str]) -> list[pa.Table]:
        return [_table(f, m, name, columns) for f, m in zip(folders, manifests, strict=True)]

    ids = [set(t.column("image_id").to_pylist()) for t in both("images", ["image_id"])]
    out.images_added = sorted(ids[1] - ids[0])
    out.images_removed = sorted(ids[0] - ids[1])

    columns = [*tables.REGION_KEY, "label", "mask"]
    before, after = (_flat_masks(t) for t in both("regions", columns))
    joined = before.join(after, tables.REGION_KEY, right_suffix="_new", join_type="inner").sort_by(
        [(k, "ascending") for k in tables.REGION_KEY]
    )
    relabelled = joined.filter(pc.not_equal(joined["label"], joined["label_new"]))
    for row in relabelled.select([*tables.REGION_KEY, "label", "label_new"]).to_pylist():
        out.labels_changed.append(
            ((row["image_id"], row["annotator"], row["region_id"]), row["label"], row["label_new"])
        )
    if "counts" in joined.column_names and "counts_new" in joined.column_names:
        differ = pc.fill_null(pc.not_equal(joined["counts"], joined["counts_new"]), True)
        for row in joined.filter(differ).to_pylist():
            if row["counts"] is None and row["counts_new"] is None:
                continue
            iou = 0.0
            size, size_new = [row["height"], row["width"]], [row["height_new"], row["width_new"]]
            if row["counts"] is not None and row["counts_new"] is not None and size == size_new:
                x = geometry.from_rle({"size": size, "counts": row["counts"]})
                y = geometry.from_rle({"size": size_new, "counts": row["counts_new"]})
                union = np.logical_or(x, y).sum()
                iou = float(np.logical_and(x, y).sum() / union) if union else 1.0
            if iou < 1.0:
                out.masks_changed.append(((row["image_id"], row["annotator"], row["region_id"]), iou))

    vocabularies = both("vocabulary", ["label_id", "label"])
    for row in _renamed(vocabularies[0], vocabularies[1], ["label_id"], "label"):
        out.renamed_labels.append((row["label_id"], row["label"], row["label_new"]))
    sources = both("source_categories", ["annotator", "category_id", "name"])
    for row in _renamed(sources[0], sources[1], ["annotator", "category_id"], "name"):
        out.renamed_categories.append((row["annotator"], row["category_id"], row["name"], row["name_new"]))
    return out
