"""The BSDS500 benchmark's own test data through the command line: its five human-annotated
images built as a BSDS500 tree, its ``segs`` and ``ucm2`` scored by ``evaluate --task
segments``, give back the benchmark's published figures (docs/scoring.md shows the commands)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import regionbench_cli
from farm import BENCH, Built


def evaluate(release: Path, predictions: Path | str, *options: str) -> subprocess.CompletedProcess:
    """``regionbench evaluate`` of ``predictions`` on ``release`` with ``options``."""
    return regionbench_cli("evaluate", "--release", str(release), "--predictions", str(predictions), *options)


@pytest.fixture(scope="module")
def bench_release(release: Callable[[str], Built]) -> Path:
    return release("bsds-bench").folder


@pytest.mark.parametrize(
    ("kind", "expected", "options"), [("segs", "test_4", []), ("ucm2", "test_1", ["--thresholds", "5"])]
)
def test_the_bench_data_scored_by_the_cli_gives_the_published_figures(
    bench_release: Path, tmp_path: Path, kind: str, expected: str, options: list[str]
) -> None:
    import json

    report = tmp_path / "report.json"
    done = evaluate(bench_release, str(BENCH / kind), "--task", "segments", "--out", str(report), *options)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "scored: 5 of 5 images, the source's test split"  # BSDS scores its test split
    found = json.loads(report.read_text())["measures"]
    cover = [float(v) for v in (BENCH / expected / "eval_cover.txt").read_text().split()]
    rand = [float(v) for v in (BENCH / expected / "eval_RI_VOI.txt").read_text().split()]
    c, ri, vi = found["covering"], found["pri"], found["vi"]
    ours = [c["ods_threshold"], c["ods"], c["ois"], c["best"]]
    ours_rand = [ri["ods_threshold"], ri["ods"], ri["ois"], vi["ods_threshold"], vi["ods"], vi["ois"]]
    assert [float(f"{v:g}") for v in ours] == cover and [float(f"{v:g}") for v in ours_rand] == rand


def test_prediction_files_for_no_image_of_the_release_are_one_line(bench_release: Path, tmp_path: Path) -> None:
    """A file named for no image of the release (a typo, an image the build rejected) is never
    left out without a word."""
    shutil.copytree(BENCH / "segs", tmp_path / "segs")
    shutil.copy(tmp_path / "segs" / "2018.mat", tmp_path / "segs" / "2019.mat")
    done = evaluate(bench_release, str(tmp_path / "segs"), "--task", "segments")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "1 prediction files name no image of the release, e.g. 2019.mat" in lines[0]


@pytest.mark.parametrize(
    ("kind", "expected", "options"), [("segs", "test_4", []), ("ucm2", "test_1", ["--thresholds", "5"])]
)
def test_the_boundary_benchmark_by_the_cli_gives_the_published_figures(
    bench_release: Path, tmp_path: Path, kind: str, expected: str, options: list[str]
) -> None:
    """``evaluate --task boundaries`` on the release built from the benchmark's humans (their
    boundaries made from their segmentations): eval_bdry.txt within 0.0005, the curve in the
    report, and the humans' own ceiling."""
    import json

    report = tmp_path / "report.json"
    done = evaluate(bench_release, str(BENCH / kind), "--task", "boundaries", "--out", str(report), *options)
    assert done.returncode == 0, done.stderr
    found = json.loads(report.read_text())
    o, s = found["measures"]["ods"], found["measures"]["ois"]
    ours = [o["threshold"], o["recall"], o["precision"], o["f"], s["recall"], s["precision"], s["f"]]
    published = [float(v) for v in (BENCH / expected / "eval_bdry.txt").read_text().split()]
    assert np.allclose([*ours, found["measures"]["ap"]], published, rtol=0, atol=5e-4)
    assert len(found["curve"]["recall"]) == len(found["thresholds"]) == 5
    ceiling = found["human_ceiling"]
    assert 0.5 < ceiling["f"] < 1 and len(ceiling["per_annotator"]) >= 5


def test_view_draws_the_run_s_precision_recall_curve_and_boundaries(bench_release: Path, tmp_path: Path) -> None:
    """``view --run`` of a boundaries report: the site's charts hold the run's precision-recall
    curve (one vertex per threshold, at the report's recall and precision), and each image page
    draws the run's boundary at the image's best threshold with its F."""
    import json

    report = tmp_path / "report.json"
    done = evaluate(
        bench_release, str(BENCH / "ucm2"), "--task", "boundaries", "--thresholds", "5", "--out", str(report)
    )
    assert done.returncode == 0, done.stderr
    site = tmp_path / "site"
    done = regionbench_cli(
        "view",
        str(bench_release),
        "--out",
        str(site),
        "--run",
        str(report),
        "--predictions",
        str(BENCH / "ucm2"),
        "--images",
        str(bench_release.parents[3] / "raw"),
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(report.read_text())
    svg = (site / "charts" / "run-precision-recall.svg").read_text()
    curve = [line for line in svg.splitlines() if line.startswith("<polyline") and 'stroke="#4477AA"' in line]
    vertices = [tuple(float(v) for v in point.split(",")) for point in curve[0].split('"')[1].split()]
    expected = [(40 + r * 360, 40 + (1 - p) * 360) for r, p in zip(found["curve"]["recall"],
                                                                    found["curve"]["precision"], strict=True)]  # fmt: skip
    assert np.allclose(vertices, expected, atol=0.06)
    assert "run-precision-recall.svg" in (site / "data" / "run.js").read_text()
    page = (site / "data" / "img" / "2018.js").read_text()
    drawn = json.loads(page[len('RB.load("image",') : -len(");\n")])
    assert "2018" in found["per_image"] and str(round(found["per_image"]["2018"], 4)) in json.dumps(drawn)


def test_the_humans_ceiling_is_matched_once_a_release_and_taken_after(
    bench_release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second boundary run on the same release and humans takes the humans' ceiling from the
    cache (no human is matched again) and reports the same figures; a cached file that cannot be
    read is matched again, and written anew."""
    import regionbench
    from regionbench.scoring import tasks
    from regionbench.scoring.tasks import boundaries

    monkeypatch.setenv("REGIONBENCH_CACHE", str(tmp_path / "cache"))
    data = regionbench.load(bench_release)
    first = tasks.evaluate(data, BENCH / "ucm2", "boundaries", thresholds=5)
    kept = sorted((tmp_path / "cache" / "ceilings").glob("boundaries-*.json"))
    assert len(kept) == 1

    def matched_again(*args: object) -> None:
        raise AssertionError("the humans were matched again")

    with monkeypatch.context() as patched:
        patched.setattr(boundaries, "_pool_ceiling", matched_again)
        again = tasks.evaluate(data, BENCH / "ucm2", "boundaries", thresholds=5, cores=1)
    assert again["human_ceiling"] == first["human_ceiling"] and again["measures"] == first["measures"]
    assert round(first["human_ceiling"]["f"], 2) == 0.80
    kept[0].write_text("{not json")
    third = tasks.evaluate(data, BENCH / "ucm2", "boundaries", thresholds=5, cores=1)
    assert third["human_ceiling"] == first["human_ceiling"] and kept[0].read_text().startswith('{"')
