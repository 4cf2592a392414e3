"""ImageCLEF 2012 photo-annotation files (docs/inputs.md, "ImageCLEF files"): concept files and
annotation files, clean and raw, written from image-level labels per annotator and read back.

As the task published them: ``concepts/raw/<concept>.txt`` (per image, the 0/1 judgments of the
annotators who judged it, at least three, their number free to vary from image to image),
``concepts/clean/<concept>.txt`` (the images where a majority of those annotators saw the
concept), ``annotations/clean/<image>.txt`` (the concepts present by majority) and
``annotations/raw/<image>.txt`` (per concept, the mean of the judgments). The published files
name no annotator; this module also writes ``concepts.txt`` (the concept order),
``annotators.txt`` (every annotator) and ``judges.txt`` (per image, who gave its judgments, in
order), and reads files with or without them.

A raw tree may carry such files in ``imageclef/`` (``FOLDER``): the build reads them as an
image-level annotation source (``ingest_judgments``) into the release table ``image_labels``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from regionbench.core import numbers
from regionbench.core.errors import InputError
from regionbench.io.layouts import ReleaseTables
from regionbench.io.shards import check_ledger

Judgments = dict[str, dict[str, set[str]]]  # annotator -> image -> concepts seen; absent: did not judge it
MIN_RAW_ANNOTATORS = 3
FOLDER = "imageclef"  # of a raw tree: its image-level annotation source
AGREEMENT = re.compile(r"[01]\.[0-9]{6}")  # ASCII digits only: float() takes other scripts' digits
ANONYMOUS = "judge{}"  # the k-th judgment of an image's lines when no file names the annotators


class ImageClefError(InputError):
    """Files that cannot be written or read as ImageCLEF files; the message names the file."""


def _lines(path: Path, lines: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _read(path: Path) -> str:
    """The text of ``path`` (a byte order mark, which editors on Windows write, removed), or
    one line naming it."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ImageClefError(f"{path}: missing; every concept and image of the export needs its file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ImageClefError(f"{path}: unreadable as UTF-8 text ({exc.__class__.__name__}); export it again") from None


def judges(judgments: Judgments, image: str) -> list[str]:
    """The annotators who judged ``image`` (those with an entry for it), in name order."""
    return [a for a in sorted(judgments) if image in judgments[a]]


def _votes(judgments: Judgments, image: str, concept: str) -> list[int]:
    return [int(concept in judgments[a][image]) for a in judges(judgments, image)]


def _majority(judgments: Judgments, image: str, concept: str) -> bool:
    """More than half of the annotators who judged ``image`` saw ``concept``."""
    votes = _votes(judgments, image, concept)
    return 2 * sum(votes) > len(votes)


def write_files(
    out: str | Path, judgments: Judgments, concepts: Sequence[str], images: Sequence[str]
) -> dict[str, int]:
    """Write the clean and raw concept and annotation files of ``judgments`` for ``images`` (ids
    as written) and ``concepts`` (in order): each image's raw lines hold the judgments of the
    annotators who judged it (``judges``), at least ``MIN_RAW_ANNOTATORS``, under ``out`` (the
    export door, ``client.exports``, makes sure it is a new folder). Returns the number of
    concepts, images and annotators."""
    out = Path(out)
    annotators = sorted(judgments)
    few = [i for i in images if len(judges(judgments, i)) < MIN_RAW_ANNOTATORS]
    if few:
        raise ImageClefError(
            f"raw files need at least {MIN_RAW_ANNOTATORS} annotators' judgments per image; {len(few)} images "
            f"have fewer (first {few[0]!r}, judged by {len(judges(judgments, few[0]))})"
        )
    bad = [c for c in concepts if not c or any(ch.isspace() or ch == "/" for ch in c)]
    if bad:
        raise ImageClefError(f"concept names must have no spaces or slashes: {bad[:5]}")
    _lines(out / "concepts.txt", concepts)
    _lines(out / "annotators.txt", annotators)
    _lines(out / "judges.txt", [" ".join([image, *judges(judgments, image)]) for image in images])
    for concept in concepts:
        _lines(
            out / "concepts" / "raw" / f"{concept}.txt",
            [" ".join([image, *map(str, _votes(judgments, image, concept))]) for image in images],
        )
        _lines(out / "concepts" / "clean" / f"{concept}.txt", [i for i in images if _majority(judgments, i, concept)])
    for image in images:
        _lines(out / "annotations" / "clean" / f"{image}.txt", [c for c in concepts if _majority(judgments, image, c)])
        means = [sum(v := _votes(judgments, image, c)) / len(v) for c in concepts]
        _lines(
            out / "annotations" / "raw" / f"{image}.txt", [f"{c} {m:.6f}" for c, m in zip(concepts, means, strict=True)]
        )
    return {"concepts": len(concepts), "images": len(images), "annotators": len(annotators)}


