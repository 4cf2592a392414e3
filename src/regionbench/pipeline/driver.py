"""Snakemake run under ``regionbench build``: its standard error (and its jobs') relayed as it
comes, and an interrupt (Ctrl-C, or SIGINT to the build's process group) answered with one line.

On Ctrl-C the terminal signals every process of the build at once: Snakemake stops and marks
the running jobs incomplete (a rerun resumes them), and each job interrupted mid-import prints
its own traceback, Snakemake its ``RuleException`` and ``WorkflowError``, some thirty lines.
Relayed through here, all of that is dropped from the moment the interrupt arrives; the build
waits for Snakemake to finish stopping (a second Ctrl-C kills it) and says one line.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
from collections.abc import Sequence
from typing import Any, TextIO

ERASE_LINE = "\r\x1b[2K"  # a terminal's status line, gone


def live(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that gets a status line redrawn in place (not a dumb
    one, not CI, which asks for plain lines even on a terminal)."""
    return stream.isatty() and os.environ.get("TERM", "") != "dumb" and "CI" not in os.environ


def run(cmd: Sequence[str], stream: TextIO, is_live: bool, **popen: Any) -> int:
    """Run ``cmd`` (``popen``: ``subprocess.Popen``'s options), its standard error relayed to
    ``stream``; its exit code. An interrupt (SIGINT, or SIGTERM or SIGHUP to this process,
    passed on to the command) silences the relay, waits for the command to stop (a second one
    kills it), clears a live status line and raises ``KeyboardInterrupt``."""
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, **popen)
    assert proc.stderr is not None
    quiet = threading.Event()
    out = getattr(stream, "buffer", None)
    # The signal's number is written here the moment it arrives (C level, before any Python
    # handler runs): the relay falls silent before an interrupted job's words can reach it.
    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    before = signal.set_wakeup_fd(wake)

    def relay() -> None:
        assert proc.stderr is not None
        pipe = proc.stderr.fileno()
        while True:
            ready, _, _ = select.select([pipe, woken], [], [])
            if woken in ready:
                quiet.set()
                os.read(woken, 512)
            if pipe not in ready:
                continue
            chunk = os.read(pipe, 65536)
            if not chunk:
                return
            if quiet.is_set():
                continue  # read on, so the command never blocks on a full pipe
            if out is not None:
                out.write(chunk)
            else:
                stream.write(chunk.decode(errors="replace"))
            stream.flush()

    def interrupted(signum: int, _frame: object) -> None:
        quiet.set()  # first, before anything the interrupt makes them print reaches the screen
        if signum != signal.SIGINT:  # a terminal's Ctrl-C reached them too; these did not
            proc.send_signal(signal.SIGINT)
        raise KeyboardInterrupt

    relaying = threading.Thread(target=relay, name="snakemake-stderr", daemon=True)
    relaying.start()
    previous = {s: signal.signal(s, interrupted) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        try:
            proc.wait()
        except KeyboardInterrupt:  # asked twice: no more waiting
            proc.kill()
            proc.wait()
        if is_live:
            stream.write(ERASE_LINE)
            stream.flush()
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(before)
        relaying.join(timeout=5)
        if not relaying.is_alive():
            os.close(woken)
            os.close(wake)
    return code
