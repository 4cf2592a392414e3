"""A child process that does not outlive the process that started it.

On Linux the kernel sends a child a signal of its choosing when its parent dies
(``PR_SET_PDEATHSIG``), however the parent ended (SIGKILL, the out-of-memory killer): a
``regionbench build`` or an ``evaluate --executor`` killed outright leaves no Snakemake running
in the background.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterable

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def dies_with(parent: int, death: int, unblocked: Iterable[int] = ()) -> Callable[[], None] | None:
    """What a child runs before its program starts (``subprocess.Popen``'s ``preexec_fn``): the
    ``unblocked`` signals let through (a parent that holds them while it forks passes its mask
    on), and, on Linux, the kernel asked for ``death`` when ``parent`` dies; a parent already
    gone (it died while the child was forked) ends the child at once, exit 128 + ``death``.
    None elsewhere and with nothing to do."""
    wanted = set(unblocked)
    linux = sys.platform.startswith("linux")
    if not linux and not wanted:
        return None

    def prepare() -> None:
        if wanted:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, wanted)
        if linux:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, death, 0, 0, 0)
            if os.getppid() != parent:
                os._exit(128 + death)

    return prepare
