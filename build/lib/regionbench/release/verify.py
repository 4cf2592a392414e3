"""Verifying a release folder: every problem, one line each naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from regionbench.release.manifest import ReleaseError, canonical_digest, read_manifest, sha256_file
from regionbench.release.records import file_parts, scan
from regionbench.release.schemas import load_schemas


def verify(folder: Path) -> list[str]:
    """Every problem of the release in ``folder``, one line each naming the file (none: sound).

    Checks the manifest's own digest, the sha256 of every file (and files the manifest does
    not list), each table against the release's JSON Schema, its row count and its logical
    content hash, and the sha256 that croissant.json declares.
    """
    folder = Path(folder)
    try:
        manifest = read_manifest(folder)
    except ReleaseError as exc:
        return [str(exc)]
    problems = []
    sealed = {k: v for k, v in manifest.items() if k != "digest"}
    if manifest.get("digest") != canonical_digest(sealed):
        problems.append("manifest.json: digest does not match its content (the manifest was edited)")
    listed = manifest.get("files", {})
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {"manifest.json"}
    for rel in sorted(present - listed.keys()):
        problems.append(f"{rel}: not listed in manifest.json")
    for rel, expected in sorted(listed.items()):
        path = folder / rel
        if not path.is_file():
            problems.append(f"{rel}: missing (listed in manifest.json)")
        elif sha256_file(path) != expected:
            problems.append(f"{rel}: sha256 differs from manifest.json")
    try:
        schemas = load_schemas(folder / "schemas", sorted(manifest.get("tables", {})))
    except ReleaseError as exc:
        return [*problems, str(exc)]
    for name, entry in sorted(manifest.get("tables", {}).items()):
        path = folder / entry["path"]
        if name not in schemas or not path.is_file():
            problems.append(f"{entry['path']}: table {name} missing or without schema")
            continue
        try:
            found = scan(file_parts(path), schemas[name])  # row group by row group
        except (OSError, pa.ArrowException) as exc:
            problems.append(f"{entry['path']}: unreadable Parquet ({str(exc).splitlines()[0]})")
            continue
        problems += [f"{entry['path']}: {p}" for p in found.problems]
        if found.rows != entry["rows"]:
            problems.append(f"{entry['path']}: {found.rows} rows, manifest.json says {entry['rows']}")
        if found.content_sha256 and found.content_sha256 != entry["content_sha256"]:
            problems.append(f"{entry['path']}: content hash differs from manifest.json (records changed)")
    problems += _verify_croissant(folder)
    return problems


def _verify_croissant(folder: Path) -> list[str]:
    path = folder / "croissant.json"
    if not path.is_file():
        return ["croissant.json: missing"]
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return [f"croissant.json: not valid JSON ({exc})"]
    problems = []
    for item in document.get("distribution", []):
        target = folder / item.get("contentUrl", "")
        if item.get("@type") == "cr:FileObject" and target.is_file() and sha256_file(target) != item.get("sha256"):
            problems.append(f"croissant.json: sha256 of {item['contentUrl']} differs from the file")
    return problems
