"""Where a release's images and regions come from: the collection's name, home page, citation
and the licence of its images (docs/publishing.md, "The source").

Three layers, the later winning where it says something: what the layout's kind of collection
is (``io.layouts.About``), what the tree's own files state (``io.layouts.DescribesSource``: a
COCO file's ``info`` and ``licenses``) and the config's ``source``. A generated collection is
the build's own: its images carry the release's licence.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from regionbench.release.manifest import OTHER, UNKNOWN

FIELDS = ("name", "homepage", "citation", "license")

GENERATED_LICENSE = "CC-BY-4.0"  # a generated collection is the project's own data
SPDX_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]{0,63}")  # an identifier, not a sentence


def resolved_license(configured: str | None, generated: bool, stated: str | None) -> str:
    """The release's licence: the config's (``release.license``) where it gives one; else a
    generated collection's ``GENERATED_LICENSE``; else what the source states (``source.license``
    or its files), as an SPDX id, or ``OTHER`` when it states its terms in words; else
    ``UNKNOWN``."""
    if configured:
        return configured
    if generated:
        return GENERATED_LICENSE
    if stated:
        return stated if SPDX_ID.fullmatch(stated) else OTHER
    return UNKNOWN


def describe(
    layout: str, root: str | Path, configured: dict[str, str | None], generated: bool, release_license: str | None
) -> dict[str, str | None]:
    """The source of the collection at ``root``: ``FIELDS``, each None where nothing states it
    (``release_license``: the config's, which a generated collection's images carry)."""
    from regionbench.io import layouts  # a build's concern: readers of releases need no image library

    if generated:
        own = resolved_license(release_license, True, None)
        found: dict[str, str | None] = {"name": None, "homepage": None, "citation": None, "license": own}
    else:
        kind = layouts.get(layout)
        found = {"name": kind.about.name, "homepage": kind.about.original, "citation": kind.about.citation}
        found["license"] = None
        if isinstance(kind, layouts.DescribesSource):
            found |= {k: v for k, v in kind.describe_source(Path(root)).items() if v is not None}
    return found | {k: v for k, v in configured.items() if k in FIELDS and v is not None}


def files(layout: str, root: str | Path, generated: bool) -> list[dict[str, Any]]:
    """The tree's annotation files as its exports write them back (``io.layouts.KeepsSourceFiles``:
    each file's own statements, COCO's ``info`` and ``licenses``); none for a generated collection
    or a layout whose files state nothing of themselves."""
    from regionbench.io import layouts

    kind = layouts.get(layout)
    return [] if generated or not isinstance(kind, layouts.KeepsSourceFiles) else kind.source_files(Path(root))


def embeds(source: dict[str, str | None], asked: str) -> bool:
    """Whether the release carries the image files' bytes: asked (``release.images: embed``) and
    the source states a licence for its images; else it names them by path."""
    return asked == "embed" and source.get("license") is not None
