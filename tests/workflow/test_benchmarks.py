"""Label maps scored as their benchmarks score them: a generated Cityscapes tree's release
scored by its own benchmark equals cityscapesScripts' ``evalPixelLevelSemanticLabeling`` on
the tree's own files (class and category IoU, iIoU), in label ids and in train ids."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import regionbench_cli
from farm import Built
from PIL import Image


def evaluate(folder: Path, predictions: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    return regionbench_cli(
        "evaluate", "--release", str(folder), "--predictions", str(predictions),
        "--task", "semantic", "--out", str(out), *options,
    )  # fmt: skip


def wrong_on_purpose(label_ids: np.ndarray, k: int) -> np.ndarray:
    """A run's map: the truth shifted, some car pixels called truck (an evaluated class of the
    same category) and caravan (one Cityscapes leaves out of evaluation), some road parking,
    a band the unlabelled id."""
    out = np.roll(label_ids, 3 + k % 4, axis=1).astype(np.uint8)
    rows = np.arange(out.shape[0])[:, None]
    out[(out == 26) & (rows % 3 == 0)] = 27  # car -> truck
    out[(out == 26) & (rows % 5 == 1)] = 29  # car -> caravan
    out[(out == 7) & (rows % 4 == 0)] = 9  # road -> parking
    out[: 2 + k % 3] = 0
    return out


@pytest.fixture(scope="module")
def cityscapes(release: Callable[[str], Built]) -> tuple[Path, Path]:
    built = release("cityscapes")
    return built.raw, built.folder


def reference(raw: Path, predictions: list[Path], truths: list[Path]) -> dict:
    """cityscapesScripts' figures of ``predictions`` (label ids) against the tree's own files."""
    from cityscapesscripts.evaluation import evalPixelLevelSemanticLabeling as cs

    if not hasattr(np, "in1d"):  # removed in numpy 2.4; the reference calls it for iIoU
        np.in1d = lambda a, b, invert=False: np.isin(np.ravel(a), b, invert=invert)  # type: ignore[attr-defined]
    cs.args.quiet, cs.args.JSONOutput, cs.args.evalInstLevelScore = True, False, True
    return cs.evaluateImgLists([str(p) for p in predictions], [str(p) for p in truths], cs.args)


@pytest.mark.parametrize("train_ids", [False, True], ids=["label-ids", "train-ids"])
def test_cityscapes_is_scored_as_cityscapes_scripts_scores_it(
    cityscapes: tuple[Path, Path], tmp_path: Path, train_ids: bool
) -> None:
    from cityscapesscripts.helpers.labels import id2label, labels

    trained = {label.trainId: label.id for label in labels if not label.ignoreInEval}

    raw, folder = cityscapes
    run, references = tmp_path / "run", tmp_path / "reference"
    run.mkdir(), references.mkdir()
    truths = sorted((raw / "gtFine" / "val").glob("*/*_gtFine_labelIds.png"))
    assert truths
    for k, truth in enumerate(truths):
        frame = truth.name.removesuffix("_gtFine_labelIds.png")
        said = wrong_on_purpose(np.asarray(Image.open(truth)), k)
        if train_ids:  # what train ids can say: a label Cityscapes leaves out of evaluation is 255
            said = np.vectorize(lambda v: id2label[int(v)].trainId)(said).astype(np.uint8)
            as_ids = np.vectorize(lambda t: trained.get(int(t), 0))(said).astype(np.uint8)
            Image.fromarray(as_ids).save(references / f"{frame}_leftImg8bit.png")  # the reference reads label ids
        else:
            Image.fromarray(said).save(references / f"{frame}_leftImg8bit.png")
        Image.fromarray(said).save(run / f"{frame}_leftImg8bit.png")
    out = tmp_path / "report.json"
    done = evaluate(folder, run, out, *(["--train-ids"] if train_ids else []))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    expected = reference(raw, sorted(references.iterdir()), truths)
    assert report["benchmark"]["name"] == "cityscapes" and report["benchmark"]["classes"] == 19
    assert report["images"] == len(truths)  # the source's val split: the benchmark's own side
    measures = report["measures"]
    assert measures["miou"] == pytest.approx(expected["averageScoreClasses"], abs=1e-9)
    assert measures["category_miou"] == pytest.approx(expected["averageScoreCategories"], abs=1e-9)
    assert measures["iiou"] == pytest.approx(expected["averageScoreInstClasses"], abs=1e-9)
    assert measures["category_iiou"] == pytest.approx(expected["averageScoreInstCategories"], abs=1e-9)
    scored = {name: v for name, v in expected["classScores"].items() if not np.isnan(v)}
    assert report["per_class_iou"] == pytest.approx(scored, abs=1e-9)
    instances = {name: v for name, v in expected["classInstScores"].items() if not np.isnan(v)}
    assert report["per_class_iiou"] == pytest.approx(instances, abs=1e-9)
    categories = {name: v for name, v in expected["categoryScores"].items() if not np.isnan(v)}
    assert report["per_category_iou"] == pytest.approx(categories, abs=1e-9)
    if train_ids:
        return
    # each resample's headline is cityscapesScripts' on the drawn images (files in stem order)
    done = evaluate(folder, run, out, "--resamples", "4", "--seed", "3")
    assert done.returncode == 0, done.stderr
    values = json.loads(out.read_text())["resampled"]["values"]
    given = sorted(references.iterdir())
    names = {"miou": "averageScoreClasses", "category_miou": "averageScoreCategories",
             "iiou": "averageScoreInstClasses", "category_iiou": "averageScoreInstCategories"}  # fmt: skip
    from regionbench.scoring.measures import bootstrap

    for b, drawn in enumerate(bootstrap.draws(len(truths), 4, 3)):
        expected = reference(raw, [given[i] for i in drawn], [truths[i] for i in drawn])
        for ours, theirs in names.items():
            assert values[ours][b] == pytest.approx(expected[theirs], abs=1e-9), (b, ours)


def test_the_plain_method_counts_every_label_and_says_so(cityscapes: tuple[Path, Path], tmp_path: Path) -> None:
    """``--method plain``: today's figures over every label id the release has (void ones
    too); the report names the benchmark it used."""
    raw, folder = cityscapes
    run = tmp_path / "run"
    run.mkdir()
    for truth in sorted((raw / "gtFine" / "val").glob("*/*_gtFine_labelIds.png")):
        frame = truth.name.removesuffix("_gtFine_labelIds.png")
        Image.fromarray(np.asarray(Image.open(truth))).save(run / f"{frame}_leftImg8bit.png")
    out = tmp_path / "report.json"
    done = evaluate(folder, run, out, "--method", "plain")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["benchmark"]["name"] == "plain" and "ego-vehicle" in report["per_class_iou"]
    assert report["measures"]["miou"] == 1.0
    done = evaluate(folder, run, out, "--method", "ade20k")
    assert done.returncode == 2 and "--method ade20k" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_voc_run_is_scored_on_voc_s_val_split_with_its_21_classes(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """A VOC release whose subsets split its images at random: a label-map run is scored on VOC's
    own val list by default (the report says so), over VOC's 21 classes with void left out, and
    its mIoU is VOC's definition recomputed from the maps; a side without an image is one line,
    exit 2; maps named by the images' own stems are read."""
    built = release("voc-random")
    raw, folder = built.raw, built.folder
    base = raw / "VOCdevkit/VOC2012"
    val = (base / "ImageSets/Segmentation/val.txt").read_text().split()
    run = tmp_path / "run"
    run.mkdir()
    matrix = np.zeros((21, 21), dtype=np.int64)
    for k, name in enumerate(sorted(p.stem for p in (base / "SegmentationClass").glob("*.png"))):
        truth = np.asarray(Image.open(base / f"SegmentationClass/{name}.png")).astype(np.int64)
        said = np.roll(truth, 2 + k % 3, axis=0)
        said[said == 255] = 0
        if name in val:  # the maps of the scored side only: a file for another image is refused
            Image.fromarray(said.astype(np.uint8)).save(run / f"{name}.png")
            keep = truth != 255
            np.add.at(matrix, (truth[keep], said[keep]), 1)
    out = tmp_path / "report.json"
    done = evaluate(folder, run, out)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["benchmark"] == {"name": "voc", "classes": 21}
    assert report["scored"]["split"] == "source" and report["scored"]["side"] == "the source's val split"
    assert report["images"] == len(val) and done.stdout.startswith(f"scored: {len(val)} of 12 images")
    union = matrix.sum(axis=0) + matrix.sum(axis=1) - np.diag(matrix)
    iou = np.diag(matrix)[union > 0] / union[union > 0]  # VOC: classes absent from truth and run aside
    assert report["measures"]["miou"] == pytest.approx(iou.mean(), abs=1e-12)
    done = evaluate(folder, run, out, "--split", "test")  # the random split's test side: other images
    assert done.returncode == 2 and "outside the scored side" in done.stderr
    assert json.loads((folder / "manifest.json").read_text())["evaluation_split"] == "val"


