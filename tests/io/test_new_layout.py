"""A new raw layout is one file in regionbench/io/: the tiny label-map layout of
tests/layouts/labelmap.py, dropped beside the others, is found and ingested
(tests/workflow/test_workflow_new_layout.py builds a release from it)."""

from collections.abc import Callable
from pathlib import Path

from layouts.tree import IMAGES, LABELS, LAYOUT_FILE, write_tree

import regionbench.io
from regionbench.io import layouts
from regionbench.pipeline import ingest
from regionbench.pipeline.vocabulary import Registry


def test_a_layout_file_is_found_detected_and_ingested(tmp_path: Path, drop_in_layout: Callable[[Path], None]) -> None:
    before = set(layouts.registry())
    drop_in_layout(LAYOUT_FILE)
    root = write_tree(tmp_path / "raw")
    assert set(layouts.registry()) - before == {"labelmap"}
    assert layouts.detect(root).name == "labelmap"
    words = Registry.read(Path(regionbench.pipeline.vocabulary.DEFAULT_DIR) / "label_ids.tsv").ids()
    shard = ingest.ingest_shard(root, "00", words)
    assert shard.images.num_rows == IMAGES
    assert (
        shard.regions.num_rows == shard.features.num_rows == IMAGES * 2 + sum(1 for k in range(1, IMAGES + 1) if k % 3)
    )
    assert set(shard.regions.column("label").to_pylist()) == set(LABELS.values())
    assert shard.relations.num_rows > 0 and shard.rejects.num_rows == 0
    assert ingest.merge_reports([shard.report])["regions"]["accepted"] == shard.regions.num_rows
