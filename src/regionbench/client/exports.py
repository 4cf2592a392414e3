"""One door out of a release: ``regionbench export RELEASE OUT --format NAME`` writes a loaded
release in the files of another format: every layout that ``io.layouts.Exports``, ImageCLEF
(``io.imageclef.EXPORT``) SA-Co's concept pairs among them (``io.saco``). The door owns what every format shares: ``OUT`` must be a new
folder, a format that fails leaves nothing half written, and what the source said of each
image's rights and origin (its licence, addresses and credit) is never dropped: a format
whose files have no place for all of it gets ``image_credits.csv`` beside them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from regionbench.core.errors import InputError
from regionbench.release.loader import Release

if TYPE_CHECKING:  # a type only: the layouts' readers need the build's image libraries
    from regionbench.io.layouts import Exports


def formats() -> dict[str, Exports]:
    """Format name -> its exporter: every layout that ``Exports`` (SA-Co's among them), and ImageCLEF."""
    from regionbench.io import imageclef, layouts

    found: dict[str, Exports] = {
        name: layout for name, layout in layouts.registry().items() if isinstance(layout, layouts.Exports)
    }
    found[imageclef.EXPORT.name] = imageclef.EXPORT
    return dict(sorted(found.items()))


def export(release: Release, out: Path, format_name: str, images: Path | None, annotator: str | None) -> list[str]:
    """Write ``release`` in ``format_name`` under ``out`` (``formats``), a new folder; returns the
    lines to show. A format's error removes what it had written."""
    exporters = formats()
    if format_name not in exporters:
        raise InputError(f"no export format {format_name!r}; choose one of {', '.join(exporters)}")
    out = Path(out)
    if out.exists():
        raise InputError(f"{out}: already exists; export writes a new folder, choose another path")
    exporter = exporters[format_name]
    try:
        lines = exporter.export(release, out, images, annotator)
        if not getattr(exporter, "carries_credits", False) and (written := write_credits(release, out)):
            lines.append(written)
        return lines
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise


CREDITS_FILE = "image_credits.csv"


def write_credits(release: Release, out: Path) -> str | None:
    """``CREDITS_FILE`` in ``out``: a row per image the source said something of (its id, its
    path in the release, ``layouts.CREDITS``); the line to show, or None when it said nothing."""
    import csv

    from regionbench.io.layouts import CREDITS, image_credits

    credits = image_credits(release)
    said = sorted(image_id for image_id, row in credits.items() if any(row.values()))
    if not said:
        return None
    paths = dict(zip(*release.arrow("images", ["image_id", "path"]).to_pydict().values(), strict=True))
    with (out / CREDITS_FILE).open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["image_id", "path", *CREDITS])
        writer.writerows(
            [image_id, paths[image_id], *(credits[image_id][c] or "" for c in CREDITS)] for image_id in said
        )
    return (
        f"{CREDITS_FILE}: the licence, addresses and credit of {len(said):,} images, which the format has no place for"
    )
