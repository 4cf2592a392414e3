"""Synthetic collections in the ``saco`` layout (SA-Co's files): a several-annotator COCO
collection (``synthetic.coco``) made into (image, noun phrase) pairs.

Each image is paired with every category an annotator traced on it and with ``NEGATIVES``
categories of the vocabulary nobody traced there (seeded), the phrase its category's label
worded ("traffic-light" -> "traffic light"); pairs are numbered alike in every file, from 1 in
(file name, phrase) order. Annotator k's file, ``annotations/gold_<profile>_merged_<letter>_release_test.json``,
lists every pair, each not annotated exhaustively with probability ``PARTIAL`` (drawn per file),
and its instances of each pair; the photos stay in ``images/`` and the scenes as drawn in
``truth.json``.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from regionbench.synthetic import Options, coco

LAYOUT = "saco"
NEGATIVES = 2
PARTIAL = 0.1


def phrase(label: str) -> str:
    """A label worded as a noun phrase: its dashes as spaces."""
    return label.replace("-", " ")


def write_collection(
    out: str | Path,
    profile: str,
    seed: int = 0,
    annotators: int = 3,
    disagreement: float = 0.3,
    workers: int | None = None,
    vocabulary: str | Path | None = None,
) -> Iterator[tuple[str, int]]:
    """Generate an SA-Co tree under ``out`` (module docstring); yields (file written, instances in it)."""
    root = Path(out)
    written = [
        path for path, _ in coco.write_collection(root, profile, seed, annotators, disagreement, workers, vocabulary)
    ]
    files = [root / path for path in written if path.startswith("annotations/")]
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in files]
    names = {c["id"]: phrase(c["name"]) for d in documents for c in d["categories"]}
    photos = {im["id"]: im for d in documents for im in d["images"]}
    traced = {(a["image_id"], names[a["category_id"]]) for d in documents for a in d["annotations"]}
    rng = np.random.default_rng(seed)
    wanted: set[tuple[int, str]] = set(traced)
    for image_id in sorted(photos):
        absent = sorted(set(names.values()) - {p for i, p in traced if i == image_id})
        wanted |= {(image_id, str(p)) for p in rng.choice(absent, min(NEGATIVES, len(absent)), replace=False)}
    ordered = sorted(wanted, key=lambda pair: (photos[pair[0]]["file_name"], pair[1]))
    number = {pair: k for k, pair in enumerate(ordered, 1)}
    for k, (path, document) in enumerate(zip(files, documents, strict=True)):
        entries = [
            {"id": number[(i, p)], "file_name": photos[i]["file_name"], "height": photos[i]["height"],
             "width": photos[i]["width"], "text_input": p, "is_instance_exhaustive": bool(rng.random() >= PARTIAL)}
            for i, p in ordered
        ]  # fmt: skip
        instances = [
            a | {"image_id": number[(a["image_id"], names[a["category_id"]])], "category_id": 1}
            for a in document["annotations"]
        ]
        target = root / "annotations" / f"gold_{profile}_merged_{string.ascii_lowercase[k]}_release_test.json"
        saco = {"images": entries, "annotations": instances, "categories": [{"id": 1, "name": "object"}]}
        target.write_text(json.dumps(saco, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
        path.unlink()
        yield target.relative_to(root).as_posix(), len(instances)


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_collection`` with the options that apply here (yields file, instances)."""
    return write_collection(
        out, profile, options.seed, options.annotators, options.disagreement, options.workers, options.vocabulary
    )


def annotators(requested: int) -> int:
    """As many annotators as asked, at most 26 (a file a letter, as SA-Co/Gold names its three)."""
    return min(requested, len(string.ascii_lowercase))
