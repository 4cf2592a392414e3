"""What the view tests share: a run scored and drawn, and the predictions they score."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from conftest import regionbench_cli, truth_label_maps, view
from PIL import Image

import regionbench
from regionbench.scoring.tasks import _coco_truth as coco_truth
from regionbench.scoring.tasks import _masks
from regionbench.scoring.tasks import instances as instances_task


def site_data(site: Path, name: str, kind: str) -> object:
    """What the site's data file ``name`` hands the page (``RB.load(kind, ...)``)."""
    text = (site / "data" / name).read_text()
    return json.loads(text[len(f'RB.load("{kind}",') : -len(");\n")])


def evaluate(release: Path, predictions: Path, task: str, report: Path, *options: str) -> dict:
    done = regionbench_cli(
        "evaluate",
        "--release",
        str(release),
        "--predictions",
        str(predictions),
        "--task",
        task,
        "--out",
        str(report),
        *options,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(report.read_text())


def scored_site(release: Path, predictions: Path, task: str, folder: Path, *options: str) -> dict:
    """``predictions`` scored (``folder/report.json``) and drawn (``folder/site``); the report."""
    report = evaluate(release, predictions, task, folder / "report.json", *options)
    done = view(str(release), "--out", str(folder / "site"), "--run", str(folder / "report.json"),
                "--predictions", str(predictions))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return report


def image_data(site: Path, image_id: int) -> dict:
    text = (site / "data" / "img" / f"{image_id}.js").read_text()
    return json.loads(text[len('RB.load("image",') : -len(");\n")])


def banded_label_maps(release: Path, out: Path) -> dict[int, str]:
    """The reference annotator's label maps with the top third of each image given one label
    the image's truth lacks; returns that label per image."""

    written = truth_label_maps(release, out)
    data = regionbench.load(release)
    ids = dict(zip(data.vocabulary["label"], data.vocabulary["label_id"].astype(int), strict=True))
    banded = {}
    for image_id in written:
        present = set(data.regions.loc[data.regions["image_id"] == image_id, "label"])
        banded[image_id] = next(x for x in sorted(ids) if x not in present and ids[x] != 255)
        with Image.open(out / f"{image_id}.png") as im:
            values = np.asarray(im).copy()
        values[: values.shape[0] // 3] = ids[banded[image_id]]
        Image.fromarray(values).save(out / f"{image_id}.png")
    return banded


def scored_detections(release: Path, out: Path) -> list[dict]:
    """An annotator's regions as detections against the reference truth, scores drawn evenly."""
    data = regionbench.load(release)
    images, coverage, truth_of = _masks.scored_images(data, "test"), data.table("coverage"), _masks.reference(data)
    _, truth = instances_task.whole_truth(data, images, truth_of)
    detections = coco_truth.as_detections(
        data.regions, _masks.humans(data)[0], truth, coco_truth.numbering(coverage, truth_of)
    )
    for k, d in enumerate(detections):
        d["score"] = round((k * 7919 % 97 + 1) / 98, 4)
    out.write_text(json.dumps(detections))
    return detections
