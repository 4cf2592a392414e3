"""ImageCLEF 2012 photo-annotation files (docs/inputs.md, "ImageCLEF files"): concept files and
annotation files, clean and raw, written from image-level labels per annotator and read back.

``<out>/concepts.txt`` (the concept order), ``<out>/annotators.txt`` (the judgment order),
``concepts/clean/<concept>.txt`` (the images where a majority of the annotators saw the
concept), ``concepts/raw/<concept>.txt`` (per image, one 0/1 judgment per annotator, at least
three), ``annotations/clean/<image>.txt`` (the concepts present by majority) and
``annotations/raw/<image>.txt`` (per concept, the mean of the annotators' judgments).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow.parquet as pq

Judgments = dict[str, dict[str, set[str]]]  # annotator -> image -> concepts seen
MIN_RAW_ANNOTATORS = 3


class ImageClefError(ValueError):
    """Files that cannot be written or read as ImageCLEF files; the message names the file."""


def _lines(path: Path, lines: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _majority(judgments: Judgments, annotators: Sequence[str], image: str, concept: str) -> bool:
    return 2 * sum(concept in judgments[a].get(image, set()) for a in annotators) > len(annotators)


def write_files(
    out: str | Path, judgments: Judgments, concepts: Sequence[str], images: Sequence[str]
) -> dict[str, int]:
    """Write the clean and raw concept and annotation files of ``judgments`` for ``images`` (ids
    as written) and ``concepts`` (in order); returns the number of files of each kind."""
    out = Path(out)
    annotators = sorted(judgments)
    if len(annotators) < MIN_RAW_ANNOTATORS:
        raise ImageClefError(
            f"raw files need at least {MIN_RAW_ANNOTATORS} annotators' judgments per image; this release has "
            f"{len(annotators)} ({', '.join(annotators)})"
        )
    bad = [c for c in concepts if not c or any(ch.isspace() or ch == "/" for ch in c)]
    if bad:
        raise ImageClefError(f"concept names must have no spaces or slashes: {bad[:5]}")
    if out.exists():
        raise ImageClefError(f"{out}: already exists; export-imageclef writes a new folder, choose another path")
    _lines(out / "concepts.txt", concepts)
    _lines(out / "annotators.txt", annotators)
    for concept in concepts:
        seen = [[int(concept in judgments[a].get(image, set())) for a in annotators] for image in images]
        _lines(
            out / "concepts" / "raw" / f"{concept}.txt",
            [" ".join([image, *map(str, s)]) for image, s in zip(images, seen, strict=True)],
        )
        _lines(
            out / "concepts" / "clean" / f"{concept}.txt",
            [i for i in images if _majority(judgments, annotators, i, concept)],
        )
    for image in images:
        _lines(
            out / "annotations" / "clean" / f"{image}.txt",
            [c for c in concepts if _majority(judgments, annotators, image, c)],
        )
        means = [sum(c in judgments[a].get(image, set()) for a in annotators) / len(annotators) for c in concepts]
        _lines(
            out / "annotations" / "raw" / f"{image}.txt", [f"{c} {m:.6f}" for c, m in zip(concepts, means, strict=True)]
        )
    return {"concepts": len(concepts), "images": len(images), "annotators": len(annotators)}


def read_files(folder: str | Path) -> tuple[Judgments, list[str], list[str]]:
    """Judgments, concepts and images read back from the raw concept files, checked against the
    clean files and the raw annotation files (one line naming the file on any disagreement)."""
    folder = Path(folder)
    for name in ("concepts.txt", "annotators.txt"):
        if not (folder / name).is_file():
            raise ImageClefError(f"{folder / name}: missing; is {folder} an ImageCLEF export?")
    concepts = (folder / "concepts.txt").read_text(encoding="utf-8").split()
    annotators = (folder / "annotators.txt").read_text(encoding="utf-8").split()
    judgments: Judgments = {a: {} for a in annotators}
    images: list[str] = []
    for concept in concepts:
        path = folder / "concepts" / "raw" / f"{concept}.txt"
        order = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            parts = line.split(" ")
            if len(parts) != len(annotators) + 1 or any(p not in ("0", "1") for p in parts[1:]):
                raise ImageClefError(f"{path}:{n}: expected an image id and {len(annotators)} judgments 0 or 1")
            order.append(parts[0])
            for a, judged in zip(annotators, parts[1:], strict=True):
                seen = judgments[a].setdefault(parts[0], set())
                if judged == "1":
                    seen.add(concept)
        if images and order != images:
            raise ImageClefError(f"{path}: lists other images than the first concept file")
        images = order
        clean = folder / "concepts" / "clean" / f"{concept}.txt"
        expected = [i for i in images if _majority(judgments, annotators, i, concept)]
        if clean.read_text(encoding="utf-8").split() != expected:
            raise ImageClefError(f"{clean}: differs from the majority of {path.name}'s judgments")
    for image in images:
        raw = folder / "annotations" / "raw" / f"{image}.txt"
        for n, line in enumerate(raw.read_text(encoding="utf-8").splitlines(), start=1):
            concept, value = line.split(" ")
            mean = sum(concept in judgments[a][image] for a in annotators) / len(annotators)
            if abs(float(value) - mean) > 5e-7:
                raise ImageClefError(f"{raw}:{n}: agreement {value} differs from the judgments' mean {mean:.6f}")
    return judgments, concepts, images


def judgments_of(regions: Mapping[str, Sequence[tuple[int, str]]]) -> Judgments:
    """Image-level labels per annotator from (image_id, label) pairs of their regions."""
    out: Judgments = {}
    for annotator, pairs in regions.items():
        mine = out.setdefault(annotator, {})
        for image_id, label in pairs:
            mine.setdefault(str(image_id), set()).add(label)
    return out


def export_release(release: str | Path, out: str | Path) -> dict[str, int]:
    """The ImageCLEF files of a release folder: every human annotator's image-level labels (the
    derived ``consensus`` is left out), concepts in label id order, images in id order."""

    release = Path(release)
    regions = pq.read_table(release / "data" / "regions.parquet", columns=["image_id", "annotator", "label"])
    images = pq.read_table(release / "data" / "images.parquet", columns=["image_id"]).column("image_id").to_pylist()
    vocabulary = pq.read_table(release / "data" / "vocabulary.parquet", columns=["label_id", "label"]).to_pylist()
    pairs: dict[str, list[tuple[int, str]]] = {}
    for image_id, annotator, label in zip(*(regions.column(c).to_pylist() for c in regions.column_names), strict=True):
        if annotator != "consensus":
            pairs.setdefault(annotator, []).append((image_id, label))
    used = {label for annotator in pairs.values() for _, label in annotator}
    concepts = [row["label"] for row in sorted(vocabulary, key=lambda r: r["label_id"]) if row["label"] in used]
    return write_files(out, judgments_of(pairs), concepts, [str(i) for i in sorted(images)])
