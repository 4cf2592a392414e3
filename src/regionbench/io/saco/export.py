"""A release written as SA-Co's files (SAM 3's promptable concept benchmark): concept pairs.

``regionbench export RELEASE OUT --format saco`` writes any release of labelled regions as
SA-Co/Gold distributes its subsets: ``OUT/annotations/gold_<dataset>_merged_<annotator>_release_test.json``,
one COCO-shaped file an annotator, whose ``images`` are the (image, noun phrase) pairs (``id``,
``file_name``: its path below ``images/``, ``height``, ``width``, ``text_input``: the phrase,
``is_instance_exhaustive``) and
whose ``annotations`` are that annotator's regions of the pair's label on the pair's image (their
masks as RLE, ``bbox``, ``area``, ``iscrowd``); with ``--images`` the photos under
``OUT/images/``. ``regionbench concepts`` scores a run against them, one annotator or the oracle
over all, with the human ceiling of the release's own annotators.

The pairs of a release read from SA-Co's files (the ``saco`` layout) are the files' own
(``source_pairs``): their ids, phrases and exhaustiveness, each annotator's file listing the pairs
its source file listed. Any other release's pairs are made: the images of its evaluation side (its test side of the image split where
it has no evaluation split of its own; every image where it has neither); each image's labels,
those any annotator gave a region of it, are its positive pairs; ``NEGATIVES`` labels of the
vocabulary no annotator gave it, drawn with a generator seeded by the image's id, are its
negative pairs (phrases with no instance). Pairs are numbered once over every image of the
release, in (image id, label) order: a pair's number is the same whichever side is written. Every
pair is exhaustive: each annotator traced every region of the labels it gave (a crowd region
keeps ``iscrowd``, and SA-Co's rule leaves it out of the matching).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core.errors import InputError
from regionbench.core.tables import CONSENSUS

NEGATIVES = 2  # absent labels drawn an image as its negative phrases
SEED = 0


def _scored_images(release: Any) -> list[int]:
    """The ids of the images whose pairs are written (module docstring), in order."""
    images = release.arrow("images", ["image_id", "split"]).to_pylist()
    side = release.manifest.get("evaluation_split")
    if side is not None:
        return sorted(r["image_id"] for r in images if r["split"] == side)
    regions = release.arrow("regions", ["image_id", "image_split"]).to_pylist()
    test = {r["image_id"] for r in regions if r["image_split"] == "test"}
    return sorted(test) if test else sorted(r["image_id"] for r in images)


def source_pairs(release: Any) -> list[dict[str, Any]] | None:
    """The pairs SA-Co's files gave a release read from them (``coverage.pair_ids``; None for
    any other), by id: each ``{"id", "image_id", "label", "phrase", "positive", "exhaustive"}``,
    ``exhaustive`` naming each annotator whose file lists the pair and whether it annotated it
    exhaustively; ``positive`` whether an annotator gave it an instance."""
    coverage = release.arrow("coverage")
    if "pair_ids" not in coverage.column_names:
        return None  # a release made before pairs had a column
    columns = ["image_id", "annotator", "pair_ids", "pair_category_ids", "not_exhaustive_category_ids"]
    rows = [r for r in coverage.select(columns).to_pylist() if r["pair_ids"] is not None]
    if not rows:
        return None
    named = {
        (r["annotator"], r["category_id"]): (r["label"], r["name"])
        for r in release.arrow("source_categories", ["annotator", "category_id", "label", "name"]).to_pylist()
    }
    given = {
        (r["image_id"], r["label"])
        for r in release.arrow("regions", ["image_id", "annotator", "label"]).to_pylist()
        if r["annotator"] != CONSENSUS
    }
    found: dict[int, dict[str, Any]] = {}
    for r in rows:
        partial = set(r["not_exhaustive_category_ids"] or [])
        for category, pair in zip(r["pair_category_ids"], r["pair_ids"], strict=True):
            label, phrase = named.get((r["annotator"], category), (None, None))
            if label is None:  # a phrase the vocabulary does not hold: its regions were rejected
                continue
            entry = found.setdefault(
                pair, {"id": pair, "image_id": r["image_id"], "label": label, "phrase": phrase, "exhaustive": {}}
            )
            entry["exhaustive"][r["annotator"]] = category not in partial
    for entry in found.values():
        entry["positive"] = (entry["image_id"], entry["label"]) in given
    return [found[k] for k in sorted(found)]


def pairs(
    release: Any, images: list[int] | None = None, negatives: int = NEGATIVES, seed: int = SEED
) -> list[dict[str, Any]]:
    """The (image, phrase) pairs of ``release`` (module docstring) on ``images`` (default: its
    evaluation side): each ``{"id", "image_id", "label", "phrase", "positive", "exhaustive"}``
    (``source_pairs``; a made pair's phrase is its label, and it is exhaustive for every
    annotator: ``exhaustive`` empty). Made pairs are numbered once over every image of the
    release, from 1 in (image id, label) order, so a pair keeps its number whichever side is
    scored or exported."""
    chosen = set(images if images is not None else _scored_images(release))
    if (own := source_pairs(release)) is not None:
        return [p for p in own if p["image_id"] in chosen]
    regions = release.arrow("regions", ["image_id", "label"]).to_pylist()
    every = sorted(release.arrow("images", ["image_id"])["image_id"].to_pylist())
    given: dict[int, set[str]] = {i: set() for i in every}
    for r in regions:
        if r["label"] is not None:
            given[r["image_id"]].add(str(r["label"]))
    vocabulary = sorted({str(v) for v in release.arrow("vocabulary", ["label"])["label"].to_pylist()})
    out: list[dict[str, Any]] = []
    number = 0
    for image_id in every:
        absent = [label for label in vocabulary if label not in given[image_id]]
        rng = np.random.default_rng([seed, image_id])
        drawn = sorted(rng.choice(absent, min(negatives, len(absent)), replace=False).tolist()) if absent else []
        labelled = [(label, True) for label in given[image_id]] + [(label, False) for label in drawn]
        for label, positive in sorted(labelled):
            number += 1
            if image_id in chosen:
                out.append(
                    {"id": number, "image_id": image_id, "label": label, "phrase": label, "positive": positive,
                     "exhaustive": {}}
                )  # fmt: skip
    return out


def _annotators(release: Any, annotator: str | None) -> list[str]:
    names = sorted(set(release.arrow("regions", ["annotator"])["annotator"].to_pylist()) - {CONSENSUS})
    if annotator is not None:
        if annotator not in names:
            raise InputError(
                f"--annotator {annotator}: no annotator of the release is called so; its annotators: {', '.join(names)}"
            )
        return [annotator]
    if not names:
        raise InputError("--format saco: the release has no annotator's regions to write")
    return names


def files(release: Any, annotators: list[str], found: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each annotator's SA-Co document over the pairs ``found``: annotator -> document."""
    from pycocotools import mask as coco_mask

    images = {r["image_id"]: r for r in release.arrow("images", ["image_id", "path", "width", "height"]).to_pylist()}

    def entries(annotator: str) -> list[dict[str, Any]]:  # the pairs its file lists (made ones: every one)
        return [
            {"id": p["id"], "file_name": photo(images[p["image_id"]]["path"]), "height": images[p["image_id"]]["height"],
             "width": images[p["image_id"]]["width"], "text_input": p["phrase"],
             "is_instance_exhaustive": p["exhaustive"].get(annotator, True)}
            for p in found
            if not p["exhaustive"] or annotator in p["exhaustive"]
        ]  # fmt: skip

    pair_of = {(p["image_id"], p["label"]): p["id"] for p in found}
    columns = ["image_id", "annotator", "region_id", "label", "iscrowd", "mask"]
    regions = release.arrow("regions", columns).to_pylist()
    out = {}
    for annotator in annotators:
        rows: list[dict[str, Any]] = []
        for r in sorted(
            (r for r in regions if r["annotator"] == annotator), key=lambda r: (r["image_id"], r["region_id"])
        ):
            pair = pair_of.get((r["image_id"], r["label"]))
            if pair is None or r["mask"] is None:
                continue
            rle = {"size": [int(v) for v in r["mask"]["size"]], "counts": r["mask"]["counts"]}
            rows.append(
                {"id": len(rows) + 1, "image_id": pair, "category_id": 1, "segmentation": rle,
                 "bbox": [float(v) for v in coco_mask.toBbox(rle)], "area": float(coco_mask.area(rle)),
                 "iscrowd": int(bool(r["iscrowd"]))}
            )  # fmt: skip
        out[annotator] = {
            "images": entries(annotator),
            "annotations": rows,
            "categories": [{"id": 1, "name": "object"}],
        }
    return out


