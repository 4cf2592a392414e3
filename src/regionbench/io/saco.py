"""SA-Co's files (SAM 3's promptable concept benchmark): a release written as concept pairs.

``regionbench export RELEASE OUT --format saco`` writes any release of labelled regions as
SA-Co/Gold distributes its subsets: ``OUT/annotations/gold_<dataset>_merged_<annotator>_release_test.json``,
one COCO-shaped file an annotator, whose ``images`` are the (image, noun phrase) pairs (``id``,
``file_name``, ``height``, ``width``, ``text_input``: the label, ``is_instance_exhaustive``) and
whose ``annotations`` are that annotator's regions of the pair's label on the pair's image (their
masks as RLE, ``bbox``, ``area``, ``iscrowd``); with ``--images`` the photos under
``OUT/images/``. ``regionbench concepts`` scores a run against them, one annotator or the oracle
over all, with the human ceiling of the release's own annotators.

The pairs: the images of the release's evaluation side (its test side of the image split where
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


def pairs(
    release: Any, images: list[int] | None = None, negatives: int = NEGATIVES, seed: int = SEED
) -> list[dict[str, Any]]:
    """The (image, phrase) pairs of ``release`` (module docstring) on ``images`` (default: its
    evaluation side): each ``{"id", "image_id", "label", "positive"}``. Pairs are numbered once
    over every image of the release, from 1 in (image id, label) order, so a pair keeps its
    number whichever side is scored or exported."""
    regions = release.arrow("regions", ["image_id", "label"]).to_pylist()
    every = sorted(release.arrow("images", ["image_id"])["image_id"].to_pylist())
    given: dict[int, set[str]] = {i: set() for i in every}
    for r in regions:
        if r["label"] is not None:
            given[r["image_id"]].add(str(r["label"]))
    vocabulary = sorted({str(v) for v in release.arrow("vocabulary", ["label"])["label"].to_pylist()})
    chosen = set(images if images is not None else _scored_images(release))
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
                out.append({"id": number, "image_id": image_id, "label": label, "positive": positive})
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
    entries = [
        {"id": p["id"], "file_name": Path(images[p["image_id"]]["path"]).name, "height": images[p["image_id"]]["height"],
         "width": images[p["image_id"]]["width"], "text_input": p["label"], "is_instance_exhaustive": True}
        for p in found
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
        out[annotator] = {"images": entries, "annotations": rows, "categories": [{"id": 1, "name": "object"}]}
    return out


def file_name(dataset: str, annotator: str) -> str:
    """An annotator's file as SA-Co/Gold names them: ``gold_<subset>_merged_<annotator>_release_test.json``."""
    return f"gold_{dataset}_merged_{annotator}_release_test.json"


class SacoExport:
    """``regionbench export --format saco`` (an ``io.layouts.Exports``): the module docstring."""

    name = "saco"

    def export(self, release: Any, out: Path, images: Path | None, annotator: str | None) -> list[str]:
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
                target = Path(out) / "images" / Path(paths[image_id]).name
                if isinstance(source, bytes):
                    target.write_bytes(source)
                else:
                    shutil.copyfile(source, target)
            lines.append(f"{Path(out) / 'images'}: {len(sources):,} photos")
        return lines


EXPORT = SacoExport()
