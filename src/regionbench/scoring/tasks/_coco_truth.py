"""The ground truth of a release stated as COCO states it: one annotator's regions of the chosen
images under their source ids, and regions as detections (docs/scoring.md, "Instances")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd


def numbering(coverage: pd.DataFrame, annotator: str) -> dict[int, int]:
    """Release image id -> the id the annotator's file gave it; for one without a file (the
    consensus), the id every file that lists the image agrees on. The release's ids wherever
    there is none, or where two images would share one."""
    if "source_image_id" not in coverage.columns:
        return {}
    own = coverage[coverage["annotator"] == annotator]
    rows = own if own["source_image_id"].notna().any() else coverage
    given: dict[int, set[int]] = {}
    for image_id, source in zip(rows["image_id"], rows["source_image_id"], strict=True):
        given.setdefault(int(image_id), set()).add(int(source) if not pd.isna(source) else int(image_id))
    ids = {i: next(iter(s)) if len(s) == 1 else i for i, s in given.items()}
    return ids if len(set(ids.values())) == len(ids) else {}


def _category_ids(named: pd.DataFrame | None) -> dict[str, int]:
    """Label -> the one category id the source files give it (``source_categories``), where they
    agree; a region without its own ``category_id`` (the consensus) takes it."""
    if named is None or named.empty:
        return {}
    found: dict[str, set[int]] = {}
    for label, category in zip(named["label"], named["category_id"], strict=True):
        if isinstance(label, str):
            found.setdefault(label, set()).add(int(category))
    return {label: next(iter(ids)) for label, ids in found.items() if len(ids) == 1}


def truth_categories(
    regions: pd.DataFrame, vocabulary: pd.DataFrame, annotator: str, named: pd.DataFrame | None = None
) -> dict[int, str]:
    """The categories a truth of ``annotator``'s regions scores, id -> label, present among the
    scored images or not (COCO's files list every category; a detection of one without instances
    counts in no figure):

    - an annotator whose file numbered its categories: that file's categories that map to a
      label (``named``, the release's ``source_categories``), under the file's ids;
    - otherwise (the consensus, a layout without category ids): every label of ``vocabulary``,
      under the id the files agree on for it, else its label id; the label ids for all where two
      labels would share an id."""
    own = regions[(regions["annotator"] == annotator) & regions["category_id"].notna()]
    if not own.empty:
        out: dict[int, str] = {}
        if named is not None and not named.empty:
            rows = named[(named["annotator"] == annotator) & named["label"].notna()]
            out = {int(c): str(label) for c, label in zip(rows["category_id"], rows["label"], strict=True)}
        for c, label in zip(own["category_id"], own["label"], strict=True):
            out.setdefault(int(c), str(label))
        return dict(sorted(out.items()))
    labels = dict(zip(vocabulary["label"].astype(str), vocabulary["label_id"].astype(int), strict=True))
    agreed = _category_ids(named)
    ids = {label: agreed.get(label, label_id) for label, label_id in labels.items()}
    if len(set(ids.values())) < len(ids):
        ids = labels
    return {c: label for label, c in sorted(ids.items(), key=lambda item: item[1])}


def category_names(categories: dict[int, str], named: pd.DataFrame | None, annotator: str) -> dict[str, int]:
    """Name -> category id, the names a detection's ``label`` may give: each category's release
    label (the vocabulary key), and the name the source spells it by (``source_categories``:
    ``annotator``'s file, or any file where ``annotator`` has none), where that name is not
    another category's label."""
    out = {label: c for c, label in categories.items()}
    if named is None or named.empty:
        return out
    rows = named[named["label"].notna()]
    if (rows["annotator"] == annotator).any():
        rows = rows[rows["annotator"] == annotator]
    for name, label in zip(rows["name"].astype(str), rows["label"].astype(str), strict=True):
        if label in out:
            out.setdefault(name, out[label])
    return out


def truth_images(images: pd.DataFrame, ids: Mapping[int, int]) -> list[dict[str, Any]]:
    """The COCO ``images`` entries of rows of the release's images table, under the ids ``ids``
    gives them (release id -> the truth's, ``numbering``; else the release's), sorted by id."""
    entries = [
        {"id": ids.get(int(i), int(i)), "width": int(w), "height": int(h), "file_name": str(p)}
        for i, w, h, p in images[["image_id", "width", "height", "path"]].itertuples(index=False)
    ]
    return sorted(entries, key=lambda e: e["id"])


def ground_truth(
    regions: pd.DataFrame,
    images: pd.DataFrame,
    coverage: pd.DataFrame,
    annotator: str,
    categories: dict[int, str],
    ids: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """The COCO instances document of ``annotator``'s regions of ``images`` (rows of the release's
    images table), numbered as the source numbered them (module docstring; ``ids``: that
    ``numbering``, when known), under ``categories`` (``truth_categories``: id -> label)."""
    ids = numbering(coverage, annotator) if ids is None else ids
    category_of = {label: c for c, label in categories.items()}
    categories = dict(categories)
    chosen = set(images["image_id"].astype(int))
    mine = regions[(regions["annotator"] == annotator) & regions["image_id"].isin(chosen) & regions["mask"].notna()]
    annotations = []
    rows: list[dict[str, Any]] = mine.sort_values(["image_id", "region_id"]).to_dict("records")  # type: ignore[assignment]
    for k, r in enumerate(rows, start=1):
        if not pd.isna(r["category_id"]):
            category = int(r["category_id"])
        else:  # a region its file did not number among regions it did: its label id
            category = category_of.get(str(r["label"]), int(r["label_id"]))
        categories.setdefault(category, str(r["label"]))
        box = [r.get(f"source_bbox_{c}") for c in "xywh"]
        measured = [float(r[f"bbox_{c}"]) for c in "xywh"]
        area = r.get("source_area")
        annotations.append(
            {
                "id": k,
                "image_id": ids.get(int(r["image_id"]), int(r["image_id"])),
                "category_id": category,
                "segmentation": {"size": [int(v) for v in r["mask"]["size"]], "counts": r["mask"]["counts"]},
                "area": float(area) if area is not None and not pd.isna(area) else float(r["area_px"]),
                "bbox": [float(v or 0) for v in box] if not any(v is None or pd.isna(v) for v in box) else measured,
                "iscrowd": int(bool(r["iscrowd"])),
                "region_id": int(r["region_id"]),  # the release's, for what a page draws of it
            }
        )
    return {
        "images": truth_images(images, ids),
        "annotations": annotations,
        "categories": [{"id": c, "name": n} for c, n in sorted(categories.items())],
    }


def as_detections(
    regions: pd.DataFrame, annotator: str, truth: dict[str, Any], numbering: dict[int, int]
) -> list[dict[str, Any]]:
    """``annotator``'s regions (crowd regions aside) as detections of score 1 against ``truth``:
    its images numbered by ``numbering`` (release id -> the truth's, ``numbering``), its
    categories by label (the truth's ``categories`` are named by label)."""
    category = {c["name"]: c["id"] for c in truth["categories"]}
    known = {e["id"] for e in truth["images"]}
    mine = regions[(regions["annotator"] == annotator) & regions["mask"].notna() & ~regions["iscrowd"].astype(bool)]
    out = []
    for image_id, label, rle, *box in mine[
        ["image_id", "label", "mask", "bbox_x", "bbox_y", "bbox_w", "bbox_h"]
    ].itertuples(index=False):
        image = numbering.get(int(image_id), int(image_id))
        if image in known and label in category:
            out.append({"image_id": image, "category_id": category[label], "score": 1.0,
                        "segmentation": {"size": [int(v) for v in rle["size"]], "counts": rle["counts"]},
                        "bbox": [float(v) for v in box]})  # fmt: skip
    return out
