"""One door out of a release: ``regionbench export RELEASE OUT --format NAME`` writes a loaded
release in the files of another format: every layout that ``io.layouts.Exports``, and ImageCLEF
(``io.imageclef.EXPORT``). The door owns what every format shares: ``OUT`` must be a new
folder, and a format that fails leaves nothing half written."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from regionbench.client.loader import Release
from regionbench.core.errors import InputError

if TYPE_CHECKING:  # a type only: the layouts' readers need the build's image libraries
    from regionbench.io.layouts import Exports


def formats() -> dict[str, Exports]:
    """Format name -> its exporter: every layout that ``Exports``, and ImageCLEF."""
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
    try:
        return exporters[format_name].export(release, out, images, annotator)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
