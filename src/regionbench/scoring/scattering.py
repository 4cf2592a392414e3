"""A run scored as jobs through Snakemake, on this machine or on a cluster: ``regionbench evaluate
--executor local|slurm --jobs N``.

Snakemake schedules and moves nothing but files in a shared work folder, and the runner does the
rest (``runner.scattered``). Each of the ``N`` part jobs runs the whole scoring with
the same settings. A stream whose parts every job has left is read back; at the first that lacks
some, the job makes and writes its share of that stream's batches, and its round ends. The
gathering then runs the same scoring from the parts alone: it writes the report, or says which
stream waits, and another round runs (one round a stream: the run, then each human ceiling).
Parts are added in batch order, so the report is the one process's, to the bit, for any ``N``.

The work folder holds ``run.json`` (what to score), ``parts/`` (each job's parts), ``report.pickle``
(the gathered report, as the gathering made it: its keys' types and order kept) and Snakemake's own state. Every machine that runs a job must see it at the
same path: on a cluster, a shared filesystem, as for a build. The workflow is ``data/scoring/Snakefile``.
For ``slurm``, the cluster profile is the project's ``config/profiles/slurm`` when scoring runs
inside a regionbench checkout or a workflow copy, the one a build on that cluster uses. Otherwise
the executor's own defaults apply.

    python -m regionbench.scoring.scattering WORK JOB             # one part job
    python -m regionbench.scoring.scattering WORK --gather OUT    # a round's gathering
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from regionbench.core import children
from regionbench.scoring.tasks._base import TaskError

EXECUTORS = ("local", "slurm")
SNAKEFILE = "data/scoring/Snakefile"
MAX_ROUNDS = 64  # a round a stream of the run: a task scores a few (the run, each human's ceiling)


def _plain(value: Any) -> Any:
    """A settings value as JSON: a path absolute (a job may run elsewhere), a tuple a list."""
    if isinstance(value, Path):
        return str(value.resolve())
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _needs(executor: str) -> None:
    """A ``TaskError`` unless Snakemake (and the executor's plugin) can be imported."""
    wanted = {"snakemake": "snakemake"}
    if executor == "slurm":
        wanted["snakemake_executor_plugin_slurm"] = "snakemake-executor-plugin-slurm"
    for module, package in wanted.items():
        if importlib.util.find_spec(module) is None:
            raise TaskError(
                f"--executor {executor}: needs {package}, which this install lacks; "
                "pip install 'regionbench[build]' (or score on one machine: leave out --executor)"
            )


def score(
    release: str,
    rev: str | None,
    verify: bool,
    predictions: Path,
    task: str,
    settings: Mapping[str, Any],
    by_source: bool,
    executor: str,
    jobs: int,
    cores: int | None = None,
    work: Path | None = None,
    project: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The report of ``predictions`` scored as ``task`` (``settings``: the task's, as given) by
    ``jobs`` part jobs and a gathering a round, every round in one run of Snakemake's
    ``executor`` (local: on ``cores`` cores at once, default every one). ``work``: the shared
    work folder (default: a new folder under the current one, removed once the report is read,
    or when a signal stops the run); ``project``: a workflow folder whose
    ``config/profiles/slurm`` a slurm run takes. A ``TaskError``, with the jobs' own lines or
    the tail of Snakemake's log, when a job fails."""
    if executor not in EXECUTORS:
        raise TaskError(f"--executor {executor}: use {' or '.join(EXECUTORS)}")
    if jobs < 1:
        raise TaskError(f"--jobs {jobs}: at least 1")
    _needs(executor)
    made = work is None
    # A stop signal from here on, the work folder made or not, ends as Ctrl-C does: jobs stopped,
    # the folder removed (a SIGTERM's default would leave both).
    with _terms_as_interrupt():
        folder = Path(tempfile.mkdtemp(prefix=".regionbench-scoring-", dir=Path.cwd())) if work is None else work
        folder = folder.resolve()
        try:
            return _scored(folder, release, rev, verify, predictions, task, settings, by_source, executor, jobs,
                           cores, project, progress or (lambda line: None))  # fmt: skip
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: every job has ended; nothing of the run is kept
            if made:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            if made and (folder / "report.pickle").is_file():
                shutil.rmtree(folder, ignore_errors=True)


def _scored(
    folder: Path, release: str, rev: str | None, verify: bool, predictions: Path, task: str,
    settings: Mapping[str, Any], by_source: bool, executor: str, jobs: int, cores: int | None,
    project: Path | None, say: Callable[[str], None],
) -> dict[str, Any]:  # fmt: skip
    """``score``'s run in ``folder``: its files written, Snakemake run once, the report read."""
    for stale in [folder / "parts", *folder.glob("round-*")]:  # an earlier run's are not this run's
        shutil.rmtree(stale, ignore_errors=True)
    (folder / "report.pickle").unlink(missing_ok=True)
    (folder / "parts").mkdir(parents=True)
    source = release if rev or not Path(release).exists() else str(Path(release).resolve())
    spec = {
        "release": source, "rev": rev, "verify": verify, "predictions": str(predictions.resolve()), "task": task,
        "settings": _plain(dict(settings)), "by_source": by_source, "jobs": jobs,
    }  # fmt: skip
    (folder / "run.json").write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    config = {"jobs": jobs, "python": sys.executable, "work": str(folder), "max_rounds": MAX_ROUNDS}
    (folder / "config.json").write_text(json.dumps(config))
    snakefile = resources.files("regionbench") / SNAKEFILE
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile), "--directory", str(folder),
           "--configfile", str(folder / "config.json"), "--forceall"]  # fmt: skip
    if executor == "slurm":
        profile = project / "config" / "profiles" / "slurm" if project is not None else None
        if profile is not None and (profile / "config.yaml").is_file():
            cmd += ["--profile", str(profile)]
        cmd += ["--executor", "slurm", "--jobs", str(jobs + 1)]
    else:
        from regionbench.scoring.tasks import available_cores

        cmd += ["--cores", str(min(cores or available_cores(), jobs))]
    where = "SLURM" if executor == "slurm" else "this machine"
    say(f"scoring as {jobs} jobs and a gathering through Snakemake on {where} (work folder {folder})")
    _snakemake(cmd, folder)
    rounds = len(list(folder.glob("round-*/gathered")))
    if rounds > 1:
        say(f"scored in {rounds} rounds: one a stream of the run")
    with (folder / "report.pickle").open("rb") as f:
        report: dict[str, Any] = pickle.load(f)
    return report


def _snakemake(cmd: list[str], folder: Path) -> None:
    """Snakemake's ``cmd`` run in ``folder`` in a process group of its own, its output in
    ``snakemake.log``; a ``TaskError`` with the jobs' own error lines when it fails. A stop
    signal here (Ctrl-C, SIGTERM: ``score`` takes both as ``KeyboardInterrupt``) stops the group,
    Snakemake and every job, before it goes on; the group dies with this process too
    (``PR_SET_PDEATHSIG``)."""
    import os
    import signal

    log = folder / "snakemake.log"
    snakemake: subprocess.Popen | None = None
    stops = {signal.SIGINT, signal.SIGTERM}
    with log.open("a") as out:
        try:
            # Held while Snakemake is forked: a stop raised inside the fork's own callbacks would
            # be swallowed there. Delivered as the mask comes back, Snakemake's handle in hand.
            before = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
            try:
                snakemake = subprocess.Popen(
                    cmd, stdout=out, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True,
                    preexec_fn=children.dies_with(os.getpid(), signal.SIGKILL, stops),
                )  # fmt: skip
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, before)
            code = snakemake.wait()
        except KeyboardInterrupt:
            if snakemake is not None:
                _stop(snakemake)
            raise
    if code != 0:
        said = _job_error(folder) or _lost_jobs(folder) or log.read_text().strip().splitlines()[-1:]
        raise TaskError(f"scoring as jobs failed ({'; '.join(said)}); Snakemake's log: {log}")


