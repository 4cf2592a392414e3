"""Pieces of a job in forked workers: the results of the pieces in their order, for any number
of workers, from functions that do not pickle."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core.forked import forked_map


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-1000, 1000), max_size=12), st.integers(0, 4), st.integers(-5, 5))
def test_the_results_are_the_pieces_in_order(items: list[int], workers: int, offset: int) -> None:
    shifted = {item: item + offset for item in items}  # state the workers inherit, not pickled
    assert forked_map(lambda item: (item, shifted[item] * 2), items, workers) == [(i, (i + offset) * 2) for i in items]


def test_a_failing_piece_raises_its_error_here() -> None:
    def piece(item: int) -> int:
        if item == 3:
            raise ValueError(f"piece {item} is bad")
        return item

    with pytest.raises(ValueError, match="piece 3 is bad"):
        forked_map(piece, [1, 2, 3, 4], workers=2)


def test_the_workers_run_in_other_processes() -> None:
    pids = forked_map(lambda _: os.getpid(), range(6), workers=2)
    assert os.getpid() not in pids
    assert forked_map(lambda _: os.getpid(), range(6), workers=1) == [os.getpid()] * 6


def test_a_worker_killed_by_the_system_is_one_line_of_what_to_do() -> None:
    import signal

    from regionbench.core.errors import describe
    from regionbench.core.forked import WorkerDied

    def piece(item: int) -> int:
        if item == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer ends a process
        return item

    with pytest.raises(WorkerDied) as raised:
        forked_map(piece, [1, 2, 3], workers=2)
    message = describe(raised.value)
    assert message is not None and message.count("\n") == 0
    assert "out of memory?" in message and "--cores" in message


def test_inside_unforked_every_helper_works_here_and_only_in_that_thread() -> None:
    """A job inside the Snakemake process runs beside other jobs' threads: there no helper forks
    (forked_iter, the scoring runner's parts, the MAT reader's sandbox), and the results are the
    same; another thread meanwhile forks as before, and the thread forks again once it is out."""
    import threading

    from regionbench.core import forked
    from regionbench.scoring import runner

    seen: dict[str, list[int]] = {}
    with forked.unforked():
        assert not forked.may_fork()
        seen["here"] = forked_map(lambda _: os.getpid(), range(4), workers=2)
        seen["runner"] = list(runner.parts(lambda _: os.getpid(), list(range(4)), cores=2, forked=True))
        other = threading.Thread(
            target=lambda: seen.setdefault("other", forked_map(lambda _: os.getpid(), range(4), 2))
        )
        other.start()
        other.join()
    assert seen["here"] == seen["runner"] == [os.getpid()] * 4
    assert os.getpid() not in seen["other"]
    assert forked.may_fork() and os.getpid() not in forked_map(lambda _: os.getpid(), range(4), workers=2)
