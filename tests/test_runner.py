"""The scoring runner (``regionbench.scoring.runner``): a measure streamed over batches on
any number of workers computes what one process computes image by image, parts come back in
batch order, a worker's error reaches the caller, and a shelf gives back what it was given,
spilled or not."""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.scoring import runner


@dataclass
class Sums:
    """A toy measure: floats summed in order (a different order changes the last bits), each
    batch's part made where ``process`` ran."""

    values: list[list[float]]
    total: float = 0.0
    order: list[int] = field(default_factory=list)
    pids: set[int] = field(default_factory=set)

    def process(self, batch: int) -> tuple[int, list[float], int]:
        if math.isnan(self.values[batch][0] if self.values[batch] else 0.0):
            raise ValueError(f"batch {batch}: not a number")
        return batch, self.values[batch], os.getpid()

    def add(self, part: tuple[int, list[float], int]) -> None:
        batch, values, pid = part
        self.order.append(batch)
        self.pids.add(pid)
        for v in values:
            self.total += v

    def compute(self) -> dict[str, float]:
        return {"total": self.total}


floats = st.floats(-1e12, 1e12, allow_nan=False)


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.lists(floats, max_size=6), max_size=12), cores=st.integers(1, 3), forked=st.booleans())
def test_a_measure_streamed_on_any_workers_is_the_one_of_one_process(
    values: list[list[float]], cores: int, forked: bool
) -> None:
    """The same figures, to the bit, as the values added one by one in one process, the parts in
    batch order, made in workers where more than one core (or ``forked``) is asked for."""
    measure = Sums(values)
    found = runner.stream(measure, range(len(values)), cores, forked)
    alone = 0.0
    for batch in values:
        for v in batch:
            alone += v
    assert found == {"total": alone}
    assert measure.order == list(range(len(values)))
    if len(values) > 1 and (cores > 1 or forked):
        assert os.getpid() not in measure.pids
    elif values and not forked:
        assert measure.pids == {os.getpid()}


@pytest.mark.parametrize("cores", [1, 2])
def test_a_worker_s_error_reaches_the_caller(cores: int) -> None:
    with pytest.raises(ValueError, match="batch 3: not a number"):
        runner.stream(Sums([[1.0], [2.0], [3.0], [math.nan], [5.0]]), range(5), cores)


def test_workers_are_replaced_after_their_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker hands over to a fresh one after ``WORKER_BATCHES`` batches (an engine's freed
    memory comes back only when its process ends)."""
    monkeypatch.setattr(runner, "WORKER_BATCHES", 2)
    measure = Sums([[float(k)] for k in range(12)])
    runner.stream(measure, range(12), 2)
    assert len(measure.pids) >= 6


@settings(max_examples=30, deadline=None)
@given(
    puts=st.lists(st.tuples(st.integers(0, 5), st.integers()), max_size=60),
    held=st.integers(1, 10),
)
def test_a_shelf_gives_back_each_batch_s_items_in_the_order_put(puts: list[tuple[int, int]], held: int) -> None:
    """Whatever is spilled to disk (``HELD`` items in memory at the most), each batch's items
    come back as they were put; the folder is gone on exit."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "HELD", held)
        shelved(puts, held)


def shelved(puts: list[tuple[int, int]], held: int) -> None:
    with runner.Shelf[int]() as shelf:
        for k, item in puts:
            shelf.put(k, item)
        assert shelf.in_memory < held
        for k in range(6):
            assert shelf.items(k) == [item for b, item in puts if b == k]
        assert shelf.count == len(puts)
    assert not shelf.folder.exists()


def scored_as_jobs(values: list[list[float]], streams: int, jobs: int, folder: Path) -> list[dict[str, float]]:
    """A run of ``streams`` streams over ``values`` scored as ``jobs`` jobs, round after round,
    then gathered, as ``client.scattering``'s jobs score it (here, one after another in this
    process)."""

    def run() -> list[dict[str, float]]:
        return [runner.stream(Sums(values), range(len(values))) for _ in range(streams)]

    for _ in range(streams + 1):
        for job in range(jobs):
            with contextlib.suppress(runner.Waiting), runner.scattered(folder, job, jobs):
                run()
        with contextlib.suppress(runner.Waiting), runner.scattered(folder, None, jobs):
            return run()
    raise AssertionError("the rounds made no progress")


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(st.lists(floats, max_size=6), min_size=1, max_size=20),
    jobs=st.sampled_from([1, 4, 16]) | st.integers(1, 24),
    streams=st.integers(1, 3),
)
def test_a_run_scored_as_jobs_and_gathered_is_the_one_of_one_process(
    values: list[list[float]], jobs: int, streams: int
) -> None:
    """Each job makes its share of a stream's batches (a job beyond the batches makes none) and
    a round takes the run one stream further; the gathering adds the parts in batch order: the
    figures of one process, to the bit, after one round a stream."""
    with tempfile.TemporaryDirectory() as folder:
        found = scored_as_jobs(values, streams, jobs, Path(folder))
        assert len(list(Path(folder).glob("stream-*.job-*.pickle"))) == streams * jobs
    assert found == [runner.stream(Sums(values), range(len(values)))] * streams


def test_a_gathering_refuses_parts_of_another_run(tmp_path: Path) -> None:
    """Parts of another run (another count of batches, or of jobs) are one line naming the
    file, not figures of part of the run; the gathering waits while a job's parts are missing."""
    values = [[1.0], [2.0], [3.0]]
    for job in range(2):
        with contextlib.suppress(runner.Waiting), runner.scattered(tmp_path, job, 2):
            runner.stream(Sums(values), range(3))
    with runner.scattered(tmp_path, None, 2), pytest.raises(runner.ScatterError, match="other run"):
        runner.stream(Sums([*values, [4.0]]), range(4))
    (tmp_path / "stream-0.job-1.pickle").unlink()
    with runner.scattered(tmp_path, None, 2), pytest.raises(runner.Waiting, match="stream 0"):
        runner.stream(Sums(values), range(3))
    with pytest.raises(ValueError, match="a job is 0 to jobs - 1"), runner.scattered(tmp_path, 2, 2):
        pass


def test_scoring_as_jobs_without_snakemake_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """On the client install (no Snakemake), ``--executor`` says what to install, before any
    folder is made or anything read."""
    import importlib.util

    from regionbench.scoring import scattering
    from regionbench.scoring.tasks import TaskError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if "snakemake" in name else real(name))
    monkeypatch.chdir(tmp_path)
    for executor, package in (("local", "snakemake"), ("slurm", "snakemake")):
        with pytest.raises(TaskError, match=rf"--executor {executor}: needs {package}, .*regionbench\[build\]"):
            scattering.score("r", None, True, tmp_path / "p", "semantic", {}, False, executor, 2)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TaskError, match="--executor ssh: use local or slurm"):
        scattering.score("r", None, True, tmp_path / "p", "semantic", {}, False, "ssh", 2)


def test_a_worker_killed_mid_batch_is_one_error_not_a_wait() -> None:
    """The system kills a worker while it scores a batch: the run stops with one line saying
    so, where a pool alone would replace the worker and wait for its batch for ever."""
    import subprocess
    import sys

    code = (
        "import os, signal\n"
        "from regionbench.scoring import runner\n"
        "from regionbench.core.forked import WorkerDied\n"
        "def process(batch):\n"
        "    if batch == 2:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return batch\n"
        "try:\n"
        "    print(list(runner.parts(process, [0, 1, 2, 3, 4], cores=2)))\n"
        "except WorkerDied as exc:\n"
        "    print('died:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("died: a scoring worker process died without its part"), done