def test_evaluate_scores_the_split_the_manifest_names_and_an_older_release_as_before(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """The build records the evaluation split once (a config's ``subsets.test_split`` is recorded
    as it is); ``evaluate`` scores that split by default, whatever the names of the others. A
    release published before the field reads the same rule over its splits (VOC's val)."""
    import shutil

    from regionbench import release as releases

    built = release("voc-random")
    base = built.raw / "VOCdevkit/VOC2012"
    train = (base / "ImageSets/Segmentation/train.txt").read_text().split()
    run = tmp_path / "run"
    run.mkdir()
    for name in train:
        shutil.copy(base / f"SegmentationClass/{name}.png", run / f"{name}.png")

    def resealed(edit: Callable[[dict], dict]) -> Path:
        folder = Path(shutil.copytree(built.folder, tmp_path / f"release{len(list(tmp_path.iterdir()))}"))
        manifest = edit(json.loads((folder / "manifest.json").read_text()))
        manifest.pop("digest")
        manifest["digest"] = releases.canonical_digest(manifest)
        (folder / "manifest.json").write_text(json.dumps(manifest))
        return folder

    out = tmp_path / "report.json"
    done = evaluate(resealed(lambda m: m | {"evaluation_split": "train"}), run, out)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["scored"]["side"] == "the source's train split" and report["images"] == len(train)
    assert report["measures"]["miou"] == 1.0
    older = resealed(lambda m: {k: v for k, v in m.items() if k != "evaluation_split"})
    done = evaluate(older, run, out)  # train maps against the val side: refused, the side named
    assert done.returncode == 2 and "outside the scored side" in done.stderr


def test_a_collection_without_an_evaluation_split_and_an_empty_side_are_refused(
    release: Callable[[str], Built], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A VOC tree whose every image is in train: asking for the source's evaluation split is one
    line, exit 2, and the default is the subsets' test side; a side that holds no image is
    refused before anything is read, never scored as zeros."""
    import regionbench
    from regionbench.scoring import scope, tasks

    folder = release("voc-train-only").folder
    run = tmp_path / "run"
    run.mkdir()
    done = evaluate(folder, run, tmp_path / "r.json", "--split", "source")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "no test or validation split of its own" in done.stderr
    data = regionbench.load(folder)
    empty = scope.Scope("test", "the test side of the image split", 0, 6, "images")
    monkeypatch.setattr(tasks.get("semantic"), "scope_of", lambda data, settings: empty)
    with pytest.raises(tasks.TaskError, match="nothing to score: the test side of the image split holds none"):
        tasks.evaluate(data, run, "semantic")


def test_an_ade20k_run_in_0_149_is_read_with_reduce_zero_label(release: Callable[[str], Built], tmp_path: Path) -> None:
    """ADE20K's maps as mmseg trains on them (class - 1, 255 for "other"): scored right with
    --reduce-zero-label, and read as the benchmark's 1-150 without it (every class off by one:
    wrong); the truth's "other" is left out either way; on the source's validation split."""
    built = release("ade20k")
    raw, folder = built.raw, built.folder
    run = tmp_path / "run"
    run.mkdir()
    for path in sorted((raw / "ADEChallengeData2016/annotations/validation").glob("*.png")):
        values = np.asarray(Image.open(path)).astype(np.int64)
        Image.fromarray(np.where(values == 0, 255, values - 1).astype(np.uint8)).save(run / path.name)
    out = tmp_path / "report.json"
    done = evaluate(folder, run, out, "--reduce-zero-label")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["benchmark"]["name"] == "ade20k" and report["scored"]["side"] == "the source's validation split"
    assert report["measures"]["miou"] == 1.0 and report["abstained_pixels"] == 0
    done = evaluate(folder, run, out)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["measures"]["pixel_accuracy"] < 0.5
