"""A new raw layout is one file in regionbench/io/: the tiny label-map layout of
tests/layouts/labelmap.py, dropped beside the others, is found and ingested
(tests/workflow/test_workflow_new_layout.py builds a release from it)."""

import shutil
import sys
from pathlib import Path

import pytest
from layouts.tree import IMAGES, LABELS, LAYOUT_FILE, write_tree

import regionbench.io
from regionbench.io import layouts
from regionbench.pipeline import ingest
from regionbench.pipeline.vocabulary import Registry


@pytest.fixture
def with_labelmap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layout file in a folder that regionbench.io searches too, as if copied into it."""
    extra = tmp_path / "io-extra"
    extra.mkdir()
    shutil.copy(LAYOUT_FILE, extra / "labelmap.py")
    monkeypatch.setattr(regionbench.io, "__path__", [*regionbench.io.__path__, str(extra)])
    layouts.registry.cache_clear()
    yield
    layouts.registry.cache_clear()
    sys.modules.pop("regionbench.io.labelmap", None)


def test_a_layout_file_is_found_detected_and_ingested(tmp_path: Path, with_labelmap: None) -> None:
    root = write_tree(tmp_path / "raw")
    assert set(layouts.registry()) == {"coco", "saiapr", "labelmap"}
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
