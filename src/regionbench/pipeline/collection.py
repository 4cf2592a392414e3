"""Statistics of an annotated collection, as the SAIAPR TC-12 paper reports them (section 3.4,
Fig. 6): regions per image, the share of an image its regions cover, labels and leaves used,
and the label histogram; and the label frequencies of the training images, as Dutta et al.
2018 plot them (Fig. 1)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def statistics(images: pa.Table, regions: pa.Table, vocabulary: pa.Table, annotator: str | None = None) -> dict:
    """The collection's figures over one annotator's regions (``None``: every region).

    Parameters: the release's ``images`` (image_id, width, height), ``regions`` (image_id,
    annotator, label, area_px) and ``vocabulary`` (label, is_leaf) tables.
    Returns: ``images``, ``regions``, ``regions_per_image`` (regions / images, empty images
    included, as the paper's 99,555 / 20,000 = 4.97), ``coverage`` (mean over images of the
    summed region area / image area, capped at 1: overlapping regions count once at most),
    ``labels_used``, ``leaves_used`` and ``label_histogram`` (``{label, regions}`` rows, most
    used first, ties by name: a list, so the order survives a JSON file with sorted keys).
    """
    # Arrow does the per-region work: millions of regions never become Python objects.
    rows = regions.select(["image_id", "annotator", "label", "area_px"])
    if annotator is not None:
        rows = rows.filter(pc.equal(rows.column("annotator"), annotator))
    areas = pa.table({"image_id": rows.column("image_id"), "area": pc.fill_null(rows.column("area_px"), 0)})
    per_image = areas.group_by("image_id").aggregate([("area", "sum")])  # no mask: no known pixel
    covered = dict(zip(per_image.column("image_id").to_pylist(), per_image.column("area_sum").to_pylist(), strict=True))
    size = {i: w * h for i, w, h in zip(*(images[c].to_pylist() for c in ("image_id", "width", "height")), strict=True)}
    shares = [min(1.0, covered.get(i, 0) / area) if area else 0.0 for i, area in size.items()]
    counted = rows.column("label").value_counts()
    labels = dict(zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist(), strict=True))
    leaf = dict(zip(vocabulary["label"].to_pylist(), vocabulary["is_leaf"].to_pylist(), strict=True))
    return {
        "images": len(size),
        "regions": rows.num_rows,
        "regions_per_image": rows.num_rows / len(size) if size else 0.0,
        "coverage": float(np.mean(shares)) if shares else 0.0,
        "labels_used": len(labels),
        "leaves_used": sum(1 for label in labels if leaf.get(label)),
        "label_histogram": [
            {"label": label, "regions": n} for label, n in sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
    }


def train_label_frequency(subsets: pa.Table, subset: str = "H") -> dict:
    """Dutta et al. 2018, Fig. 1: per label of ``subset``, the number of training images of the
    image split that show it, most frequent first (ties by name).

    Parameters: the ``subsets`` table (subset, image_id, label, image_split).
    Returns: ``subset``, ``train_images`` and ``labels`` (``{label, images}`` rows).
    """
    rows = subsets.select(["image_id", "label"]).filter(
        pc.and_(pc.equal(subsets.column("subset"), subset), pc.equal(subsets.column("image_split"), "train"))
    )
    pairs = rows.group_by(["image_id", "label"]).aggregate([])  # an image counts once per label
    per_label = pairs.group_by("label").aggregate([("image_id", "count")])
    counts = dict(
        zip(per_label.column("label").to_pylist(), per_label.column("image_id_count").to_pylist(), strict=True)
    )
    return {
        "subset": subset,
        "train_images": len(pc.unique(pairs.column("image_id"))),
        "labels": [
            {"label": label, "images": n} for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
    }
