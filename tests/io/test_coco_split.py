"""A COCO tree split into shard pieces: planned from the listing alone, each file read once,
pieces rewritten only when they change, and the shards' tables whatever the buffering."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import WHOLE
from hypothesis import given
from hypothesis import strategies as st

from regionbench.io.coco import split
from regionbench.io.coco.ingest import check_sources
from regionbench.pipeline.ingest import IngestSettings, ingest_shard

NAMES = st.text(alphabet="abc0123456789._/", min_size=1, max_size=6)


@given(st.lists(NAMES, unique=True, max_size=40), st.lists(NAMES, max_size=10), st.integers(1, 7))
def test_every_name_falls_in_one_shard_by_its_rank(on_disk: list[str], listed: list[str], size: int) -> None:
    """A file on disk is in the run its rank gives; any other name in the run its sort position
    falls in; the shards are monotone in the names, and there is always at least one."""
    plan = split.Plan(sorted(on_disk), size)
    assert plan.count == max(1, -(-len(on_disk) // size))
    for k in range(plan.count):
        assert all(plan.shard_of(name) == k for name in plan.run(k))
    names = sorted(set(on_disk) | set(listed))
    shards = [plan.shard_of(name) for name in names]
    assert shards == sorted(shards) and all(0 <= s < plan.count for s in shards)


def tables_of(root: Path, shards: int, **where: object) -> list[dict]:
    """Every shard's tables (as Python rows) and report."""
    found = []
    for k in range(shards):
        shard = ingest_shard(root, f"{k:02d}", settings=IngestSettings(shard_size=10), **where)
        found.append({n: getattr(shard, n).to_pylist() for n in ("images", "regions", "rejects")} | shard.report)
    return found


def test_the_shards_read_from_pieces_are_those_read_alone(
    coco_pair: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read from the pieces of one split, written in parts of any size (here one annotation a
    part), every shard has the tables it has when it splits the tree itself."""
    from regionbench.pipeline.vocabulary import DEFAULT_DIR, Registry

    words = Registry.read(DEFAULT_DIR / "label_ids.tsv").ids()
    alone = tables_of(coco_pair, 3, words=words)
    monkeypatch.setattr(split, "BUFFER_CHARS", 1)
    index = split.split(coco_pair, check_sources(coco_pair), tmp_path / "pieces", 10)
    assert sorted(index["pieces"]) == ["00", "01", "02"] and index["annotators"] == ["annotator-1", "annotator-2"]
    assert tables_of(coco_pair, 3, words=words, pieces=tmp_path / "pieces") == alone
    assert sum(r["images"]["accepted"] for r in alone) == 24


def test_a_changed_annotation_rewrites_only_its_shard_s_pieces(coco_pair: Path, tmp_path: Path) -> None:
    root = Path(shutil.copytree(coco_pair, tmp_path / "raw"))
    out = tmp_path / "pieces"
    split.split(root, check_sources(root), out, 10)
    before = {p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in out.rglob("*.*") if p.name != "index.json"}
    path = root / "annotations" / "annotator-2.json"
    data = json.loads(path.read_text())
    last_image = max(data["images"], key=lambda im: im["file_name"])  # in the last shard
    changed = next(a for a in data["annotations"] if a["image_id"] == last_image["id"])
    changed["iscrowd"] = 1
    path.write_text(json.dumps(data))
    split.split(root, check_sources(root), out, 10)
    after = {p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in out.rglob("*.*") if p.name != "index.json"}
    assert sorted(k for k in after if after[k] != before[k]) == ["02/annotations.parquet"]
    # Fewer shards: the pieces of those that no longer exist are removed.
    split.split(root, check_sources(root), out, WHOLE)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["00"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"images": [], "annotations": [{"segmentation": [[NaN, 1, 2, 3, 4, 5]]}]}', "NaN and Infinity are not JSON"),
        ('{"images": [], "annotations": 7}', "needs the lists images, annotations and categories"),
        ('{"images": []}', "needs the lists images, annotations and categories"),
        ("[1, 2]", "needs the lists images, annotations and categories"),
        ('{"images": [], "annotations": [', "not valid JSON"),
    ],
)
def test_a_file_that_is_not_coco_instances_is_one_line(tmp_path: Path, text: str, expected: str) -> None:
    from regionbench.io.shards import IngestError

    (tmp_path / "images").mkdir()
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "a.json").write_text(text)
    with pytest.raises(IngestError) as caught:
        split.split(tmp_path, check_sources(tmp_path), tmp_path / "pieces", None)
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "annotations" / "a.json"))
