"""One door out of a release: ``regionbench export RELEASE OUT --format NAME`` writes a loaded
release in the files of another format, every layout that ``Exports`` and ImageCLEF."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from regionbench.client.loader import Release
from regionbench.core.errors import InputError


class Exporter(Protocol):
    """A format a loaded release can be written in. A layout's ``Exports`` is one: it reads only
    the release's tables (``io.layouts.ReleaseTables``)."""

    name: str

    def export(self, release: Release, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """Write ``release`` under ``out`` (a new folder); returns what was written, a line each."""
        ...


class ImageClefExport:
    """The ImageCLEF 2012 concept and annotation files, clean and raw (``io.imageclef``), when
    the release has the judgments of ``MIN_RAW_ANNOTATORS``, and each subset's run-file order
    (the concepts and test images of a run for ``evaluate --task imageclef``)."""

    name = "imageclef"

    def export(self, release: Release, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        from regionbench.io import imageclef

        if images is not None or annotator is not None:
            raise InputError(
                "--format imageclef takes neither --images nor --annotator: the files hold every annotator's labels"
            )
        if out.exists():
            raise InputError(f"{out}: already exists; export writes a new folder, choose another path")
        judges = [a for a in release.annotators() if a != "consensus"]
        if len(judges) >= imageclef.MIN_RAW_ANNOTATORS:
            counts = imageclef.export_release(release, out)
            left_out = len(release.images) - counts["images"]
            lines = [
                f"{out}: concept and annotation files, clean and raw, of {counts['concepts']} concepts over "
                f"{counts['images']} images by {counts['annotators']} annotators"
                + (
                    f"; {left_out} images judged by fewer than {imageclef.MIN_RAW_ANNOTATORS} "
                    "annotators left out (the raw files need three judgments per image)"
                    if left_out
                    else ""
                )
            ]
        else:
            lines = [
                f"{out}: no concept or annotation files: they need the judgments of at least "
                f"{imageclef.MIN_RAW_ANNOTATORS} annotators, and this release has {len(judges)}"
            ]
        from regionbench.client.tasks import imageclef as imageclef_task

        orders = imageclef_task.write_run_orders(release, out / "runs")
        return [
            *lines,
            f"{out / 'runs'}: for each of subsets {', '.join(orders)}, the concept order (concepts.txt) and the "
            "test images (images.txt) of a run file for evaluate --task imageclef",
        ]


def formats() -> dict[str, Exporter]:
    """Format name -> its exporter: every layout that ``Exports``, and ImageCLEF."""
    from regionbench.io import layouts  # the layouts' readers need the build's image libraries

    found: dict[str, Exporter] = {
        name: layout for name, layout in layouts.registry().items() if isinstance(layout, layouts.Exports)
    }
    found[ImageClefExport.name] = ImageClefExport()
    return dict(sorted(found.items()))


def export(release: Release, out: Path, format_name: str, images: Path | None, annotator: str | None) -> list[str]:
    """Write ``release`` in ``format_name`` under ``out`` (``formats``); returns the lines to show."""
    exporters = formats()
    if format_name not in exporters:
        raise InputError(f"no export format {format_name!r}; choose one of {', '.join(exporters)}")
    return exporters[format_name].export(release, out, images, annotator)
