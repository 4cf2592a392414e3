"""SA-Co's own files built as a release (the ``saco`` layout): every pair kept under its own id or
rejected with its reason, the files written back as they came (``export --format saco``), and a
run naming SA-Co's pair ids scored by ``evaluate --task concepts`` as SAM 3's evaluator scores it
on the files themselves."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from farm import Built
from pycocotools import mask as coco_mask
from test_concept_f1 import NAMES, reference
from test_concepts_export import exported, run_from

from regionbench.io import layouts
from regionbench.release import loader
from regionbench.scoring import concept_files as concepts


def raw_files(built: Built) -> list[Path]:
    return sorted((built.raw / "annotations").glob("gold_*.json"))


def masks_by_pair(document: dict) -> dict[int, list[str]]:
    """Each pair's instances as the sha256 of their decoded masks (any RLE form), sorted."""
    out: dict[int, list[str]] = defaultdict(list)
    for a in document["annotations"]:
        rle = a["segmentation"]
        if isinstance(rle["counts"], list):
            rle = coco_mask.frPyObjects(rle, *rle["size"])
        out[a["image_id"]].append(hashlib.sha256(coco_mask.decode(rle).tobytes()).hexdigest())
    return {pair: sorted(found) for pair, found in out.items()}


def test_sa_co_s_files_build_and_are_written_back_as_they_came(release: Callable[[str], Built], tmp_path: Path) -> None:
    built = release("saco")
    data = loader.load(built.folder)
    assert data.manifest["layout"] == "saco"
    documents = {p.name: json.loads(p.read_text()) for p in raw_files(built)}
    coverage = data.arrow("coverage", ["annotator", "pair_ids"]).to_pylist()
    kept = {(r["annotator"], pair) for r in coverage for pair in r["pair_ids"]}
    listed = {(name.split("_merged_")[1][0], e["id"]) for name, d in documents.items() for e in d["images"]}
    assert kept == listed and len(listed) > 500  # every pair of every file, under its own id
    assert set(data.arrow("rejects", ["source"])["source"].to_pylist()) <= {"consensus"}
    out = tmp_path / "back"
    done = exported(built.folder, out)
    assert done.returncode == 0, done.stderr
    for name, theirs in documents.items():
        ours = json.loads((out / "annotations" / name.replace("_tiny_", "_saco_")).read_text())
        assert sorted(ours["images"], key=lambda e: e["id"]) == sorted(theirs["images"], key=lambda e: e["id"])
        assert masks_by_pair(ours) == masks_by_pair(theirs), name
    # as COCO instances: files of their own names, a COCO tree (not COCO-shaped files under SA-Co's names)
    coco = tmp_path / "coco"
    done = exported(built.folder, coco, "coco", "--images", str(built.raw))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (coco / "annotations").iterdir()) == ["a.json", "b.json", "c.json"]
    assert layouts.detect(coco).name == "coco"


@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_a_run_naming_sa_co_s_pairs_scores_as_sam3_s_evaluator_on_the_files(
    release: Callable[[str], Built], tmp_path: Path, iou_type: str
) -> None:
    """The release scored by ``evaluate --task concepts`` equals SAM 3's ``CGF1Evaluator`` on the
    files the release was built from, against the oracle over the three and against one; the pairs
    a file leaves not exhaustive are left out as the evaluator leaves them out."""
    from regionbench.scoring import tasks

    built = release("saco")
    data = loader.load(built.folder)
    paths = raw_files(built)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(run_from(json.loads(paths[1].read_text()), np.random.default_rng(7))))
    for chosen, settings in ((paths, {"all_annotators": True}), (paths[:1], {"annotator": "a"})):
        with contextlib.redirect_stdout(io.StringIO()):
            evaluator = reference().CGF1Evaluator(gt_path=[str(p) for p in chosen], iou_type=iou_type)
            theirs = evaluator.evaluate(str(run))
        ours = tasks.evaluate(data, run, "concepts", iou_type=iou_type, resamples=0, **settings)
        assert ours["pairs"] == len(evaluator.eval_img_ids) and ours["pairs_left_out"] > 0
        for key, value in theirs.items():
            base, _, at = key.removeprefix(f"cgF1_eval_{iou_type}_").partition("@")
            name = NAMES.get(base, base) + (f"@{at}" if at else "")
            assert ours["measures"][name] == (None if value == -1 else pytest.approx(value, abs=1e-9)), key
    ceiling = concepts.score(paths, run, iou_type)["human_ceiling"]
    assert ours["human_ceiling"]["cgF1"] == pytest.approx(ceiling["cgF1"], abs=1e-12)
    if iou_type == "segm":  # the build's own ceiling, the card's: the same, on SA-Co's own pairs
        built_ceiling = json.loads((built.folder / "results/concepts.json").read_text())
        assert built_ceiling["cgF1"] == pytest.approx(ceiling["cgF1"], abs=1e-12)


