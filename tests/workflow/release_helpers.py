"""What the release tests share: the command line, and releases rewritten from the tiny one."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from conftest import TINY_RELEASE, regionbench_cli

from regionbench import release

VERSION = TINY_RELEASE


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return regionbench_cli(*args, cwd=cwd)


def provenance_of(folder: Path, version: str) -> release.Provenance:
    """The provenance ``folder``'s release was written with, as ``version``."""
    manifest = release.read_manifest(folder)
    fields = [f.name for f in dataclasses.fields(release.Provenance) if f.name != "version"]
    return release.Provenance(version=version, **{name: manifest[name] for name in fields if name in manifest})


def rewrite(folder: Path, version: str, out: Path, change=None, published: Path | None = None) -> dict:
    """Write ``folder``'s tables again as ``version`` with ``folder`` as the previous release
    (none when ``published``, this version as built before, is given)."""
    data = release.read_tables(folder)
    if change is not None:
        change(data)
    provenance = provenance_of(folder, version)
    results = {p.relative_to(folder / "results").as_posix(): p for p in (folder / "results").rglob("*") if p.is_file()}
    if change is not None:  # the ingest report counts the tables as built, not as changed here
        results.pop("ingest_report.json")
    previous = None if published else folder
    return release.write_release(out, data, results, provenance, previous=previous, published=published)
