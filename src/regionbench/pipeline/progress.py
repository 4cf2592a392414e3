"""A build a person can follow: Snakemake's job events as a few lines (docs/workflow.md).

``BuildProgress`` is fed the workflow's events (the jobs planned per stage, each job's start
and end, failures, warnings) by the Snakemake logger plugin ``regionbench``
(``snakemake_logger_plugin_regionbench``) and writes one line per finished stage: jobs done
of the total, elapsed time and a naive ETA (the wall time per finished job times the jobs
left). On a terminal a status line below them shows the same live, redrawn in place every
second; anywhere else (CI, a pipe, a file) only plain lines are written, with no control
characters, and a stage that runs long gets a line every ``QUIET`` seconds (what runs, for how
long), so a log never looks stalled. Snakemake's own report of every job is in its log file and, with
``regionbench build --verbose``, on the screen.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from typing import TextIO

# Snakemake's target rule: a job that only gathers the release's files.
TARGET_RULE = "all"
QUIET = 30.0  # seconds a plain log may go without a line while jobs run
TICK = 1.0  # seconds between the ticker's looks (``BuildProgress.start_ticking``)


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) of a duration in seconds."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class BuildProgress:
    """The account of one build, written to ``stream`` as its events arrive.

    Parameters: ``stream`` the text stream to write; ``live`` whether to keep a status line
    redrawn in place (a terminal), cut to the terminal's width so it never wraps; ``now`` the
    clock, seconds (``time.monotonic``; tests pass their own); ``checkpoints`` the workflow's
    checkpoint rules: a plan that holds one grows as the jobs it adds are scheduled, so its total
    is shown as what it is, a lower bound (``17+``), until the last job is scheduled.
    """

    def __init__(
        self,
        stream: TextIO,
        live: bool,
        now: Callable[[], float] = time.monotonic,
        checkpoints: frozenset[str] = frozenset(),
    ) -> None:
        self.stream, self.live, self.now, self.checkpoints = stream, live, now, checkpoints
        self.width = shutil.get_terminal_size().columns - 1
        self.start = now()
        self.planned: dict[str, int] = {}
        self.done: dict[str, int] = {}
        self.rule_of: dict[int, str] = {}
        self.scheduled: dict[str, int] = {}
        self.running: set[int] = set()
        self.status = ""  # the status line on screen, "" when none
        self.target_scheduled = False  # the target job (``TARGET_RULE``), scheduled last
        self.last_line = self.start  # when the last permanent line was written
        self.lock = threading.RLock()  # events and the ticker write from different threads
        self.stopped = threading.Event()

    # -- events ----------------------------------------------------------------------------
    def plan(self, jobs: dict[str, int], dry_run: bool = False) -> None:
        """The jobs to run per stage (Snakemake's job stats, ``total`` included)."""
        self.planned = {rule: n for rule, n in jobs.items() if rule not in ("total", TARGET_RULE)}
        if dry_run:  # what a dry run is for: the jobs of every stage, one stage a line
            self._line(f"would run {self.total} jobs in {len(self.planned)} stages:")
            width = max(map(len, self.planned), default=0)
            for rule, n in self.planned.items():
                self._line(f"  {rule:<{width}}  {n}")
        else:
            at_least = "at least " if self.pending else ""
            self._line(f"running {at_least}{self.total} jobs in {len(self.planned)} stages")

    def job_info(self, jobid: int, rule: str) -> None:
        """A job was scheduled. A stage that a checkpoint added after the plan (the classifiers,
        once the subsets exist) grows the plan by each job it schedules."""
        if rule == TARGET_RULE and self.planned:
            self.target_scheduled = True
        if jobid not in self.rule_of and rule != TARGET_RULE:
            self.scheduled[rule] = self.scheduled.get(rule, 0) + 1
            self.planned[rule] = max(self.planned.get(rule, 0), self.scheduled[rule])
        self.rule_of[jobid] = rule

    def started(self, jobids: list[int]) -> None:
        """Jobs began to run."""
        self.running.update(jobids)
        self._redraw()

    def finished(self, jobid: int) -> None:
        """A job ended well; a stage's line when it was the stage's last."""
        self.running.discard(jobid)
        rule = self.rule_of.get(jobid)
        if rule is None or rule == TARGET_RULE:
            return
        self.done[rule] = self.done.get(rule, 0) + 1
        if self.done[rule] == self.planned.get(rule):
            n = self.planned[rule]
            self._line(f"[{self._count()}] {self._times()}  {rule} ({n} job{'s' * (n != 1)})")
        else:
            self._redraw()

    def failed(self, rule: str, logs: list[str]) -> None:
        """A job failed: its stage and the log files that say why."""
        where = f": see {', '.join(logs)}" if logs else ""
        self._line(f"failed: {rule}{where}")

    def message(self, text: str) -> None:
        """A warning or error of Snakemake's, shown as it is."""
        self._line(text.rstrip())

    def tick(self) -> None:
        """Time passed: the status line's clock redrawn (a terminal), or, in a plain log quiet for
        ``QUIET`` seconds while jobs run, a line saying what runs and for how long."""
        with self.lock:
            if self.stopped.is_set():  # closed while this tick waited: the screen stays clear
                return
            if self.live:
                self._redraw()
            elif self.running and self.planned and self.now() - self.last_line >= QUIET:
                self._line(f"[{self._count()}] {self._times()}  still running: {self._stages()}")

    def start_ticking(self, interval: float = TICK) -> None:
        """``tick`` every ``interval`` seconds on a daemon thread, until ``close``."""

        def ticking() -> None:
            while not self.stopped.wait(interval):
                self.tick()

        threading.Thread(target=ticking, name="build-progress", daemon=True).start()

    def close(self) -> None:
        self.stopped.set()
        with self.lock:
            self._clear()
            self.stream.flush()

    # -- state -----------------------------------------------------------------------------
    @property
    def total(self) -> int:
        return sum(self.planned.values())

    @property
    def finished_jobs(self) -> int:
        return sum(self.done.values())

    @property
    def pending(self) -> bool:
        """Whether jobs may still join the plan: it holds a checkpoint, and the target (the last
        job) is not yet scheduled. The jobs a checkpoint adds are announced as they are scheduled,
        a few at a time, well after the checkpoint itself has run."""
        return any(rule in self.checkpoints for rule in self.planned) and not self.target_scheduled

    def _count(self) -> str:
        """``done/total``, the total marked ``+`` while it is a lower bound (``pending``)."""
        total = f"{self.total}{'+' * self.pending}"
        return f"{self.finished_jobs:>{len(str(self.total))}}/{total}"

    def _times(self) -> str:
        elapsed = self.now() - self.start
        done, left = self.finished_jobs, self.total - self.finished_jobs
        # Finished jobs per second of wall time already count the jobs that ran side by side.
        eta = f", ETA {clock(elapsed / done * left)}" if done and left else ""
        return f"{clock(elapsed)} elapsed{eta}"

    # -- output ----------------------------------------------------------------------------
    def _line(self, text: str) -> None:
        """A permanent line, above the status line when there is one."""
        with self.lock:
            self._clear()
            self.stream.write(text + "\n")
            self.stream.flush()
            self.last_line = self.now()
            self._redraw()

    def _stages(self) -> str:
        """The stages of the running jobs, by name."""
        return ", ".join(sorted({self.rule_of.get(j, "?") for j in self.running} - {TARGET_RULE}))

    def _redraw(self) -> None:
        if not self.live or not self.planned:
            return
        stages = self._stages()
        status = f"[{self._count().lstrip()}] {self._times()}" + (f"  running: {stages}" if stages else "")
        status = status[: self.width]
        with self.lock:
            self._clear()
            self.stream.write(status)
            self.stream.flush()
            self.status = status

    def _clear(self) -> None:
        if self.status:
            self.stream.write("\r\x1b[2K")  # back to the line's start, erase it
            self.status = ""
