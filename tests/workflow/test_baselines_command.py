"""``regionbench baselines``: the reference methods' predictions are scored through the same door
as a user's, and the reports come back byte for byte on a second run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import regionbench_cli
from farm import Built

import regionbench
from regionbench.scoring import tasks


def test_baselines_are_scored_as_a_user_s_predictions_and_rerun_to_the_byte(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """A segmenter (segments and boundaries) and Canny (boundaries) on a BSDS500 release: each
    report is what ``evaluate`` gives the predictions the command wrote; a second run, on two
    cores where the first ran on one, writes the same bytes; the table names each method and the
    humans' ceiling first."""
    built = release("bsds")
    first, second = tmp_path / "first", tmp_path / "second"
    for out, cores in ((first, "1"), (second, "2")):  # the same bytes on any number of cores
        done = regionbench_cli(
            "baselines", str(built.folder), "--out", str(out), "--method", "watershed", "canny",
            "--images", str(built.raw), "--cores", cores,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    rows = {line.split("|")[1].strip(): line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert {"Human", "watershed", "canny"} <= set(rows), done.stdout  # the card's table, the humans first
    for name, task in (("watershed", "segments"), ("watershed", "boundaries"), ("canny", "boundaries")):
        report = json.loads((first / name / f"{task}.json").read_text())
        assert (first / name / f"{task}.json").read_bytes() == (second / name / f"{task}.json").read_bytes()
        data = regionbench.load(built.folder)
        again = tasks.evaluate(data, first / name / "predictions", task)
        assert tasks.measures(again) == tasks.measures(report) and report["baseline"]["name"] == name
    assert f"{json.loads((first / 'canny' / 'boundaries.json').read_text())['measures']['ap']:.4f}" in rows["canny"]
    assert not (first / "canny" / "segments.json").exists()  # edges are no segmentation


def test_an_unknown_baseline_is_one_line(tmp_path: Path) -> None:
    done = regionbench_cli("baselines", str(tmp_path), "--out", str(tmp_path / "out"), "--method", "sobel")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "regionbench: error: baseline 'sobel': use canny, felzenszwalb, pixels, quickshift, slic, watershed"
    ], done.stderr


def test_a_release_of_no_method_s_kind_is_one_line(release: Callable[[str], Built], tmp_path: Path) -> None:
    """SAIAPR's labelled regions have their reference classifiers, no method of the registry's
    kind: without --method the command says so and how to choose, in one line."""
    built = release("tiny")
    done = regionbench_cli("baselines", str(built.folder), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"regionbench: error: {built.folder}: no reference method is of this release's kind (its layout saiapr); "
        "name them with --method"
    ], done.stderr
