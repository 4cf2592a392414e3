"""Release history: a dataset's git tags and the previous release a build is checked against
(docs/releases.md, "Versions").

A release of dataset D at version X.Y.Z is tagged ``D-vX.Y.Z``, so one repository can hold
several datasets. The previous release of a build is named by ``release.previous``:

- ``none``: there is none (the first release says so explicitly);
- a release folder (with ``manifest.json``);
- a tag of the repository;
- ``null``: the newest tag of the dataset below the version being built.

A tag is read through DVC at that revision (``regionbench.load``, cached), so the answer is the
same in a fresh clone, in CI and under ``dvc exp run``, whatever version folders the workspace
happens to hold.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from regionbench import release
from regionbench.release.loader import load
from regionbench.release.versions import tag_name

NONE = "none"


def split_tag(tag: str) -> tuple[str, str]:
    """(dataset, version) of a tag ``<dataset>-v<X.Y.Z>``."""
    dataset, sep, version = tag.rpartition("-v")
    if not sep or not dataset:
        raise release.ReleaseError(f"tag {tag!r} is not <dataset>-v<X.Y.Z>; list them with git tag")
    release.parse_version(version)
    return dataset, version


def dataset_tags(repo: Path, dataset: str) -> list[tuple[tuple[int, int, int], str]]:
    """(version, tag) of every ``<dataset>-v<X.Y.Z>`` tag of the git repository ``repo``, lowest
    version first; none outside a git repository."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "tag", "--list", f"{dataset}-v*"], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:  # no git on this machine: no history to read
        return []
    if done.returncode != 0:
        return []
    found = []
    for tag in done.stdout.split():
        try:
            found.append((release.parse_version(tag.removeprefix(f"{dataset}-")), tag))
        except release.ReleaseError:
            continue  # another dataset whose name starts like this one, or not a version
    return sorted(found)


def published_release(dataset: str, version: str, repo: Path = Path(".")) -> Path | None:
    """This version as tagged before (``<dataset>-v<version>``, read through DVC), or ``None``."""
    tag = tag_name(dataset, version)
    if tag not in {t for _, t in dataset_tags(repo, dataset)}:
        return None
    return load(repo, rev=tag, dataset=dataset, version=version).folder


def previous_release(spec: str | None, dataset: str, version: str, repo: Path = Path(".")) -> Path | None:
    """The folder of the release that ``dataset`` ``version`` is checked against (module
    docstring), or ``None`` for ``spec == "none"``. Raises ``ReleaseError`` with one line when
    ``spec`` names nothing, or when it is ``None`` and no lower tag exists."""
    if spec == NONE:
        return None
    if spec and (Path(spec) / "manifest.json").is_file():
        return Path(spec)
    tags = dataset_tags(repo, dataset)
    if spec:
        versions = {tag: v for v, tag in tags}
        if spec not in versions:
            raise release.ReleaseError(
                f"release.previous {spec!r} is neither a release folder nor a tag {dataset}-v<X.Y.Z> of "
                f"{Path(repo).resolve().name}; name a folder, a tag, or 'none'"
            )
        tag, found = spec, versions[spec]
    else:
        current = release.parse_version(version)
        lower = [(v, tag) for v, tag in tags if v < current]
        if not lower:
            raise release.ReleaseError(
                f"no tag {dataset}-v<X.Y.Z> below {version} to check the bump against: the first release sets "
                "release.previous: none; a later one needs its predecessor tagged, or release.previous: <folder>"
            )
        found, tag = lower[-1]
    return load(repo, rev=tag, dataset=dataset, version=".".join(map(str, found))).folder
