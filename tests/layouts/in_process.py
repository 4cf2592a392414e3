"""A raw tree's release tables made in-process, as the build's ingest stage makes them: what a
layout's read and export are checked against without a Snakemake build (a build per workflow
behaviour, not per layout: docs/contributing.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from regionbench.io import layouts
from regionbench.pipeline import source, vocabulary
from regionbench.pipeline.ingest import IngestSettings, ingest_shard

WHOLE = IngestSettings(shard_size=100_000)  # a test tree is one shard


class Released:
    """What an export reads of a release (``io.layouts.ReleaseTables``), made of the ingest
    stage's tables of a tree, the vocabulary its layout derives and the source's own files."""

    def __init__(self, root: Path, manifest: dict[str, Any], found: dict[str, pa.Table]) -> None:
        self.folder, self.manifest, self.found = root, manifest, found

    def arrow(self, name: str, columns: list[str] | None = None) -> pa.Table:
        table = self.found[name]
        return table.select(columns) if columns else table

    def image_sources(self, ids: list[int], root: str | Path | None = None) -> dict[int, Path | bytes]:
        paths = dict(zip(*self.found["images"].select(["image_id", "path"]).to_pydict().values(), strict=True))
        assert root is not None, "the tests name the raw tree"
        return {i: Path(root) / paths[i] for i in ids}


def released(root: Path, layout: str, words: dict[str, int] | None = None) -> Released:
    """The tables of the tree at ``root`` read as ``layout``: images, regions, coverage and
    rejects of one shard (``WHOLE``), the vocabulary (``words``, else the layout's own ids, else
    its labels numbered in name order) and source categories, and a manifest naming them with the
    ``source_files``."""
    kind = layouts.get(layout)
    if words is None and isinstance(kind, layouts.NamesCategories):
        (out := root.parent / f"{root.name}-vocabulary").mkdir(exist_ok=True)
        tree = kind.write_vocabulary(root, out)
        words = tree.ids or {label: k for k, label in enumerate(sorted(tree.labels), 1)}
    words = words or {}
    shard = ingest_shard(root, "00", words, layout=layout, settings=WHOLE)
    found = {name: getattr(shard, name) for name in ("images", "regions", "coverage", "rejects")}
    found["vocabulary"] = pa.table(
        {"label_id": list(words.values()), "label": list(words), "parent": [None] * len(words)},
        pa.schema([("label_id", pa.int64()), ("label", pa.string()), ("parent", pa.string())]),
    )
    found["source_categories"] = vocabulary.source_categories(layout, root, words, {})
    manifest = {
        "layout": layout,
        "tables": {name: {} for name in found},
        "source_files": source.files(layout, root, False),
    }
    manifest = json.loads(json.dumps(manifest))  # as a release's manifest.json holds it
    return Released(root, manifest, found)
