"""The raw tree the workflow asks its questions of, on a real tree of each layout and on a tree
about to be generated."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench.io import layouts
from regionbench.io.rawtree import RawTree
from regionbench.io.shards import IngestError
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


MARKERS = {
    "images/": None, "annotations/a.json": "{}", "annotations/train/a.png": "", "groundTruth/": None,
    "wlist.txt": "", "JPEGImages/": None, "SegmentationClass/": None, "leftImg8bit/": None, "gtFine/": None,
    "images/ADE/": None,
}  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=st.sets(st.sampled_from(sorted(MARKERS))))
def test_detection_is_one_rule_and_a_tree_of_two_layouts_is_one_line(tmp_path_factory, chosen: set[str]) -> None:
    """Whatever a tree holds: the one layout that recognises it, or one line, saying what each
    layout expects (none), or which two recognise it and that ``layout`` decides (several)."""
    root = tmp_path_factory.mktemp("tree")
    for marker in sorted(chosen):
        path = root / marker
        if MARKERS[marker] is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(MARKERS[marker])
    found = [layout.name for layout in layouts.registry().values() if layout.detect(root)]
    if len(found) == 1:
        assert layouts.detect(root).name == found[0]
        return
    with pytest.raises(IngestError) as refused:
        layouts.detect(root)
    text = str(refused.value)
    assert "\n" not in text
    if found:
        assert f"holds both {' and '.join(f'a {n} tree' for n in found)}; set layout to one of" in text
        assert layouts.detect(root, found[1]).name == found[1]  # the config's layout decides
    else:
        assert "holds neither a " in text
