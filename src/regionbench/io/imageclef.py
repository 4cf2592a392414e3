"""ImageCLEF 2012 photo-annotation files (docs/inputs.md, "ImageCLEF files"): concept files and
annotation files, clean and raw, written from image-level labels per annotator and read back.

``<out>/concepts.txt`` (the concept order), ``<out>/annotators.txt`` (the judgment order),
``concepts/clean/<concept>.txt`` (the images where a majority of the annotators saw the
concept), ``concepts/raw/<concept>.txt`` (per image, one 0/1 judgment per annotator, at least
three), ``annotations/clean/<image>.txt`` (the concepts present by majority) and
``annotations/raw/<image>.txt`` (per concept, the mean of the annotators' judgments).

A raw tree may carry such files in ``imageclef/`` (``FOLDER``): the build reads them as an
image-level annotation source (``ingest_judgments``) into the release table ``image_labels``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pyarrow.parquet as pq

from regionbench import numbers
from regionbench.errors import InputError
from regionbench.io.shards import check_ledger

Judgments = dict[str, dict[str, set[str]]]  # annotator -> image -> concepts seen
MIN_RAW_ANNOTATORS = 3
FOLDER = "imageclef"  # of a raw tree: its image-level annotation source
AGREEMENT = re.compile(r"[01]\.[0-9]{6}")  # ASCII digits only: float() takes other scripts' digits


class ImageClefError(InputError):
    """Files that cannot be written or read as ImageCLEF files; the message names the file."""


def _lines(path: Path, lines: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _read(path: Path) -> str:
    """The text of ``path``, or one line naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ImageClefError(f"{path}: missing; every concept and image of the export needs its file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ImageClefError(f"{path}: unreadable as UTF-8 text ({exc.__class__.__name__}); export it again") from None


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
    concepts = _read(folder / "concepts.txt").split()
    annotators = _read(folder / "annotators.txt").split()
    for name, values in (("concepts.txt", concepts), ("annotators.txt", annotators)):
        if len(set(values)) != len(values) or not values:
            raise ImageClefError(f"{folder / name}: empty or lists a name twice")
    bad = [c for c in concepts if "/" in c or c in (".", "..")]
    if bad:
        raise ImageClefError(f"{folder / 'concepts.txt'}: concept names must have no slashes: {bad[:5]}")
    judgments: Judgments = {a: {} for a in annotators}
    images: list[str] = []
    for concept in concepts:
        path = folder / "concepts" / "raw" / f"{concept}.txt"
        order = []
        for n, line in enumerate(_read(path).splitlines(), start=1):
            parts = line.split(" ")
            if len(parts) != len(annotators) + 1 or any(p not in ("0", "1") for p in parts[1:]):
                raise ImageClefError(f"{path}:{n}: expected an image id and {len(annotators)} judgments 0 or 1")
            order.append(parts[0])
            for a, judged in zip(annotators, parts[1:], strict=True):
                seen = judgments[a].setdefault(parts[0], set())
                if judged == "1":
                    seen.add(concept)
        if len(set(order)) != len(order):
            raise ImageClefError(f"{path}: lists an image twice")
        if images and order != images:
            raise ImageClefError(f"{path}: lists other images than the first concept file")
        images = order
        clean = folder / "concepts" / "clean" / f"{concept}.txt"
        expected = [i for i in images if _majority(judgments, annotators, i, concept)]
        if _read(clean).split() != expected:
            raise ImageClefError(f"{clean}: differs from the majority of {path.name}'s judgments")
    for image in images:
        if "/" in image or image in (".", ".."):
            raise ImageClefError(f"{folder / 'concepts' / 'raw'}: image name {image!r} must have no slashes")
        raw = folder / "annotations" / "raw" / f"{image}.txt"
        clean = folder / "annotations" / "clean" / f"{image}.txt"
        expected = [c for c in concepts if _majority(judgments, annotators, image, c)]
        if _read(clean).split() != expected:
            raise ImageClefError(f"{clean}: differs from the majority of the raw judgments")
        listed = []
        for n, line in enumerate(_read(raw).splitlines(), start=1):
            concept, _, value = line.partition(" ")
            if concept not in concepts or not AGREEMENT.fullmatch(value):
                raise ImageClefError(f"{raw}:{n}: expected '<concept> <agreement 0.000000-1.000000>'")
            mean = sum(concept in judgments[a][image] for a in annotators) / len(annotators)
            if abs(float(value) - mean) > 5e-7:
                raise ImageClefError(f"{raw}:{n}: agreement {value} differs from the judgments' mean {mean:.6f}")
            listed.append(concept)
        if listed != concepts:
            raise ImageClefError(f"{raw}: lists other concepts than concepts.txt, or in another order")
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


def ingest_judgments(
    folder: str | Path, words: Mapping[str, int], image_ids: Iterable[int], source: str = FOLDER
) -> tuple[list[dict], list[dict], dict]:
    """Image-level labels from the ImageCLEF files in ``folder`` (``read_files``).

    Every judgment "present" (a 1 in a raw concept file) is an item: it becomes a row
    ``(image_id, annotator, label_id, label)`` when the concept is a label of ``words`` and the
    image one of ``image_ids``, else a reject with its reason. ``source`` names the folder in
    rejects (relative to the raw root). Returns the rows (key order), the rejects and a report
    of seen, accepted and rejected per annotator (seen = accepted + rejected).
    """
    judgments, _, _ = read_files(folder)
    known = set(image_ids)
    rows, rejects = [], []
    report = {a: {"seen": 0, "accepted": 0, "rejected": 0} for a in sorted(judgments)}
    for annotator in sorted(judgments):
        for image in sorted(judgments[annotator]):
            for concept in sorted(judgments[annotator][image]):
                report[annotator]["seen"] += 1
                # The canonical spelling only: "0984" beside "984" would be two lines of one key.
                image_id = int(image) if numbers.is_canonical_id(image) else None
                if concept not in words:
                    reason = (
                        f"concept {concept!r} is not a vocabulary label; add it to the vocabulary or drop its files"
                    )
                elif image_id is None:
                    reason = f"image {image!r} is not written as an image id (ASCII digits, no leading zero)"
                elif image_id not in known:
                    reason = f"image {image!r} is not an accepted image of the collection"
                else:
                    report[annotator]["accepted"] += 1
                    rows.append(
                        {"image_id": image_id, "annotator": annotator, "label_id": words[concept], "label": concept}
                    )
                    continue
                report[annotator]["rejected"] += 1
                rejects.append({
                    "source": f"{source}/concepts/raw/{concept}.txt", "key": f"{image}/{annotator}",
                    "item": "image_label", "stage": "image_labels", "reason": reason,
                })  # fmt: skip
    rows.sort(key=lambda r: (r["image_id"], r["annotator"], r["label"]))
    check_ledger(f"{source} (ImageCLEF judgments)", report)
    return rows, rejects, report
