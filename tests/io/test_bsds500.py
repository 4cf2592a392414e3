"""BSDS500 as distributed enters as it is: each human an annotator, each segment a region."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.io
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.io import layouts
from regionbench.io.bsds500 import humans_of
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.synthetic import bsds500 as bsds

TREE = Hierarchy("entity", {"entity": Node("entity", None), "segment": Node("segment", "entity")})


def test_every_human_segment_is_a_region(tmp_path: Path) -> None:
    root = bsds.write_tree(tmp_path, {"train": [2018, 3063], "val": [5096]})
    layout = layouts.detect(root)
    assert layout.name == "bsds500" and layout.shards(root, 2) == ["00", "01"]  # runs of two images
    assert layout.annotators(root) == ["human-1", "human-2", "human-3"]
    shard = ingest_shard(root, "00", {"segment": 7}, TREE, layout="bsds500", settings=IngestSettings(shard_size=2))
    assert shard.images["split"].to_pylist() == ["train", "train"]
    regions = shard.regions.to_pylist()
    expected = 0
    for image_id in (2018, 3063):
        people = humans_of(root / "data" / "groundTruth" / "train" / f"{image_id}.mat")
        expected += sum(len(np.unique(p)) for p in people)
        mine = [r for r in regions if r["image_id"] == image_id and r["annotator"] != "consensus"]
        assert len(mine) == sum(len(np.unique(p)) for p in people)
        covered = [r["annotator"] for r in shard.coverage.to_pylist() if r["image_id"] == image_id]
        assert covered == [f"human-{k}" for k in range(1, len(people) + 1)]
    assert {r["label"] for r in regions} == {"segment"} and {r["label_id"] for r in regions} == {7}
    report = shard.report
    assert report["images"] == {"seen": 2, "accepted": 2, "rejected": 0}
    assert sum(v["accepted"] for a, v in report["annotators"].items() if a != "consensus") == expected


def test_an_image_without_usable_ground_truth_is_a_reject(tmp_path: Path) -> None:
    root = bsds.write_tree(tmp_path, {"train": [1, 2, 3]})
    truth = root / "data" / "groundTruth" / "train"
    (truth / "1.mat").unlink()
    scipy.io.savemat(truth / "2.mat", {"other": np.zeros((2, 2))})
    (root / "data/images/train/3.jpg").rename(root / "data/images/train/4.jpg")  # 3.mat without its image
    shard = ingest_shard(root, "00", {"segment": 1}, TREE, layout="bsds500", settings=IngestSettings(shard_size=10))
    reasons = dict(zip(shard.rejects["key"].to_pylist(), shard.rejects["reason"].to_pylist(), strict=True))
    assert reasons == {
        "1.jpg": "no ground truth data/groundTruth/train/1.mat",
        "2.jpg": "2.mat: no cell 'groundTruth' (found other)",
        "3.jpg": "ground truth without its image: data/images/train/3.jpg is missing",
        "4.jpg": "no ground truth data/groundTruth/train/4.mat",
    }
    assert shard.report["images"] == {"seen": 4, "accepted": 0, "rejected": 4}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 0.95), garbage=st.binary(max_size=64), how=st.sampled_from(["truncate", "garble", "empty"]))
def test_an_unreadable_mat_is_named_not_its_image(
    tmp_path_factory: pytest.TempPathFactory, cut: float, garbage: bytes, how: str
) -> None:
    """A damaged ground-truth file (cut short, bytes overwritten, empty) is a reject that names
    the .mat to fix, its path the reject's source; the image itself is fine."""
    root = bsds.write_tree(tmp_path_factory.mktemp("bsds"), {"train": [7]})
    mat = root / "data" / "groundTruth" / "train" / "7.mat"
    content = mat.read_bytes()
    if how == "truncate":
        content = content[: int(len(content) * cut)]
    elif how == "garble":
        at = int(len(content) * cut)
        content = content[:at] + garbage + content[at + len(garbage) :]
    else:
        content = b""
    mat.write_bytes(content)
    shard = ingest_shard(root, "00", {"segment": 1}, TREE, layout="bsds500", settings=IngestSettings(shard_size=10))
    report = shard.report
    assert report["images"]["seen"] == report["images"]["accepted"] + report["images"]["rejected"] == 1
    for row in shard.rejects.to_pylist():
        assert row["source"] == "data/groundTruth/train/7.mat" and row["reason"].startswith("7.mat: "), row