STOP_WAIT = 10.0  # seconds Snakemake has to stop its jobs on SIGINT before its group is killed


def _stop(snakemake: subprocess.Popen) -> None:
    """Snakemake's process group stopped: SIGINT (it cancels its jobs), then SIGKILL to whatever
    is left after ``STOP_WAIT`` seconds."""
    import os
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(snakemake.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        snakemake.wait(STOP_WAIT)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(snakemake.pid, signal.SIGKILL)
    snakemake.wait()


@contextlib.contextmanager
def _terms_as_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM (Ctrl-C, a ``timeout``, a scheduler, ``kill``) raised here as
    ``KeyboardInterrupt`` while the block runs, even where this process was started with SIGINT
    ignored (a background job of a shell without job control, a test runner's worker): the jobs
    run in a session of their own, which no terminal's Ctrl-C reaches. In the main thread only
    (elsewhere signals are not Python's to handle)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = {stop: signal.signal(stop, interrupt) for stop in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for stop, handler in before.items():
            signal.signal(stop, handler)


def _round(folder: Path) -> int:
    """The number of a round's folder (``round-N``, the scoring Snakefile's)."""
    return int(folder.name.removeprefix("round-"))


def _lost_jobs(folder: Path) -> list[str]:
    """One line for the jobs of the last round that ended without a result or a word (killed:
    out of memory, most often)."""
    rounds = sorted(folder.glob("round-*"), key=_round)
    if not rounds or (rounds[-1] / "gathered").exists():
        return []
    config = json.loads((folder / "config.json").read_text())
    lost = [job for job in range(config["jobs"]) if not (rounds[-1] / f"job-{job}.done").exists()]
    if not lost:
        return [f"the gathering of {rounds[-1].name} ended without a result (killed by the system: out of memory?)"]
    return [
        f"job {', '.join(map(str, lost))} of {rounds[-1].name} ended without a result (killed by the system: "
        "out of memory?); give the jobs more memory or fewer images each (more --jobs)"
    ]


def _job_error(folder: Path) -> list[str]:
    """The one-line errors the jobs wrote (``error-*.txt``), in job order."""
    return [p.read_text().strip() for p in sorted((folder / "parts").glob("error-*.txt"))]


def run_job(folder: Path, job: int | None, gathered: Path | None = None) -> None:
    """One job of the run in ``folder`` (``run.json``): part ``job``, or the gathering (None),
    whose report goes to ``report.pickle`` and whose output ``gathered`` says ``done``, or the
    number of the stream that waits for another round (a round that moved no stream forward is
    an error: it would loop for ever)."""
    from regionbench.release import loader
    from regionbench.scoring import runner, tasks

    spec = json.loads((folder / "run.json").read_text())
    data = loader.load(spec["release"], spec["rev"], verify=spec["verify"])
    chosen = tasks.get(spec["task"]).Settings.from_report(spec["settings"])
    given = {k: getattr(chosen, k) for k in spec["settings"]}
    try:
        with runner.scattered(folder / "parts", job, spec["jobs"]):
            report = tasks.evaluate(
                data, spec["predictions"], spec["task"], cores=1, by_source=spec["by_source"], **given
            )
    except runner.Waiting as waiting:  # the round ends: the next stream waits for every job's parts
        if gathered is not None:
            round_ = _round(gathered.parent)
            before = folder / f"round-{round_ - 1}" / "gathered"
            if round_ and int(before.read_text()) >= waiting.stream:
                raise TaskError(f"round {round_ + 1} left no parts of stream {waiting.stream}; see {folder}") from None
            gathered.write_text(f"{waiting.stream}\n")
        return
    if gathered is not None:
        with (folder / "report.pickle").open("wb") as f:
            pickle.dump(report, f, protocol=pickle.HIGHEST_PROTOCOL)
        gathered.write_text("done\n")


def main(argv: list[str]) -> int:
    """``python -m regionbench.scoring.scattering WORK JOB`` (a part job) or ``WORK --gather OUT``
    (the gathering, its checkpoint file ``OUT``): a job's problem is one line in
    ``parts/error-JOB.txt`` and on standard error, exit 1."""
    folder = Path(argv[0])
    gathered = Path(argv[2]).resolve() if argv[1:2] == ["--gather"] else None
    job = None if gathered is not None else int(argv[1])
    try:
        run_job(folder, job, gathered)
    except Exception as exc:  # a job runs where no one reads a traceback: the line reaches the caller
        from regionbench.core import errors

        line = f"job {'gather' if job is None else job}: {type(exc).__name__}: {errors.first_line(exc)}"
        (folder / "parts" / f"error-{'gather' if job is None else job}.txt").write_text(line + "\n")
        print(line, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
