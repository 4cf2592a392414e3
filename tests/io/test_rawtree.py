"""The raw tree the workflow asks its questions of, on a real tree of each layout and on a tree
about to be generated."""

from __future__ import annotations

from pathlib import Path

import pytest

from regionbench.io import layouts
from regionbench.io.rawtree import RawTree
from regionbench.pipeline import config as build_config
from regionbench.pipeline.config import ConfigError


def test_a_real_saiapr_tree(tiny_raw: Path) -> None:
    layout = build_config.raw_layout({"raw_dir": str(tiny_raw), "layout": None})
    assert layout is layouts.get("saiapr")
    tree = RawTree(str(tiny_raw), layout)
    assert not tree.generated and not tree.prepares and tree.pieces == ()
    assert tree.shards == layout.shards(tiny_raw, None) == ["00", "01"]
    assert tree.inputs() == [str(tiny_raw / "wlist.txt")]
    assert tree.state("00") != tree.state("01")
    assert tree.official("features") == [str(tiny_raw / f / "features.txt") for f in ("00", "01")]
    assert tree.official("relations") == layout.official_relations(tiny_raw)
    assert tree.listing_state == "" and not tree.several_annotators


def test_a_real_coco_tree_prepares_pieces(coco_pair: Path) -> None:
    tree = RawTree(str(coco_pair), build_config.raw_layout({"raw_dir": str(coco_pair)}), shard_size=10)
    assert tree.layout.name == "coco" and tree.prepares and tree.pieces == layouts.get("coco").pieces
    assert tree.shards == ["00", "01", "02"]  # 24 images in runs of 10
    assert len(tree.listing_state) == 64 and tree.several_annotators
    assert tree.official("features") == tree.official("relations") == []


def test_a_state_changes_with_its_shard_files_only(tmp_path: Path, tiny_raw: Path) -> None:
    import shutil

    root = Path(shutil.copytree(tiny_raw, tmp_path / "raw", symlinks=True))
    before = RawTree(str(root), layouts.get("saiapr"))
    states = {shard: before.state(shard) for shard in before.shards}
    (root / "01" / "labels.txt").write_text((root / "01" / "labels.txt").read_text() + "\n")
    after = RawTree(str(root), layouts.get("saiapr"))
    assert after.state("00") == states["00"] and after.state("01") != states["01"]


@pytest.mark.parametrize(
    ("layout", "annotators", "several"), [("saiapr", 3, False), ("coco", 3, True), ("coco", 1, False)]
)
def test_a_generated_tree_is_planned(layout: str, annotators: int, several: bool) -> None:
    """A generated tree has as many annotators as its writer makes of those asked for."""
    from regionbench import synthetic

    made = synthetic.writers()[layout].annotators(annotators)
    tree = RawTree("resources/raw/x", layouts.get(layout), planned=(300, ["00"] * 150 + ["01"] * 150), annotators=made)
    assert tree.generated and tree.inputs() == ["resources/raw/x"] and tree.state("00") == "generated"
    assert tree.shards == layouts.get(layout).planned_shards(300, ["00"] * 150 + ["01"] * 150, None)
    assert tree.several_annotators is several
    assert tree.official("features") == (["resources/raw/x"] if layout == "saiapr" else [])


def test_the_config_check_and_the_tree_detect_through_one_call(tmp_path: Path, coco_pair: Path) -> None:
    assert build_config.raw_layout({"raw_dir": None}) is None
    with pytest.raises(ConfigError, match=r"layout is saiapr but raw_dir .* holds a coco tree"):
        build_config.raw_layout({"raw_dir": str(coco_pair), "layout": "saiapr"})
    with pytest.raises(ConfigError, match="is relative"):
        build_config.raw_layout({"raw_dir": "raw"})
    with pytest.raises(ConfigError, match="holds neither"):
        build_config.raw_layout({"raw_dir": str(tmp_path)})
