"""``regionbench audit``: the near-duplicate check of a built release, or across two releases
(a training collection against a test collection), from the hashes the releases carry."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from regionbench.audit import duplicates
from regionbench.core.errors import InputError
from regionbench.core.numbers import counted

if TYPE_CHECKING:  # a type only: the loader imports pandas
    from regionbench.release.loader import Release


@dataclass(frozen=True)
class Hashed:
    """A release's images with their hashes: ids, paths, the collection's split, the image split."""

    name: str
    ids: np.ndarray
    paths: list[str]
    splits: list[str | None]
    sides: dict[int, str]
    phash: np.ndarray
    dhash: np.ndarray


def hashed(name: str, found: Release) -> Hashed:
    """The images of ``found`` with their hashes; InputError when it was built before them."""
    columns = set(found.arrow("images").schema.names)
    if not {"phash", "dhash"} <= columns:
        raise InputError(
            f"{found.folder}: its images carry no perceptual hashes (built before regionbench made them); "
            "rebuild it with this version to audit it"
        )
    images = found.arrow("images", ["image_id", "path", "split", "phash", "dhash"])
    subsets = found.arrow("subsets", ["image_id", "image_split"])
    sides = dict(zip(subsets["image_id"].to_pylist(), subsets["image_split"].to_pylist(), strict=True))
    return Hashed(
        name,
        np.asarray(images["image_id"].to_numpy(), dtype=np.int64),
        images["path"].to_pylist(),
        images["split"].to_pylist(),
        sides,
        duplicates.as_integers(images["phash"].to_pylist()),
        duplicates.as_integers(images["dhash"].to_pylist()),
    )


def build_threshold(found: Release) -> int:
    """The threshold the release was built with (its results/audit_duplicates.json), else the default."""
    report = found.folder / "results" / "audit_duplicates.json"
    if report.is_file():
        return int(json.loads(report.read_text(encoding="utf-8"))["threshold"])
    return duplicates.THRESHOLD


def _pair(a: Hashed, i: int, b: Hashed, j: int, distance: int) -> dict:
    def one(h: Hashed, k: int) -> dict:
        image = int(h.ids[k])
        return {
            "release": h.name,
            "image_id": image,
            "path": h.paths[k],
            "split": h.splits[k],
            "image_split": h.sides.get(image),
        }

    return {"distance": int(distance), "a": one(a, i), "b": one(b, j)}


def audit_one(release: Hashed, threshold: int) -> dict:
    """Near-duplicate groups of one release; the pairs whose images are on both sides of the
    subsets' image split (none in a release the workflow split) or in two of the collection's
    own splits. Returns a report (``lines`` prints it)."""
    i, j, distance = duplicates.near_pairs(release.phash, release.dhash, threshold)
    groups = duplicates.groups(release.ids, i, j, distance)
    splits = dict(zip(release.ids.tolist(), release.splits, strict=True))
    pairs = [
        _pair(release, a, release, b, d) for a, b, d in zip(i.tolist(), j.tolist(), distance.tolist(), strict=True)
    ]
    return {
        "threshold": threshold,
        "images_hashed": len(release.ids),
        "pairs": len(pairs),
        **duplicates.summary(groups, splits),
        "pairs_across_image_split": [
            p
            for p in pairs
            if None not in (p["a"]["image_split"], p["b"]["image_split"])
            and p["a"]["image_split"] != p["b"]["image_split"]
        ],
        "pairs_across_source_splits": [p for p in pairs if p["a"]["split"] != p["b"]["split"]],
    }


def audit_two(a: Hashed, b: Hashed, threshold: int) -> dict:
    """The pairs of near-duplicates with one image in each release."""
    phash = np.concatenate([a.phash, b.phash])
    dhash = np.concatenate([a.dhash, b.dhash])
    i, j, distance = duplicates.near_pairs(phash, dhash, threshold)
    n = len(a.ids)
    keep = (i < n) & (j >= n)  # i < j: a pair across has its first image in a
    pairs = [
        _pair(a, x, b, y - n, d)
        for x, y, d in zip(i[keep].tolist(), j[keep].tolist(), distance[keep].tolist(), strict=True)
    ]
    return {
        "threshold": threshold,
        "releases": [a.name, b.name],
        "images_hashed": [len(a.ids), len(b.ids)],
        "pairs_across_releases": pairs,
        "images_with_a_copy": [len({p["a"]["image_id"] for p in pairs}), len({p["b"]["image_id"] for p in pairs})],
    }


def _describe(p: dict) -> str:
    def one(side: dict) -> str:
        where = ", ".join(x for x in (side["split"], side["image_split"] and f"image split {side['image_split']}") if x)
        return f"{side['release']} image {side['image_id']} ({side['path']}{'; ' + where if where else ''})"

    return f"  {one(p['a'])} ~ {one(p['b'])}: {p['distance']} bits"


def lines(report: dict, examples: int) -> list[str]:
    """The report as the command prints it, ``examples`` pairs per kind."""
    out: list[str] = []
    if "pairs_across_releases" in report:
        (a, b), (na, nb), (ca, cb) = report["releases"], report["images_hashed"], report["images_with_a_copy"]
        pairs = report["pairs_across_releases"]
        out.append(
            f"{counted(len(pairs), 'near-duplicate pair')} across {a} ({na:,} images) and {b} ({nb:,}); images with a copy "
            f"in the other: {ca:,} of {a}, {cb:,} of {b} (threshold {report['threshold']} of 128 bits)"
        )
        return out + [_describe(p) for p in pairs[:examples]]
    out.append(
        f"{report['images_hashed']:,} images: {counted(report['groups'], 'near-duplicate group')} of "
        f"{counted(report['images'], 'image')}, {counted(report['pairs'], 'pair')} (threshold {report['threshold']} of 128 bits)"
    )
    for key, what in (
        ("pairs_across_image_split", "on both sides of the subsets' image split"),
        ("pairs_across_source_splits", "in two of the collection's own splits"),
    ):
        out.append(f"{counted(len(report[key]), 'pair')} {what}")
        out += [_describe(p) for p in report[key][:examples]]
    return out


def leaks(report: dict) -> int:
    """The pairs a release must not publish: across the subsets' split, or across two releases."""
    return len(report.get("pairs_across_releases", report.get("pairs_across_image_split", [])))
