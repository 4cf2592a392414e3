"""A multi-annotator release written as SA-Co's concept benchmark (``export --format saco``): its
evaluation side's (image, label) pairs with seeded negatives, one file an annotator, and a run
against them scored by ``regionbench concepts`` as SAM 3's evaluator scores it, the oracle over the
release's own annotators and each alone, with their human ceiling."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from farm import Built
from test_concept_f1 import NAMES, reference

from regionbench.io import saco
from regionbench.release import loader
from regionbench.scoring import concept_files as concepts
from regionbench.scoring.scope import OutsideError


def run_from(document: dict, rng: np.random.Generator) -> list[dict]:
    """A run made from one annotator's file: a fifth of its instances missed, the rest with their
    own boxes moved a pixel or two, scores of three values (ties, some under 0.5)."""
    out = []
    for a in document["annotations"]:
        if a["iscrowd"] or rng.random() < 0.2:
            continue
        x, y, w, h = a["bbox"]
        dx, dy = (float(v) for v in rng.integers(-2, 3, 2))
        out.append({"image_id": a["image_id"], "category_id": 1, "segmentation": a["segmentation"],
                    "bbox": [x + dx, y + dy, w, h], "score": float(rng.choice([0.3, 0.6, 0.9]))})  # fmt: skip
    return out


def exported(folder: Path, out: Path, how: str = "saco", *more: str) -> subprocess.CompletedProcess:
    """``regionbench export FOLDER OUT --format HOW [MORE]``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "regionbench", "export", str(folder), str(out), "--format", how, *more],
        capture_output=True, text=True,
    )  # fmt: skip


def test_a_release_s_annotators_are_a_concept_benchmark(release: Callable[[str], Built], tmp_path: Path) -> None:
    built = release("coco-tiny")
    data = loader.load(built.folder)
    out = tmp_path / "saco"
    done = exported(built.folder, out)
    assert done.returncode == 0, done.stderr
    humans = sorted(set(data.annotators()) - {"consensus"})
    paths = sorted((out / "annotations").glob("*.json"))
    assert [p.name for p in paths] == [saco.file_name("coco-tiny", h) for h in humans] and len(paths) == 3
    documents = [json.loads(p.read_text()) for p in paths]
    pairs = saco.pairs(data)
    assert all(d["images"] == documents[0]["images"] for d in documents) and len(pairs) == len(documents[0]["images"])
    negatives = [p for p in pairs if not p["positive"]]
    assert len(negatives) == 2 * len({p["image_id"] for p in pairs})  # two absent labels an image
    for p in negatives:  # a negative is a label no annotator gave the image
        assert not [a for d in documents for a in d["annotations"] if a["image_id"] == p["id"]]
    assert saco.pairs(data) == pairs  # seeded: the same pairs every time
    assert f"{len(pairs):,} pairs" in done.stdout

    rng = np.random.default_rng(3)
    (tmp_path / "run.json").write_text(json.dumps(run_from(documents[0], rng)))
    for iou_type in ("segm", "bbox"):
        for chosen in (paths[:1], paths):
            with contextlib.redirect_stdout(io.StringIO()):
                evaluator = reference().CGF1Evaluator(gt_path=[str(p) for p in chosen], iou_type=iou_type)
                theirs = evaluator.evaluate(str(tmp_path / "run.json"))
            report = concepts.score(chosen, tmp_path / "run.json", iou_type)
            assert report["pairs"] == len(pairs) == len(evaluator.eval_img_ids)
            for key, value in theirs.items():
                base, _, at = key.removeprefix(f"cgF1_eval_{iou_type}_").partition("@")
                name = NAMES.get(base, base) + (f"@{at}" if at else "")
                assert report["measures"][name] == (None if value == -1 else pytest.approx(value, abs=1e-9)), key
    # the human ceiling of the release's own annotators
    ceiling = concepts.score(paths, tmp_path / "run.json")["human_ceiling"]
    assert sorted(ceiling["per_annotator"]) == [p.name for p in paths] and 0 < ceiling["cgF1"] <= 1


