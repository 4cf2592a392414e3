"""Ingest of one shard of a raw tree, whatever its layout.

A layout (``regionbench.io.layouts``) reads the shard's files into accepted images with every
annotator's regions, and rejects what it cannot use. Ingest adds what no format knows: the
consensus of several annotators (``regionbench.pipeline.consensus``), the features and relations of every
region measured while its image's pixels and masks are in memory (``shard_measures``), the
image quirks, one ledger check that every raw item was accepted or rejected, and one merge of
the shard reports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core import geometry, tables
from regionbench.core.hierarchy import Hierarchy, majority_parent
from regionbench.core.relations import RelationSettings
from regionbench.io import layouts
from regionbench.io.rawtree import RawTree
from regionbench.io.shards import MAX_IMAGE_PIXELS, Ledger, Shard, check_ledger, image_quirks, printable, region_row
from regionbench.pipeline import consensus
from regionbench.pipeline.shard_measures import Measures

COUNTS = ("seen", "accepted", "rejected")


@dataclass(frozen=True)
class IngestSettings:
    """The ``ingest`` settings of a build: ``strict`` (any reject fails the shard),
    ``max_image_pixels``, ``shard_size`` (images per shard where a layout shards by runs of
    images; None: its default) and ``category_map`` (a source's category name -> label)."""

    strict: bool = False
    max_image_pixels: int = MAX_IMAGE_PIXELS
    shard_size: int | None = None
    category_map: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_config(cls, ingest: Mapping[str, Any], category_map: Mapping[str, str]) -> IngestSettings:
        """From the ``ingest`` settings and ``category_map`` of a validated build configuration."""
        return cls(ingest["strict"], ingest["max_image_pixels"], ingest["shard_size"], category_map)


DEFAULT_SETTINGS, DEFAULT_RELATIONS, DEFAULT_CONSENSUS = (
    IngestSettings(),
    RelationSettings(),
    consensus.ConsensusSettings(),
)


def ingest_shard(
    root: str | Path,
    shard: str,
    words: Mapping[str, int] | None = None,
    hierarchy: Hierarchy | None = None,
    *,
    layout: layouts.Layout | str | None = None,
    settings: IngestSettings = DEFAULT_SETTINGS,
    relations: RelationSettings = DEFAULT_RELATIONS,
    agreement: consensus.ConsensusSettings = DEFAULT_CONSENSUS,
    pieces: str | Path | None = None,
    copies: Mapping[str, str] | None = None,
) -> Shard:
    """The stage tables of shard ``shard`` of the raw tree at ``root``.

    ``layout`` is a layout or its name (None: detected, ``layouts.detect``); ``words`` maps
    vocabulary labels to ids for layouts that name categories. With ``hierarchy`` and several
    annotators, the derived annotator ``consensus`` joins every covered image's regions
    (clusters and masks by ``agreement``). Returns accepted images, regions, rejects, a report
    that counts both sides, the features and relations (``relations``: ``relations.pairwise``)
    of every region, and which annotators covered each image; each image decoded once.
    ``pieces`` is the folder the layout's ``prepare`` wrote the tree's shard pieces to (None:
    the reader prepares its shard itself). ``copies`` are the tree's image files that hold an
    earlier one's bytes (``io.rawtree.RawTree.copies``; None: found here), each rejected. Raises IngestError
    in ``settings.strict`` mode on any reject.
    """
    words = dict(words or {})
    reader = _reader(Path(root), shard, words, hierarchy, layout, settings, pieces, copies)
    ledger = reader.ledger
    several = hierarchy is not None and len(reader.annotators) > 1
    measures = Measures(relations)
    rows: list[dict] = []  # images rows: the reader may complete them (captions) until its report
    regions: list[dict] = []
    coverage: list[dict] = []
    derived: Counter | None = Counter() if several else None  # consensus regions: seen, accepted
    for record in reader.records():
        if printable(record.row["path"]) != record.row["path"]:  # not UTF-8: no release can name it
            _reject_unnamed(record, ledger)
            continue
        if not record.covered_by:  # an image file no annotator's file lists: kept, and said
            ledger.quirk("images_no_annotator_lists", record.row["path"])
        found = list(record.regions)
        if derived is not None and hierarchy is not None and record.covered_by:
            found += _consensus(record, words, hierarchy, agreement, ledger, derived)
        rows.append(record.row)
        regions += [row for row, _ in found]
        coverage += _coverage(record)
        _measure(measures, record, found)
        ledger.quirks.update(image_quirks(record.image, (row for row, _ in found)))
    report = _report(reader.report(), ledger, len(rows), regions, measures, derived)
    ledger.fail_if_strict(settings.strict)
    return Shard(
        images=tables.from_rows(rows, tables.IMAGES, tables.KEYS["images"]),
        regions=tables.from_rows(regions, tables.REGIONS, tables.KEYS["regions"]),
        rejects=tables.from_rows(ledger.rejects, tables.REJECTS, tables.KEYS["rejects"]),
        report=report,
        features=measures.features(),
        relations=measures.relations(),
        coverage=tables.from_rows(coverage, tables.COVERAGE, tables.KEYS["coverage"]),
    )


def _reject_unnamed(record: layouts.ImageRecord, ledger: Ledger) -> None:
    """Reject an image whose file name is not UTF-8 (any layout), and its regions with it."""
    path = printable(record.row["path"])
    ledger.reject(path, record.key, "image", "its file name is not UTF-8 text; rename the file (a release names files in UTF-8)")  # fmt: skip
    for row, _ in record.regions:
        reason = f"its image was rejected ({path}: its file name is not UTF-8 text)"
        ledger.reject(path, f"{record.key}/{row['annotator']}/{row['region_id']}", "region", reason, row["annotator"])


def _count_what_was_kept(report: dict, images: int, regions: list[dict]) -> None:
    """Set the report's accepted counts to what the reader yielded (``images`` rows, ``regions``
    rows per annotator), whatever it counted itself: then ``check_ledger`` (seen = accepted +
    rejected) catches a row a layout counted accepted but never handed over, or lost unsaid."""
    report["images"]["accepted"] = images
    kept = Counter(row["annotator"] for row in regions if row["annotator"] != tables.CONSENSUS)  # counted apart
    for annotator, counts in report.get("annotators", {}).items():
        counts["accepted"] = kept[annotator]
    report["regions"]["accepted"] = sum(kept.values())


def _reader(
    root: Path,
    shard: str,
    words: dict[str, int],
    hierarchy: Hierarchy | None,
    layout: layouts.Layout | str | None,
    settings: IngestSettings,
    pieces: str | Path | None,
    copies: Mapping[str, str] | None,
) -> layouts.ShardReader:
    """The reader of shard ``shard`` of the tree's layout (``ingest_shard`` says what each
    argument is), its copies found here when the workflow did not give them."""
    layout = layouts.detect(root) if layout is None else layouts.get(layout) if isinstance(layout, str) else layout
    if copies is None:
        copies = RawTree(str(root), layout, settings.shard_size).copies.get(shard, {})
    reading = layouts.Reading(
        words, settings.max_image_pixels, settings.category_map, settings.shard_size, str(pieces) if pieces else None,
        copies,
    )  # fmt: skip
    return layout.read_shard(root, shard, reading, hierarchy)


def _measure(measures: Measures, record: layouts.ImageRecord, found: list[tuple[dict[str, Any], Any]]) -> None:
    """The features and relations of an image's regions ``found``: measured on its pixels and
    masks, or, for a region its source describes without a mask, the features the source gave."""
    image_id = record.row["image_id"]
    measures.add(image_id, record.image.pixels, [(row, mask) for row, mask in found if mask is not None])
    for row, mask in found:
        if mask is None:
            key = (row["annotator"], row["region_id"])
            measures.add_known((image_id, *key), record.known[key])


def _coverage(record: layouts.ImageRecord) -> list[dict[str, Any]]:
    """The ``coverage`` rows of an accepted image: each annotator who covered it, the id their
    file gives it, where their files list it and the licence id it gives the image, the pixels they marked as neither region nor background and the categories
    their file says are absent or not exhaustively annotated (LVIS)."""
    return [
        {
            "image_id": record.row["image_id"],
            "annotator": a,
            "source_image_id": record.source_ids.get(a),
            "source_position": record.source_positions.get(a),
            "source_license": record.source_licenses.get(a),
            "ignore_mask": geometry.rle(record.ignore[a]) if a in record.ignore and record.ignore[a].any() else None,
            **record.federated.get(a, {}),
        }
        for a in record.covered_by
    ]


def _report(
    report: dict[str, Any],
    ledger: Ledger,
    images: int,
    regions: list[dict[str, Any]],
    measures: Measures,
    derived: Counter[str] | None,
) -> dict[str, Any]:
    """The reader's report completed: what was kept, the quirks seen, relations measured near
    pairs only (when it happened), the consensus counted; every raw item accounted for
    (``check_ledger``)."""
    _count_what_was_kept(report, images, regions)
    report["quirks"] = dict(sorted((k, n) for k, n in ledger.quirks.items() if n))  # only what was seen
    if ledger.quirk_files:  # where the quirks that may be a mistake were seen, the first few of each
        report["quirk_files"] = {k: sorted(v)[:QUIRK_FILES] for k, v in sorted(ledger.quirk_files.items())}
    if measures.crowded:  # said only when it happened: the report of an uncrowded build is unchanged
        report["relations_near_pairs_only"] = measures.crowded
    if derived is not None and derived["tried"]:
        counts = {
            "seen": derived["seen"],
            "accepted": derived["accepted"],
            "rejected": ledger.rejected("region", tables.CONSENSUS),
        }
        report["annotators"][tables.CONSENSUS] = counts
        report["regions"] = {k: report["regions"][k] + counts[k] for k in COUNTS}
    check_ledger(
        f"shard {report['folder']}",
        {"images": report["images"], "regions": report["regions"], **report.get("annotators", {})},
    )
    return report


def _consensus(
    record: layouts.ImageRecord,
    words: Mapping[str, int],
    hierarchy: Hierarchy,
    agreement: consensus.ConsensusSettings,
    ledger: Ledger,
    derived: Counter,
) -> list[tuple[dict, np.ndarray]]:
    """The consensus regions of one image, numbered from 1; each cluster without one rejected.

    Every annotator who covered the image votes, one who drew nothing too. A crowd region marks
    a group of objects, none of which the consensus can match: it does not vote."""
    readings: dict[str, list] = {annotator: [] for annotator in record.covered_by}
    for row, mask in record.regions:
        if mask is not None and not row["iscrowd"]:
            readings.setdefault(row["annotator"], []).append((row["label"], mask))
    agreed, problems = consensus.consensus(readings, hierarchy, agreement.min_iou, agreement.method)
    problems += [f"consensus label {label!r} has no id in the vocabulary" for label, _ in agreed if label not in words]
    agreed = [(label, mask) for label, mask in agreed if label in words]
    image_id = record.row["image_id"]
    for k, reason in enumerate(problems, start=1):
        ledger.reject("consensus", f"{record.key}/{k}", "region", reason, tables.CONSENSUS)
    derived.update(tried=1, seen=len(agreed) + len(problems), accepted=len(agreed))
    return [
        (region_row(image_id, tables.CONSENSUS, region_id, words[label], label, mask), mask)
        for region_id, (label, mask) in enumerate(agreed, start=1)
    ]


QUIRK_FILES = 20  # the files a shard's report keeps of each quirk that names them


def merge_reports(reports: list[dict]) -> dict:
    """The ingest report of a build: its shard reports summed, whatever the layout.

    Counts add up (nested ones key by key), lists join (sorted, once each), ``folder`` becomes
    ``folders``. Two entries are collection-wide: the ontology ``parents`` each node was seen
    under become ``parent_conflicts`` (the nodes seen under several, with the majority parent
    chosen), and the quirk ``internal_node_labels`` counts the distinct labels, not the shards'."""
    totals: dict[str, Any] = {"folders": sorted(r["folder"] for r in reports)}
    for key in sorted({k for r in reports for k in r} - {"folder"}):
        totals[key] = _merge([r[key] for r in reports if key in r])
    parents = totals.pop("parents", {})
    totals["parent_conflicts"] = [
        {"node": child, "parents": dict(sorted(p.items())), "chosen": majority_parent(p)}
        for child, p in sorted(parents.items())
        if len(p) > 1
    ]
    if "internal_node_labels" in totals:
        totals.setdefault("quirks", {})["internal_node_labels"] = len(totals["internal_node_labels"])
    return totals


def _merge(values: list) -> object:
    """Numbers summed, mappings merged key by key, lists joined into one sorted list of distinct items."""
    if isinstance(values[0], dict):
        keys = sorted({k for v in values for k in v})
        return {k: _merge([v[k] for v in values if k in v]) for k in keys}
    if isinstance(values[0], list):
        return sorted({item for v in values for item in v})
    return sum(values)
