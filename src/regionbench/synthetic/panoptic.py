"""Generated trees in the COCO panoptic format (``regionbench.io.panoptic``) as COCO, Cityscapes
and ADE20K publish it: stuff bands (sky, a middle band, ground) and things (blobs, an instance
each, sometimes a crowd), VOID at the image's left edge and around some things, segment ids
spread over all three colour channels. Several annotators (COCO flavour) trace the same scenes
with things and band edges moved by a few pixels, each in ``annotations/<annotator>/``."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from scipy import ndimage

from regionbench.io.cityscapes import LABELS
from regionbench.io.panoptic import id_to_rgb
from regionbench.synthetic import Options
from regionbench.synthetic.plans import get_profile
from regionbench.synthetic.rendering import blob

LAYOUT = "coco-panoptic"
OWN_CATEGORIES = True  # the format\'s classes, not the library vocabulary\'s labels

# (id, name, supercategory, isthing): stuff first (top to bottom band), then things
CATEGORIES: dict[str, tuple[tuple[int, str, str, int], ...]] = {
    "coco": (
        (187, "sky-other-merged", "sky", 0), (199, "building-other-merged", "building", 0),
        (149, "road", "ground", 0), (193, "grass-merged", "plant", 0),
        (1, "person", "person", 1), (3, "car", "vehicle", 1), (17, "cat", "animal", 1), (18, "dog", "animal", 1),
    ),
    "cityscapes": tuple(
        (i, name, category, int(has)) for i, name, _, category, has, ignored in LABELS if not ignored
    ),
    "ade20k": (
        (3, "sky", "", 0), (1, "wall", "", 0), (4, "floor", "", 0), (7, "road", "", 0),
        (13, "person", "", 1), (21, "car", "", 1), (8, "bed", "", 1),
    ),
}  # fmt: skip
STUFF_ROWS = {"coco": ("sky-other-merged", "building-other-merged", "road|grass-merged"),
              "cityscapes": ("sky", "building", "road|sidewalk"), "ade20k": ("sky", "wall", "floor|road")}  # fmt: skip
SIZES = {"coco": (160, 120), "cityscapes": (256, 128), "ade20k": (144, 112)}  # width, height


def scene(
    k: int, flavour: str, seed: int, size: tuple[int, int], jitter: int = 0
) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Image ``k``'s pixels, segment ids and ``segments_info``; ``jitter`` (an annotator's)
    moves the band edges and things by that many pixels."""
    rng = np.random.default_rng([seed, k])
    width, height = size
    by_name = {name: (i, thing) for i, name, _, thing in CATEGORIES[flavour]}
    things = [name for name, (_, thing) in by_name.items() if thing]
    top, middle, bottom = STUFF_ROWS[flavour]
    ground = bottom.split("|")[int(rng.integers(2))]
    edges = (height * rng.uniform(0.2, 0.35) + jitter, height * rng.uniform(0.5, 0.65) - jitter)
    rows = np.arange(height)[:, None].repeat(width, 1)
    classes = np.where(
        rows < edges[0], by_name[top][0], np.where(rows < edges[1], by_name[middle][0], by_name[ground][0])
    )
    ids = np.zeros((height, width), dtype=np.uint32)
    segments: list[dict[str, Any]] = []

    def new_id() -> int:  # spread over three channels, never 0, unique in the image
        while True:
            value = int(rng.integers(1, 1 << 24))
            if value not in {s["id"] for s in segments}:
                return value

    for name in (top, middle, ground):
        category = by_name[name][0]
        segments.append({"id": new_id(), "category_id": category, "iscrowd": 0})
        ids[classes == category] = segments[-1]["id"]
    for n in range(int(rng.integers(1, 5))):
        name = things[int(rng.integers(len(things)))]
        cx, cy = rng.uniform(0.15, 0.85) * width + jitter, rng.uniform(0.45, 0.8) * height
        shape = blob((height, width), cx, cy, rng.uniform(0.06, 0.14) * width, rng.uniform(0.08, 0.16) * height, rng)
        crowd = n == 0 and rng.random() < 0.3
        segments.append({"id": new_id(), "category_id": by_name[name][0], "iscrowd": int(crowd)})
        ids[shape] = segments[-1]["id"]
        if rng.random() < 0.5:  # VOID around the thing, as COCO's annotators left its outline
            ids[ndimage.binary_dilation(shape, iterations=2) & ~shape] = 0
    ids[:, : max(1, width // 40)] = 0
    present = set(np.unique(ids).tolist())
    kept = []
    for segment in segments:
        if segment["id"] not in present:
            continue
        ys, xs = np.nonzero(ids == segment["id"])
        box = [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)]
        kept.append(segment | {"area": len(xs), "bbox": box})
    colours = rng.integers(30, 225, size=(256, 3))
    category_of = {s["id"]: s["category_id"] for s in kept}
    values, inverse = np.unique(ids, return_inverse=True)
    lookup = np.array([category_of.get(int(v), 0) % 256 for v in values])[inverse.reshape(ids.shape)]
    pixels = colours[lookup].astype(np.float32) + rng.normal(0, 8, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8), ids, kept


def _names(flavour: str, k: int, split: str) -> tuple[str, str, str, Any]:
    """(image file relative to the root, its file name, the PNG's name, the file's image id)."""
    if flavour == "cityscapes":
        city = ("aachen", "bremen")[k % 2] if split == "train" else "frankfurt"
        stem = f"{city}_{k // 100:06d}_{k % 100:06d}"
        return (
            f"leftImg8bit/{split}/{city}/{stem}_leftImg8bit.png",
            f"{stem}_leftImg8bit.png",
            f"{stem}_gtFine_panoptic.png",
            stem,
        )
    if flavour == "ade20k":
        stem = f"ADE_{split}_{k + 1:08d}"
        folder = {"train": "training", "val": "validation"}[split]
        return f"ADEChallengeData2016/images/{folder}/{stem}.jpg", f"{stem}.jpg", f"{stem}.png", stem
    return f"images/{split}/{k + 1:012d}.jpg", f"{k + 1:012d}.jpg", f"{k + 1:012d}.png", k + 1


def _json_folder(flavour: str, split: str, annotator: str | None) -> str:
    """The panoptic JSON of a split, relative to the root, without ``.json``."""
    if flavour == "cityscapes":
        return f"gtFine/cityscapes_panoptic_{split}"
    if flavour == "ade20k":
        return f"ADEChallengeData2016/ade20k_panoptic_{split}"
    return f"annotations/{annotator}/panoptic_{split}" if annotator else f"annotations/panoptic_{split}"


def write_tree(
    out: str | Path,
    images: int,
    seed: int = 0,
    flavour: str = "coco",
    annotators: int = 1,
    size: tuple[int, int] | None = None,
) -> Iterator[tuple[str, int]]:
    """Write ``images`` images under ``out`` in ``flavour`` (coco, cityscapes or ade20k; a third
    of them in val), traced by ``annotators`` (COCO flavour only, ``annotator1`` ...); yields
    (image, segments)."""
    root, size = Path(out), size or SIZES[flavour]
    names: list[str | None] = (
        [None] if annotators == 1 or flavour != "coco" else [f"annotator{a + 1}" for a in range(annotators)]
    )
    splits = {"coco": ("train2017", "val2017")}.get(flavour, ("train", "val"))
    documents: dict[tuple[str | None, str], dict[str, list[Any]]] = {}
    categories = [
        {"id": i, "name": name, "supercategory": parent, "isthing": thing, "color": [i % 256, (i * 7) % 256, 90]}
        for i, name, parent, thing in CATEGORIES[flavour]
    ]
    for k in range(images):
        split = splits[1] if k % 3 == 2 else splits[0]
        image_path, file_name, png, source_id = _names(flavour, k, split)
        regions = 0
        for a, annotator in enumerate(names):
            pixels, ids, segments = scene(k, flavour, seed, size, jitter=2 * a)
            if a == 0:
                (root / image_path).parent.mkdir(parents=True, exist_ok=True)
                if image_path.endswith(".png"):
                    Image.fromarray(pixels).save(root / image_path)
                else:
                    encoded = io.BytesIO()
                    Image.fromarray(pixels).save(encoded, format="JPEG", quality=90)
                    (root / image_path).write_bytes(encoded.getvalue())
            stem = _json_folder(flavour, split, annotator)
            (root / stem).mkdir(parents=True, exist_ok=True)
            Image.fromarray(id_to_rgb(ids)).save(root / stem / png)
            document = documents.setdefault((annotator, split), {"images": [], "annotations": []})
            document["images"].append({"id": source_id, "file_name": file_name, "width": size[0], "height": size[1]})
            document["annotations"].append({"image_id": source_id, "file_name": png, "segments_info": segments})
            regions += len(segments)
        yield image_path, regions
    for (annotator, split), document in sorted(documents.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        text = json.dumps(document | {"categories": categories}, sort_keys=True)
        (root / f"{_json_folder(flavour, split, annotator)}.json").write_text(text + "\n", encoding="utf-8")


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_tree`` in the COCO flavour with the profile's number of images and ``options.annotators``."""
    return write_tree(out, get_profile(profile).n_images, options.seed, "coco", annotators(options.annotators))


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: as many, up to five."""
    return min(requested, 5)