def test_evaluate_scores_a_release_s_concepts_as_its_exported_files(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """``evaluate --task concepts`` on the release itself: the pairs ``export --format saco`` numbers,
    each figure that of ``regionbench concepts`` on the exported files (SAM 3's, above), against the
    oracle over every human and against one; the human ceiling the same; each resample the figures of
    the drawn images' pairs; a detection of no pair one line."""
    from regionbench.scoring import tasks
    from regionbench.scoring.measures import bootstrap, concept_f1
    from regionbench.scoring.tasks import concepts as task

    built = release("coco-tiny")
    data = loader.load(built.folder)
    out = tmp_path / "saco"
    assert exported(built.folder, out).returncode == 0
    paths = sorted((out / "annotations").glob("*.json"))
    documents = [json.loads(p.read_text()) for p in paths]
    run = tmp_path / "run.json"
    run.write_text(json.dumps(run_from(documents[1], np.random.default_rng(5))))
    oracle = tasks.evaluate(data, run, "concepts", all_annotators=True, resamples=50)
    theirs = concepts.score(paths, run)
    for name, value in theirs["measures"].items():
        assert oracle["measures"][name] == (None if value is None else pytest.approx(value, abs=1e-12)), name
    for name, value in theirs["human_ceiling"].items():
        if name != "per_annotator":
            assert oracle["human_ceiling"][name] == pytest.approx(value, abs=1e-12), name
    humans = sorted(set(data.annotators()) - {"consensus"})
    alone = tasks.evaluate(data, run, "concepts", annotator=humans[2], resamples=0)
    one = concepts.score(paths[2:3], run)["measures"]
    assert alone["measures"]["cgF1"] == pytest.approx(one["cgF1"], abs=1e-12)
    assert oracle["by_annotator"][humans[2]]["cgF1"] == pytest.approx(one["cgF1"], abs=1e-12)
    assert sum(level["pairs"] for level in oracle["by_level"].values()) == oracle["pairs"] == len(saco.pairs(data))
    # each scored image's score, and the site's run page: each headline beside the humans' ceiling
    from regionbench.client import view

    assert sorted(oracle["per_image"]) == sorted({p["image_id"] for p in saco.pairs(data)})
    assert all(0 <= v <= 1 for v in oracle["per_image"].values())
    headline = {row[0]: row for row in view.run_view(oracle, {})["headline"]}
    assert headline["cgF1"][2] == pytest.approx(oracle["human_ceiling"]["cgF1"], abs=1e-4) and headline["cgF1"][3]
    # the build's own ceiling (stage concept_ceiling): the card's table and the site's figures say it
    built_ceiling = json.loads((built.folder / "results/concepts.json").read_text())
    for name in ("cgF1", "pmF1", "IL_MCC"):
        assert built_ceiling[name] == pytest.approx(oracle["human_ceiling"][name], abs=1e-12), name
    card = (built.folder / "README.md").read_text()
    assert "## Concepts: the human ceiling" in card and f"| mean | {built_ceiling['cgF1']:.4f} |" in card
    assert view._figures(built.folder / "results")["concepts"]["human cgF1 (concepts)"] == built_ceiling["cgF1"]
    # the first resample: the figures of the drawn images' pairs, each as often as its image is drawn
    settings = task.Settings(all_annotators=True).resolve(data)
    given = task.read(run, data, settings)
    truths = [task.truth(data, given.pairs, a) for a in humans]
    images = sorted({p["image_id"] for p in given.pairs})
    (drawn,) = bootstrap.draws(len(images), 1, 0)
    chosen = [p["id"] for k in drawn for p in given.pairs if p["image_id"] == images[k]]
    found = concept_f1.summary(
        concept_f1.figures(concepts.oracle_pairs(given.detections, truths, chosen, "segmentation"))
    )
    assert oracle["resampled"]["values"]["cgF1"][0] == pytest.approx(found["cgF1"], abs=1e-12)
    assert oracle["intervals"]["cgF1"]["low"] <= oracle["intervals"]["cgF1"]["high"]
    # a detection naming no pair of the scored side
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps([{"image_id": 99999, "segmentation": documents[0]["annotations"][0]["segmentation"], "score": 0.9}])
    )
    done = subprocess.run(
        [sys.executable, "-m", "regionbench", "evaluate", "--release", str(built.folder), "--predictions", str(bad),
         "--task", "concepts"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "image_id 99999 names no pair" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    # pairs keep their numbers whichever side is scored: one of the train side is outside the scored side
    every = saco.pairs(data, data.images["image_id"].astype(int).tolist())
    assert {p["id"]: p for p in every if p["id"] in {q["id"] for q in saco.pairs(data)}} == {
        p["id"]: p for p in saco.pairs(data)
    }
    train = next(p for p in every if p["id"] not in {q["id"] for q in saco.pairs(data)})
    bad.write_text(
        json.dumps(
            [{"image_id": train["id"], "segmentation": documents[0]["annotations"][0]["segmentation"], "score": 0.9}]
        )
    )
    with pytest.raises(OutsideError, match="1 detections on 1 pairs outside the scored side"):
        tasks.evaluate(data, bad, "concepts", resamples=0)
