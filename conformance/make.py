"""Make the scoring conformance corpus: each case's truth and run, and the reference tools' own
outputs on them (conformance/README.md).

    .venv/bin/python conformance/make.py [--out DIR]    # after `make .venv/.installed-test`

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


# -- the corpus ----------------------------------------------------------------------------------
VERSIONS = {
    "panopticapi": lambda: version("panopticapi-lite"),
    "mmseg-rule": lambda: "1.x (IoUMetric, conformance/make.py)",
}


def outputs(case: conformance.Case, tools: list[str]) -> dict[str, dict[str, Any]]:
    """Each tool's version and figures on the case, or the error it raised."""
    out = {}
    for tool in tools:
        about: dict[str, Any] = {"version": VERSIONS[tool]() if tool in VERSIONS else version(tool)}
        try:
            about["figures"] = mmseg_rule(case) if tool == "mmseg-rule" else conformance.ENGINES[tool][1](case)
        except Exception as exc:  # the reference's own failure is what the case records
            about["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
        out[tool] = about
    return out


def planned() -> Iterator[tuple[str, str, dict[str, Any], tuple[Any, ...], list[str]]]:
    """(family, name, settings, (about, truth, run[, maps]), the reference tools, the first the reference)."""
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


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "cases", help="the cases folder to write (made anew)")
    folder = ap.parse_args().out
    shutil.rmtree(folder, ignore_errors=True)
    count = 0
    for family, name, settings, (about, truth, run, *maps), tools in planned():
        case = conformance.Case(f"{family}/{name}", family, about, settings, truth, run, tools[0], {}, *maps)
        case = conformance.Case(**{**case.__dict__, "outputs": outputs(case, tools)})
        path = folder / family / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {k: v for k, v in case.__dict__.items() if k != "name" and (k != "maps" or v)}
        path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
        count += 1
    print(f"{count} cases under {folder}")


if __name__ == "__main__":
    main()
