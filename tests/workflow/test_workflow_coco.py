"""The workflow on COCO trees: a generated several-annotator collection and exports on disk."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import farm
import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import COCO_RELEASE, COCO_TINY, build, build_command, file_digests, workflow_copy, write_config

import regionbench
import regionbench.core.hierarchy
import regionbench.pipeline.vocabulary
from regionbench import release
from regionbench.core import features, geometry, tables
from regionbench.io import imageclef
from regionbench.io.saiapr import export_release
from regionbench.pipeline.consensus import ConsensusSettings
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.release import loader
from regionbench.scoring import tasks
from regionbench.synthetic.coco import write_collection

RELEASE = COCO_RELEASE


def test_generated_coco_collection_builds_a_release(coco_build: Path) -> None:
    folder = coco_build / RELEASE
    assert release.verify(folder) == []
    report = json.loads((coco_build / "results/coco-tiny/ingest/report.json").read_text())
    assert sorted(report["annotators"]) == ["annotator-1", "annotator-2", "annotator-3", "consensus"]
    for counts in [report["images"], report["regions"], *report["annotators"].values()]:
        assert counts["seen"] == counts["accepted"] + counts["rejected"]
    regions = pq.read_table(folder / "data/regions.parquet", columns=["annotator"]).column("annotator").to_pylist()
    assert {a: regions.count(a) for a in set(regions)} == {a: c["accepted"] for a, c in report["annotators"].items()}
    relations = pq.read_table(folder / "data/relations.parquet", columns=["annotator"]).column("annotator")
    assert set(relations.to_pylist()) == set(report["annotators"])  # relations per annotator


def test_the_card_reports_agreement_with_its_figure(coco_build: Path) -> None:
    folder = coco_build / RELEASE
    summary = json.loads((folder / "results/agreement.json").read_text())
    assert summary["labelled"] and summary["per_label"] and len(summary["worst_images"]) == 10
    pairs = pq.read_table(folder / "data/agreement.parquet").to_pylist()
    assert summary["label_free"]["pri"] == pytest.approx(np.mean([r["rand_index"] for r in pairs]))
    card = (folder / "README.md").read_text()
    assert "![Agreement per label and the images agreed on least](results/agreement.png)" in card
    first = summary["per_label"][0]
    assert f"| {first['label']} | {first['regions']} | {first['specific_agreement']:.4f} |" in card
    assert f"| {summary['worst_images'][0]['image_id']} |" in card
    manifest = json.loads((folder / "manifest.json").read_text())
    assert {"results/agreement.png", "results/agreement.svg"} <= set(manifest["files"])


def test_subsets_use_the_consensus_split_by_image(coco_build: Path) -> None:
    folder = coco_build / RELEASE
    subsets = pq.read_table(folder / "data/subsets.parquet").to_pylist()
    assert {r["annotator"] for r in subsets} == {"consensus"}
    sides: dict[int, set[str]] = {}
    for r in subsets:
        sides.setdefault(r["image_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in sides.values())  # no image on both sides
    report = json.loads((coco_build / "results/coco-tiny/ingest/report.json").read_text())
    counts = report["annotators"]["consensus"]
    assert counts["accepted"] > 0 and counts["seen"] == counts["accepted"] + counts["rejected"]


def test_consensus_features_are_those_of_its_masks(coco_build: Path) -> None:
    folder = coco_build / RELEASE
    images = {r["image_id"]: r for r in pq.read_table(folder / "data/images.parquet").to_pylist()}
    regions = [r for r in pq.read_table(folder / "data/regions.parquet").to_pylist() if r["annotator"] == "consensus"]
    image_id = regions[0]["image_id"]
    mine = [r for r in regions if r["image_id"] == image_id]
    image = images[image_id]
    pixels = features.decode_image(coco_build / "resources/raw/coco-tiny" / image["path"])
    masks = [geometry.from_rle(r["mask"]) for r in mine]
    expected = features.image_features(pixels, masks)
    got = np.array([[r[name] for name in tables.FEATURE_NAMES] for r in mine])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


def test_interrupted_build_resumes_to_the_same_bytes(coco_build: Path, tmp_path: Path) -> None:
    """Killed midway and run again, a COCO build ends on the bytes of one never interrupted."""
    project = workflow_copy(tmp_path / "wf")
    config = farm.configfiles("coco-tiny", project)  # the farm's build, files as it has them
    # SIGKILL the whole build (regionbench, Snakemake and the running jobs) once a job downstream
    # of the first shard's ingest has written its output (so that ingest job has finished):
    # nothing gets to clean up, as when a machine or a session is lost.
    running = subprocess.Popen(
        build_command(project, *config),
        cwd=project,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    first_shard = project / "results/coco-tiny/agreement/00.parquet"
    deadline = time.monotonic() + 600
    while not first_shard.exists() and running.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running.poll() is None, "the build ended before it could be interrupted"
    os.killpg(running.pid, signal.SIGKILL)
    running.wait()
    assert not (project / RELEASE / "manifest.json").exists()
    ingested = (project / "results/coco-tiny/ingest/00/regions.parquet").stat().st_mtime_ns

    resumed = build(project, *config)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    # Resumed, not restarted: finished stages are kept ...
    assert (project / "results/coco-tiny/ingest/00/regions.parquet").stat().st_mtime_ns == ingested
    # ... and the release is the uninterrupted build's, byte for byte.
    assert file_digests(project / RELEASE) == file_digests(coco_build / RELEASE)


def test_exports_on_disk_are_detected_and_ingested(tmp_path: Path) -> None:
    raw = tmp_path / "exports"
    for _ in write_collection(raw, "tiny", annotators=2, disagreement=0.2, workers=1):
        pass
    project = workflow_copy(tmp_path / "wf")
    override = write_config(
        project,
        f"dataset: exports\nraw_dir: {raw}\nvocabulary_dir: {regionbench.pipeline.vocabulary.DEFAULT_DIR}\n"
        "agreement: {consensus: staple}\n"
        "ingest: {strict: true, max_image_pixels: 1000000, shard_size: 10}\n",
    )
    done = build(project, "results/exports/ingest/report.json", "--configfile", str(override))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((project / "results/exports/ingest/report.json").read_text())
    assert report["folders"] == ["00", "01", "02"] and report["images"]["accepted"] == 24
    assert sorted(report["annotators"]) == ["annotator-1", "annotator-2", "consensus"]
    built = tables.read_parquet(project / "results/exports/ingest/00/regions.parquet").to_pylist()
    vocabulary_dir = Path(regionbench.pipeline.vocabulary.DEFAULT_DIR)  # the vocabulary the collection is drawn from
    words = regionbench.pipeline.vocabulary.Registry.read(vocabulary_dir / "label_ids.tsv").ids()
    tree = regionbench.core.hierarchy.Hierarchy.from_yaml(vocabulary_dir / "hierarchy.yaml")

    def consensus_masks(method: str) -> list[str]:
        shard = ingest_shard(
            raw,
            "00",
            words,
            hierarchy=tree,
            settings=IngestSettings(shard_size=10),
            agreement=ConsensusSettings(method=method),
        )
        return [r["mask"] for r in shard.regions.to_pylist() if r["annotator"] == "consensus"]

    assert [r["mask"] for r in built if r["annotator"] == "consensus"] == consensus_masks("staple")
    assert consensus_masks("staple") != consensus_masks("majority")  # the option reaches the masks

    # Each file is read once, by prepare; an edit to one annotation reruns prepare and the one
    # shard whose pieces changed; a no-op rerun plans nothing.
    target = ("results/exports/ingest/report.json", "--configfile", str(override))
    planned = build(project, *target, "--dry-run")
    assert "Nothing to be done" in planned.stdout + planned.stderr
    shards = {s: project / f"results/exports/ingest/{s}/regions.parquet" for s in ("00", "01", "02")}
    before = {s: path.stat().st_mtime_ns for s, path in shards.items()}
    path = raw / "annotations" / "annotator-2.json"
    data = json.loads(path.read_text())
    last = max(data["images"], key=lambda im: im["file_name"])  # in shard 02
    next(a for a in data["annotations"] if a["image_id"] == last["id"])["iscrowd"] = 1
    path.write_text(json.dumps(data))
    again = build(project, *target)
    assert again.returncode == 0, again.stderr[-3000:]
    assert [s for s, path in shards.items() if path.stat().st_mtime_ns != before[s]] == ["02"], again.stderr
    shutil.rmtree(raw / "images")
    (raw / "images").mkdir()
    failed = build(project, "results/exports/ingest/report.json", "--configfile", str(override))
    assert failed.returncode != 0 and "its file is missing" in failed.stdout + failed.stderr


def test_clients_choose_the_annotator(coco_build: Path, tmp_path: Path) -> None:
    folder = coco_build / RELEASE
    data = regionbench.load(folder)
    assert data.reference_annotator == "consensus"
    assert data.annotators() == ["annotator-1", "annotator-2", "annotator-3", "consensus"]
    first = data.regions_of("annotator-1")
    assert set(first["annotator"]) == {"annotator-1"} and len(data.regions_of()) < len(data.regions)
    row = first.iloc[0]
    assert data.mask(int(row.image_id), int(row.region_id), "annotator-1").sum() == row.area_px
    tree = tasks.release_hierarchy(data)
    subsets = data.subsets[(data.subsets.subset == "H") & (data.subsets.split == "test")]
    subsets[["image_id", "region_id", "label"]].to_csv(tmp_path / "consensus.csv", index=False)
    report = tasks.evaluate(data, tmp_path / "consensus.csv", "region", tree)
    assert report["measures"]["any"]["e_hard"] == 1.0
    test_images = set(subsets.image_id)
    theirs = first[first.image_id.isin(test_images) & first.label.isin(set(data.subsets.label))]
    theirs[["image_id", "annotator", "region_id", "label"]].to_csv(tmp_path / "a1.csv", index=False)
    report = tasks.evaluate(data, tmp_path / "a1.csv", "region", tree, annotator="annotator-1")
    assert report["measures"]["any"]["e_hard"] == 1.0 and report["regions"] == len(theirs)
    counts = export_release(loader.load(folder), tmp_path / "saiapr", annotator="consensus")
    assert counts["regions"] == len(data.regions_of("consensus"))
    with pytest.raises(ValueError, match="no regions by 'saiapr'"):
        export_release(loader.load(folder), tmp_path / "other")


def test_imageclef_files_of_a_release_round_trip(coco_build: Path, tmp_path: Path) -> None:
    folder = coco_build / RELEASE
    counts = imageclef.export_release(loader.load(folder), tmp_path / "clef")
    judgments, concepts, images = imageclef.read_files(tmp_path / "clef")
    regions = pq.read_table(folder / "data/regions.parquet", columns=["image_id", "annotator", "label"]).to_pylist()
    expected: dict = {}
    for r in regions:
        if r["annotator"] != "consensus":
            expected.setdefault(r["annotator"], {}).setdefault(str(r["image_id"]), set()).add(r["label"])
    assert {a: {i: s for i, s in m.items() if s} for a, m in judgments.items()} == expected
    assert counts == {"concepts": len(concepts), "images": len(images), "annotators": 3}


def test_imageclef_files_are_an_image_level_source_of_a_build(coco_build: Path, tmp_path: Path) -> None:
    """Export a release's image-level labels, put them in the raw tree, build again: the new
    release's image_labels are every annotator's labels of the first; a concept outside the
    vocabulary is rejected with its reason, and nothing is lost."""
    first = coco_build / RELEASE
    raw = tmp_path / "raw"
    shutil.copytree(coco_build / "resources/raw/coco-tiny", raw)
    imageclef.export_release(loader.load(first), raw / "imageclef")
    clef = raw / "imageclef"
    (clef / "concepts.txt").write_text((clef / "concepts.txt").read_text() + "unicorn\n")
    images = (clef / "concepts/raw/sky.txt").read_text().splitlines()
    (clef / "concepts/raw/unicorn.txt").write_text("".join(f"{line.split()[0]} 1 0 0\n" for line in images))
    (clef / "concepts/clean/unicorn.txt").write_text("")
    for line in images:
        path = clef / "annotations/raw" / f"{line.split()[0]}.txt"
        path.write_text(path.read_text() + "unicorn 0.333333\n")
    project = workflow_copy(tmp_path / "wf")
    settings = (
        COCO_TINY.replace("{names: [naive]}", "{enabled: false}") + f"raw_dir: {raw}\njobs: {{in_process: true}}\n"
    )
    config = write_config(project, settings)
    done = build(project, "--configfile", str(config))
    assert done.returncode == 0, done.stderr[-3000:]
    data = regionbench.load(project / RELEASE)
    got = {(r.image_id, r.annotator, r.label) for r in data.table("image_labels").itertuples()}
    expected = {(r.image_id, r.annotator, r.label) for r in regionbench.load(first).regions.itertuples()}
    assert got == {e for e in expected if e[1] != "consensus"}
    rejects = data.rejects[data.rejects.item == "image_label"]
    assert len(rejects) == len(images) and set(rejects.source) == {"imageclef/concepts/raw/unicorn.txt"}
    assert set(rejects.reason) == {
        "concept 'unicorn' is not a vocabulary label; add it to the vocabulary or drop its files"
    }
    report = json.loads((project / RELEASE / "results/image_labels.json").read_text())
    counts = report["annotators"]["annotator-1"]
    assert counts["seen"] == counts["accepted"] + counts["rejected"] and counts["rejected"] == len(images)
    assert release.verify(project / RELEASE) == []
