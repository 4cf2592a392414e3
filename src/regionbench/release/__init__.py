"""Versioned, verifiable releases: write, verify and diff ``releases/<dataset>/v<X.Y.Z>/``.

A release folder holds ``data/<table>.parquet`` (the tables of ``TABLES``), ``results/`` (stage
reports and figures), ``schemas/`` (the JSON Schema of every table), ``croissant.json``,
``README.md`` (the dataset card) and ``manifest.json`` (docs/releases.md).

Modules, each importing only those above it:

- ``manifest``: ``ReleaseError``, file digests, provenance and the manifest's seal;
- ``schemas``: the table schemas and the checks against them;
- ``geoparquet``: metadata of the regions' geometry column;
- ``records``: records, row digests and content hashes, over tables given whole or in parts;
- ``versions``: semantic versions, record diffs, the bump rule;
- ``huggingface``, ``card`` and ``croissant``: the split files, the dataset card (and the
  original benchmark's citation), the Croissant document (mlcroissant, imported when written);
- ``writer``: assembling and writing a release; ``verify``: checking one; ``summary``: what a
  build made, in a few lines.
"""

from regionbench.release.manifest import (
    FORMAT,
    DamagedAssembly,
    Provenance,
    ReleaseError,
    canonical_digest,
    config_hash,
    file_digests,
    fingerprint_tree,
    read_manifest,
    sha256_file,
)
from regionbench.release.records import (
    Part,
    TableScan,
    as_parts,
    content_hash,
    file_parts,
    records,
    release_parts,
    scan,
    scan_tables,
)
from regionbench.release.schemas import SCHEMA_DIR, TABLES, TableSchema, conform, load_schemas, validate_table
from regionbench.release.summary import summary
from regionbench.release.verify import expect_problem, verify
from regionbench.release.versions import (
    BUMPS,
    Diff,
    TableDiff,
    bump_of,
    check_bump,
    diff_releases,
    diff_tables,
    parse_version,
    release_folders,
    table_diff,
)
from regionbench.release.writer import assemble, publish, read_tables, region_splits, regions_table, write_release

__all__ = [
    "BUMPS",
    "FORMAT",
    "SCHEMA_DIR",
    "TABLES",
    "DamagedAssembly",
    "Diff",
    "Part",
    "Provenance",
    "ReleaseError",
    "TableDiff",
    "TableScan",
    "TableSchema",
    "as_parts",
    "assemble",
    "bump_of",
    "canonical_digest",
    "check_bump",
    "config_hash",
    "conform",
    "content_hash",
    "diff_releases",
    "diff_tables",
    "expect_problem",
    "file_digests",
    "file_parts",
    "fingerprint_tree",
    "load_schemas",
    "parse_version",
    "publish",
    "read_manifest",
    "read_tables",
    "records",
    "region_splits",
    "regions_table",
    "release_folders",
    "release_parts",
    "scan",
    "scan_tables",
    "sha256_file",
    "summary",
    "table_diff",
    "validate_table",
    "verify",
    "write_release",
]