def photo(path: str) -> str:
    """An image's ``file_name`` in SA-Co's files: its path below the tree's ``images/``."""
    return path.removeprefix("images/")


def file_name(dataset: str, annotator: str) -> str:
    """An annotator's file as SA-Co/Gold names them: ``gold_<subset>_merged_<annotator>_release_test.json``."""
    return f"gold_{dataset}_merged_{annotator}_release_test.json"


def export(release: Any, out: Path, images: Path | None, annotator: str | None) -> list[str]:
    """``regionbench export --format saco`` (the ``saco`` layout's ``export``): the module
    docstring; returns the lines to show."""
    found = pairs(release)
    if not found:
        raise InputError("--format saco: the release has no image to make pairs of")
    chosen = _annotators(release, annotator)
    folder = Path(out) / "annotations"
    folder.mkdir(parents=True)
    for name, document in files(release, chosen, found).items():
        (folder / file_name(release.manifest["dataset"], name)).write_text(json.dumps(document), encoding="utf-8")
    lines = [
        f"{folder}: {len(found):,} pairs ({sum(p['positive'] for p in found):,} with their label's regions, "
        f"{sum(not p['positive'] for p in found):,} negatives) over {len({p['image_id'] for p in found}):,} images, "
        f"one file for each of {len(chosen)} annotators ({', '.join(chosen)})"
    ]
    if images is not None:
        sources = release.image_sources(sorted({p["image_id"] for p in found}), images)
        paths = dict(zip(*release.arrow("images", ["image_id", "path"]).to_pydict().values(), strict=True))
        (Path(out) / "images").mkdir()
        for image_id, source in sources.items():
            target = Path(out) / "images" / photo(paths[image_id])
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(source, bytes):
                target.write_bytes(source)
            else:
                shutil.copyfile(source, target)
        lines.append(f"{Path(out) / 'images'}: {len(sources):,} photos")
    return lines