REAL_PROFILE = (
    "classifiers: {enabled: false}\nbaselines: {methods: []}\naudit:\n  labels: {enabled: false}\n"
    "  duplicates: {enabled: false}\nrelations: {max_regions: 20}\njobs: {in_process: true}\n"
)  # what scoring concepts needs of a build: no classifiers, baselines, audits; few relations


@pytest.fixture(scope="module")
def real_saco_release(
    real_data: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[Path], Path]:
    """COCO's real val2017 subset made SA-Co files (``test_concept_f1.real_saco``: three annotators
    drawn from its truth, negatives, tied scores), its photos beside them, built as a release."""
    from conftest import build, workflow_copy
    from test_concept_f1 import real_saco

    coco = real_data("coco-tiny")
    tmp = tmp_path_factory.mktemp("real-saco")
    tree = tmp / "raw"
    (tree / "annotations").mkdir(parents=True)
    truth = json.loads((coco / "annotations/instances_val2017.json").read_text())
    paths, run = real_saco(truth, np.random.default_rng(7), tree / "annotations")
    (tree / "images").mkdir()
    for photo in sorted((coco / "val2017").glob("*.jpg")):
        (tree / "images" / photo.name).write_bytes(photo.read_bytes())
    run = run.rename(tmp / "run.json")
    project = workflow_copy(tmp / "wf")
    (project / "real.yaml").write_text(f"{REAL_PROFILE}dataset: saco-coco\nraw_dir: {tree}\n")
    done = build(project, "--configfile", str(project / "real.yaml"))
    assert done.returncode == 0, done.stderr[-3000:]
    return project / "releases/saco-coco/v1.0.0", paths, run


@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_a_real_collection_of_sa_co_files_builds_and_scores_as_sam3_s_evaluator(
    real_saco_release: tuple[Path, list[Path], Path], iou_type: str
) -> None:
    """Made from COCO's real photos and truth, the SA-Co files build as a release of 80 photos and
    484 pairs, and a run naming their pair ids scores by ``evaluate --task concepts`` as SAM 3's
    evaluator scores it on the files: one annotator and the oracle over three, every figure to 1e-9."""
    from regionbench.scoring import tasks

    folder, paths, run = real_saco_release
    data = loader.load(folder)
    assert data.images["path"].str.startswith("images/").all() and len(data.images) == 80
    assert set(data.arrow("rejects", ["source"])["source"].to_pylist()) <= {"consensus"}
    for chosen, settings in ((paths, {"all_annotators": True}), (paths[:1], {"annotator": "a"})):
        with contextlib.redirect_stdout(io.StringIO()):
            evaluator = reference().CGF1Evaluator(gt_path=[str(p) for p in chosen], iou_type=iou_type)
            theirs = evaluator.evaluate(str(run))
        ours = tasks.evaluate(data, run, "concepts", iou_type=iou_type, resamples=0, **settings)
        assert ours["pairs"] == len(evaluator.eval_img_ids) == 484
        for key, value in theirs.items():
            base, _, at = key.removeprefix(f"cgF1_eval_{iou_type}_").partition("@")
            name = NAMES.get(base, base) + (f"@{at}" if at else "")
            assert ours["measures"][name] == (None if value == -1 else pytest.approx(value, abs=1e-9)), key
