"""A run scored as jobs through Snakemake, on this machine or on a cluster: ``regionbench evaluate
--executor local|slurm --jobs N``.

Snakemake schedules and moves nothing but files in a shared work folder, and the runner does the
rest (``tasks._runner.scattered``). Each of the ``N`` part jobs runs the whole scoring with
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

    python -m regionbench.client.scattering WORK [JOB]   # one part job (JOB), or the gathering
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from regionbench.client.tasks._base import TaskError

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
    ``jobs`` part jobs and a gathering, run by Snakemake's ``executor`` (local: on ``cores``
    cores at once, default every one). ``work``: the shared work folder (default: a new folder
    under the current one, removed once the report is read); ``project``: a workflow folder whose
    ``config/profiles/slurm`` a slurm run takes. A ``TaskError``, with the tail of Snakemake's
    log, when a job fails."""
    if executor not in EXECUTORS:
        raise TaskError(f"--executor {executor}: use {' or '.join(EXECUTORS)}")
    if jobs < 1:
        raise TaskError(f"--jobs {jobs}: at least 1")
    _needs(executor)
    made = work is None
    folder = Path(tempfile.mkdtemp(prefix=".regionbench-scoring-", dir=Path.cwd())) if work is None else work
    folder = folder.resolve()
    shutil.rmtree(folder / "parts", ignore_errors=True)  # an earlier run's parts are not this run's
    (folder / "parts").mkdir(parents=True)
    source = release if rev or not Path(release).exists() else str(Path(release).resolve())
    spec = {
        "release": source, "rev": rev, "verify": verify, "predictions": str(predictions.resolve()), "task": task,
        "settings": _plain(dict(settings)), "by_source": by_source, "jobs": jobs,
    }  # fmt: skip
    (folder / "run.json").write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    snakefile = resources.files("regionbench") / SNAKEFILE
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile), "--directory", str(folder),
           "--configfile", str(folder / "config.json"), "--forceall"]  # fmt: skip
    if executor == "slurm":
        profile = project / "config" / "profiles" / "slurm" if project is not None else None
        if profile is not None and (profile / "config.yaml").is_file():
            cmd += ["--profile", str(profile)]
        cmd += ["--executor", "slurm", "--jobs", str(jobs + 1)]
    else:
        from regionbench.client.tasks import available_cores

        cmd += ["--cores", str(cores or available_cores())]
    where = "SLURM" if executor == "slurm" else "this machine"
    say = progress or (lambda line: None)
    say(f"scoring as {jobs} jobs and a gathering through Snakemake on {where} (work folder {folder})")
    for stale in ("report.pickle", "waiting"):
        (folder / stale).unlink(missing_ok=True)
    waiting = -1
    for round_ in range(MAX_ROUNDS):
        config = {"jobs": jobs, "python": sys.executable, "work": str(folder), "round": round_}
        (folder / "config.json").write_text(json.dumps(config))
        _snakemake(cmd, folder)
        if (folder / "report.pickle").is_file():
            break
        stream = int((folder / "waiting").read_text())
        if stream <= waiting:  # a round that moved no stream forward would loop for ever
            raise TaskError(f"scoring as jobs: round {round_ + 1} left no parts of stream {stream}; see {folder}")
        waiting = stream
        say(f"round {round_ + 1} done: {stream} of the run's streams scored; a round for the next")
    else:
        raise TaskError(f"scoring as jobs: not done after {MAX_ROUNDS} rounds; see {folder}")
    with (folder / "report.pickle").open("rb") as f:
        report: dict[str, Any] = pickle.load(f)
    if made:
        shutil.rmtree(folder, ignore_errors=True)
    return report


def _snakemake(cmd: list[str], folder: Path) -> None:
    """A round: Snakemake's ``cmd`` run in ``folder``, its output in ``snakemake.log``; a
    ``TaskError`` with the jobs' own error lines when it fails."""
    log = folder / "snakemake.log"
    for stale in (folder / "parts").glob("error-*.txt"):
        stale.unlink()
    with log.open("a") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=folder, check=False)
    if done.returncode != 0:
        said = _job_error(folder) or log.read_text().strip().splitlines()[-1:]
        raise TaskError(f"scoring as jobs failed ({'; '.join(said)}); Snakemake's log: {log}")


def _job_error(folder: Path) -> list[str]:
    """The one-line errors the jobs wrote (``error-*.txt``), in job order."""
    return [p.read_text().strip() for p in sorted((folder / "parts").glob("error-*.txt"))]


def run_job(folder: Path, job: int | None) -> None:
    """One job of the run in ``folder`` (``run.json``): part ``job``, or the gathering (None),
    whose report goes to ``report.pickle``."""
    from regionbench.client import loader, tasks
    from regionbench.client.tasks import _runner

    spec = json.loads((folder / "run.json").read_text())
    data = loader.load(spec["release"], spec["rev"], verify=spec["verify"])
    chosen = tasks.get(spec["task"]).Settings.from_report(spec["settings"])
    given = {k: getattr(chosen, k) for k in spec["settings"]}
    try:
        with _runner.scattered(folder / "parts", job, spec["jobs"]):
            report = tasks.evaluate(
                data, spec["predictions"], spec["task"], cores=1, by_source=spec["by_source"], **given
            )
    except _runner.Waiting as waiting:  # the round ends: the next stream waits for every job's parts
        if job is None:
            (folder / "waiting").write_text(f"{waiting.stream}\n")
        return
    if job is None:
        with (folder / "report.pickle").open("wb") as f:
            pickle.dump(report, f, protocol=pickle.HIGHEST_PROTOCOL)


def main(argv: list[str]) -> int:
    """``python -m regionbench.client.scattering WORK [JOB]``: a job's problem is one line in
    ``parts/error-JOB.txt`` and on standard error, exit 1."""
    folder, job = Path(argv[0]), int(argv[1]) if len(argv) > 1 else None
    try:
        run_job(folder, job)
    except Exception as exc:  # a job runs where no one reads a traceback: the line reaches the caller
        from regionbench.core import errors

        line = f"job {'gather' if job is None else job}: {type(exc).__name__}: {errors.first_line(exc)}"
        (folder / "parts" / f"error-{'gather' if job is None else job}.txt").write_text(line + "\n")
        print(line, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
