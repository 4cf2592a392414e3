"""regionbench: build, release and evaluate region-annotated image benchmarks."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from regionbench.client.loader import Release

__version__ = "0.1.0"


def load(
    source: str | Path,
    rev: str | None = None,
    *,
    dataset: str | None = None,
    version: str | None = None,
    verify: bool = True,
) -> Release:
    """A release from a folder or a git+DVC repository at ``rev``; see ``regionbench.client.loader.load``."""
    from regionbench.client.loader import load as _load

    return _load(source, rev, dataset=dataset, version=version, verify=verify)
