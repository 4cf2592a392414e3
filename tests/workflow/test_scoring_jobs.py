"""A run scored as jobs (``evaluate --executor``): every task that accumulates image by image —
instances (COCO, with TIDE), LVIS, label maps, panoptic, BSDS regions and boundaries — gives, as
part jobs and a gathering (4 of them; label maps 1, 4 and 16: tests/test_runner.py holds the
runner to any count), the report of one process to the bit; and the command runs them through
Snakemake on this machine.

The jobs run here one after another, each in the runner's job mode (``_runner.scattered``), as
``client.scattering`` runs each in its own process; the batches are made small so that a job
holds a few, one or none of them."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import COCO_RELEASE, regionbench_cli, truth_label_maps
from farm import BENCH, Built
from PIL import Image
from test_workflow_lvis import _results
from test_workflow_panoptic import RELEASE as PANOPTIC_RELEASE
from test_workflow_panoptic import _merged

import regionbench
from regionbench.client import tasks
from regionbench.client.tasks import _runner
from regionbench.client.tasks import instances as instances_task

JOBS = (4,)  # a job of four holds one or two batches of these trees, or none


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of two images (instance ranges of three): a tree of a few images makes several."""
    monkeypatch.setattr(_runner, "BATCH", 2)
    monkeypatch.setattr(instances_task, "RANGE", 3)


def as_jobs(data: Any, predictions: Path, task: str, jobs: int, folder: Path, **settings: Any) -> dict[str, Any]:
    """``predictions`` scored as ``jobs`` part jobs then gathered, round after round, the parts
    in ``folder``."""
    folder.mkdir()
    for _ in range(8):
        for job in range(jobs):
            with contextlib.suppress(_runner.Waiting), _runner.scattered(folder, job, jobs):
                tasks.evaluate(data, predictions, task, **settings)
        with contextlib.suppress(_runner.Waiting), _runner.scattered(folder, None, jobs):
            return tasks.evaluate(data, predictions, task, **settings)
    raise AssertionError("eight rounds and no report")


def same_as_one_process(
    data: Any, predictions: Path, task: str, tmp_path: Path, counts: tuple[int, ...] = JOBS, **settings: Any
) -> dict[str, Any]:
    """The report of one process, checked equal to the one of each count of jobs; returned."""
    whole = tasks.evaluate(data, predictions, task, **settings)
    for jobs in counts:
        assert as_jobs(data, predictions, task, jobs, tmp_path / f"jobs-{jobs}", **settings) == whole, (task, jobs)
    return whole


