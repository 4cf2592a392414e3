"""Independent pieces of one job on several cores, in forked worker processes.

A job's pieces (a release's tables to hash, its split files to write) are often closures over
what the job has loaded, which cannot be pickled to a spawned process. Forked workers inherit
them: only each piece's index goes to a worker and only its result comes back. Results come
back in the order of the pieces, so the job's output does not depend on the number of workers.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_WORK: list[Callable[[int], object]] = []  # the running map's piece function, inherited by its workers


def _piece(index: int) -> object:
    return _WORK[-1](index)


def forked_map(function: Callable[[T], R], items: Sequence[T], workers: int = 1) -> list[R]:
    """``[function(item) for item in items]``, computed by up to ``workers`` forked processes.

    Parameters: ``function`` and ``items`` need not pickle (the workers inherit them); each
    result must. With ``workers`` <= 1 or fewer than two items, everything runs here. Pieces are
    handed out in ``items`` order as workers free up, so the largest pieces should come first.
    Returns the results in ``items`` order. An exception raised by a piece is raised here.
    """
    if workers <= 1 or len(items) < 2:
        return [function(item) for item in items]
    _WORK.append(lambda index: function(items[index]))
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(workers, len(items)), mp_context=context) as pool:
            return list(pool.map(_piece, range(len(items))))
    finally:
        _WORK.pop()
