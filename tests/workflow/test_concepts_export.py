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
from regionbench.scoring import concepts


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


def test_a_release_s_annotators_are_a_concept_benchmark(release: Callable[[str], Built], tmp_path: Path) -> None:
    built = release("coco-tiny")
    data = loader.load(built.folder)
    out = tmp_path / "saco"
    done = subprocess.run(
        [sys.executable, "-m", "regionbench", "export", str(built.folder), str(out), "--format", "saco"],
        capture_output=True, text=True,
    )  # fmt: skip
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