@pytest.fixture(scope="module")
def lvis(release: Callable[[str], Built], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The LVIS release and a run on it: its instances moved, relabelled, doubled, dropped."""
    built = release("lvis")
    run = tmp_path_factory.mktemp("lvis-run") / "detections.json"
    run.write_text(json.dumps(_results(built.tree_info, 7)))
    return built.folder, run


@pytest.mark.parametrize(
    "settings",
    [
        {"method": "lvis"},
        {"method": "coco", "tide": True},
        {"method": "coco", "iou_type": "bbox", "all_annotators": True},
    ],
)
def test_instances_as_jobs(lvis: tuple[Path, Path], tmp_path: Path, settings: dict[str, Any]) -> None:
    folder, run = lvis
    report = same_as_one_process(regionbench.load(folder), run, "instances", tmp_path, split="all", **settings)
    assert report["measures"]["AP"] > 0 and (not settings.get("tide") or report["tide"])


def test_label_maps_as_jobs(maps: tuple[Path, Path], tmp_path: Path) -> None:
    """Against each annotator, with the human ceiling, as 1, 4 and 16 jobs."""
    folder, run = maps
    report = same_as_one_process(regionbench.load(folder), run, "semantic", tmp_path, (1, 4, 16), all_annotators=True)
    assert 0 < report["measures"]["miou"] < 1 and report["human_ceiling"]


def test_panoptic_as_jobs(release: Callable[[str], Built], tmp_path: Path) -> None:
    project = release("panoptic-coco").project
    raw = next(p.parent for p in project.glob("resources/**/annotations") if p.is_dir())
    run = _merged(sorted((raw / "annotations/annotator2").glob("*.json")), tmp_path / "run" / "panoptic_run.json")
    data = regionbench.load(project / PANOPTIC_RELEASE)
    report = same_as_one_process(data, run, "panoptic", tmp_path, split="all", all_annotators=True)
    assert report["human_ceiling"]


@pytest.mark.parametrize(("task", "kind"), [("segments", "segs"), ("boundaries", "ucm2")])
def test_bsds_measures_as_jobs(release: Callable[[str], Built], tmp_path: Path, task: str, kind: str) -> None:
    """The benchmark's own five images: a job of 16 holds one image or none."""
    data = regionbench.load(release("bsds-bench").folder)
    settings = {"thresholds": 5} if kind == "ucm2" else {}
    report = same_as_one_process(data, BENCH / kind, task, tmp_path, all_annotators=True, **settings)
    assert report["human_ceiling"]


@pytest.fixture(scope="module")
def maps(coco_build: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The COCO release and a label-map run on it: the truth's maps, each wrong in a block."""
    folder = coco_build / COCO_RELEASE
    out = tmp_path_factory.mktemp("maps") / "maps"
    truth_label_maps(folder, out)
    for k, path in enumerate(sorted(out.iterdir())):
        values = np.array(Image.open(path))
        values[: 4 + k % 5, : 6 + k % 7] = values.flat[k % values.size]
        Image.fromarray(values).save(path)
    return folder, out


def test_the_command_scores_as_jobs_through_snakemake(maps: tuple[Path, Path], tmp_path: Path) -> None:
    """``evaluate --executor local --jobs 3``: Snakemake runs three part jobs and the gathering
    (each its own process); the report and the printed table are one process's, and the work
    folder is gone. A given work folder holding another run's parts: they are cleared, not read."""
    folder, run = maps
    common = ("evaluate", "--release", str(folder), "--predictions", str(run), "--task", "semantic")
    alone = regionbench_cli(*common, "--out", str(tmp_path / "alone.json"), cwd=tmp_path)
    assert alone.returncode == 0, alone.stderr
    jobs = regionbench_cli(
        *common, "--executor", "local", "--jobs", "3", "--out", str(tmp_path / "jobs.json"), cwd=tmp_path
    )
    assert jobs.returncode == 0, jobs.stderr + jobs.stdout
    assert json.loads((tmp_path / "jobs.json").read_text()) == json.loads((tmp_path / "alone.json").read_text())
    said = jobs.stdout.splitlines()
    assert said[1].startswith("scoring as 3 jobs and a gathering through Snakemake on this machine")
    table = [line for line in said if not line.startswith(("scoring as", "round "))]
    assert table == alone.stdout.replace("alone.json", "jobs.json").splitlines()
    assert not list(tmp_path.glob(".regionbench-scoring-*"))
    work = tmp_path / "work"
    (work / "parts").mkdir(parents=True)
    (work / "parts" / "stream-0.job-0.pickle").write_bytes(b"another run")
    again = regionbench_cli(*common, "--executor", "local", "--jobs", "2", "--work-dir", str(work), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [line for line in again.stdout.splitlines() if not line.startswith(("scoring as", "round "))] == table[:-1]
    assert (work / "report.pickle").is_file() and (work / "snakemake.log").is_file()  # a given folder is kept


def test_a_failing_job_is_one_line(lvis: tuple[Path, Path], tmp_path: Path) -> None:
    """A job that cannot score (here: predictions gone once the jobs start) ends the command in
    one line naming the job and its error, and Snakemake's log."""
    folder, run = lvis
    moved = shutil.copy(run, tmp_path / "detections.json")
    work = tmp_path / "work"
    work.mkdir()
    Path(moved).write_text("[{]")
    done = regionbench_cli(
        "evaluate", "--release", str(folder), "--predictions", str(moved), "--task", "instances",
        "--executor", "local", "--jobs", "2", "--work-dir", str(work), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "scoring as jobs failed (job " in lines[0] and "snakemake.log" in lines[0], lines
