"""Independent pieces of one job on several cores, in forked worker processes.

A job's pieces (a release's tables to hash, its split files to write) are often closures over
what the job has loaded, which cannot be pickled to a spawned process. Forked workers inherit
them: only each piece's index goes to a worker and only its result comes back. Results come
back in the order of the pieces, so the job's output does not depend on the number of workers.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar, cast

from regionbench.core.errors import InputError

T = TypeVar("T")
R = TypeVar("R")

# Each running map's piece function by its number, inherited by the workers it forks.
_WORK: dict[int, Callable[[int], object]] = {}
_NUMBERS = itertools.count()


# Set in a thread whose process runs other threads' work (a job inside the Snakemake process):
# a child forked there inherits the locks those threads held at that moment, and can wait on one
# for ever (seen: a baselines worker forked beside another job's thread). There, work runs here.
_SHARED = threading.local()


@contextlib.contextmanager
def unforked() -> Iterator[None]:
    """In this thread, until the block ends: ``may_fork()`` is False, so ``forked_iter`` and the
    other forking helpers do their pieces here, one after another (the same results, in order)."""
    before = getattr(_SHARED, "unforked", False)
    _SHARED.unforked = True
    try:
        yield
    finally:
        _SHARED.unforked = before


def may_fork() -> bool:
    """Whether this thread may fork worker processes: the system can fork, and the thread is not
    inside ``unforked``."""
    return "fork" in multiprocessing.get_all_start_methods() and not getattr(_SHARED, "unforked", False)


class WorkerDied(InputError):
    """A worker process ended without a result: the system killed it (out of memory, most often)."""


def _piece(number: int, index: int) -> object:
    return _WORK[number](index)


def forked_iter(function: Callable[[T], R], items: Sequence[T], workers: int = 1) -> Iterator[R]:
    """``function(item)`` for each of ``items``, in order, computed by up to ``workers`` forked
    processes as the caller reads the results (so a result is held only until it is read).

    Parameters: ``function`` and ``items`` need not pickle (the workers inherit them); each
    result must. With ``workers`` <= 1, fewer than two items or no forking (``may_fork``),
    everything runs here. Pieces are
    handed out in ``items`` order as workers free up, so the largest pieces should come first.
    An exception raised by a piece is raised here, and ``WorkerDied`` when a worker ends without
    a result; a caller that stops reading cancels the pieces not yet started.
    """
    if workers <= 1 or len(items) < 2 or not may_fork():
        yield from map(function, items)
        return
    number = next(_NUMBERS)
    _WORK[number] = lambda index: function(items[index])
    pool = ProcessPoolExecutor(min(workers, len(items)), mp_context=multiprocessing.get_context("fork"))
    try:
        yield from cast(Iterator[R], pool.map(_piece, [number] * len(items), range(len(items))))
    except BrokenProcessPool:
        raise WorkerDied(
            "a worker process of this job died without a result (killed by the system: out of memory?); "
            "give the job more memory, or fewer cores (--cores) so that fewer workers run at once"
        ) from None
    finally:
        pool.shutdown(cancel_futures=True)
        del _WORK[number]


def forked_map(function: Callable[[T], R], items: Sequence[T], workers: int = 1) -> list[R]:
    """``forked_iter`` as a list: ``[function(item) for item in items]`` on up to ``workers``
    processes."""
    return list(forked_iter(function, items, workers))
