"""A build a person can follow: Snakemake's job events as a few lines (docs/workflow.md).

``BuildProgress`` is fed the workflow's events (the jobs planned per stage, each job's start
and end, failures, warnings) by the Snakemake logger plugin ``regionbench``
(``snakemake_logger_plugin_regionbench``) and writes one line per finished stage: jobs done
of the total, elapsed time and an ETA: from ``CostModel``, what each stage's jobs took in this
project's last build of the dataset on this machine, where it knows every stage left; else
naive (the wall time per finished job times the jobs left). On a terminal a status line below them shows the same live, redrawn in place every
second; anywhere else (CI, a pipe, a file) only plain lines are written, with no control
characters, and a stage that runs long gets a line every ``QUIET`` seconds (what runs, for how
long), so a log never looks stalled. Snakemake's own report of every job is in its log file and, with
``regionbench build --verbose``, on the screen.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TextIO

# Snakemake's target rule: a job that only gathers the release's files.
TARGET_RULE = "all"
QUIET = 30.0  # seconds a plain log may go without a line while jobs run
TICK = 1.0  # seconds between the ticker's looks (``BuildProgress.start_ticking``)
# Load (runnable processes, the last minute) over the machine's cores beyond which an ETA is not
# given: the build's own jobs and Snakemake make about one a core, more is other work.
BUSY = 1.5
REFERENCE = Path(str(resources.files("regionbench") / "data" / "timings" / "reference.json"))


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) of a duration in seconds."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


# The stages the running workflow's checkpoints will not add (``never_join``): the workflow says
# so as Snakemake parses it, and the logger, in the same process, reads them when it plans.
_NEVER_JOIN: set[str] = set()


def never_join(stages: Iterable[str]) -> None:
    """Tell this process's build progress that the workflow's checkpoints will not add
    ``stages`` (the classifiers where the config or the layout does not want them), so the
    forecast holds none of them."""
    _NEVER_JOIN.clear()
    _NEVER_JOIN.update(stages)


@dataclass(frozen=True)
class CostModel:
    """What a build's stages cost on this machine the last time: each stage's mean wall
    seconds a job (``seconds``), its number of jobs (``jobs``), the stages whose jobs all
    started after the checkpoints had run (``later``: those a checkpoint adds to a plan) and how
    many jobs ran at once on average (``parallelism``: a job that forks its own workers counts
    for more than one), read from the Snakemake benchmark files of an earlier build (``read``)."""

    seconds: Mapping[str, float]
    jobs: Mapping[str, int]
    later: frozenset[str] = frozenset()
    parallelism: float = 1.0  # the jobs' summed wall time over the build's: how many ran at once
    named: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # stage -> job name -> seconds

    source: str = "the last build here"  # where the costs come from, as a forecast names it

    @classmethod
    def read(cls, folder: str | Path, checkpoints: frozenset[str] = frozenset()) -> CostModel | None:
        """The model of the benchmark files under ``folder`` (``logs/<dataset>/benchmarks``: a
        stage's file, or its folder of one file a job; a file's time is when its job ended), or
        None where there are none."""
        jobs: list[tuple[str, str | None, float, float]] = []  # stage, job name, seconds, end
        root = Path(folder)
        for path in sorted(root.rglob("*.tsv")) if root.is_dir() else []:
            try:
                header, values = path.read_text().splitlines()[:2]
                row = dict(zip(header.split("\t"), values.split("\t"), strict=True))
                seconds, end = float(row["s"]), path.stat().st_mtime
            except (OSError, ValueError, KeyError):
                continue  # a file cut short: the stage is unknown, not wrong
            parts = path.relative_to(root).parts
            # a stage of one job a wildcard value: ingest/00.tsv, classify/rf.tsv
            jobs.append((parts[0].removesuffix(".tsv"), path.stem if len(parts) == 2 else None, seconds, end))
        return cls.of(jobs, checkpoints)

    @classmethod
    def reference(cls, checkpoints: frozenset[str] = frozenset()) -> CostModel:
        """The model of the reference build shipped with the package (``data/timings/reference.json``:
        the demo's 300 images, 2 cores, each job's stage, start and end in seconds): a first build's
        forecast, when this project has no build of its own to go by. The stages the demo has not
        (agreement, a tree's own vocabulary, the reference methods) come from the builds the file
        records ``more`` of, each stage from the first that ran it, so that every stage a plan
        can hold is forecast."""
        recorded = json.loads(REFERENCE.read_text())
        jobs = [(stage, None, end - start, end) for stage, start, end in recorded["jobs"]]
        model = cls.of(jobs, checkpoints)
        assert model is not None
        seconds, counts = dict(model.seconds), dict(model.jobs)
        for build in recorded.get("more", []):
            other = cls.of([(stage, None, end - start, end) for stage, start, end in build["jobs"]], frozenset())
            if other is None:
                continue
            for stage in set(other.seconds) - set(seconds):
                seconds[stage], counts[stage] = other.seconds[stage], other.jobs[stage]
        sources = [recorded["source"], *(b["source"] for b in recorded.get("more", []))]
        said = sources[0] + (f", other stages by {' and '.join(sources[1:])}" if len(sources) > 1 else "")
        return dataclasses.replace(model, seconds=seconds, jobs=counts, source=said)

    @classmethod
    def of(cls, jobs: Sequence[tuple[str, str | None, float, float]], checkpoints: frozenset[str]) -> CostModel | None:
        """The model of finished ``jobs`` (stage, its name or None, wall seconds, when it ended)."""
        times: dict[str, list[float]] = {}
        spans: dict[str, list[tuple[float, float]]] = {}
        named: dict[str, dict[str, float]] = {}
        for stage, name, seconds, end in jobs:
            times.setdefault(stage, []).append(seconds)
            if name is not None:
                named.setdefault(stage, {})[name] = seconds
            spans.setdefault(stage, []).append((end - seconds, end))
        if not times:
            return None
        ran = [end for stage in checkpoints & set(spans) for _, end in spans[stage]]
        later = frozenset(s for s, found in spans.items() if ran and min(b for b, _ in found) >= max(ran))
        every = [span for found in spans.values() for span in found]
        makespan = max(e for _, e in every) - min(b for b, _ in every)
        parallelism = sum(e - b for b, e in every) / makespan if makespan > 0 else 1.0
        return cls(
            {k: statistics.fmean(v) for k, v in times.items()},
            {k: len(v) for k, v in times.items()},
            later,
            max(parallelism, 1.0),
            named,
        )

    def joining(self, pending: bool, never_join: frozenset[str] = frozenset()) -> frozenset[str]:
        """The stages a checkpoint may still add to a plan while ``pending``: those it added to the
        last build's (``later``) but the ones this workflow will not add (``never_join``)."""
        return self.later - never_join if pending else frozenset()

    def stage_work(self, stage: str, jobs: int) -> float | None:
        """Seconds of work ``jobs`` jobs of ``stage`` take (each named job the last build timed at
        its own cost, the longest first, the rest at the stage's mean); None for an unknown stage."""
        if stage not in self.seconds:
            return None
        known = sorted(self.named.get(stage, {}).values(), reverse=True)[:jobs]
        return sum(known) + self.seconds[stage] * (jobs - len(known))

    def remaining(
        self,
        planned: Mapping[str, int],
        done: Mapping[str, set[str]],
        running: Mapping[str, dict[str, float]],
        cores: int,
        pending: bool = False,
        never_join: frozenset[str] = frozenset(),
    ) -> float | None:
        """Seconds left: the work of every job not yet done, each stage's jobs as planned (and,
        while jobs may still join the plan, ``pending``, as many as the last build ran of the
        stages a checkpoint adds, ``later``), a running job's less what it has run (``running``:
        stage -> each running job's seconds so far), shared as the last build shared its jobs
        (``parallelism``, at most ``cores``) and never less than the longest job left. ``done``
        and ``running`` name each stage's jobs (their wildcard values: ``rf``, ``00``), so a job
        the last build timed counts at its own cost, at its stage's mean otherwise; ``never_join``
        the stages this workflow's checkpoints will not add. None when a stage left is unknown."""
        work, longest = 0.0, 0.0
        joining = self.joining(pending, never_join)
        for stage in set(planned) | joining:
            expected = max(planned.get(stage, 0), self.jobs.get(stage, 0) if stage in joining else 0)
            finished, ran = done.get(stage, set()), running.get(stage, {})
            left = expected - len(finished)
            if left <= 0:
                continue
            if stage not in self.seconds:
                return None
            mean, own = self.seconds[stage], self.named.get(stage, {})
            rest = [max(own.get(name, mean) - s, 0.0) for name, s in ran.items()]
            waiting = max(left - len(ran), 0)
            known = sorted((c for n, c in own.items() if n not in finished and n not in ran), reverse=True)
            rest += known[:waiting] + [mean] * max(waiting - len(known), 0)
            work += sum(rest)
            longest = max(longest, *rest)
        return max(work / min(self.parallelism, max(cores, 1)), longest)


class BuildProgress:
    """The account of one build, written to ``stream`` as its events arrive.

    Parameters: ``stream`` the text stream to write; ``live`` whether to keep a status line
    redrawn in place (a terminal), cut to the terminal's width so it never wraps; ``now`` the
    clock, seconds (``time.monotonic``; tests pass their own); ``model`` what the stages cost
    the last time and ``cores`` the jobs run at once, for the ETA; ``forecast`` the costs the
    plan is forecast by before the first job (the last build's, else the reference build's:
    ``CostModel.reference``); ``checkpoints`` the workflow's
    checkpoint rules: a plan that holds one grows as the jobs it adds are scheduled, so its total
    is shown as what it is, a lower bound (``17+``), until the last job is scheduled. ``load`` the
    machine's load (the last minute's), ``machine_cores`` its cores: above ``BUSY`` times as many
    runnable processes as cores, the line gives the reason in place of an ETA.
    """

    def __init__(
        self,
        stream: TextIO,
        live: bool,
        now: Callable[[], float] = time.monotonic,
        checkpoints: frozenset[str] = frozenset(),
        model: CostModel | None = None,
        cores: int = 1,
        forecast: CostModel | None = None,
        load: Callable[[], float] = lambda: os.getloadavg()[0],
        machine_cores: int | None = None,
    ) -> None:
        self.stream, self.live, self.now, self.checkpoints = stream, live, now, checkpoints
        self.load, self.machine_cores = load, machine_cores or os.cpu_count() or 1
        self.model, self.cores = model, cores
        self.forecast_model = forecast if forecast is not None else model
        self.began: dict[int, float] = {}  # a running job's start
        self.name_of: dict[int, str] = {}  # a job's wildcard values ("rf", "00"), for the cost model
        self.finished_names: dict[str, set[str]] = {}
        self.width = shutil.get_terminal_size().columns - 1
        self.start = now()
        self.planned: dict[str, int] = {}
        self.done: dict[str, int] = {}
        self.rule_of: dict[int, str] = {}
        self.scheduled: dict[str, int] = {}
        self.running: set[int] = set()
        self.status = ""  # the status line on screen, "" when none
        self.target_scheduled = False  # the target job (``TARGET_RULE``), scheduled last
        # The stages this workflow's checkpoints will not add (the classifiers, where the config or
        # the layout does not want them): ``never_join``, read when the plan arrives.
        self.never_join: frozenset[str] = frozenset()
        self.last_line = self.start  # when the last permanent line was written
        self.lock = threading.RLock()  # events and the ticker write from different threads
        self.stopped = threading.Event()

    # -- events ----------------------------------------------------------------------------
    def plan(self, jobs: dict[str, int], dry_run: bool = False) -> None:
        """The jobs to run per stage (Snakemake's job stats, ``total`` included)."""
        self.planned = {rule: n for rule, n in jobs.items() if rule not in ("total", TARGET_RULE)}
        self.never_join = frozenset(_NEVER_JOIN)  # as the workflow said while Snakemake parsed it
        work = self.stage_costs()
        if dry_run:  # what a dry run is for: the jobs of every stage, one stage a line
            self._line(f"would run {self.total} jobs in {len(self.planned)} stages:")
            width = max(map(len, self.planned), default=0)
            for rule, n in self.planned.items():
                cost = f"  ~{clock(work[rule])}" if rule in work else ""
                self._line(f"  {rule:<{width}}  {n:>3}{cost}")
        else:
            at_least = "at least " if self.pending else ""
            self._line(f"running {at_least}{self.total} jobs in {len(self.planned)} stages")
        if line := self.forecast(work):
            self._line(line)

    def stage_costs(self) -> dict[str, float]:
        """Seconds of work each planned stage is forecast to take (``forecast_model``), for the
        stages it knows; the stages a checkpoint will add as many jobs as the model ran of them."""
        model = self.forecast_model
        if model is None or not self.planned:
            return {}
        joining = model.joining(self.pending, self.never_join)
        costs = {}
        for stage in [*self.planned, *sorted(joining - set(self.planned))]:
            jobs = max(self.planned.get(stage, 0), model.jobs.get(stage, 0) if stage in joining else 0)
            if (work := model.stage_work(stage, jobs)) is not None:
                costs[stage] = work
        return costs

    def forecast(self, work: Mapping[str, float]) -> str | None:
        """What the plan will roughly cost, before its first job: the wall time on ``cores``
        (``CostModel.remaining``) and the costliest stages' work, with where the costs come from
        and the stages it cannot tell."""
        model = self.forecast_model
        if model is None or not work:
            return None
        known = {stage: n for stage, n in self.planned.items() if stage in work}
        wall = model.remaining(known, {}, {}, self.cores, self.pending, self.never_join)
        costliest = sorted(work.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{stage} {clock(s)}" for stage, s in costliest[:4] if s >= 1)
        rest = sum(s for _, s in costliest[4:])
        shown += f", the rest {clock(rest)}" if rest >= 1 and shown else ""
        unknown = sorted(set(self.planned) - set(work))
        total = f"about {clock(wall)} on {self.cores} core{'s' * (self.cores != 1)}" if wall is not None else "unknown"
        said = f"forecast by {model.source}: {total}" + (f" ({shown})" if shown else "")
        return said + (f"; not forecast: {', '.join(unknown)}" if unknown else "")

    def job_info(self, jobid: int, rule: str, name: str | None = None) -> None:
        """A job was scheduled. A stage that a checkpoint added after the plan (the classifiers,
        once the subsets exist) grows the plan by each job it schedules."""
        if rule == TARGET_RULE and self.planned:
            self.target_scheduled = True
        if jobid not in self.rule_of and rule != TARGET_RULE:
            self.scheduled[rule] = self.scheduled.get(rule, 0) + 1
            self.planned[rule] = max(self.planned.get(rule, 0), self.scheduled[rule])
        self.rule_of[jobid] = rule
        self.name_of[jobid] = name if name is not None else f"#{jobid}"

    def started(self, jobids: list[int]) -> None:
        """Jobs began to run."""
        self.running.update(jobids)
        self.began.update({j: self.now() for j in jobids if j not in self.began})
        self._redraw()

    def finished(self, jobid: int) -> None:
        """A job ended well; a stage's line when it was the stage's last."""
        self.running.discard(jobid)
        self.began.pop(jobid, None)
        rule = self.rule_of.get(jobid)
        if rule is None or rule == TARGET_RULE:
            return
        self.done[rule] = self.done.get(rule, 0) + 1
        self.finished_names.setdefault(rule, set()).add(self.name_of.get(jobid, f"#{jobid}"))
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
        left = self.eta()
        eta = f", ETA {clock(left)}" if left else ""
        if left and (load := self.load()) > BUSY * self.machine_cores:
            # Other work shares the cores: the jobs' measured times would promise too early.
            eta = f", no ETA: the machine is busy (load {load:.1f} on {self.machine_cores} cores)"
        return f"{clock(elapsed)} elapsed{eta}"

    def eta(self) -> float | None:
        """Seconds left: the cost model's where it knows every stage left, else the wall time
        per finished job times the jobs left (finished jobs per second of wall time already
        count the jobs that ran side by side); None before the first job ends or after the last."""
        done, left = self.finished_jobs, self.total - self.finished_jobs
        if self.model is not None and self.planned:
            running: dict[str, dict[str, float]] = {}
            for jobid, began in self.began.items():
                name = self.name_of.get(jobid, f"#{jobid}")
                running.setdefault(self.rule_of.get(jobid, "?"), {})[name] = self.now() - began
            modelled = self.model.remaining(
                self.planned, self.finished_names, running, self.cores, self.pending, self.never_join
            )
            if modelled is not None:
                return modelled if modelled > 0 else None
        return (self.now() - self.start) / done * left if done and left else None

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
