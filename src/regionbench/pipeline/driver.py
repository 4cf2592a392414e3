"""Snakemake run under ``regionbench build``: its standard error (and its jobs') relayed as it
comes, and an interrupt (Ctrl-C, SIGINT to the build's process group or to ``regionbench``
alone, SIGTERM, SIGHUP) answered with one line.

Snakemake starts with every signal at its default whatever this process was started with (a
background job of a shell without job control starts with SIGINT ignored, and a child would
inherit that: Snakemake went on to the end). It stays in the build's process group, so a
terminal's Ctrl-C or a signal to the group reaches it, its jobs and this process at once, and
SIGKILL to the group ends them all. Whatever reached this process, it also sends Snakemake
SIGINT (beside a Ctrl-C, a second one while it stops: it stops all the same), so a signal to
``regionbench`` alone stops the build too. (Not SIGTERM: Snakemake's graceful stop can hang
while it updates a checkpoint's jobs.) Snakemake marks the running
jobs incomplete (a rerun resumes them), and each job interrupted mid-import prints its own
traceback, Snakemake its ``RuleException`` and ``WorkflowError``, some thirty lines. Relayed
through here, all of that is dropped from the moment the interrupt arrives; the build waits for
Snakemake to finish stopping (a second interrupt kills it) and says one line.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

from regionbench.core import children

ERASE_LINE = "\r\x1b[2K"  # a terminal's status line, gone


def live(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that gets a status line redrawn in place (not a dumb
    one, not CI, which asks for plain lines even on a terminal)."""
    return stream.isatty() and os.environ.get("TERM", "") != "dumb" and "CI" not in os.environ


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
POLL = 0.05  # seconds between the main thread's looks: where a signal's Python handler runs
# Seconds what the command says is held before it is shown: the thread that takes an interrupt
# may get the processor after the relaying one on a loaded machine, and what an interrupted job
# printed meanwhile is then dropped with the rest.
HOLD = 0.5


def run(cmd: Sequence[str], stream: TextIO, is_live: bool, **popen: Any) -> int:
    """Run ``cmd`` (``popen``: ``subprocess.Popen``'s options), its standard error relayed to
    ``stream``; its exit code. An interrupt (SIGINT, or SIGTERM or SIGHUP to this process,
    passed on to the command) silences the relay, waits for the command to stop (a second one
    kills it), clears a live status line and raises ``KeyboardInterrupt``.

    The main thread blocks the signals while it waits, so the kernel gives them to another
    thread of this process, whose C handler writes the signal's number to a pipe the relay
    watches (``signal.set_wakeup_fd``). What the command says is held ``HOLD`` seconds before it
    is written, and dropped when the number comes first: the words of jobs interrupted with it
    never reach ``stream``."""
    quiet, ended = threading.Event(), threading.Event()
    started: list[subprocess.Popen[bytes]] = []

    def interrupted(signum: int, _frame: object) -> None:
        quiet.set()
        if started:  # Snakemake's Ctrl-C, whether the signal reached it or this process alone
            with contextlib.suppress(ProcessLookupError):
                started[0].send_signal(signal.SIGINT)
        raise KeyboardInterrupt

    # The handlers first: a caught signal is at its default in the child (an ignored one stays
    # ignored across exec). The command before any mask: it would inherit the mask too.
    previous = {s: signal.signal(s, interrupted) for s in SIGNALS}
    try:
        proc = subprocess.Popen(
            cmd, stderr=subprocess.PIPE, preexec_fn=children.dies_with(os.getpid(), signal.SIGINT), **popen
        )
    except BaseException:
        for s, handler in previous.items():
            signal.signal(s, handler)
        raise
    started.append(proc)
    assert proc.stderr is not None
    out = getattr(stream, "buffer", None)
    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    before = signal.set_wakeup_fd(wake)

    def interrupted_yet() -> bool:
        """Whether a signal has arrived (its number waits in ``woken``)."""
        if select.select([woken], [], [], 0)[0]:
            os.read(woken, 512)
            quiet.set()
        return quiet.is_set()

    def relay() -> None:
        assert proc.stderr is not None
        pipe = proc.stderr.fileno()
        held: collections.deque[tuple[float, bytes]] = collections.deque()  # (when it may be written, bytes)
        try:
            while True:
                wait = max(0.0, held[0][0] - time.monotonic()) if held else None
                ready, _, _ = select.select([pipe, woken], [], [], wait)
                if interrupted_yet():
                    held.clear()
                if pipe in ready:
                    chunk = os.read(pipe, 65536)
                    if not chunk:
                        break
                    if not quiet.is_set():  # read on when quiet, so the command never blocks on a full pipe
                        held.append((time.monotonic() + HOLD, chunk))
                while held and held[0][0] <= time.monotonic() and not interrupted_yet():
                    write(held.popleft()[1])
            while held and not interrupted_yet():  # the command has ended: the rest, at once
                write(held.popleft()[1])
        finally:
            ended.set()

    def write(chunk: bytes) -> None:
        if out is not None:
            out.write(chunk)
        else:
            stream.write(chunk.decode(errors="replace"))
        stream.flush()

    relaying = threading.Thread(target=relay, name="snakemake-stderr", daemon=True)
    relaying.start()  # with the signals unblocked: the thread the kernel gives them to
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        while not ended.wait(POLL):  # Python runs a signal's handler here, in the main thread
            pass
        while proc.poll() is None:  # its standard error closed: it is ending
            time.sleep(POLL)
        code = proc.returncode
    except KeyboardInterrupt:
        try:
            while proc.poll() is None:
                time.sleep(POLL)
        except KeyboardInterrupt:  # asked twice: no more waiting
            proc.kill()
            proc.wait()
        if is_live:
            stream.write(ERASE_LINE)
            stream.flush()
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for s, handler in previous.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(before)
        relaying.join(timeout=5)
        if not relaying.is_alive():
            os.close(woken)
            os.close(wake)
    return code
