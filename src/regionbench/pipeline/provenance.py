"""Where a build comes from: a fingerprint of the library code that made it."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import regionbench

PACKAGE = Path(regionbench.__file__).resolve().parent


@cache
def code_version() -> str:
    """``<version>+<sha256 prefix of every library file>``: the sources and the package data
    (the release schemas, the default vocabulary).

    Rules pass it as a parameter, so Snakemake reruns a stage when the code behind it changes
    (its params trigger), not only when the rule's own script does.
    """
    digest = hashlib.sha256()
    files = (p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in sorted(files):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return f"{regionbench.__version__}+{digest.hexdigest()[:12]}"
