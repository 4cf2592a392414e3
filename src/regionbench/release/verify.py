"""Verifying a release folder: every problem, one line each naming the file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from regionbench.core.errors import first_line, parse_json
from regionbench.core.tables import CONSENSUS, read_parquet, row_keys
from regionbench.release.manifest import (
    ReleaseError,
    card_licence,
    inside_path,
    is_spdx,
    read_manifest,
    seal_holds,
    sha256_file,
)
from regionbench.release.records import file_parts, scan
from regionbench.release.schemas import load_schemas


def verify(folder: Path, expect: str | None = None) -> list[str]:
    """Every problem of the release in ``folder``, one line each naming the file (none: sound).

    Checks the manifest's own digest and shape (no path outside the folder is ever opened), the
    sha256 of every file, that nothing is there the manifest does not list (files, folders
    without a listed file, links), each table against the release's JSON Schema, its row count
    and its logical content hash, the keys tables share, and the sha256 that croissant.json
    declares. A release re-sealed after an edit passes all of these; ``expect`` (the manifest's
    digest as a tag, a DVC lock or a paper pinned it; ``expect_problem``) is what tells it apart.
    """
    folder = Path(folder)
    try:
        manifest = read_manifest(folder)
    except ReleaseError as exc:
        return [str(exc)]
    problems = []
    if expect is not None and (wrong := expect_problem(manifest, expect)):
        problems.append(wrong)
    if not seal_holds(manifest):
        problems.append("manifest.json: digest does not match its content (the manifest was edited)")
    problems += _verify_files(folder, manifest["files"])
    try:
        schemas = load_schemas(folder / "schemas", sorted(manifest.get("tables", {})))
    except ReleaseError as exc:
        return [*problems, str(exc)]
    problems += _verify_tables(folder, manifest, schemas)
    if not problems:  # the tables are whole: their rows can be held to the ingest report and to each other
        problems += _verify_ledger(folder, manifest) + _verify_references(folder, manifest)
    document, unread = _read_croissant(folder)
    problems += unread + _verify_croissant(folder, document)
    problems += _verify_identity(folder, manifest, document)
    return problems


def _verify_files(folder: Path, listed: dict[str, str]) -> list[str]:
    """The files of the release against the manifest's list: nothing more (files, folders
    without a listed file, links, special files, never opened), nothing missing, every sha256."""
    problems = []
    entries = sorted(folder.rglob("*"))
    links = {p.relative_to(folder).as_posix() for p in entries if p.is_symlink()}
    present = {p.relative_to(folder).as_posix() for p in entries if p.is_file()} - {"manifest.json"} - links
    holding = {parent.as_posix() for rel in listed for parent in Path(rel).parents}
    for rel in sorted(links):
        problems.append(f"{rel}: a symbolic link; a release holds plain files only")
    for rel in sorted(present - listed.keys()):
        problems.append(f"{rel}: not listed in manifest.json")
    special = "not a regular file (a FIFO, a socket or a device); a release holds plain files only"
    for path in entries:
        rel = path.relative_to(folder).as_posix()
        if path.is_dir() and not path.is_symlink() and rel not in holding:
            problems.append(f"{rel}/: a folder without any file listed in manifest.json")
        elif not path.is_symlink() and not path.is_dir() and not path.is_file():
            problems.append(f"{rel}: {special}")  # never opened: reading a FIFO would wait forever
    for rel, expected in sorted(listed.items()):
        path = folder / rel
        if _through_link(folder, rel):
            if rel not in links:
                problems.append(f"{rel}: reached through a symbolic link; a release holds plain files only")
            continue
        if not path.is_file():
            if not path.exists():
                problems.append(f"{rel}: missing (listed in manifest.json)")
            elif path.is_dir():
                problems.append(f"{rel}: a folder where manifest.json lists a file")
        elif sha256_file(path) != expected:
            problems.append(f"{rel}: sha256 differs from manifest.json")
    return problems


def _verify_tables(folder: Path, manifest: dict[str, Any], schemas: dict[str, Any]) -> list[str]:
    """Each table read row group by row group against its JSON Schema, its row count and its
    logical content hash in the manifest."""
    problems = []
    for name, entry in sorted(manifest.get("tables", {}).items()):
        path = folder / entry["path"]
        if _through_link(folder, entry["path"]):
            continue  # named above
        if name not in schemas or not path.is_file():
            problems.append(f"{entry['path']}: table {name} missing or without schema")
            continue
        try:
            found = scan(file_parts(path), schemas[name])  # row group by row group
        except (OSError, pa.ArrowException) as exc:
            problems.append(f"{entry['path']}: unreadable Parquet ({first_line(exc)})")
            continue
        problems += [f"{entry['path']}: {p}" for p in found.problems]
        if found.rows != entry["rows"]:
            problems.append(f"{entry['path']}: {found.rows} rows, manifest.json says {entry['rows']}")
        if found.content_sha256 and found.content_sha256 != entry["content_sha256"]:
            problems.append(f"{entry['path']}: content hash differs from manifest.json (records changed)")
    return problems


MIN_PIN = 12  # hex digits of a digest a pin may give, as a short git hash does


def expect_problem(manifest: dict, expect: str) -> str | None:
    """Why the release is not the one pinned by ``expect`` (its manifest digest, in full or its
    first ``MIN_PIN`` or more hex digits, ``sha256:`` allowed before it), or None when it is."""
    pin = expect.strip().lower().removeprefix("sha256:")
    if len(pin) < MIN_PIN or any(c not in "0123456789abcdef" for c in pin):
        return f"--expect {expect!r}: not a digest; give the release's manifest digest (at least {MIN_PIN} hex digits)"
    digest = str(manifest.get("digest", ""))
    if not digest.startswith(pin):
        return (
            f"manifest.json: digest sha256:{digest} is not the pinned {expect.strip()}: this is another release, "
            "or one edited and sealed again; fetch the pinned version"
        )
    return None


REPORT = "results/ingest_report.json"


def _verify_ledger(folder: Path, manifest: dict) -> list[str]:
    """The ingest report's counts against the tables: accepted images and regions (each
    annotator's too) are the rows of ``images`` and ``regions``, rejected ones the ``rejects``
    rows of their kind from ingest. Nothing to check in a release without the report."""
    if REPORT not in manifest["files"] or not {"images", "regions", "rejects"} <= set(manifest.get("tables", {})):
        return []
    try:
        report: Any = parse_json((folder / REPORT).read_text(encoding="utf-8"))
        images, regions = report["images"], report["regions"]
        per_annotator = report.get("annotators", {})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{REPORT}: not an ingest report ({first_line(exc)})"]
    tables = manifest["tables"]
    rejects = read_parquet(folder / tables["rejects"]["path"], ["item", "stage"])
    ingest = rejects.filter(pc.equal(rejects["stage"], "ingest"))["item"].value_counts().to_pylist()
    refused = {entry["values"]: entry["counts"] for entry in ingest}
    drawn = read_parquet(folder / tables["regions"]["path"], ["annotator"])["annotator"].value_counts()
    kept = {entry["values"]: entry["counts"] for entry in drawn.to_pylist()}
    found = {
        "images accepted": (images.get("accepted"), tables["images"]["rows"]),
        "images rejected": (images.get("rejected"), refused.get("image", 0)),
        "regions accepted": (regions.get("accepted"), tables["regions"]["rows"]),
        "regions rejected": (regions.get("rejected"), refused.get("region", 0)),
    }
    for annotator, counts in sorted(per_annotator.items()):
        found[f"regions of {annotator} accepted"] = (counts.get("accepted"), kept.get(annotator, 0))
    return [
        f"{REPORT}: {what} {said}, the tables hold {rows}; the report and the tables disagree (rebuild the release)"
        for what, (said, rows) in found.items()
        if said != rows
    ]


# (table, its columns, the table they refer to, its columns): every row's values must be a row
# of the other (a join on them finds it). Pairs of columns are checked together, so a label id
# that names another label is caught, not only an id that names none.
REFERENCES = (
    ("regions", ["image_id"], "images", ["image_id"]),
    ("regions", ["label_id", "label"], "vocabulary", ["label_id", "label"]),
    ("regions", ["image_id", "annotator"], "coverage", ["image_id", "annotator"]),
    ("regions", ["image_id", "annotator", "parent_region_id"], "regions", ["image_id", "annotator", "region_id"]),
    ("coverage", ["image_id"], "images", ["image_id"]),
    ("relations", ["image_id", "annotator", "region_id"], "regions", ["image_id", "annotator", "region_id"]),
    ("relations", ["image_id", "annotator", "other_region_id"], "regions", ["image_id", "annotator", "region_id"]),
    ("subsets", ["image_id", "annotator", "region_id", "label"], "regions", ["image_id", "annotator", "region_id", "label"]),
    ("agreement", ["image_id", "annotator_a"], "coverage", ["image_id", "annotator"]),
    ("agreement", ["image_id", "annotator_b"], "coverage", ["image_id", "annotator"]),
    ("image_labels", ["image_id"], "images", ["image_id"]),
    ("image_labels", ["label_id", "label"], "vocabulary", ["label_id", "label"]),
    ("source_categories", ["label"], "vocabulary", ["label"]),
    ("audit_duplicates", ["image_id"], "images", ["image_id"]),
    ("audit_duplicates", ["group_id"], "images", ["image_id"]),
    ("audit_duplicates", ["nearest_image_id"], "images", ["image_id"]),
    ("audit_duplicates", ["nearest_image_id", "group_id"], "audit_duplicates", ["image_id", "group_id"]),
    ("audit_labels", ["image_id", "annotator", "region_id", "label"], "regions", ["image_id", "annotator", "region_id", "label"]),
    ("audit_labels", ["suggested_label"], "vocabulary", ["label"]),
)  # fmt: skip


def _verify_references(folder: Path, manifest: dict) -> list[str]:
    """Every key a table shares with another names a row of it (``REFERENCES``): a region's image
    and label, a relation's two regions, a subset's region with its label, an agreement's
    annotators among those who covered the image. Rows whose referring values are null refer
    to nothing (a region that is no part). One line per broken pair, with a count and an example."""
    tables = manifest.get("tables", {})
    cached: dict[tuple[str, tuple[str, ...]], pa.Table] = {}

    def read(name: str, columns: list[str]) -> pa.Table:
        key = (name, tuple(columns))
        if key not in cached:
            table = read_parquet(folder / tables[name]["path"], columns)
            cached[key] = table.drop_null()  # null referring values refer to nothing
        return cached[key]

    names = {n: set(pq.read_schema(folder / entry["path"]).names) for n, entry in tables.items()}
    problems = []
    for name, columns, other, keys in REFERENCES:
        if not set(columns) <= names.get(name, set()) or not set(keys) <= names.get(other, set()):
            continue  # a table absent, or a release made before the columns
        rows = read(name, columns)
        if other == "coverage" and "annotator" in columns:  # the derived consensus covers nothing
            rows = rows.filter(pc.not_equal(rows["annotator"], CONSENSUS))
        given = row_keys(rows, columns)
        distinct = pc.unique(given)
        missing = distinct.filter(pc.invert(pc.is_in(distinct, value_set=pc.unique(row_keys(read(other, keys), keys)))))
        if len(missing):
            first = rows.slice(pc.index(given, missing[0]).as_py(), 1).to_pylist()[0]
            example = ", ".join(f"{c}={first[c]!r}" for c in columns)
            problems.append(
                f"{tables[name]['path']}: {len(missing)} ({', '.join(columns)}) not in {other} "
                f"({', '.join(keys)}), e.g. {example}; the tables disagree (rebuild the release)"
            )
    return problems


VERSION_FOLDER = re.compile(r"v\d+\.\d+\.\d+\S*")


def _verify_identity(folder: Path, manifest: dict, document: object) -> list[str]:
    """The release says the same dataset, version and licence everywhere: its folder name (when
    it is a ``v<version>`` folder), ``croissant.json`` and the card's front matter. A manifest
    edited and sealed again otherwise passes for another release. ``document``: croissant.json
    as read (``_read_croissant``)."""
    dataset, version, licence = manifest["dataset"], manifest["version"], manifest.get("license")
    problems = []
    if VERSION_FOLDER.fullmatch(folder.name) and folder.name != f"v{version}":
        problems.append(f"manifest.json: version {version} in folder {folder.name}; a version lives in v{version}/")
    if isinstance(document, dict):
        said = {
            "version": document.get("version"),
            "name": document.get("name"),
            "license": next(iter(document.get("license") or []), None)
            if isinstance(document.get("license"), list)
            else document.get("license"),
        }
        expected = {
            "version": version,
            "name": f"regionbench-{dataset}",
            "license": f"https://spdx.org/licenses/{licence}.html",
        }
        problems += [
            f"croissant.json: {key} {said[key]!r}, manifest.json says {expected[key]!r}"
            for key in expected
            if key in document and said[key] != expected[key] and (key != "license" or is_spdx(licence))
        ]
    card = folder / "README.md"
    front = _front_matter(card.read_text(encoding="utf-8")) if card.is_file() else None
    if front is not None:
        expected = {"pretty_name": f"regionbench {dataset} v{version}"}
        if licence:  # the card names the licence as the Hub lists it (``card_licence``)
            expected |= card_licence(manifest)
        problems += [
            f"README.md: {key} {front.get(key)!r}, manifest.json says {value!r}"
            for key, value in expected.items()
            if front.get(key) != value and (key in front or key.startswith("license_"))
        ]
    return problems


def _front_matter(text: str) -> dict | None:
    """The YAML front matter of a card, or None without one (or unreadable)."""
    if not text.startswith("---\n") or "\n---" not in text[4:]:
        return None
    try:
        found = yaml.load(text[4 : text.index("\n---", 4)], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    return found if isinstance(found, dict) else None


def _through_link(folder: Path, rel: str) -> bool:
    """Whether the path ``rel`` inside ``folder``, or a folder on the way, is a symbolic link."""
    parts = Path(rel).parts
    return any((folder.joinpath(*parts[: n + 1])).is_symlink() for n in range(len(parts)))


def _read_croissant(folder: Path) -> tuple[object, list[str]]:
    """croissant.json parsed (None when it cannot be), and what makes it unreadable."""
    path = folder / "croissant.json"
    if not path.is_file():
        return None, ["croissant.json: missing"]
    try:
        return parse_json(path.read_text(encoding="utf-8")), []
    except UnicodeDecodeError as exc:
        return None, [f"croissant.json: not valid JSON ({exc})"]
    except ValueError as exc:
        return None, [f"croissant.json: {exc}"]


def _verify_croissant(folder: Path, document: object) -> list[str]:
    """The files croissant.json declares lie inside the release and have the sha256 it says."""
    if document is None:
        return []  # named by _read_croissant
    problems = []
    items = document.get("distribution", []) if isinstance(document, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        return ["croissant.json: malformed ('distribution' must be a list of objects)"]
    for item in items:
        if item.get("@type") != "cr:FileObject":
            continue
        url = item.get("contentUrl")
        if not inside_path(url):
            problems.append(f"croissant.json: contentUrl {url!r} is outside the release")
            continue
        target = folder / url
        if target.is_file() and not _through_link(folder, url) and sha256_file(target) != item.get("sha256"):
            problems.append(f"croissant.json: sha256 of {url} differs from the file")
    return problems
