"""What the ingest of every raw layout returns for one shard, and how it fails."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


class IngestError(ValueError):
    """Input that stops a strict (or impossible) ingest; one line per problem."""


@dataclass
class Shard:
    """One shard's accepted images and regions, its rejects, and a report that counts both sides."""

    images: pa.Table
    regions: pa.Table
    rejects: pa.Table
    report: dict
