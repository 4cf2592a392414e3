"""Statistics of an annotated collection, as the SAIAPR TC-12 paper reports them (section 3.4,
Fig. 6): regions per image, the share of an image its regions cover, labels and leaves used,
and the label histogram; and the label frequencies of the training images, as Dutta et al.
2018 plot them (Fig. 1)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa


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
    rows = regions.select(["image_id", "annotator", "label", "area_px"]).to_pydict()
    keep = [i for i, a in enumerate(rows["annotator"]) if annotator is None or a == annotator]
    size = {i: w * h for i, w, h in zip(*(images[c].to_pylist() for c in ("image_id", "width", "height")), strict=True)}
    covered: Counter = Counter()
    for n in keep:
        covered[rows["image_id"][n]] += rows["area_px"][n] or 0  # a region without a mask covers no known pixel
    shares = [min(1.0, covered[i] / area) if area else 0.0 for i, area in size.items()]
    labels = Counter(rows["label"][n] for n in keep)
    leaf = dict(zip(vocabulary["label"].to_pylist(), vocabulary["is_leaf"].to_pylist(), strict=True))
    return {
        "images": len(size),
        "regions": len(keep),
        "regions_per_image": len(keep) / len(size) if size else 0.0,
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
    rows = subsets.select(["subset", "image_id", "label", "image_split"]).to_pydict()
    pairs = {
        (image_id, label)
        for name, image_id, label, side in zip(*rows.values(), strict=True)
        if name == subset and side == "train"
    }
    counts = Counter(label for _, label in pairs)
    return {
        "subset": subset,
        "train_images": len({image_id for image_id, _ in pairs}),
        "labels": [
            {"label": label, "images": n} for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
    }
