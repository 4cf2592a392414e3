"""The Snakemake workflow end to end on tiny generated collections, in temporary folders."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import build, workflow_copy, write_config

pytestmark = pytest.mark.workflow


def test_generated_tiny_build(tiny_build: Path) -> None:
    project, override = tiny_build, tiny_build / "override.yaml"
    report = json.loads((project / "results/tiny/ingest/report.json").read_text())
    assert report["regions"]["accepted"] == 110 and report["regions"]["rejected"] == 0
    assert report["images"]["seen"] == report["images"]["accepted"] == 24
    regions = sum(pq.read_metadata(p).num_rows for p in (project / "results/tiny/ingest").glob("*/regions.parquet"))
    assert regions == 110
    assert (project / "logs/tiny/ingest/00.log").is_file()
    results = project / "results/tiny"
    assert sum(pq.read_metadata(p).num_rows for p in (results / "features").glob("*.parquet")) == 110
    parity = json.loads((results / "features_parity.json").read_text())
    assert parity["rows_compared"] == 110 and all(c["excess"] == 0 for c in parity["columns"].values())
    stats = pq.read_table(results / "relation_stats.parquet").to_pylist()
    pairs = sum(pq.read_metadata(p).num_rows for p in (results / "relations").glob("*.parquet"))
    assert sum(r["count"] for r in stats if r["group"] == "vertical") == pairs
    vocabulary = pq.read_table(results / "vocabulary.parquet", columns=["label", "region_count"]).to_pydict()
    assert sum(vocabulary["region_count"]) == 110
    summary = pq.read_table(results / "classifiers.parquet").to_pylist()
    assert len(summary) == 8 * 3 and all(r["soft"] >= r["e_hard"] for r in summary)
    assert (results / "classifiers.png").stat().st_size > 0 and (results / "metrics.json").is_file()
    again = build(project, "--configfile", str(override), "--dry-run")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_real_raw_dir(tmp_path: Path, tiny_raw: Path) -> None:
    project = workflow_copy(tmp_path / "wf")
    override = write_config(project, f"dataset: ext\nraw_dir: {tiny_raw}\n")
    done = build(project, "--configfile", str(override), "results/ext/ingest/report.json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (project / "resources").exists()  # nothing generated
    shards = sorted(p.name for p in (project / "results/ext/ingest").iterdir() if p.is_dir())
    assert shards == ["00", "01"]


def test_strict_build_fails_on_a_reject(tmp_path: Path, tiny_copy: Path) -> None:
    project = workflow_copy(tmp_path / "wf")
    masks = sorted((tiny_copy / "01" / "segmentation_masks").glob("*.mat"))
    masks[0].unlink()
    override = write_config(
        project, f"dataset: ext\nraw_dir: {tiny_copy}\ningest: {{strict: true, max_image_pixels: 1000000}}\n"
    )
    done = build(project, "--configfile", str(override))
    assert done.returncode != 0
    assert "has no mask file" in done.stdout + done.stderr


def test_bad_config_is_one_line(tmp_path: Path) -> None:
    project = workflow_copy(tmp_path / "wf")
    override = write_config(project, "synth: {profile: huge, seed: 0, quirks: false}\n")
    done = build(project, "--configfile", str(override))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "synth.profile" in lines[0] and "override.yaml" in lines[0]
