"""Synthetic several-annotator collections in the COCO layout: ``regionbench.synthetic.rendering`` draws each
scene once and ``traces.trace`` gives every annotator's reading of it; this module writes the
images, one COCO instances file per annotator and the scenes' ground truth.

``<root>/images/<image_id>.jpg``, ``<root>/annotations/annotator-<k>.json`` (compressed RLE
segmentations; annotator 2 writes uncompressed RLE, as some tools do) and ``<root>/truth.json``
(the scenes as drawn, in the same format, outside ``annotations/`` so ingest does not read it).
Output is a function of (profile, seed, annotators, disagreement, vocabulary) only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from regionbench.core import geometry
from regionbench.core.errors import InputError
from regionbench.synthetic import Options, rendering, traces
from regionbench.synthetic import plans as planning
from regionbench.synthetic.saiapr import word_ids

LAYOUT = "coco"
CHUNK = 50  # images per rendering job


def annotator_name(k: int) -> str:
    return f"annotator-{k}"


def uncompressed_rle(mask: np.ndarray) -> dict:
    """COCO uncompressed RLE: alternating run lengths in column-major order, zeros first."""
    flat = mask.flatten(order="F").astype(np.int8)
    edges = np.concatenate(([0], np.flatnonzero(np.diff(flat)) + 1, [flat.size]))
    counts = np.diff(edges).tolist()
    return {"size": list(mask.shape), "counts": [0, *counts] if flat[0] else counts}


def _segmentation(mask: np.ndarray, uncompressed: bool) -> dict:
    if uncompressed:
        return uncompressed_rle(mask)
    return geometry.rle(mask)


def _render_chunk(args: tuple[Path, list[planning.ImagePlan], int, int, float, str]) -> list[dict]:
    """Render a chunk of scenes, write their JPEGs; return per image the truth and each reading."""
    root, plans, seed, annotators, disagreement, vocabulary = args
    hierarchy = planning.load_hierarchy(vocabulary)
    words = set(word_ids(vocabulary))
    out = []
    with threadpool_limits(limits=1):  # the workers already fill the cores
        for plan in plans:
            pixels, masks = rendering.render(plan, seed)
            (root / "images" / f"{plan.image_id}.jpg").write_bytes(rendering.photograph(plan, pixels))
            readings = {"truth": list(zip(plan.labels, masks, strict=True))}
            for k in range(1, annotators + 1):
                readings[annotator_name(k)] = traces.trace(plan, masks, k, disagreement, seed, hierarchy, words)
            out.append({"plan": plan, "readings": readings})
    return out


def _instances(
    scenes: list[dict], who: str, ids: dict[str, int], uncompressed: bool, supercategory: dict[str, str | None]
) -> dict:
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for n, scene in enumerate(scenes, start=1):
        plan = scene["plan"]
        images.append({"id": n, "file_name": f"{plan.image_id}.jpg", "width": plan.width, "height": plan.height})
        for label, mask in scene["readings"][who]:
            x, y, w, h = geometry.bbox(mask)
            annotations.append({
                "id": len(annotations) + 1, "image_id": n, "category_id": ids[label],
                "segmentation": _segmentation(mask, uncompressed), "area": int(mask.sum()),
                "bbox": [x, y, w, h], "iscrowd": 0,
            })  # fmt: skip
    categories = [
        {"id": i, "name": label, "supercategory": supercategory.get(label, "")}
        for label, i in sorted(ids.items(), key=lambda kv: kv[1])
    ]
    # As tools write it, the file names who made it: two annotators who agree perfectly still
    # export two files, never byte copies of each other.
    info = {"contributor": who, "description": "regionbench synthetic collection"}
    return {"info": info, "images": images, "annotations": annotations, "categories": categories}


def write_collection(
    out: str | Path,
    profile: str,
    seed: int = 0,
    annotators: int = 3,
    disagreement: float = 0.3,
    workers: int | None = None,
    vocabulary: str | Path | None = None,
) -> Iterator[tuple[str, int]]:
    """Generate a COCO collection under ``out``; yields (file written, regions in it).

    ``annotators`` people trace every scene at ``disagreement`` in [0, 1] (``traces.trace``);
    ``truth.json`` holds the scenes as drawn.
    """
    if annotators < 1 or not 0 <= disagreement <= 1:
        raise InputError("annotators must be at least 1 and disagreement in [0, 1]")
    root = Path(out)
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "annotations").mkdir(exist_ok=True)
    vocab = str(vocabulary) if vocabulary is not None else planning.DEFAULT_VOCABULARY
    plans = sorted(planning.plan_collection(profile, seed, vocab), key=lambda p: p.image_id)
    jobs = [
        (root, plans[start : start + CHUNK], seed, annotators, disagreement, vocab)
        for start in range(0, len(plans), CHUNK)
    ]
    workers = planning.workers_for(workers, len(plans), len(jobs))
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            scenes = [scene for chunk in pool.map(_render_chunk, jobs) for scene in chunk]
    else:
        scenes = [scene for job in jobs for scene in _render_chunk(job)]
    ids = word_ids(vocab)
    hierarchy = planning.load_hierarchy(vocab)
    # As annotation tools export them: each category under its parent, first-level ones without.
    parents = {
        label: hierarchy.parent(label) if label in hierarchy.nodes and hierarchy.depth(label) > 1 else ""
        for label in ids
    }
    for who in ["truth", *(annotator_name(k) for k in range(1, annotators + 1))]:
        path = root / ("truth.json" if who == "truth" else f"annotations/{who}.json")
        document = _instances(scenes, who, ids, who == annotator_name(2), parents)
        path.write_text(json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
        yield path.relative_to(root).as_posix(), len(document["annotations"])


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_collection`` with the options that apply here (yields file, regions)."""
    return write_collection(
        out, profile, options.seed, options.annotators, options.disagreement, options.workers, options.vocabulary
    )


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: as many as asked: each traces every scene."""
    return requested