def _inside(folder: Path) -> None:
    """Refuse a folder whose files are linked from outside it: what a tree holds is its own."""
    for top, _, names in os.walk(folder):
        for name in names:
            path = Path(top) / name
            if not path.resolve().is_relative_to(folder.resolve()):
                raise ImageClefError(f"{path}: links outside {folder}; copy the file in")


def _names(path: Path) -> list[str]:
    """The whitespace-separated names of a list file, each once."""
    values = _read(path).split()
    if len(set(values)) != len(values) or not values:
        raise ImageClefError(f"{path}: empty or lists a name twice")
    return values


def _concepts(folder: Path) -> list[str]:
    """``concepts.txt`` when the folder has one, else the raw concept files' names, sorted."""
    if (folder / "concepts.txt").is_file():
        concepts = _names(folder / "concepts.txt")
    else:
        concepts = sorted(p.stem for p in (folder / "concepts" / "raw").glob("*.txt"))
        if not concepts:
            raise ImageClefError(f"{folder}: no concepts/raw/<concept>.txt file; is it an ImageCLEF folder?")
    bad = [c for c in concepts if "/" in c or c in (".", "..")]
    if bad:
        raise ImageClefError(f"{folder / 'concepts.txt'}: concept names must have no slashes: {bad[:5]}")
    return concepts


def _judges(folder: Path) -> tuple[dict[str, list[str]], list[str] | None]:
    """Who gave each image's judgments: ``judges.txt`` (per image), else ``annotators.txt`` (the
    same annotators for every image), else nobody named (``ANONYMOUS`` by position)."""
    if (folder / "judges.txt").is_file():
        per_image = {}
        for n, line in enumerate(_read(folder / "judges.txt").splitlines(), start=1):
            if not line.strip():
                continue  # a blank line (a file's last) names nobody
            image, *names = line.split()
            if len(set(names)) != len(names) or image in per_image:
                raise ImageClefError(f"{folder / 'judges.txt'}:{n}: an image or an annotator named twice")
            per_image[image] = names
        return per_image, None
    if (folder / "annotators.txt").is_file():
        return {}, _names(folder / "annotators.txt")
    return {}, None


def read_files(folder: str | Path) -> tuple[Judgments, list[str], list[str]]:
    """Judgments, concepts and images read back from the raw concept files.

    Each raw line is an image id and the 0/1 judgments of the annotators who judged it, at least
    ``MIN_RAW_ANNOTATORS`` and the same number for the image in every concept file. They are
    named by ``judges.txt`` or ``annotators.txt`` when the folder has one, else ``judge1``,
    ``judge2``, ... by position. The clean files and the raw annotation files, when present,
    must agree with the judgments: one line naming the file on any disagreement.
    """
    folder = Path(folder)
    _inside(folder)
    concepts = _concepts(folder)
    named, everyone = _judges(folder)
    judgments: Judgments = {}
    images: list[str] = []
    voters: dict[str, list[str]] = {}
    for concept in concepts:
        path = folder / "concepts" / "raw" / f"{concept}.txt"
        order = []
        for n, line in enumerate(_read(path).splitlines(), start=1):
            image, *votes = line.split(" ")
            if len(votes) < MIN_RAW_ANNOTATORS or any(v not in ("0", "1") for v in votes):
                raise ImageClefError(
                    f"{path}:{n}: expected an image id and at least {MIN_RAW_ANNOTATORS} judgments 0 or 1"
                )
            if "/" in image or image in (".", ".."):
                raise ImageClefError(f"{path}:{n}: image name {image!r} must have no slashes")
            if named and image not in named:
                raise ImageClefError(f"{path}:{n}: image {image} has no line in judges.txt naming who judged it")
            names = named.get(image) or everyone or [ANONYMOUS.format(k) for k in range(1, len(votes) + 1)]
            if voters.setdefault(image, names) != names or len(names) != len(votes):
                raise ImageClefError(
                    f"{path}:{n}: {len(votes)} judgments of image {image}, but {len(voters[image])} annotators "
                    "judged it (judges.txt, annotators.txt or the first concept file)"
                )
            order.append(image)
            for a, judged in zip(names, votes, strict=True):
                seen = judgments.setdefault(a, {}).setdefault(image, set())
                if judged == "1":
                    seen.add(concept)
        if len(set(order)) != len(order):
            raise ImageClefError(f"{path}: lists an image twice")
        if images and order != images:
            raise ImageClefError(f"{path}: lists other images than the first concept file")
        images = order
        clean = folder / "concepts" / "clean" / f"{concept}.txt"
        if clean.exists() and _read(clean).split() != [i for i in images if _majority(judgments, i, concept)]:
            raise ImageClefError(f"{clean}: differs from the majority of {path.name}'s judgments")
    for image in images:
        _check_annotation_files(folder, judgments, concepts, image)
    return judgments, concepts, images


