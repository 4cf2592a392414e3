"""A learnt (labels) baseline's run: fitted on the train side, its class maps written as a user
writes each task's predictions: label maps of the benchmark's values (``semantic``) and, where the
source says which categories are things, its things' connected components as instances (a COCO
results JSON, ``instances``) and with the stuff as one panoptic segmentation (COCO panoptic PNGs
and their JSON, ``panoptic``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from regionbench.core.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from regionbench.release.loader import Release

MIN_PIXELS = 16  # a thing's component smaller than this is noise, not an instance


def fitted(
    module: ModuleType,
    data: Release,
    scored: pd.DataFrame,
    images: Callable[[pd.DataFrame], Iterator[tuple[int, str, np.ndarray]]],
) -> tuple[Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], Any]:
    """``module`` trained on the images the semantic task does not score (the train split where
    the collection has one), at most its ``IMAGES`` drawn seeded, with their classes as the
    release's benchmark counts them (``images`` yields their pixels); and that benchmark's coding
    (``tasks.semantic.Coding``)."""
    from regionbench.scoring import tasks
    from regionbench.scoring.tasks import semantic

    settings = tasks.scoped(data, "semantic")[0]
    assert isinstance(settings, semantic.Settings)
    coding = semantic.coding_of(data, settings)
    rest = data.images[~data.images["image_id"].isin(scored["image_id"])].sort_values("image_id")
    train = (
        rest[rest["split"] == "train"] if (rest["split"] == "train").any() else rest
    )  # a test side may be unlabelled
    name = module.__name__.rsplit(".", 1)[-1]
    if train.empty:
        raise InputError(f"{name}: the release has no image outside the scored side to fit on")
    most = getattr(module, "IMAGES", len(train))
    if len(train) > most:
        train = train.iloc[np.sort(np.random.default_rng(0).choice(len(train), size=most, replace=False))]
    truth = semantic.class_maps(data, str(settings.annotator), train, coding.truth, coding.classes)
    examples = ((pixels, truth[image_id]) for image_id, _, pixels in images(train))
    try:
        return module.train(examples, coding.classes), coding
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from None


def class_values(coding: Any) -> np.ndarray:
    """The pixel value a map writes for each class of ``coding``: the smallest value the
    benchmark reads as that class."""
    value = np.zeros(coding.classes, dtype=np.int64)
    for pixel, k in sorted(coding.values.items(), reverse=True):
        if 0 <= k < coding.classes:
            value[k] = pixel
    return value


@dataclass(frozen=True)
class Categories:
    """Each class of a coding as the source's category: its id (None: no category of the
    source) and whether it is a thing."""

    ids: list[int | None]
    things: np.ndarray


def categories(data: Release, coding: Any, things_unsaid: bool = False) -> Categories | None:
    """The source's category of each class of ``coding`` (through the release label the
    benchmark maps to it), or None where the source says of no category that it is a thing
    (instances and panoptic segments are then not written), unless ``things_unsaid``: then a
    category the source says nothing of is a thing (COCO's instances files hold things only)."""
    from regionbench.scoring.tasks import panoptic

    source = data.arrow("source_categories", ["has_instances"])["has_instances"].to_pylist()
    if not any(v is True for v in source) and not (things_unsaid and source and all(v is None for v in source)):
        return None
    known = panoptic.classes(data)
    category = {k: i for i, k in sorted(known.by_id.items(), reverse=True)}  # index -> its smallest id
    label = dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"].astype(str), strict=True))
    ids: list[int | None] = [None] * coding.classes
    things = np.zeros(coding.classes, dtype=bool)
    for label_id, k in sorted(coding.truth.items(), reverse=True):  # each class its smallest label
        index = known.by_label.get(label.get(label_id, ""))
        if 0 <= k < coding.classes and index is not None and index in category:
            ids[k], things[k] = category[index], bool(known.things[index])
    return Categories(ids, things)


@dataclass(frozen=True)
class Segments:
    """The panoptic and instance predictions of the scored images: each image's PNG written
    where it is predicted (a forked worker), its entries gathered after."""

    folder: Path
    kinds: Categories

    def add(
        self, image_id: int, stem: str, classes: np.ndarray, confidence: np.ndarray
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One image's segments: each thing class's connected components of at least
        ``MIN_PIXELS`` pixels an instance (scored by its mean confidence), each stuff class one
        segment; the panoptic PNG (id = R + 256 G + 256^2 B) written. Returns its panoptic entry
        and its instances (COCO results)."""
        from PIL import Image
        from scipy import ndimage

        from regionbench.core import geometry

        ids = np.zeros(classes.shape, dtype=np.int64)
        info: list[dict[str, int]] = []
        instances: list[dict[str, Any]] = []
        for k in np.unique(classes).tolist():
            category = self.kinds.ids[k]
            if category is None:
                continue
            mask = classes == k
            parts = ndimage.label(mask)[0] if self.kinds.things[k] else mask.astype(np.int32)
            for part in range(1, int(parts.max()) + 1):
                segment = parts == part
                if self.kinds.things[k] and segment.sum() < MIN_PIXELS:
                    continue
                ids[segment] = len(info) + 1
                info.append({"id": len(info) + 1, "category_id": int(category)})
                if self.kinds.things[k]:
                    score = round(float(confidence[segment].mean()), 6)
                    instances.append(
                        {
                            "image_id": image_id,
                            "category_id": int(category),
                            "segmentation": geometry.rle(segment),
                            "score": score,
                        }
                    )
        rgb = np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)
        self.folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rgb).save(self.folder / f"{stem}.png")
        return {"image_id": image_id, "file_name": f"{stem}.png", "segments_info": info}, instances

    def write(
        self, found: list[tuple[dict[str, Any], list[dict[str, Any]]]], instances: Path, numbering: dict[int, int]
    ) -> None:
        """The panoptic JSON of every image's entry (``found``, in image order) beside the PNGs,
        and their instances' results JSON, each image named by the id its source's file gives it
        (``numbering``: release id -> that id, as COCO's results name images)."""
        document = {"annotations": [entry for entry, _ in found]}
        (self.folder / "predictions.json").write_text(json.dumps(document, sort_keys=True), encoding="utf-8")
        instances.parent.mkdir(parents=True, exist_ok=True)
        results = [
            one | {"image_id": numbering.get(one["image_id"], one["image_id"])} for _, each in found for one in each
        ]
        instances.write_text(json.dumps(results, sort_keys=True), encoding="utf-8")
