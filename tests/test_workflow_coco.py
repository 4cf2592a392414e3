"""The workflow on COCO trees: a generated several-annotator collection and exports on disk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import build, file_digests, workflow_copy, write_config

from regionbench import release
from regionbench.io.coco.collection import write_collection

pytestmark = pytest.mark.workflow

COCO_TINY = (
    "dataset: coco-tiny\n"
    "synth: {profile: tiny, seed: 0, quirks: false, layout: coco, annotators: 3, disagreement: 0.3}\n"
    "classifiers: {names: [zarbi, naive, majority]}\n"
)
RELEASE = "releases/coco-tiny/v1.0.0"


@pytest.fixture(scope="module")
def coco_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = workflow_copy(tmp_path_factory.mktemp("coco") / "wf")
    done = build(project, "--configfile", str(write_config(project, COCO_TINY)))
    assert done.returncode == 0, done.stderr[-3000:]
    return project


def test_generated_coco_collection_builds_a_release(coco_build: Path) -> None:
    folder = coco_build / RELEASE
    assert release.verify(folder) == []
    report = json.loads((coco_build / "results/coco-tiny/ingest/report.json").read_text())
    assert sorted(report["annotators"]) == ["annotator-1", "annotator-2", "annotator-3"]
    for counts in [report["images"], report["regions"], *report["annotators"].values()]:
        assert counts["seen"] == counts["accepted"] + counts["rejected"]
    regions = pq.read_table(folder / "data/regions.parquet", columns=["annotator"]).column("annotator").to_pylist()
    assert {a: regions.count(a) for a in set(regions)} == {a: c["accepted"] for a, c in report["annotators"].items()}
    relations = pq.read_table(folder / "data/relations.parquet", columns=["annotator"]).column("annotator")
    assert set(relations.to_pylist()) == set(report["annotators"])  # relations per annotator


def test_coco_builds_are_byte_identical(coco_build: Path, tmp_path: Path) -> None:
    again = workflow_copy(tmp_path / "wf")
    done = build(again, "--configfile", str(write_config(again, COCO_TINY)))
    assert done.returncode == 0, done.stderr[-3000:]
    assert file_digests(again / RELEASE) == file_digests(coco_build / RELEASE)


def test_exports_on_disk_are_detected_and_ingested(tmp_path: Path) -> None:
    raw = tmp_path / "exports"
    for _ in write_collection(raw, "tiny", annotators=2, disagreement=0.2, workers=1):
        pass
    project = workflow_copy(tmp_path / "wf")
    override = write_config(
        project,
        f"dataset: exports\nraw_dir: {raw}\ningest: {{strict: true, max_image_pixels: 1000000, shard_size: 10}}\n",
    )
    done = build(project, "--configfile", str(override), "results/exports/ingest/report.json")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((project / "results/exports/ingest/report.json").read_text())
    assert report["folders"] == ["00", "01", "02"] and report["images"]["accepted"] == 24
    assert sorted(report["annotators"]) == ["annotator-1", "annotator-2"]
    shutil.rmtree(raw / "images")
    (raw / "images").mkdir()
    failed = build(project, "--configfile", str(override), "results/exports/ingest/report.json")
    assert failed.returncode != 0 and "its file is missing" in failed.stdout + failed.stderr
