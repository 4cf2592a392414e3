"""The manifest of a release: what it was built from and the seal over its files.

Every release module raises ``ReleaseError``; the sha256 of files, the inputs fingerprint, the
configuration hash and the canonical digest that seals ``manifest.json`` are defined here
(docs/releases.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from regionbench.core import errors
from regionbench.core.errors import InputError, parse_json
from regionbench.core.forked import forked_map

# 2: regions.mask is COCO's {size, counts} (was mask_rle, the counts alone) and the normalised
# features are named so (area_norm, width_norm, ...; were area, width, ...).
FORMAT = "regionbench-release/3"


class ReleaseError(InputError):
    """A release cannot be written or read as asked; the message says what to change."""


class DamagedAssembly(ReleaseError):
    """The assembled folder a release is published from no longer holds what its assembly sealed
    (a file changed, cut short or removed since): nothing is published from it; the build
    removes it so that the next run assembles it again."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


HASH_CHUNK = 2_000  # files per piece of a forked hash: a piece is a few MB to some hundred


def sha256_files(paths: list[Path], workers: int = 1) -> list[str]:
    """``sha256_file`` of each of ``paths``, in their order, by up to ``workers`` forked
    processes in pieces of ``HASH_CHUNK`` files. (Threads are slower than one: a raw tree's
    files are small, and the threads spend their time waiting for the interpreter's lock.)"""
    pieces = [paths[i : i + HASH_CHUNK] for i in range(0, len(paths), HASH_CHUNK)]
    return [d for piece in forked_map(lambda chunk: [sha256_file(p) for p in chunk], pieces, workers) for d in piece]


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def file_digests(folder: Path, workers: int = 1, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """sha256 of every file under ``folder``, by path relative to it, in path order, hashed by up
    to ``workers`` processes; a path in ``known`` takes its digest from there unhashed (files
    this process hashed already and has not touched since)."""
    folder = Path(folder)
    known = known or {}
    names = [p.relative_to(folder).as_posix() for p in _files(folder)]
    fresh = [n for n in names if n not in known]
    hashed = dict(zip(fresh, sha256_files([folder / n for n in fresh], workers), strict=True))
    return {n: known.get(n) or hashed[n] for n in names}


def fingerprint_tree(root: Path, workers: int = 1) -> str:
    """sha256 over the relative path and sha256 of every file under ``root``, in path order; the
    files are hashed by up to ``workers`` processes (a paper-scale tree: 120,000 files, 2.3 GB)."""
    root = Path(root)
    paths = _files(root)
    digest = hashlib.sha256()
    for path, file_digest in zip(paths, sha256_files(paths, workers), strict=True):
        digest.update(os.fsencode(path.relative_to(root).as_posix()) + f"\0{file_digest}\n".encode())
    return digest.hexdigest()


def config_hash(config: Mapping) -> str:
    """sha256 of the build configuration, without the settings that name local paths (the raw
    tree, the vocabulary folder, the previous release: their contents reach the release itself)
    and where the jobs run (``jobs``: the release is the same either way)."""
    settings = {k: v for k, v in config.items() if k not in ("raw_dir", "vocabulary_dir", "jobs")}
    if "release" in settings:
        settings["release"] = {k: v for k, v in settings["release"].items() if k != "previous"}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def canonical_digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class Provenance:
    """What a release was built from; goes to the manifest and the dataset card."""

    dataset: str
    version: str
    code_version: str
    config_sha256: str
    inputs_sha256: str
    date: str  # publication date, YYYY-MM-DD (Croissant's datePublished, which it recommends)
    license: str = "CC-BY-4.0"  # SPDX id
    synthetic: bool = False  # the images and masks were generated (regionbench synth), not collected
    layout: str = "saiapr"  # the raw tree's layout: saiapr (SAIAPR TC-12 folders) or coco (COCO exports)
    creator: str = "regionbench"  # who made the release
    # the collection: name, homepage, citation and its images' licence (pipeline.source.describe)
    source: dict[str, str | None] | None = None
    images: str = "paths"  # embedded: the Hugging Face image files carry the bytes; paths: they name the files
    # what only the maintainer can say (config release.statements, unset ones left out): release.rai
    statements: dict[str, str] | None = None
    # the collection's own split its benchmark is scored on (core.splits.evaluation_split), or None
    evaluation_split: str | None = None
    # the annotation files as the source gave them, what they state of themselves (COCO's info and
    # licenses), so that an export writes the same files back (pipeline.source.files)
    source_files: list[dict[str, Any]] | None = None
    # a public release of a hosted benchmark: the side hidden, the private release's digest and
    # where the side is scored (challenge.public); None for any other release
    hidden: dict[str, Any] | None = None


SHA256 = re.compile(r"[0-9a-f]{64}")
UNKNOWN = "unknown"  # a release licence: none stated by the config or the source, never a default one
OTHER = "other"  # a release licence: the source states its terms in words, not by an SPDX id


def is_spdx(licence: str | None) -> bool:
    """Whether a release's ``license`` names an SPDX licence (not ``UNKNOWN`` or ``OTHER``)."""
    return bool(licence) and licence not in (UNKNOWN, OTHER)


# The licence identifiers a Hugging Face card may name (the Hub's documented list); another
# licence is named "other", with its own name and link.
HUB_LICENCES = frozenset([
    "apache-2.0", "mit", "openrail", "bigscience-openrail-m", "creativeml-openrail-m",
    "bigscience-bloom-rail-1.0", "bigcode-openrail-m", "afl-3.0", "artistic-2.0", "bsl-1.0", "bsd",
    "bsd-2-clause", "bsd-3-clause", "bsd-3-clause-clear", "c-uda", "cc", "cc0-1.0", "cc-by-2.0", "cc-by-2.5",
    "cc-by-3.0", "cc-by-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-2.0", "cc-by-nc-3.0", "cc-by-nc-4.0",
    "cc-by-nd-4.0", "cc-by-nc-nd-3.0", "cc-by-nc-nd-4.0", "cc-by-nc-sa-2.0", "cc-by-nc-sa-3.0",
    "cc-by-nc-sa-4.0", "cdla-sharing-1.0", "cdla-permissive-1.0", "cdla-permissive-2.0", "wtfpl", "ecl-2.0",
    "epl-1.0", "epl-2.0", "etalab-2.0", "eupl-1.1", "agpl-3.0", "gfdl", "gpl", "gpl-2.0", "gpl-3.0", "lgpl",
    "lgpl-2.1", "lgpl-3.0", "isc", "lppl-1.3c", "ms-pl", "mpl-2.0", "odc-by", "odbl", "openrail++", "osl-3.0",
    "postgresql", "ofl-1.1", "ncsa", "unlicense", "zlib", "pddl", "lgpl-lr", "deepfloyd-if-license", "llama2",
    "gemma", "unknown", "other",
])  # fmt: skip


def card_licence(manifest: dict) -> dict[str, str]:
    """The licence fields of a release's Hugging Face card (``license``, and ``license_name``,
    ``license_link`` where it is "other"): the release's licence where the Hub lists it; an SPDX
    licence the Hub does not list as "other" named by its id with its SPDX page; terms in words
    as "other" ("source-terms", quoted in the card); photographs embedded under a licence of
    their own as "other" naming both (the card's Source section states them)."""
    licence = str(manifest["license"])
    images = (manifest.get("source") or {}).get("license")
    if manifest.get("images") == "embedded" and not manifest["synthetic"] and images != licence:
        return {"license": OTHER, "license_name": _slug(f"{licence}-annotations-images-{images}")}
    if licence.lower() == OTHER:
        return {"license": OTHER, "license_name": "source-terms"}
    if licence.lower() in HUB_LICENCES:
        return {"license": licence.lower()}
    return {
        "license": OTHER,
        "license_name": _slug(licence),
        "license_link": f"https://spdx.org/licenses/{licence}.html",
    }


def _slug(text: str) -> str:
    """``text`` as a card's licence name: lower case, runs of anything else than letters,
    digits and dots as one hyphen."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-") or OTHER


def inside_path(rel: object) -> bool:
    """Whether a manifest path names a file inside the release: a relative POSIX path of plain
    parts (no ``..``, ``.``, empty part or backslash), so nothing outside is ever opened."""
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel:
        return False
    parts = PurePosixPath(rel).parts
    return not rel.startswith("/") and all(part not in ("", ".", "..") for part in parts) and "/".join(parts) == rel


def _shape_problem(manifest: object) -> str | None:
    """What makes ``manifest`` unusable as a release manifest (``None``: its shape is sound)."""
    if not isinstance(manifest, dict):
        return "must be a JSON object"
    for key in ("dataset", "version", "digest"):
        if not isinstance(manifest.get(key), str):
            return f"{key!r} must be a string"
    files, entries = manifest.get("files"), manifest.get("tables")
    if not isinstance(files, dict) or not all(isinstance(v, str) and SHA256.fullmatch(v) for v in files.values()):
        return "'files' must map paths to sha256 hex digests"
    if not isinstance(entries, dict):
        return "'tables' must be an object"
    for name, entry in entries.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("path"), str)
            and type(entry.get("rows")) is int
            and entry["rows"] >= 0
            and isinstance(entry.get("key"), list)
            and isinstance(entry.get("content_sha256"), str)
        ):
            return f"table {name!r} needs a path, rows (an integer), a key and a content_sha256"
    outside = [rel for rel in [*files, *(e["path"] for e in entries.values())] if not inside_path(rel)]
    if outside:
        return f"path {outside[0]!r} is outside the release; a manifest names files inside its folder only"
    return None


def read_manifest(folder: Path) -> dict:
    """The manifest of the release in ``folder``, its shape checked (``_shape_problem``): a
    malformed one, or one naming a path outside the folder, is a ``ReleaseError``."""
    path = Path(folder) / "manifest.json"
    if path.exists() and not path.is_file():
        raise ReleaseError(f"{path}: {errors.file_problem(path, 'the manifest file')}; fetch the release again")
    if not path.is_file():
        raise ReleaseError(f"{path}: no manifest; is {folder} a regionbench release folder?")
    try:
        manifest: Any = parse_json(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ReleaseError(f"{path}: not valid JSON ({exc})") from None
    except ValueError as exc:
        raise ReleaseError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ReleaseError(f"{path}: unreadable ({exc.strerror})") from None
    problem = _shape_problem(manifest)
    if problem:
        raise ReleaseError(f"{path}: malformed: {problem}")
    return manifest


def seal_holds(manifest: dict) -> bool:
    """Whether ``manifest``'s ``digest`` is that of the rest of it (it was not edited after sealing)."""
    return manifest.get("digest") == canonical_digest({k: v for k, v in manifest.items() if k != "digest"})


def sealed_contents(folder: Path) -> dict[str, str]:
    """Per table of the release in ``folder``, the logical content hash its manifest records, for
    the tables whose data file still has the sha256 the sealed manifest lists; none when the
    manifest is of another format or its seal is broken. What a diff may trust without reading
    the table: equal content hashes mean equal records."""
    manifest = read_manifest(folder)
    if manifest["format"] != FORMAT or not seal_holds(manifest):
        return {}
    return {
        name: table["content_sha256"]
        for name, table in manifest["tables"].items()
        if manifest["files"].get(table["path"]) == sha256_file(Path(folder) / table["path"])
    }