def _check_annotation_files(folder: Path, judgments: Judgments, concepts: list[str], image: str) -> None:
    """An image's clean and raw annotation files, when present, agree with the judgments."""
    raw = folder / "annotations" / "raw" / f"{image}.txt"
    clean = folder / "annotations" / "clean" / f"{image}.txt"
    if clean.exists() and _read(clean).split() != [c for c in concepts if _majority(judgments, image, c)]:
        raise ImageClefError(f"{clean}: differs from the majority of the raw judgments")
    if not raw.exists():
        return
    listed = []
    for n, line in enumerate(_read(raw).splitlines(), start=1):
        concept, _, value = line.partition(" ")
        if concept not in concepts or not AGREEMENT.fullmatch(value):
            raise ImageClefError(f"{raw}:{n}: expected '<concept> <agreement 0.000000-1.000000>'")
        votes = _votes(judgments, image, concept)
        mean = sum(votes) / len(votes)
        if abs(float(value) - mean) > 5e-7:
            raise ImageClefError(f"{raw}:{n}: agreement {value} differs from the judgments' mean {mean:.6f}")
        listed.append(concept)
    if listed != concepts:
        raise ImageClefError(f"{raw}: lists other concepts than concepts.txt, or in another order")


def judgments_of(
    regions: Mapping[str, Sequence[tuple[int, str]]], coverage: Iterable[tuple[int, str]] | None = None
) -> Judgments:
    """Image-level labels per annotator from (image_id, label) pairs of their regions; with
    ``coverage`` ((image_id, annotator) pairs), an annotator who covered an image and drew
    nothing on it judged every concept absent there."""
    out: Judgments = {}
    for image_id, annotator in coverage or ():
        out.setdefault(annotator, {}).setdefault(str(image_id), set())
    for annotator, pairs in regions.items():
        mine = out.setdefault(annotator, {})
        for image_id, label in pairs:
            mine.setdefault(str(image_id), set()).add(label)
    return out


def export_release(release: ReleaseTables, out: str | Path) -> dict[str, int]:
    """The ImageCLEF files of a release folder: every human annotator's image-level labels (the
    derived ``consensus`` is left out), each image judged by the annotators who covered it (the
    table ``coverage``), concepts in label id order, images in id order. Images judged by fewer
    than ``MIN_RAW_ANNOTATORS`` cannot be written and are left out (the counts' ``images`` are
    those written)."""

    regions = release.arrow("regions", ["image_id", "annotator", "label"])
    images = release.arrow("images", ["image_id"]).column("image_id").to_pylist()
    vocabulary = release.arrow("vocabulary", ["label_id", "label"]).to_pylist()
    pairs: dict[str, list[tuple[int, str]]] = {}
    for image_id, annotator, label in zip(*(regions.column(c).to_pylist() for c in regions.column_names), strict=True):
        if annotator != "consensus":
            pairs.setdefault(annotator, []).append((image_id, label))
    covered = release.arrow("coverage", ["image_id", "annotator"])
    judgments = judgments_of(
        pairs, zip(*(covered.column(c).to_pylist() for c in ("image_id", "annotator")), strict=True)
    )
    used = {label for annotator in pairs.values() for _, label in annotator}
    concepts = [row["label"] for row in sorted(vocabulary, key=lambda r: r["label_id"]) if row["label"] in used]
    if len(judgments) < MIN_RAW_ANNOTATORS:
        raise ImageClefError(
            f"raw files need at least {MIN_RAW_ANNOTATORS} annotators' judgments per image; this release has "
            f"{len(judgments)} ({', '.join(sorted(judgments))})"
        )
    written = [str(i) for i in sorted(images) if len(judges(judgments, str(i))) >= MIN_RAW_ANNOTATORS]
    return write_files(out, judgments, concepts, written)


