"""Make the scoring conformance corpus: each case's truth and run, and the reference tools' own
outputs on them (conformance/README.md).

    .venv/bin/python conformance/make.py [--out DIR] [--family NAME ...]    # after `make .venv/.installed-test`

The references are the versions ``constraints.txt`` pins (pycocotools, faster-coco-eval, lvis,
tidecv); each case records the version that made its figures. Every case is generated from a
seed: running this again writes the same files.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from pycocotools import mask as coco_mask

from regionbench import conformance

HERE = Path(__file__).parent
H, W = 48, 64
CATEGORIES = [{"id": 1, "name": "sky", "supercategory": "scene"}, {"id": 2, "name": "grass", "supercategory": "scene"},
              {"id": 3, "name": "person", "supercategory": "thing"}]  # fmt: skip
Doc = dict[str, Any]


# -- shapes --------------------------------------------------------------------------------------
def box(x: int, y: int, w: int, h: int, size: tuple[int, int] = (H, W)) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    mask[max(y, 0) : y + h, max(x, 0) : x + w] = True
    return mask


def rle(mask: np.ndarray) -> dict[str, Any]:
    encoded = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(v) for v in encoded["size"]], "counts": encoded["counts"].decode()}


def bbox_of(mask: np.ndarray) -> list[float]:
    return [float(v) for v in coco_mask.toBbox(coco_mask.encode(np.asfortranarray(mask.astype(np.uint8))))]


class Collection:
    """A truth and a run being written: images, instances, detections."""

    def __init__(self, images: int, size: tuple[int, int] = (H, W)) -> None:
        self.size = size
        self.images = [
            {"id": i, "width": size[1], "height": size[0], "file_name": f"{i:06d}.jpg"} for i in range(1, images + 1)
        ]
        self.annotations: list[Doc] = []
        self.run: list[Doc] = []

    def instance(self, image: int, category: int, mask: np.ndarray, crowd: int = 0, **extra: Any) -> np.ndarray:
        segmentation = extra.pop("segmentation", None) or rle(mask)
        area = extra.pop("area", None)
        self.annotations.append(
            {"id": len(self.annotations) + 1, "image_id": image, "category_id": category, "segmentation": segmentation,
             "area": float(mask.sum()) if area is None else area, "bbox": bbox_of(mask), "iscrowd": crowd} | extra
        )  # fmt: skip
        return mask

    def detect(self, image: int, category: int, mask: np.ndarray, score: float, **extra: Any) -> None:
        self.run.append(
            {"image_id": image, "category_id": category, "segmentation": extra.pop("segmentation", None) or rle(mask),
             "bbox": bbox_of(mask), "score": round(float(score), 6)} | extra
        )  # fmt: skip

    def truth(self, categories: list[Doc] = CATEGORIES) -> Doc:
        return {"images": self.images, "annotations": self.annotations, "categories": categories}


def scattered(
    c: Collection, rng: np.random.Generator, image: int, n: int, categories: int = 3
) -> list[tuple[int, np.ndarray]]:
    """``n`` instances of random boxes on ``image``; their (category, mask)."""
    made = []
    for _ in range(n):
        w, h = int(rng.integers(4, 20)), int(rng.integers(4, 20))
        x, y = int(rng.integers(0, c.size[1] - w)), int(rng.integers(0, c.size[0] - h))
        category = int(rng.integers(1, categories + 1))
        made.append((category, c.instance(image, category, box(x, y, w, h, c.size))))
    return made


def moved(mask: np.ndarray, dx: int, dy: int) -> np.ndarray:
    return np.roll(np.roll(mask, dy, axis=0), dx, axis=1)


# -- instance scenarios: (about, truth, run) -------------------------------------------------
def ties_within_image(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(2), np.random.default_rng(seed)
    for image in (1, 2):
        for category, mask in scattered(c, rng, image, 4):
            for dx in (0, 1, -2):
                c.detect(image, category, moved(mask, dx, 0), 0.5)  # one score for every detection of the image
    return "every detection of an image has the same score: the order among them is the file's", c.truth(), c.run


def ties_across_images(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(4), np.random.default_rng(seed)
    for image in (4, 2, 3, 1):
        for category, mask in scattered(c, rng, image, 3):
            c.detect(image, category, moved(mask, int(rng.integers(-3, 4)), 0), round(float(rng.random()), 1))
            if rng.random() < 0.4:
                c.detect(image, category, box(0, 0, 5, 5), round(float(rng.random()), 1))  # a false positive
    return "scores rounded to 0.1: ties between images, the run listed in no image order", c.truth(), c.run


def duplicates(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(3), np.random.default_rng(seed)
    for image in (1, 2, 3):
        for category, mask in scattered(c, rng, image, 3):
            score = float(rng.random())
            c.detect(image, category, mask, score)
            c.detect(image, category, mask, score)  # the same detection twice
            c.detect(image, category, moved(mask, 1, 1), score * 0.9)
    return "each detection written twice, score and all, and a shifted copy below it", c.truth(), c.run


def crowds(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(3), np.random.default_rng(seed)
    for image in (1, 2, 3):
        crowd = c.instance(image, 3, box(30, 10, 30, 30), crowd=1)
        for _ in range(3):  # inside the crowd, of its category: ignored
            c.detect(
                image, 3, box(32 + int(rng.integers(0, 10)), 12 + int(rng.integers(0, 10)), 8, 8), float(rng.random())
            )
        c.detect(image, 2, box(34, 14, 8, 8), float(rng.random()))  # inside, another category: a false positive
        c.detect(image, 3, crowd, float(rng.random()))  # the crowd itself
        for category, mask in scattered(c, rng, image, 2, categories=2):
            c.detect(image, category, moved(mask, 1, 0), float(rng.random()))
    return "crowd regions, detections inside them (of their category and another) and on them", c.truth(), c.run


def empty_truth(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(2), np.random.default_rng(seed)
    for image in (1, 2):
        for _ in range(3):
            c.detect(
                image,
                int(rng.integers(1, 4)),
                box(int(rng.integers(0, 40)), int(rng.integers(0, 30)), 8, 8),
                float(rng.random()),
            )
    return "a truth without any instance: every figure is -1", c.truth(), c.run


def empty_run(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(2), np.random.default_rng(seed)
    for image in (1, 2):
        scattered(c, rng, image, 3)
    return "a run without any detection", c.truth(), []


def image_without_detection(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(4), np.random.default_rng(seed)
    for image in (1, 2, 3, 4):
        for category, mask in scattered(c, rng, image, 3):
            if image % 2:
                c.detect(image, category, moved(mask, 1, 1), float(rng.random()))
    return "half the images have instances and no detection", c.truth(), c.run


def beyond_max_dets(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(2, (96, 128)), np.random.default_rng(seed)
    targets = [c.instance(1, 1, box(4 * (k % 30), 8 * (k // 30), 4, 6, c.size)) for k in range(40)]
    for k in range(130):  # more than 100 of one category on one image
        c.detect(1, 1, moved(targets[k % 40], k % 3, 0), float(rng.random()))
    for category, mask in scattered(c, rng, 2, 4):
        c.detect(2, category, mask, float(rng.random()))
    return "130 detections of one category on one image: COCO keeps the best 100", c.truth(), c.run


def area_edges(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(2, (128, 128)), np.random.default_rng(seed)
    sides = [(32, 32), (31, 33), (33, 31), (96, 96), (95, 97), (16, 64)]  # areas 1024, 1023, 1023, 9216, 9215, 1024
    for image in (1, 2):
        for k, (w, h) in enumerate(sides):
            mask = (
                box(0, 0, w, h, c.size)
                if k in (0, 3)
                else box(int(rng.integers(0, 128 - w)), int(rng.integers(0, 128 - h)), w, h, c.size)
            )
            category = 1 + k % 3
            c.instance(image, category, mask)
            c.detect(image, category, moved(mask, int(rng.integers(0, 3)), 0), float(rng.random()))
    return "instance areas at the area ranges' bounds (32², 96², one pixel either side)", c.truth(), c.run


def polygons(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(2), np.random.default_rng(seed)
    for image in (1, 2):
        for _ in range(3):
            x, y = float(rng.integers(2, 40)), float(rng.integers(2, 25))
            polygon = [x, y, x + 14.5, y + 1.0, x + 10.0, y + 15.5, x - 1.0, y + 9.0]
            category = int(rng.integers(1, 4))
            mask = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects([polygon], H, W))).astype(bool)
            c.instance(image, category, mask, segmentation=[polygon], area=float(mask.sum()))
            shifted = [v + (1.5 if k % 2 == 0 else 0.0) for k, v in enumerate(polygon)]
            c.detect(image, category, mask, float(rng.random()), segmentation=[shifted])
    return "the truth's and the run's masks as polygons (fractional vertices)", c.truth(), c.run


def self_intersecting(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(2), np.random.default_rng(seed)
    for image in (1, 2):
        x, y = float(rng.integers(2, 30)), float(rng.integers(2, 20))
        bow = [x, y, x + 20, y + 20, x + 20, y, x, y + 20]  # a bow tie: its edges cross
        mask = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects([bow], H, W))).astype(bool)
        c.instance(image, 1, mask, segmentation=[bow], area=float(mask.sum()))
        c.detect(image, 1, mask, 0.9, segmentation=[bow])
        c.detect(image, 1, box(int(x), int(y), 20, 20), 0.8)
        for category, other in scattered(c, rng, image, 2, categories=3):
            c.detect(image, category, moved(other, 1, 0), float(rng.random()))
    return "a self-intersecting polygon (a bow tie) in the truth and the run", c.truth(), c.run


def uncompressed_rle(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(2), np.random.default_rng(seed)
    for image in (1, 2):
        mask = box(10, 10, 30, 20)
        counts, run, value = [], 0, False
        for pixel in mask.flatten(order="F"):
            if bool(pixel) != value:
                counts.append(run)
                run, value = 0, bool(pixel)
            run += 1
        counts.append(run)
        c.instance(image, 3, mask, crowd=1, segmentation={"size": [H, W], "counts": counts})
        for category, other in scattered(c, rng, image, 3, categories=2):
            c.detect(image, category, moved(other, 1, 0), float(rng.random()))
        c.detect(image, 3, box(12, 12, 10, 10), 0.7)
    return "a crowd region as uncompressed RLE (counts a list), as COCO writes crowds", c.truth(), c.run


def absent_categories(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(3), np.random.default_rng(seed)
    for image in (1, 2, 3):
        for category, mask in scattered(c, rng, image, 3):
            c.detect(image, category, moved(mask, 1, 0), float(rng.random()))
            c.detect(image, 7, mask, float(rng.random()))  # a category the truth lacks
    return "detections of a category the truth lacks (id 7): the references leave them out", c.truth(), c.run


def never_detected(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(3), np.random.default_rng(seed)
    for image in (1, 2, 3):
        for category, mask in scattered(c, rng, image, 4):
            if category != 2:
                c.detect(image, category, moved(mask, 1, 0), float(rng.random()))
    return "a category of the truth no detection names", c.truth(), c.run


def mixed(seed: int) -> tuple[str, Doc, list[Doc]]:
    c, rng = Collection(5), np.random.default_rng(seed)
    for image in range(1, 6):
        if image == 3:
            c.instance(image, 3, box(20, 5, 30, 30), crowd=1)
        for category, mask in scattered(c, rng, image, int(rng.integers(1, 6))):
            for _ in range(int(rng.integers(0, 3))):
                other = category if rng.random() < 0.8 else int(rng.integers(1, 4))
                c.detect(
                    image, other, moved(mask, int(rng.integers(-3, 4)), int(rng.integers(-3, 4))), float(rng.random())
                )
        if rng.random() < 0.5:
            c.detect(image, int(rng.integers(1, 4)), box(1, 1, 6, 6), float(rng.random()))
    return (
        f"a mixed run (seed {seed}): misplaced, relabelled, duplicated and invented detections, a crowd",
        c.truth(),
        c.run,
    )


INSTANCES: dict[str, Callable[[int], tuple[str, Doc, list[Doc]]]] = {
    "ties-within-image": ties_within_image, "ties-across-images": ties_across_images, "duplicates": duplicates,
    "crowds": crowds, "empty-truth": empty_truth, "empty-run": empty_run,
    "image-without-detection": image_without_detection, "beyond-max-dets": beyond_max_dets,
    "area-edges": area_edges, "polygons": polygons, "self-intersecting-polygon": self_intersecting,
    "uncompressed-rle": uncompressed_rle, "absent-categories": absent_categories, "never-detected": never_detected,
    "mixed-1": lambda s: mixed(1), "mixed-2": lambda s: mixed(2), "mixed-3": lambda s: mixed(3),
    "mixed-4": lambda s: mixed(4),
}  # fmt: skip


# -- TIDE scenarios: each error type alone, then together ----------------------------------------
def half_off(mask: np.ndarray) -> np.ndarray:
    """``mask``'s box moved right by half its width."""
    ys, xs = np.nonzero(mask)
    w, h = int(xs.max() - xs.min()) + 1, int(ys.max() - ys.min()) + 1
    return box(int(xs.min()) + (w + 1) // 2, int(ys.min()), w, h)


def tide_alone(kind: str) -> Callable[[int], tuple[str, Doc, list[Doc]]]:
    def made(seed: int) -> tuple[str, Doc, list[Doc]]:
        c, rng = Collection(3), np.random.default_rng(seed)
        for image in (1, 2, 3):
            for k, (category, mask) in enumerate(scattered(c, rng, image, 3)):
                score = float(rng.random())
                c.detect(image, category, mask, score)  # found
                if k:
                    continue
                if kind == "Cls":
                    c.detect(image, 1 + category % 3, mask, score * 0.9)
                elif kind == "Loc":  # the same box moved by half its width: IoU 1/3
                    c.detect(image, category, half_off(mask), score * 0.9)
                elif kind == "Both":
                    c.detect(image, 1 + category % 3, half_off(mask), score * 0.9)
                elif kind == "Dupe":
                    c.detect(image, category, moved(mask, 1, 0), score * 0.9)
                elif kind == "Bkg":
                    c.detect(image, category, box(0, 40, 6, 6), score * 0.9)
            if kind == "Miss":
                c.instance(image, 2, box(50, 2, 10, 10))
        return f"one kind of error alone ({kind}), beside detections that are right", c.truth(), c.run

    return made


TIDE: dict[str, Callable[[int], tuple[str, Doc, list[Doc]]]] = {
    **{f"only-{k.lower()}": tide_alone(k) for k in ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")},
    "ties-across-images": ties_across_images, "duplicates": duplicates, "crowds": crowds, "mixed-1": lambda s: mixed(1),
    "image-without-detection": image_without_detection, "empty-truth": empty_truth, "beyond-max-dets": beyond_max_dets,
    "polygons": polygons, "absent-categories": absent_categories,
}  # fmt: skip


# -- LVIS scenarios ------------------------------------------------------------------------------
def lvis_collection(seed: int, images: int = 5, cap_pressure: bool = False) -> tuple[str, Doc, list[Doc]]:
    rng = np.random.default_rng(seed)
    categories = [
        {"id": k, "name": f"thing-{k}", "frequency": "rcf"[k % 3], "synonyms": [f"thing-{k}"]} for k in range(1, 9)
    ]
    c = Collection(images)
    for entry in c.images:
        present = sorted(int(v) for v in rng.choice(np.arange(1, 9), size=3, replace=False))
        rest = [k for k in range(1, 9) if k not in present]
        entry["neg_category_ids"] = sorted(int(v) for v in rng.choice(rest, size=2, replace=False))
        entry["not_exhaustive_category_ids"] = present[:1] if rng.random() < 0.6 else []
        for category in present:
            for _ in range(int(rng.integers(1, 4))):
                w, h = int(rng.integers(3, 20)), int(rng.integers(3, 20))
                mask = c.instance(
                    entry["id"], category, box(int(rng.integers(0, W - 20)), int(rng.integers(0, H - 20)), w, h)
                )
                for _ in range(int(rng.integers(1, 40 if cap_pressure else 3))):
                    other = int(rng.integers(1, 9)) if rng.random() < 0.3 else category
                    c.detect(
                        entry["id"],
                        other,
                        moved(mask, int(rng.integers(-3, 4)), int(rng.integers(-3, 4))),
                        float(rng.random()),
                    )
        for _ in range(int(rng.integers(0, 5))):
            c.detect(
                entry["id"],
                int(rng.integers(1, 9)),
                box(int(rng.integers(0, W - 10)), int(rng.integers(0, H - 10)), 6, 8),
                float(rng.random()),
            )
    order = rng.permutation(len(c.run))
    about = "an LVIS file: categories verified absent, not exhaustively annotated and never checked; r/c/f"
    return (
        about + (", more detections an image than the cap" if cap_pressure else ""),
        c.truth(categories),
        [c.run[k] for k in order],
    )


# -- panoptic scenarios: id maps (10x12 blocks) and their segments ------------------------------
PANOPTIC_CATEGORIES = [{"id": k, "name": f"c{k}", "isthing": int(k <= 3)} for k in range(1, 7)]  # things 1-3


def png(pixels: np.ndarray) -> str:
    """``pixels`` as a PNG, base64 (how a case holds its maps)."""
    import base64
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def rgb(ids: np.ndarray) -> np.ndarray:
    ids = ids.astype(np.uint32)
    return np.stack([ids & 255, (ids >> 8) & 255, (ids >> 16) & 255], axis=-1).astype(np.uint8)


def panoptic_case(seed: int, images: int = 3, noise: float = 0.1, crowd: float = 0.25, void: float = 0.0,
                  extra: int = 2, relabel: float = 0.2, empty: bool = False) -> tuple[Any, ...]:  # fmt: skip
    """Truth maps of blocky segments (a crowd per thing category at most, VOID where ``void``)
    and predictions made from them: shifted, ``noise`` pixels repainted, ``relabel`` of the
    segments relabelled or invented (of any category, some absent from the truth)."""
    rng = np.random.default_rng(seed)
    maps: dict[str, dict[str, str]] = {"truth": {}, "run": {}}
    truth_annotations, run_annotations = [], []
    for image in range(1, images + 1):
        segments = 0 if empty and image == 1 else int(rng.integers(2, 7))
        blocks = rng.integers(0, segments + 1, size=(5, 4))
        layout = np.repeat(np.repeat(blocks, 2, 0), 3, 1)
        layout[rng.random(layout.shape) < void] = 0
        ids = rng.choice(np.arange(1, 1 << 24), size=segments + extra + 1, replace=False)
        ids[0] = 0
        crowded: set[int] = set()
        info = []
        for k in range(1, segments + 1):
            category = int(rng.integers(1, 7))
            is_crowd = category <= 3 and category not in crowded and rng.random() < crowd
            crowded |= {category} if is_crowd else set()
            if (layout == k).any():
                area = int((layout == k).sum())
                info.append({"id": int(ids[k]), "category_id": category, "iscrowd": int(is_crowd), "area": area})
        predicted = np.roll(layout, int(rng.integers(-1, 2)), axis=int(rng.integers(0, 2)))
        repaint = rng.random(layout.shape) < noise
        predicted[repaint] = rng.integers(0, segments + extra + 1, size=int(repaint.sum()))
        by_truth = {s["id"]: s["category_id"] for s in info}
        said = []
        for k in range(1, segments + extra + 1):
            if (predicted == k).any():
                category = by_truth.get(int(ids[k]))
                if category is None or rng.random() < relabel:
                    category = int(rng.integers(1, 7))
                said.append({"id": int(ids[k]), "category_id": category, "iscrowd": 0})
        name = f"{image:06d}.png"
        maps["truth"][name], maps["run"][name] = png(rgb(ids[layout])), png(rgb(ids[predicted]))
        truth_annotations.append({"image_id": image, "file_name": name, "segments_info": info})
        run_annotations.append({"image_id": image, "file_name": name, "segments_info": said})
    about = f"panoptic maps (seed {seed}): segments shifted, {noise:.0%} of the pixels repainted, some relabelled or invented"
    entries = [{"id": i, "file_name": f"{i:06d}.jpg", "width": 12, "height": 10} for i in range(1, images + 1)]
    truth = {"images": entries, "annotations": truth_annotations, "categories": PANOPTIC_CATEGORIES}
    return about, truth, {"annotations": run_annotations}, maps


PANOPTIC: dict[str, dict[str, Any]] = {
    "blocks": {"seed": 1, "noise": 0.0, "relabel": 0.0},
    "noisy": {"seed": 2, "noise": 0.4},
    "crowds": {"seed": 3, "crowd": 1.0},
    "void": {"seed": 4, "void": 0.3},
    "run-only-categories": {"seed": 5, "extra": 4, "relabel": 0.6},
    "an-empty-image": {"seed": 6, "empty": True},
    "mixed-1": {"seed": 7, "images": 5},
    "mixed-2": {"seed": 8, "images": 5, "noise": 0.2, "void": 0.1},
}


# -- semantic scenarios and mmseg's rule ------------------------------------------------------------
SEMANTIC_CLASSES = ["road", "sky", "tree", "car", "fence"]


def semantic_case(seed: int, images: int = 3, ignore: float = 0.1, abstain: float = 0.0, absent: bool = False,
                  wide: bool = False) -> tuple[str, Doc, dict[str, dict[str, str]]]:  # fmt: skip
    """Truth label maps (values 0-4, 255 ignored) and predictions: a share of pixels wrong, some
    abstaining (255 or a value no class has), a class the truth lacks predicted (``absent``);
    ``wide``: written as 16-bit PNGs."""
    rng = np.random.default_rng(seed)
    maps: dict[str, dict[str, str]] = {"truth": {}, "run": {}}
    used = 4 if absent else 5  # fence only in the run
    for image in range(1, images + 1):
        truth = np.repeat(np.repeat(rng.integers(0, used, size=(6, 8)), 3, 0), 3, 1)
        truth[rng.random(truth.shape) < ignore] = 255
        predicted = np.where(truth == 255, rng.integers(0, 5, size=truth.shape), truth)
        wrong = rng.random(truth.shape) < 0.2
        predicted[wrong] = rng.integers(0, 5, size=int(wrong.sum()))
        quiet = rng.random(truth.shape) < abstain
        predicted[quiet] = rng.choice([255, 9], size=int(quiet.sum()))
        kind = np.uint16 if wide else np.uint8
        maps["truth"][f"{image}.png"], maps["run"][f"{image}.png"] = (
            png(truth.astype(kind)),
            png(predicted.astype(kind)),
        )
    parts = [f"label maps (seed {seed})", "ignored pixels" if ignore else "", "abstaining pixels" if abstain else "",
             "a class the truth lacks predicted" if absent else "", "16-bit PNGs" if wide else ""]  # fmt: skip
    return ", ".join(p for p in parts if p), {"classes": SEMANTIC_CLASSES, "ignore": 255}, maps


SEMANTIC: dict[str, dict[str, Any]] = {
    "plain": {"seed": 1, "ignore": 0.0},
    "ignore": {"seed": 2},
    "abstaining": {"seed": 3, "abstain": 0.15},
    "absent-class-predicted": {"seed": 4, "absent": True},
    "16-bit": {"seed": 5, "wide": True},
    "mixed": {"seed": 6, "images": 5, "abstain": 0.05, "absent": True},
}


def cityscapes_case(seed: int, images: int = 2, train_ids: bool = False, void: bool = False, crowd: bool = False,
                    no_instances: bool = False, beyond: bool = False) -> tuple[str, dict[str, Any], None, dict[str, Any]]:  # fmt: skip
    """Cityscapes frames of 64 x 128: label id maps of blocks over every label (void ones too),
    their instance maps (each block of a thing class an instance, ``crowd``: some a group, id
    the label's) and a run: the truth shifted, some car called truck (of its category) and
    caravan (not evaluated), some road parking, a band unlabelled; ``train_ids``: in train ids
    (255 for a label not evaluated); ``void``: labels Cityscapes does not evaluate predicted
    (ego vehicle, static, ground ...); ``beyond``: a value no label has (40) predicted, which
    cityscapesScripts refuses; ``no_instances``: no thing class in the truth (iIoU has nothing to weigh)."""
    from cityscapesscripts.helpers.labels import labels

    rng = np.random.default_rng(seed)
    by_id = {label.id: label for label in labels if label.id >= 0}
    things = [i for i, label in by_id.items() if label.hasInstances and not (no_instances and label.hasInstances)]
    stuff = [i for i, label in by_id.items() if not label.hasInstances]
    maps: dict[str, dict[str, str]] = {"truth": {}, "run": {}}
    for image in range(1, images + 1):
        frame = f"conform_{seed:06d}_{image:06d}"
        pool = stuff + things * 3  # things often: iIoU has instances to weigh
        blocks = rng.choice(pool, size=(4, 8))
        label_ids = np.repeat(np.repeat(blocks, 16, 0), 16, 1).astype(np.uint8)
        instance_ids = label_ids.astype(np.uint16)
        for k, (r, c) in enumerate(np.ndindex(4, 8)):
            label = by_id[int(blocks[r, c])]
            if label.hasInstances and not (crowd and rng.random() < 0.3):
                instance_ids[16 * r : 16 * r + 16, 16 * c : 16 * c + 16] = label.id * 1000 + k
        said = np.roll(label_ids, int(rng.integers(2, 9)), axis=1)
        rows = np.arange(said.shape[0])[:, None]
        said[(said == 26) & (rows % 3 == 0)] = 27  # car -> truck
        said[(said == 26) & (rows % 5 == 1)] = 29  # car -> caravan
        said[(said == 7) & (rows % 4 == 0)] = 9  # road -> parking
        said[: int(rng.integers(1, 4))] = 0
        if train_ids:
            said = np.vectorize(lambda v: by_id[int(v)].trainId if by_id[int(v)].trainId >= 0 else 255)(said)
            said = said.astype(np.uint8)
        if void:
            chosen = rng.random(said.shape) < 0.05
            said[chosen] = rng.choice([1, 4, 5, 6], size=int(chosen.sum()))
        if beyond:
            said[rng.random(said.shape) < 0.02] = 40
        maps["truth"][f"{frame}_gtFine_labelIds.png"] = png(label_ids)
        maps["truth"][f"{frame}_gtFine_instanceIds.png"] = png(instance_ids)
        maps["run"][f"{frame}.png"] = png(said.astype(np.uint8))
    table = [{"id": label.id, "name": label.name, "train_id": label.trainId, "category": label.category,
              "has_instances": label.hasInstances, "ignore_in_eval": label.ignoreInEval} for label in by_id.values()]  # fmt: skip
    said_ = {"train ids": train_ids, "labels not evaluated predicted": void, "a value no label has": beyond,
             "groups": crowd, "no thing class": no_instances}  # fmt: skip
    about = f"Cityscapes frames (seed {seed}), label ids" + "".join(f"; {k}" for k, v in said_.items() if v)
    return about, {"labels": table}, None, maps


CITYSCAPES: dict[str, dict[str, Any]] = {
    "cityscapes/label-ids": {"seed": 1},
    "cityscapes/train-ids": {"seed": 2, "train_ids": True},
    "cityscapes/labels-not-evaluated-predicted": {"seed": 3, "void": True},
    "cityscapes/a-value-no-label-has": {"seed": 7, "beyond": True},
    "cityscapes/groups": {"seed": 4, "crowd": True, "images": 3},
    "cityscapes/no-thing-class": {"seed": 5, "no_instances": True},
    "cityscapes/mixed": {"seed": 6, "images": 4, "train_ids": True, "void": True, "crowd": True},
}


def mmseg_rule(case: conformance.Case) -> dict[str, float]:
    """mmsegmentation's ``IoUMetric`` (1.x), as its ``intersect_and_union`` and
    ``total_area_to_metrics`` compute it: the truth's ignore index left out, every other
    predicted value counted (a value no class has is wrong), IoU = intersect / union per class,
    the means over the classes whose union (accuracy: whose truth area) is not zero."""
    classes, ignore = len(case.truth["classes"]), case.truth["ignore"]
    intersect, union, label_area = np.zeros(classes), np.zeros(classes), np.zeros(classes)
    for name in sorted(case.maps["truth"]):
        truth = conformance.picture(case, "truth", name).astype(np.int64).ravel()
        predicted = conformance.picture(case, "run", name).astype(np.int64).ravel()
        keep = truth != ignore
        truth, predicted = truth[keep], predicted[keep]
        hit = predicted[predicted == truth]
        i = np.histogram(hit, bins=classes, range=(0, classes - 1))[0]
        p = np.histogram(predicted, bins=classes, range=(0, classes - 1))[0]
        t = np.histogram(truth, bins=classes, range=(0, classes - 1))[0]
        intersect, union, label_area = intersect + i, union + p + t - i, label_area + t
    with np.errstate(invalid="ignore", divide="ignore"):
        iou, accuracy = intersect / union, intersect / label_area
    return {
        "pixel_accuracy": float(intersect.sum() / label_area.sum()),
        "mean_class_accuracy": float(np.nanmean(accuracy)),
        "miou": float(np.nanmean(iou)),
    }


# -- segments and boundaries: BSDS500's benchmark data with its printed outputs, and scenarios --------
BSDS = HERE.parent / "tests" / "data" / "bsds500-bench"  # BIDS/BSDS500 bench/data (its README)
BSDS_VERSION = "BIDS/BSDS500 a04b7c6 (bench/data, its printed outputs)"


def bsds_cell(folder: str, image: str, name: str) -> list[np.ndarray]:
    import scipy.io

    cell = scipy.io.loadmat(BSDS / folder / f"{image}.mat")[name]
    return [cell[0, k]["Segmentation"][0, 0] if folder == "groundTruth" else cell[0, k] for k in range(cell.shape[1])]


def bsds_numbers(test: str, name: str) -> list[float]:
    return [float(v) for v in (BSDS / test / name).read_text().split()]


def bsds_case(family: str, test: str) -> tuple[dict[str, Any], tuple[Any, ...], dict[str, Any]]:
    """A case of the benchmark's own data: its five images' humans, the run of ``test`` (test_1: the
    ``ucm2`` cut at 5 thresholds, as the benchmark cuts it; test_4: the five ``segs`` scales) and
    the figures the benchmark printed for it."""
    from regionbench.scoring.measures import bsds_boundaries as boundaries
    from regionbench.scoring.measures import bsds_regions as segments

    images = sorted(p.stem for p in (BSDS / "groundTruth").glob("*.mat"))
    maps: dict[str, dict[str, str]] = {"truth": {}, "run": {}}
    ucm = test == "test_1"
    levels = [float(t) for t in segments.thresholds(5)] if ucm else [float(k) for k in range(1, 6)]
    for image in images:
        for k, human in enumerate(bsds_cell("groundTruth", image, "groundTruth"), start=1):
            maps["truth"][f"{image}/{k}.png"] = png(human.astype(np.uint16))
        if ucm:
            import scipy.io

            ucm2 = scipy.io.loadmat(BSDS / "ucm2" / f"{image}.mat")["ucm2"]
            if family == "segments":
                run = [segments.cut_ucm(ucm2, t).astype(np.uint16) for t in levels]
            else:
                run = [(ucm2[2::2, 2::2] >= t).astype(np.uint8) for t in levels]
        else:
            run = [s.astype(np.uint16) for s in bsds_cell("segs", image, "segs")]
        for k, level in enumerate(run, start=1):
            maps["run"][f"{image}/{k}.png"] = png(level)
    if family == "segments":
        c, ri_vi = bsds_numbers(test, "eval_cover.txt"), bsds_numbers(test, "eval_RI_VOI.txt")
        figures = conformance.segment_figures(
            dict(zip(("ods_threshold", "ods", "ois", "best"), c, strict=True)),
            dict(zip(("ods_threshold", "ods", "ois"), ri_vi[:3], strict=True)),
            dict(zip(("ods_threshold", "ods", "ois"), ri_vi[3:], strict=True)),
        )
        settings: dict[str, Any] = {"thresholds": levels}
        what = "the ucm2 cut at 5 thresholds" if ucm else "the five segs scales"
    else:
        b = bsds_numbers(test, "eval_bdry.txt")
        names = ("threshold", "recall", "precision", "f")
        figures = conformance.boundary_figures(dict(zip(names, b[:4], strict=True)),
                                               dict(zip(names[1:], b[4:7], strict=True)), b[7])  # fmt: skip
        settings = {"thresholds": levels, "run": "maps" if ucm else "segments"}
        what = "the ucm2 at 5 thresholds" if ucm else "the boundaries of the five segs scales"
        assert boundaries.MAX_DIST == 0.0075
    about = f"BSDS500's bench/data {test}: five images, their humans, {what}; the figures the benchmark printed"
    published = {conformance.PUBLISHED: {"version": BSDS_VERSION, "figures": figures}}
    return settings, (about, {"images": images}, None, maps), published


def partition(rng: np.random.Generator, size: tuple[int, int], rows: int, cols: int) -> np.ndarray:
    """A label map (from 1) of ``rows`` x ``cols`` blocks whose edges wander by a pixel or two."""
    h, w = size
    y = np.sort(rng.choice(np.arange(4, h - 4), rows - 1, replace=False)) if rows > 1 else np.array([], dtype=int)
    x = np.sort(rng.choice(np.arange(4, w - 4), cols - 1, replace=False)) if cols > 1 else np.array([], dtype=int)
    yy = np.arange(h)[:, None] + rng.integers(-1, 2, size=(1, w))
    xx = np.arange(w)[None, :] + rng.integers(-1, 2, size=(h, 1))
    return (np.searchsorted(y, yy, side="right") * cols + np.searchsorted(x, xx, side="right") + 1).astype(np.uint16)


def coarser(labels: np.ndarray, rng: np.random.Generator, keep: int) -> np.ndarray:
    """``labels`` with its segments merged at random into ``keep`` (numbered from 1)."""
    merged = rng.integers(1, keep + 1, size=int(labels.max()) + 1)
    return merged[labels].astype(np.uint16)


def region_scenario(seed: int, images: int = 2, zero_based: bool = False, one_segment: bool = False,
                    distinct: bool = False, tie: bool = False) -> tuple[str, dict[str, Any], None, dict[str, Any]]:  # fmt: skip
    """Images of 48 x 64 with three humans each (block partitions, edges a pixel apart) and a run
    of four scales from fine to coarse: ``zero_based`` labels from 0; ``one_segment``: the last
    scale one segment, and a human one segment too; ``distinct``: the first scale every pixel
    its own segment; ``tie``: two scales the same (the first of a tie is the best)."""
    rng = np.random.default_rng(seed)
    size = (48, 64)
    maps: dict[str, dict[str, str]] = {"truth": {}, "run": {}}
    for image in range(1, images + 1):
        humans = [partition(rng, size, int(rng.integers(2, 4)), int(rng.integers(2, 5))) for _ in range(3)]
        if one_segment and image == 1:
            humans[2] = np.ones(size, dtype=np.uint16)
        fine = partition(rng, size, 4, 5)
        run = [fine, coarser(fine, rng, 8), coarser(fine, rng, 4), coarser(fine, rng, 2)]
        if distinct:
            run[0] = np.arange(1, size[0] * size[1] + 1, dtype=np.uint16).reshape(size)
        if one_segment:
            run[-1] = np.ones(size, dtype=np.uint16)
        if tie:
            run[2] = run[1].copy()
        if zero_based:
            run = [(r - 1).astype(np.uint16) for r in run]
        for k, human in enumerate(humans, start=1):
            maps["truth"][f"{image}/{k}.png"] = png(human)
        for k, level in enumerate(run, start=1):
            maps["run"][f"{image}/{k}.png"] = png(level)
    said = {"labels from 0": zero_based, "one segment (a human's too)": one_segment,
            "every pixel a segment": distinct, "two scales alike": tie}  # fmt: skip
    chosen = [k for k, v in said.items() if v]
    about = f"segmentations (seed {seed}), four scales against three humans" + "".join(f"; {c}" for c in chosen)
    return about, {"images": [str(i) for i in range(1, images + 1)]}, None, maps


SEGMENTS: dict[str, dict[str, Any]] = {
    "blocks": {"seed": 1},
    "zero-based": {"seed": 2, "zero_based": True},
    "one-segment": {"seed": 3, "one_segment": True},
    "all-distinct": {"seed": 4, "distinct": True},
    "tied-scales": {"seed": 5, "tie": True},
    "mixed": {"seed": 6, "images": 3, "zero_based": True, "one_segment": True},
}


def boundary_scenario(seed: int, kind: str = "soft", images: int = 2, empty: bool = False,
                      on_thresholds: bool = False) -> tuple[str, dict[str, Any], None, dict[str, Any]]:  # fmt: skip
    """Images of 96 x 128 (a matching distance of 1.2 pixels) with three humans each, coarser and
    finer cuts of one partition (they share their boundaries), and a run: ``soft``, an 8-bit map
    strongest on the coarsest human's boundaries, weaker on a finer cut's and on noise farther
    than the matching distance from every boundary (so the least-cost matching is unique);
    ``segments``, four cuts of the partition; ``on_thresholds``: soft values exactly on the
    thresholds (k/5: 51, 102, ...); ``empty``: an image with no boundary at all and a human who
    drew one segment."""
    from scipy import ndimage

    from regionbench.scoring.measures import bsds_boundaries as boundaries

    rng = np.random.default_rng(seed)
    size = (96, 128)
    maps: dict[str, dict[str, str]] = {"truth": {}, "run": {}}
    for image in range(1, images + 1):
        finest = partition(rng, size, 5, 6)
        cuts = [coarser(finest, rng, keep) for keep in (24, 12, 6, 3)]  # each a merge of the finest's blocks
        humans = [cuts[1], cuts[2], cuts[3]]
        if empty and image == 1:
            humans[0] = np.ones(size, dtype=np.uint16)
        for k, human in enumerate(humans, start=1):
            maps["truth"][f"{image}/{k}.png"] = png(human)
        if kind == "segments":
            run = [finest, cuts[0], cuts[2], np.ones(size, dtype=np.uint16)]
            for k, level in enumerate(run, start=1):
                maps["run"][f"{image}/{k}.png"] = png(level)
            continue
        levels = [255, 204, 153, 102, 51] if on_thresholds else [230, 160, 90, 40]
        soft = np.where(boundaries.seg2bdry(cuts[3]), levels[0], 0)
        soft = np.where(boundaries.seg2bdry(cuts[1]) & (soft == 0), levels[1], soft)
        soft = np.where(boundaries.seg2bdry(finest) & (soft == 0), levels[2], soft)
        far = ndimage.distance_transform_edt(~boundaries.seg2bdry(finest)) > 3
        noise = far & (rng.random(size) < 0.02)
        soft = np.where(noise, rng.choice(levels[1:], size=size), soft)
        if empty and image == 1:
            soft[:] = 0
        maps["run"][f"{image}.png"] = png(soft.astype(np.uint8))
    said = {"soft values on the thresholds": on_thresholds, "an image without boundaries": empty}
    chosen = [k for k, v in said.items() if v]
    about = f"boundary maps (seed {seed}, {kind}) against three humans" + "".join(f"; {c}" for c in chosen)
    return about, {"images": [str(i) for i in range(1, images + 1)]}, None, maps


BOUNDARIES: dict[str, dict[str, Any]] = {
    "soft": {"seed": 1},
    "soft-on-thresholds": {"seed": 2, "on_thresholds": True},
    "segment-scales": {"seed": 3, "kind": "segments"},
    "no-boundary": {"seed": 4, "empty": True},
    "mixed": {"seed": 6, "images": 3, "empty": True, "on_thresholds": True},
}
BOUNDARY_MAX_DIST = 0.0075  # of the 160-pixel diagonal: 1.2 pixels


def printed(value: float) -> float:
    return float(f"{value:g}")


def bsds_region_rule(case: conformance.Case) -> dict[str, float]:
    """BSDS500's region benchmark written from its definitions (``evaluation_reg_image.m`` and
    ``collect_eval_reg.m``): the contingency of two maps counted pixel by pixel; covering from
    each region's best overlap |r n g| / |r u g|; the Rand index by counting the pairs of pixels
    on which two maps agree (from the contingency: the pairs one map joins and the other splits); VI = H(S|G) + H(G|S) in bits; each image's figures written as %g and
    collected from there. A machine map holding labels below 1 is shifted to start at 1 (unless
    ``zero_is_unlabelled``: then its 0 is no region for covering)."""
    from collections import Counter

    levels = case.settings["thresholds"]
    zero = bool(case.settings.get("zero_is_unlabelled", False))
    truth, run = conformance.hierarchy(case, "truth"), conformance.hierarchy(case, "run")
    per_image = []
    for image, humans in truth.items():
        rows, best = [], [dict.fromkeys(np.unique(h).tolist(), 0.0) for h in humans]
        for machine in run[image]:
            s = machine.astype(np.int64)
            s = s if zero or s.min() >= 1 else s - s.min() + 1
            sizes_s = Counter(s.ravel().tolist())
            cnt_r = sum_r = 0.0
            overlap_p = dict.fromkeys(k for k in sizes_s if k >= 1)
            ri = vi = 0.0
            for j, h in enumerate(humans):
                g_ = h.astype(np.int64).ravel()
                joint = Counter(zip(s.ravel().tolist(), g_.tolist(), strict=True))
                sizes_g = Counter(g_.tolist())
                o: dict[tuple[int, int], float] = {}
                for (r, g), n in joint.items():
                    if r >= 1 and g >= 1:
                        o[(r, g)] = n / (sizes_s[r] + sizes_g[g] - n)
                for g, area in sizes_g.items():
                    if g < 1:
                        continue
                    matched = max((v for (r, gg), v in o.items() if gg == g), default=0.0)
                    cnt_r, sum_r = cnt_r + area * matched, sum_r + area
                    best[j][g] = max(best[j][g], matched)
                for (r, _), v in o.items():
                    overlap_p[r] = max(overlap_p[r] or 0.0, v)
                n = s.size  # pairs together in both, apart in both: all pairs less those split by one map only
                together = sum(v * (v - 1) / 2 for v in joint.values())
                split = sum(v * (v - 1) / 2 for v in sizes_s.values()) + sum(v * (v - 1) / 2 for v in sizes_g.values())
                ri += 1 - (split - 2 * together) / (n * (n - 1) / 2) if n > 1 else 1.0
                p = np.array(list(joint.values()), dtype=float) / n
                ps = np.array([sizes_s[r] for r, _ in joint], dtype=float) / n
                pg = np.array([sizes_g[g] for _, g in joint], dtype=float) / n
                vi += float(-(p * (np.log2(p / ps) + np.log2(p / pg))).sum())
            cnt_p = sum(sizes_s[r] * (v or 0.0) for r, v in overlap_p.items())
            sum_p = sum(sizes_s[r] for r in overlap_p)
            rows.append([cnt_r, sum_r, cnt_p, sum_p, ri / len(humans), vi / len(humans)])
        sizes = [Counter(h.ravel().tolist()) for h in humans]
        cnt_best = sum(sizes[j][g] * v for j in range(len(humans)) for g, v in best[j].items() if g >= 1)
        per_image.append((np.array([[printed(v) for v in row] for row in rows]), printed(cnt_best)))
    table = np.sum([t for t, _ in per_image], axis=0)
    recall = table[:, 0] / np.where(table[:, 1] == 0, 1, table[:, 1])
    t = int(np.argmax(recall))
    oracle = oracle_sum = best_total = 0.0
    for rows_, cnt_best in per_image:
        r = rows_[:, 0] / np.where(rows_[:, 1] == 0, 1, rows_[:, 1])
        i = int(np.argmax(r))
        oracle, oracle_sum, best_total = oracle + rows_[i, 0], oracle_sum + rows_[i, 1], best_total + cnt_best
    ri = np.mean([rows_[:, 4] for rows_, _ in per_image], axis=0)
    vi = np.mean([rows_[:, 5] for rows_, _ in per_image], axis=0)
    return conformance.segment_figures(
        {"ods_threshold": levels[t], "ods": recall[t], "ois": oracle / oracle_sum, "best": best_total / oracle_sum},
        {"ods_threshold": levels[int(np.argmax(ri))], "ods": ri.max(),
         "ois": np.mean([rows_[:, 4].max() for rows_, _ in per_image])},
        {"ods_threshold": levels[int(np.argmin(vi))], "ods": vi.min(),
         "ois": np.mean([rows_[:, 5].min() for rows_, _ in per_image])},
    )  # fmt: skip


def correspond_pixels(machine: np.ndarray, human: np.ndarray, max_dist: float) -> tuple[int, np.ndarray]:
    """``correspondPixels``' outlier graph solved exactly: each pixel of either map is matched to
    a pixel of the other within the distance (cost: 1 + the distance) or to an outlier (cost 100
    distances); outliers of pixels that could pair pair among themselves (a tiny cost). Solved
    by scipy's ``min_weight_full_bipartite_matching``; returns the human pixels matched and the
    machine's matched pixels."""
    from scipy.sparse import coo_array
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching
    from scipy.spatial import cKDTree

    radius = max_dist * float(np.hypot(*machine.shape))
    mine, theirs = np.argwhere(machine), np.argwhere(human)
    matched = np.zeros(machine.shape, dtype=bool)
    if not len(mine) or not len(theirs):
        return 0, matched
    near = cKDTree(mine).query_ball_tree(cKDTree(theirs), radius)
    pairs = [(a, b) for a, bs in enumerate(near) for b in bs]
    n1, n2, outlier = len(mine), len(theirs), 100 * radius
    rows, cols, cost = [], [], []
    for a, b in pairs:  # left: machine pixels then the humans' outliers; right: human pixels then the machine's
        rows += [a, n1 + b]
        cols += [b, n2 + a]
        cost += [1 + float(np.hypot(*(mine[a] - theirs[b]))), 1e-9]
    rows += list(range(n1)) + [n1 + b for b in range(n2)]
    cols += [n2 + a for a in range(n1)] + list(range(n2))
    cost += [outlier] * (n1 + n2)
    graph = coo_array((cost, (rows, cols)), shape=(n1 + n2, n1 + n2)).tocsr()
    _, partner = min_weight_full_bipartite_matching(graph)
    real = np.flatnonzero(partner[:n1] < n2)
    matched[tuple(mine[real].T)] = True
    return len(real), matched


def bsds_boundary_rule(case: conformance.Case) -> dict[str, float]:
    """BSDS500's boundary benchmark from ``evaluation_bdry_image.m`` and ``collect_eval_bdry.m``:
    a human's boundaries those of its segmentation, thinned (``seg2bdry``, ``bwmorph thin``, as
    the benchmark's ``groundTruth`` holds them); each machine map thinned and matched to each
    human's (``correspond_pixels``); ODS the best F on the curve interpolated at 100 points
    between thresholds, OIS at each image's best threshold, AP the precision at recalls
    0:0.01:1 interpolated over the distinct recalls."""
    from regionbench.scoring.measures import bsds_boundaries as boundaries

    levels = np.asarray(case.settings["thresholds"], dtype=float)
    max_dist = case.settings.get("max_dist", BOUNDARY_MAX_DIST)
    per_image = []
    for image, humans in conformance.hierarchy(case, "truth").items():
        theirs = [boundaries.thin(boundaries.seg2bdry(h)) for h in humans]
        counts = []
        for level in conformance.boundary_levels(case, image):
            bmap = boundaries.thin(level)
            taken = np.zeros(bmap.shape, dtype=bool)
            cnt_r = sum_r = 0
            for human in theirs:
                n, matched = correspond_pixels(bmap, human, max_dist)
                cnt_r, sum_r, taken = cnt_r + n, sum_r + int(human.sum()), taken | matched
            counts.append([cnt_r, sum_r, int(taken.sum()), int(bmap.sum())])
        per_image.append(np.array(counts, dtype=float))

    def ratios(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return c[..., 0] / np.where(c[..., 1] == 0, 1, c[..., 1]), c[..., 2] / np.where(c[..., 3] == 0, 1, c[..., 3])

    def f(r: Any, p: Any) -> Any:
        return np.where(r + p == 0, 0.0, 2 * p * r / np.where(r + p == 0, 1, r + p))

    total = np.sum(per_image, axis=0)
    r, p = ratios(total)
    best = (levels[0], r[0], p[0], f(r[0], p[0]))
    d = np.linspace(0, 1, 100)
    for i in range(1, len(levels)):
        tt, rr, pp = (v[i] * d + v[i - 1] * (1 - d) for v in (levels, r, p))
        ff = f(rr, pp)
        k = int(np.argmax(ff))
        if ff[k] > best[3]:
            best = (tt[k], rr[k], pp[k], ff[k])
    oracle = np.sum([c[int(np.argmax(f(*ratios(c))))] for c in per_image], axis=0)
    orr, opp = ratios(oracle)
    distinct, first = np.unique(r, return_index=True)
    ap = 0.0
    if distinct.size > 1:
        ap = float(np.nansum(np.interp(np.linspace(0, 1, 101), distinct, p[first], left=np.nan, right=np.nan)) * 0.01)
    return conformance.boundary_figures(
        dict(zip(("threshold", "recall", "precision", "f"), best, strict=True)),
        {"recall": orr, "precision": opp, "f": f(orr, opp)}, ap,
    )  # fmt: skip


# -- concepts (SA-Co's files) -------------------------------------------------------------------------
def saco_file(pairs: list[Doc], drawn: list[Doc], exhaustive: list[bool]) -> Doc:
    """One annotator's SA-Co file: the (image, phrase) ``pairs`` and the instances ``drawn``
    (``image_id`` the pair, ``bbox``, ``iscrowd``), each a box mask of the pair's image."""
    entries = [p | {"is_instance_exhaustive": e} for p, e in zip(pairs, exhaustive, strict=True)]
    rows = [
        {"id": n + 1, "image_id": a["image_id"], "category_id": 1, "bbox": [float(v) for v in a["bbox"]],
         "segmentation": rle(box(*a["bbox"])), "area": float(a["bbox"][2] * a["bbox"][3]), "iscrowd": a.get("iscrowd", 0)}
        for n, a in enumerate(drawn)
    ]  # fmt: skip
    return {"images": entries, "annotations": rows, "categories": [{"id": 1, "name": "object"}]}


def pair_entries(n: int) -> list[Doc]:
    return [{"id": p, "file_name": f"{(p - 1) // 2:06d}.jpg", "height": H, "width": W, "text_input": f"thing {p % 3}"}
            for p in range(1, n + 1)]  # fmt: skip


def concept(pair: int, x: int, y: int, score: float | None = None, crowd: int = 0, w: int = 10, h: int = 10) -> Doc:
    """An instance of ``pair`` (a box), or with ``score`` a detection of it."""
    if score is None:
        return {"image_id": pair, "bbox": [x, y, w, h], "iscrowd": crowd}
    return {"image_id": pair, "category_id": 1, "segmentation": rle(box(x, y, w, h)), "bbox": [float(x), float(y), float(w), float(h)],
            "score": score}  # fmt: skip


def concepts_edge(
    about: str, pairs: int, truths: list[list[Doc]], run: list[Doc], partial: dict[int, int] | None = None
):
    """A case of ``pairs`` pairs, one file a truth of ``truths`` (``partial``: pair -> the file
    that leaves it not exhaustive)."""
    entries = pair_entries(pairs)
    files = [
        saco_file(entries, drawn, [(partial or {}).get(e["id"]) != k for e in entries])
        for k, drawn in enumerate(truths)
    ]
    return lambda seed: (about, {"files": files}, run)


def concepts_collection(seed: int, pairs: int = 12, annotators: int = 3) -> tuple[str, Doc, list[Doc]]:
    """Generated SA-Co files: ``annotators`` files of ``pairs`` pairs (each a few boxes, some
    missed or moved by an annotator, a crowd now and then, pairs a file leaves not exhaustive,
    negatives) and a run near them and anywhere, scores of few values (ties, some under 0.5)."""
    rng = np.random.default_rng(seed)
    entries = pair_entries(pairs)
    base = [[tuple(int(v) for v in rng.integers([0, 0, 4, 4], [W - 16, H - 16, 16, 16])) for _ in range(int(rng.integers(0, 4)))]
            for _ in entries]  # fmt: skip
    files = []
    for _ in range(annotators):
        drawn = []
        for p, found in enumerate(base, start=1):
            for x, y, w, h in found:
                if rng.random() < 0.2:
                    continue
                dx, dy = (int(v) for v in rng.integers(-2, 3, 2))
                drawn.append(concept(p, max(0, x + dx), max(0, y + dy), crowd=int(rng.random() < 0.08), w=w, h=h))
        files.append(saco_file(entries, drawn, [bool(rng.random() < 0.85) for _ in entries]))
    run = []
    for p, found in enumerate(base, start=1):
        for x, y, w, h in found:
            if rng.random() < 0.75:
                dx, dy = (int(v) for v in rng.integers(-3, 4, 2))
                run.append(
                    concept(p, max(0, x + dx), max(0, y + dy), float(rng.choice([0.3, 0.5, 0.7, 0.9])), w=w, h=h)
                )
        for _ in range(int(rng.poisson(0.6))):
            x, y, w, h = (int(v) for v in rng.integers([0, 0, 4, 4], [W - 16, H - 16, 16, 16]))
            run.append(concept(p, x, y, float(rng.choice([0.2, 0.6, 0.9])), w=w, h=h))
    about = f"{annotators} annotators' files of {pairs} pairs: misses, moves, crowds, negatives, tied scores"
    return about, {"files": files}, run


CONCEPTS: dict[str, Callable[[int], tuple[str, Doc, list[Doc]]]] = {
    "negative-no-prediction": concepts_edge(
        "a negative phrase with no prediction: an image-level true negative", 2, [[concept(1, 2, 2)]],
        [concept(1, 2, 2, 0.9)],
    ),
    "negative-a-prediction": concepts_edge(
        "a negative phrase with a prediction: an image-level false positive, pmF1 unchanged", 2, [[concept(1, 2, 2)]],
        [concept(1, 2, 2, 0.9), concept(2, 5, 5, 0.8)],
    ),
    "all-under-0.5": concepts_edge(
        "every prediction under the 0.5 score threshold: none is scored", 2, [[concept(1, 2, 2), concept(2, 4, 4)]],
        [concept(1, 2, 2, 0.49), concept(2, 4, 4, 0.2)],
    ),
    "exhaustive-in-one-file": concepts_edge(
        "a pair exhaustive in two files of three: left out", 2,
        [[concept(1, 2, 2), concept(2, 9, 9)], [concept(1, 2, 3)], [concept(1, 3, 2)]],
        [concept(1, 2, 2, 0.9), concept(2, 20, 20, 0.9)], partial={2: 1},
    ),
    "an-annotator-s-empty-pair": concepts_edge(
        "an annotator with an empty pair: the oracle takes it where the run has nothing there either", 2,
        [[concept(1, 2, 2), concept(2, 9, 9)], [concept(1, 2, 2)], [concept(1, 2, 3), concept(2, 9, 10)]],
        [concept(1, 2, 2, 0.9)],
    ),
    "crowd-truth": concepts_edge(
        "crowd truth: left out of the matching", 1, [[concept(1, 2, 2), concept(1, 15, 15, crowd=1)]],
        [concept(1, 2, 2, 0.9), concept(1, 15, 15, 0.9)],
    ),
    "one-annotator": lambda seed: concepts_collection(seed + 1, annotators=1),
    "three-annotators": lambda seed: concepts_collection(seed + 2),
    "three-annotators-larger": lambda seed: concepts_collection(seed + 3, pairs=30),
}  # fmt: skip


# -- the corpus ----------------------------------------------------------------------------------
VERSIONS = {
    "panopticapi": lambda: version("panopticapi-lite"),
    "mmseg-rule": lambda: "1.x (IoUMetric, conformance/make.py)",
    "bsds-rule": lambda: "bench 2013 (evaluation_*_image.m, collect_eval_*.m; conformance/make.py)",
    "sam3": lambda: f"{version('sam3')} (CGF1Evaluator)",
}
RULES = {"mmseg-rule": lambda case: mmseg_rule(case), "bsds-rule": lambda case: BSDS_RULES[case.family](case)}
BSDS_RULES = {"segments": bsds_region_rule, "boundaries": bsds_boundary_rule}


def outputs(case: conformance.Case, tools: list[str]) -> dict[str, dict[str, Any]]:
    """Each tool's version and figures on the case, or the error it raised."""
    out = {}
    for tool in tools:
        about: dict[str, Any] = {"version": VERSIONS[tool]() if tool in VERSIONS else version(tool)}
        try:
            about["figures"] = RULES[tool](case) if tool in RULES else conformance.ENGINES[tool][1](case)
        except Exception as exc:  # the reference's own failure is what the case records
            about["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
        out[tool] = about
    return out


def planned() -> Iterator[tuple[str, str, dict[str, Any], tuple[Any, ...], list[Any]]]:
    """(family, name, settings, (about, truth, run[, maps]), the reference tools, the first the reference;
    a tool whose outputs are printed already is given as {tool: its output})."""
    for name, made in INSTANCES.items():
        for iou_type in ("segm", "bbox"):
            yield (
                "instances",
                f"{iou_type}/{name}",
                {"iou_type": iou_type},
                made(0),
                ["pycocotools", "faster-coco-eval"],
            )
    for name in ("ties-across-images", "duplicates", "crowds", "area-edges", "polygons", "self-intersecting-polygon",
                 "uncompressed-rle", "never-detected", "absent-categories", "mixed-1", "mixed-2"):  # fmt: skip
        yield "instances", f"boundary/{name}", {"iou_type": "boundary"}, INSTANCES[name](0), ["faster-coco-eval"]
    yield (
        "instances",
        "segm/max-dets-1-5-20",
        {"iou_type": "segm", "max_dets": [1, 5, 20]},
        beyond_max_dets(0),
        ["pycocotools", "faster-coco-eval"],
    )
    for name, made in TIDE.items():
        for iou_type in ("segm", "bbox"):
            yield "tide", f"{iou_type}/{name}", {"iou_type": iou_type}, made(0), ["tidecv"]
    for k, (cap, pressure) in enumerate([(300, False), (300, True), (4, False), (300, False)]):
        for iou_type in ("segm", "bbox"):
            yield (
                "lvis",
                f"{iou_type}/federated-{k}-cap-{cap}",
                {"iou_type": iou_type, "max_dets": [cap]},
                lvis_collection(k, cap_pressure=pressure),
                ["lvis"],
            )
    for name, options in PANOPTIC.items():
        yield "panoptic", name, {}, panoptic_case(**options), ["panopticapi"]
    for name, options in SEMANTIC.items():
        about, truth, maps = semantic_case(**options)
        yield "semantic", name, {"ignore": 255}, (about, truth, None, maps), ["mmseg-rule"]
    for name, options in CITYSCAPES.items():
        settings = {"method": "cityscapes", "train_ids": bool(options.get("train_ids"))}
        yield "semantic", name, settings, cityscapes_case(**options), ["cityscapesscripts"]
    for family, scenarios, maker in (
        ("segments", SEGMENTS, region_scenario),
        ("boundaries", BOUNDARIES, boundary_scenario),
    ):
        for test in ("test_1", "test_4"):
            settings, made, published = bsds_case(family, test)
            # the boundary rule's exact matching of a BSDS image takes minutes: its printed outputs alone
            rules = ["bsds-rule"] if family == "segments" else []
            yield (
                family,
                f"bsds500-{test.replace('_', '-')}",
                settings,
                made,
                [conformance.PUBLISHED, *rules, published],
            )
        for name, options in scenarios.items():
            settings = {"thresholds": [1.0, 2.0, 3.0, 4.0]}
            if family == "boundaries":
                kind = options.get("kind", "soft")
                soft = [float(t) for t in np.linspace(0.2, 0.8, 4)] if kind == "soft" else settings["thresholds"]
                settings = {"thresholds": soft, "run": kind}
            yield family, name, settings, maker(**options), ["bsds-rule"]
    for name, made in CONCEPTS.items():
        for iou_type in ("segm", "bbox"):
            yield "concepts", f"{iou_type}/{name}", {"iou_type": iou_type}, made(0), ["sam3"]


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "cases", help="the cases folder to write (made anew)")
    ap.add_argument("--family", nargs="+", choices=conformance.FAMILIES, help="make these families' cases alone")
    args = ap.parse_args()
    folder = args.out
    for family in args.family or [None]:  # a family's cases made anew, or the whole corpus
        shutil.rmtree(folder / family if family else folder, ignore_errors=True)
    count = 0
    for family, name, settings, (about, truth, run, *maps), tools in planned():
        if args.family and family not in args.family:
            continue
        case = conformance.Case(f"{family}/{name}", family, about, settings, truth, run, tools[0], {}, *maps)
        recorded = {k: v for t in tools if isinstance(t, dict) for k, v in t.items()}  # a tool's printed outputs
        made = outputs(case, [t for t in tools if isinstance(t, str) and t not in recorded])
        case = conformance.Case(**{**case.__dict__, "outputs": made | recorded})
        path = folder / family / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {k: v for k, v in case.__dict__.items() if k != "name" and (k != "maps" or v)}
        path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
        count += 1
    print(f"{count} cases under {folder}")


if __name__ == "__main__":
    main()
