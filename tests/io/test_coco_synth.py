"""Synthetic several-annotator COCO collections: exact at no disagreement, drifting as it grows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import WHOLE, file_digests

from regionbench import cli
from regionbench.core import geometry
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.pipeline.vocabulary import DEFAULT_DIR, Registry
from regionbench.synthetic.coco import write_collection

WORDS = {label: i for i, label, _ in Registry.read(DEFAULT_DIR / "label_ids.tsv").rows}


def generate(out: Path, disagreement: float, annotators: int = 3) -> Path:
    for _ in write_collection(out, "tiny", seed=0, annotators=annotators, disagreement=disagreement, workers=1):
        pass
    return out


def label_maps(path: Path) -> dict[str, np.ndarray]:
    """file name -> pixel label map (category id, later annotations on top, 0 unlabelled)."""
    data = json.loads(path.read_text())
    images = {im["id"]: im for im in data["images"]}
    maps = {im["file_name"]: np.zeros((im["height"], im["width"]), dtype=np.int32) for im in images.values()}
    for ann in data["annotations"]:
        im = images[ann["image_id"]]
        seg = ann["segmentation"]
        counts = seg["counts"]
        if isinstance(counts, list):
            flat = np.repeat(np.arange(len(counts)) % 2, counts).astype(bool)
            mask = flat.reshape((im["width"], im["height"])).T
        else:
            mask = geometry.decode_rle(counts, im["height"], im["width"])
        maps[im["file_name"]][mask] = ann["category_id"]
    return maps


def pixel_agreement(root: Path) -> float:
    """Mean share of pixels where an annotator's label map equals the truth's."""
    truth = label_maps(root / "truth.json")
    shares = []
    for path in sorted((root / "annotations").glob("*.json")):
        mine = label_maps(path)
        shares += [float((mine[name] == truth[name]).mean()) for name in truth]
    return float(np.mean(shares))


@pytest.fixture(scope="module")
def levels(tmp_path_factory: pytest.TempPathFactory) -> dict[float, Path]:
    return {d: generate(tmp_path_factory.mktemp(f"coco{d}") / "raw", d) for d in (0.0, 0.3, 0.7)}


def test_without_disagreement_every_annotator_traces_the_truth(levels: dict[float, Path]) -> None:
    root = levels[0.0]
    truth = json.loads((root / "truth.json").read_text())
    for path in sorted((root / "annotations").glob("*.json")):
        mine = json.loads(path.read_text())
        assert [a["category_id"] for a in mine["annotations"]] == [a["category_id"] for a in truth["annotations"]]
    assert pixel_agreement(root) == 1.0


def test_agreement_falls_as_disagreement_grows(levels: dict[float, Path]) -> None:
    shares = [pixel_agreement(levels[d]) for d in (0.0, 0.3, 0.7)]
    assert shares[0] > shares[1] > shares[2], shares


def test_labels_drift_along_the_hierarchy(levels: dict[float, Path]) -> None:
    truth = {
        label_id
        for a in json.loads((levels[0.7] / "truth.json").read_text())["annotations"]
        for label_id in [a["category_id"]]
    }
    used = {
        a["category_id"]
        for p in (levels[0.7] / "annotations").glob("*.json")
        for a in json.loads(p.read_text())["annotations"]
    }
    assert used - truth  # some readings chose a neighbouring label


def test_collections_ingest_whole_and_are_deterministic(levels: dict[float, Path], tmp_path: Path) -> None:
    shard = ingest_shard(levels[0.3], "00", WORDS, settings=IngestSettings(shard_size=WHOLE))
    assert shard.rejects.num_rows == 0 and shard.images.num_rows == 24
    assert sorted(shard.report["annotators"]) == ["annotator-1", "annotator-2", "annotator-3"]
    assert file_digests(generate(tmp_path / "again", 0.3)) == file_digests(levels[0.3])


def test_synth_command_writes_coco(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    code = cli.main(
        ["synth", "--profile", "tiny", "--layout", "coco", "--annotators", "2", "--out", str(out), "--workers", "1"]
    )
    assert code == 0 and "annotations/annotator-2.json" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "annotations").iterdir()) == ["annotator-1.json", "annotator-2.json"]
