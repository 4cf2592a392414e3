"""What a build made, in a few lines: the end of ``regionbench build``'s output."""

from __future__ import annotations

import json
from pathlib import Path

from regionbench.release.card import skipped_methods
from regionbench.release.manifest import read_manifest
from regionbench.release.versions import bump_of


def summary(folder: Path, shown: str, logs: str) -> list[str]:
    """Lines naming the release in ``folder`` (written as ``shown``), its tables' row counts,
    its rejects, its version and the bump over the previous one, where the logs are (``logs``)
    and the next command. The next command is the last line."""
    manifest = read_manifest(folder)
    tables = manifest["tables"]
    previous = manifest["previous"]
    if previous is None:
        version = f"version {manifest['version']}, the first (no previous release to compare)"
    else:
        bump = bump_of(previous["version"], manifest["version"])
        version = (
            f"version {manifest['version']}: a {str(bump).upper()} bump over {previous['version']} "
            f"(the records need {previous['required_bump'].upper()})"
        )
    rows = ", ".join(f"{name} {entry['rows']:,}" for name, entry in sorted(tables.items()) if name != "rejects")
    rejects = tables["rejects"]["rows"]
    path = folder / "results" / "ingest_report.json"
    ingest = json.loads(path.read_text()) if path.is_file() else {}
    skipped = []
    if (report := folder / "results" / "subsets.json").is_file() and "skipped" in (
        found := json.loads(report.read_text())
    ):
        skipped = [f"  {found['skipped']}"]
    elif not (folder / "results" / "classifiers.parquet").is_file():
        skipped = ["  reference classifiers: not run (classifiers.enabled: true in the config runs them)"]
    return [
        f"release {manifest['dataset']}: {shown}",
        f"  {version}",
        f"  rows: {rows}",
        f"  rejects: {rejects:,}" + (f" (why: {shown}/data/rejects.parquet)" if rejects else ""),
        *skipped,
        *(
            f"  reference method {name}: not run ({why})"
            for name, why in skipped_methods(folder / "results" / "baselines").items()
        ),
        *labels_only(ingest),
        *quirks(ingest, shown),
        *alike(ingest),
        *left_alone(ingest),
        *unlicensed(manifest),
        f"  logs: {logs}/ (one per job)",
        f"next: regionbench verify {shown}",
    ]


SHOWN_QUIRKS = 3  # the most frequent quirks named in the build's last lines


def quirks(ingest: dict, shown: str) -> list[str]:
    """A line naming the most frequent quirks the ingest counted (kept, not rejected: nothing
    accepted without a word), where a reader finds them all; none when there were none."""
    counted = ingest.get("quirks") or {}
    if not counted:
        return []
    ranked = sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))
    named = ", ".join(f"{k} {n:,}" for k, n in ranked[:SHOWN_QUIRKS])
    more = f" and {len(ranked) - SHOWN_QUIRKS} more kinds" if len(ranked) > SHOWN_QUIRKS else ""
    lines = [f"  quirks, counted and kept: {named}{more} (all: {shown}/results/ingest_report.json)"]
    for kind, files in sorted((ingest.get("quirk_files") or {}).items()):  # maybe a mistake: where, and what
        first = files[0] + (f" and {counted.get(kind, len(files)) - 1:,} more" if counted.get(kind, 1) > 1 else "")
        lines.append(f"  check {kind}: {first}; {QUIRK_MEANING.get(kind, 'kept as it is')}")
    return lines


# What a quirk that may be the user's mistake means, and what to do if it is one.
QUIRK_MEANING = {
    "image_in_another_folder": "folder NN holds images NN000-NN999: its id names another folder (kept with its "
    "masks and rows; move it back if it was moved by mistake)",
    "images_no_annotator_lists": "an image file no annotator's file lists (kept, with no regions; list it or "
    "remove it)",
}


def alike(ingest: dict) -> list[str]:
    """A line for each annotator file that says what another says (``alike_annotator_files`` of
    the ingest report): one annotator counted twice agrees perfectly with itself."""
    return [f"  annotator files alike: {line}" for line in ingest.get("alike_annotator_files", [])]


def left_alone(ingest: dict) -> list[str]:
    """A line naming the files of the tree's ``annotations/`` that hold no instances (COCO's
    captions and keypoints), read by no stage (``files_left_alone`` of the ingest report)."""
    files = ingest.get("files_left_alone", [])
    return [f"  left alone (not instances files): {', '.join(files)}"] if files else []


def labels_only(ingest: dict) -> list[str]:
    """A line when folders of the raw tree had no masks (``labels_only_folders`` of the ingest
    report): their regions are released with labels and official features only."""
    found = ingest.get("labels_only_folders")
    if not found:
        return []
    return [
        f"  labels only: {', '.join(found)} had no segmentation_masks/: their regions carry labels and the "
        "official features, no masks, boxes or relations"
    ]


def unlicensed(manifest: dict) -> list[str]:
    """A line when the collection states no licence for its images: the release names them by
    path and does not carry them."""
    source = manifest.get("source") or {}
    if manifest["synthetic"] or "source" not in manifest or source.get("license") is not None:
        return []
    return [
        "  images: named by path, not embedded: the source states no licence for them; set source.license "
        "in the config if you may redistribute them"
    ]