def ingest_judgments(
    folder: str | Path, words: Mapping[str, int], image_ids: Iterable[int], source: str = FOLDER
) -> tuple[list[dict[Any, Any]], list[dict[Any, Any]], dict[Any, Any]]:
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


def write_run_orders(release: ReleaseTables, out: str | Path) -> dict[str, dict[str, int]]:
    """What an ImageCLEF run file for ``evaluate --task imageclef --subset X`` must follow, for
    every subset X of the release: ``<out>/<X>/concepts.txt`` (its labels in label id order,
    ties by name: the run's column order, a line each) and ``<out>/<X>/images.txt`` (its test
    images of the image split, a line each in the run file, any order). Returns per subset the
    number of concepts and images."""
    members = release.arrow("subsets", ["subset", "image_id", "label", "image_split"]).to_pylist()
    order = {row["label"]: row["label_id"] for row in release.arrow("vocabulary", ["label", "label_id"]).to_pylist()}
    counts = {}
    for subset in sorted({row["subset"] for row in members}):
        mine = [row for row in members if row["subset"] == subset]
        concepts = sorted({row["label"] for row in mine}, key=lambda x: (order.get(x, 1 << 30), x))
        images = sorted({row["image_id"] for row in mine if row["image_split"] == "test"})
        folder = Path(out) / subset
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "concepts.txt").write_text("".join(f"{c}\n" for c in concepts), encoding="utf-8")
        (folder / "images.txt").write_text("".join(f"{i}\n" for i in images), encoding="utf-8")
        counts[subset] = {"concepts": len(concepts), "images": len(images)}
    return counts


class ImageClefExport:
    """``regionbench export --format imageclef`` (an ``io.layouts.Exports``): the ImageCLEF 2012
    concept and annotation files, clean and raw (``export_release``), when the release has the
    judgments of ``MIN_RAW_ANNOTATORS``, and each subset's run-file order (``write_run_orders``)."""

    name = "imageclef"

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        if images is not None or annotator is not None:
            raise InputError(
                "--format imageclef takes neither --images nor --annotator: the files hold every annotator's labels"
            )
        judges = sorted(set(release.arrow("regions", ["annotator"]).column("annotator").to_pylist()) - {"consensus"})
        if len(judges) >= MIN_RAW_ANNOTATORS:
            counts = export_release(release, out)
            left_out = release.arrow("images", ["image_id"]).num_rows - counts["images"]
            lines = [
                f"{out}: concept and annotation files, clean and raw, of {counts['concepts']} concepts over "
                f"{counts['images']} images by {counts['annotators']} annotators"
                + (
                    f"; {left_out} images judged by fewer than {MIN_RAW_ANNOTATORS} "
                    "annotators left out (the raw files need three judgments per image)"
                    if left_out
                    else ""
                )
            ]
        else:
            lines = [
                f"{out}: no concept or annotation files: they need the judgments of at least "
                f"{MIN_RAW_ANNOTATORS} annotators, and this release has {len(judges)}"
            ]
        orders = write_run_orders(release, out / "runs")
        return [
            *lines,
            f"{out / 'runs'}: for each of subsets {', '.join(orders)}, the concept order (concepts.txt) and the "
            "test images (images.txt) of a run file for evaluate --task imageclef",
        ]


EXPORT = ImageClefExport()
