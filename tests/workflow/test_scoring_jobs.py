"""A run scored as jobs (``evaluate --executor``): every task that accumulates image by image —
instances (COCO, with TIDE), LVIS, label maps, panoptic, BSDS regions and boundaries — gives, as
part jobs and a gathering (4 of them; label maps 1, 4 and 16: tests/test_runner.py holds the
runner to any count), the report of one process to the bit; and the command runs them through
Snakemake on this machine.

The jobs run here one after another, each in the runner's job mode (``runner.scattered``), as
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from test_workflow_lvis import _results
from test_workflow_panoptic import RELEASE as PANOPTIC_RELEASE
from test_workflow_panoptic import _merged

import regionbench
from regionbench.scoring import runner, tasks
from regionbench.scoring.tasks import instances as instances_task

JOBS = (4,)  # a job of four holds one or two batches of these trees, or none


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of two images (instance ranges of three): a tree of a few images makes several."""
    monkeypatch.setattr(runner, "BATCH", 2)
    monkeypatch.setattr(instances_task, "RANGE", 3)


def as_jobs(data: Any, predictions: Path, task: str, jobs: int, folder: Path, **settings: Any) -> dict[str, Any]:
    """``predictions`` scored as ``jobs`` part jobs then gathered, round after round, the parts
    in ``folder``."""
    folder.mkdir()
    for _ in range(8):
        for job in range(jobs):
            with contextlib.suppress(runner.Waiting), runner.scattered(folder, job, jobs):
                tasks.evaluate(data, predictions, task, **settings)
        with contextlib.suppress(runner.Waiting), runner.scattered(folder, None, jobs):
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
    table = [line for line in said if not line.startswith(("scoring as", "scored in "))]
    assert table == alone.stdout.replace("alone.json", "jobs.json").splitlines()
    assert not list(tmp_path.glob(".regionbench-scoring-*"))
    work = tmp_path / "work"
    (work / "parts").mkdir(parents=True)
    (work / "parts" / "stream-0.job-0.pickle").write_bytes(b"another run")
    again = regionbench_cli(*common, "--executor", "local", "--jobs", "2", "--work-dir", str(work), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [line for line in again.stdout.splitlines() if not line.startswith(("scoring as", "scored in "))] == table[
        :-1
    ]
    assert (work / "report.pickle").is_file() and (work / "snakemake.log").is_file()  # a given folder is kept
    assert "scored in 2 rounds" in again.stdout  # the run's stream, then its human ceiling's: one Snakemake run
    assert len(list((work / ".snakemake" / "log").glob("*.snakemake.log"))) == 1


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


def test_jobs_are_for_the_executor_and_capped_at_the_work(
    maps: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--jobs`` (or ``--work-dir``) without ``--executor`` is refused in one line; more jobs
    than items scored are cut to one an item, and the command says so (the jobs' run itself is
    the tests' above: here the executor is handed the count)."""
    from regionbench.scoring import scattering

    folder, run = maps
    common = ("evaluate", "--release", str(folder), "--predictions", str(run), "--task", "semantic")
    for flag, value in (("--jobs", "3"), ("--work-dir", str(tmp_path / "w"))):
        refused = regionbench_cli(*common, flag, value, cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert f"{flag} belongs to scoring as jobs: add --executor local" in refused.stderr
    handed: list[int] = []

    def score(*args: Any, **kwargs: Any) -> dict[str, Any]:
        handed.append(args[8])
        return tasks.evaluate(regionbench.load(folder), run, "semantic")

    monkeypatch.setattr(scattering, "score", score)
    images = len(list(run.iterdir()))
    for asked, capped in ((1000, images), (2, 2)):
        done = regionbench_cli(*common, "--executor", "local", "--jobs", str(asked), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (f"--jobs 1000: {images} images to score, so {images} jobs" in done.stdout) == (asked > images)
        assert handed[-1] == capped


def _scoring_processes(folder: Path) -> list[int]:
    """The processes working in ``folder`` or under it (Snakemake and its jobs)."""
    import os

    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                    found.append(int(entry.name))
    return found


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(signal_name=st.sampled_from(["SIGTERM", "SIGINT"]), moment=st.floats(0.0, 4.0))
def test_a_stop_signal_at_any_moment_ends_every_job_and_removes_the_work_folder(
    maps: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory, signal_name: str, moment: float
) -> None:
    """SIGTERM (a ``timeout``, a scheduler) or SIGINT to ``evaluate`` alone, ``moment`` seconds
    after its work folder appears (Snakemake starting, a round's jobs running, a gathering, the
    report being read): exit 130 on one line, or, where it had finished, its report; either way
    no Snakemake or job left running and no ``.regionbench-scoring-*`` folder left where it ran."""
    import signal
    import subprocess
    import sys
    import time

    here = tmp_path_factory.mktemp("stopped")
    folder, run = maps
    command = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--predictions", str(run),
               "--task", "semantic", "--executor", "local", "--jobs", "2"]  # fmt: skip
    evaluate = subprocess.Popen(command, cwd=here, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(here.glob(".regionbench-scoring-*")) and evaluate.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(moment)
    evaluate.send_signal(getattr(signal, signal_name))
    stdout, stderr = evaluate.communicate(timeout=60)
    if evaluate.returncode == 0:  # it had finished: the whole report, nothing else
        assert "miou" in stdout and "Traceback" not in stderr, stderr
    else:
        said = stderr.strip().splitlines()
        assert evaluate.returncode == 130 and said[-1].startswith("regionbench: interrupted"), stderr
        assert "Traceback" not in stderr
    deadline = time.monotonic() + 30  # a loaded 2-core machine (CI runs three lanes at once) ends them slowly
    while (left := _scoring_processes(here)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"still running after evaluate stopped: {left}"
    assert not list(here.glob(".regionbench-scoring-*"))


def test_a_job_killed_by_the_system_is_one_line(maps: tuple[Path, Path], tmp_path: Path) -> None:
    """A part job that dies without a word (SIGKILL: the out-of-memory killer) ends the command
    in one line naming the job and what to do, exit 2."""
    import subprocess
    import sys

    folder, run = maps
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os, signal, sys\n"  # at start-up, ``-m``'s module not yet named: its arguments are
        "if sys.argv[0] == '-m' and len(sys.argv) == 3 and sys.argv[2] == '1':\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    command = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--predictions", str(run),
               "--task", "semantic", "--executor", "local", "--jobs", "2", "--work-dir", str(tmp_path / "work")]  # fmt: skip
    env = {**__import__("os").environ, "PYTHONPATH": str(hooks)}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "job 1 of round-0 ended without a result (killed by the system: out of memory?)" in lines[0], lines
