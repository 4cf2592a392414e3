"""What every script of the workflow (``scripts/``) does: log to the rule's ``log:`` file, and fail
on input the user must fix with a message that ``regionbench build`` repeats as its last lines.

``log_to`` also installs the job's one error path (``errors.describe``): an exception the user
caused ends the job through ``fail`` with its one line; any other is a bug, logged with its
traceback and reported last as such.

A script runs in one of two ways. A heavy stage (ingest, the classifiers, the release) runs in
its own interpreter, as Snakemake starts a ``script:`` job (the rules' ``heavy``). A light stage
(a merge, a summary, a figure) runs inside the Snakemake process (``in_process``, from the rule's
``run:``; the profile's ``force-use-threads`` keeps it in a thread of that process): a fresh
interpreter and its imports would cost it ten times its work. The config's ``jobs.in_process``
runs the heavy stages there too (builds of a few images). The script is the same file either
way; inside the Snakemake process it forks no workers (``forked.unforked``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import logging
import os
import re
import resource
import runpy
import sys
import threading
import time
import traceback
from pathlib import Path
from types import SimpleNamespace, TracebackType
from typing import Any, NoReturn

from regionbench.core import allocator, errors, forked

# Relative to the project (every job runs there): messages of failed jobs for the build command.
FAILURES = Path(".snakemake") / "regionbench-failures"
# A job log's last line (``_log_resources``), and the same line read back (``logged_resources``).
RESOURCES = "peak memory {peak_mib:.0f} MiB, CPU {cpu_s:.1f} s"
_RESOURCES_LINE = re.compile(r"^peak memory (\d+) MiB, CPU ([\d.]+) s$", re.M)


# The thread of an in-process job: its records go to its own log only (see ``in_process``).
_here = threading.local()


def log_to(path: str) -> logging.Logger:
    """Send this job's log records (INFO and above, message only) to ``path``, install the job's
    error path (``_job_error``), keep freed memory for reuse (``allocator``) and end the log with
    the job's peak memory and CPU (``_log_resources``); return the logger. In a job that runs in
    the Snakemake process, ``in_process`` has done all of it for the job's thread already."""
    if getattr(_here, "log", None) == path:
        return logging.getLogger("regionbench")
    logging.basicConfig(filename=path, level=logging.INFO, format="%(message)s", force=True)
    logging.captureWarnings(True)  # a library's warnings belong to the job's log, not the build's screen
    sys.excepthook = functools.partial(_job_error, path)
    allocator.keep_freed_memory()  # per-image NumPy temporaries reuse memory instead of remapping it
    atexit.register(_log_resources)
    return logging.getLogger("regionbench")


def own_peak_kib() -> int:
    """This process's own peak resident memory (KiB), since it became this program: the kernel's
    high-water mark of its memory (``VmHWM``). ``ru_maxrss`` would not do: a process started by
    vfork and exec (a Snakemake job's shell, which execs Python) keeps the peak its parent had
    when it started, so every job read Snakemake's 346 MiB. ``ru_maxrss`` where there is no /proc."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _log_resources() -> None:
    """Log the job's peak resident memory and CPU time (with its child processes'), as the kernel
    counts them: Snakemake's benchmark files sample memory every 30 s after a job's first 30 s
    and miss a later, shorter peak. A line of the form ``RESOURCES`` (read by benchmarks/)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mib = max(own_peak_kib(), children.ru_maxrss) / 1024  # Linux counts ru_maxrss in KiB
    cpu_s = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    logging.getLogger("regionbench").info(RESOURCES.format(peak_mib=peak_mib, cpu_s=cpu_s))


def logged_resources(log: Path) -> tuple[float, float] | None:
    """The peak memory (MiB) and CPU time (s) a job's log ends with (``RESOURCES``), or None
    without that line."""
    found = _RESOURCES_LINE.findall(log.read_text() if log.is_file() else "")
    return (float(found[-1][0]), float(found[-1][1])) if found else None


def _job_error(log_path: str, kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """The end of a job that raised: the user's one line, an interrupt's one line, or a bug's
    traceback and report."""
    if issubclass(kind, KeyboardInterrupt):  # Ctrl-C: nothing to report, and a rerun resumes
        interrupted = f"interrupted (log: {log_path}): the job's outputs are not kept; run the build again to resume"
        _record(interrupted)
        if "REGIONBENCH_LIVE" not in os.environ:  # under regionbench build, which says it once for all
            sys.stderr.write(interrupted + "\n")
        return
    message = errors.describe(exc)
    if message is None:
        text = "".join(traceback.format_exception(kind, exc, tb))
        logging.getLogger("regionbench").error("%s", text)
        sys.stderr.write(text)
        first = errors.first_line(exc)[:200]
        message = f"{kind.__name__}: {first} (log: {log_path}). {errors.BUG_HINT.removeprefix('regionbench: ')}"
        _record(message, bug=True)
    else:
        if isinstance(exc, OSError) and not exc.filename:  # a full disk under a writer names no file: the job
            message = f"{message} (the job logged in {log_path} was writing)"
        _record(message)
    sys.stderr.write(message + "\n")


class _ThreadFilter(logging.Filter):
    """Records of one thread only: two in-process jobs running at once keep their logs apart."""

    def __init__(self, thread: int) -> None:
        super().__init__()
        self.thread = thread

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self.thread


class InProcessJobError(Exception):
    """An in-process job ended on an error: its message is the job's one line (or a bug report),
    already recorded for ``regionbench build``; Snakemake marks the job failed on it."""


def in_process(script: str | Path, **snakemake: Any) -> None:
    """Run the workflow script ``script`` in this (the Snakemake) process, as Snakemake would run
    it as a ``script:`` job: ``snakemake`` (a light stage's input, output, params, log and config)
    is the object the script reads. Its log records and warnings go to its
    ``log:`` file, ending with its CPU time (this thread's) and the process's peak memory; an
    error ends it as a job's error ends its interpreter (``fail``'s line, or a bug's traceback),
    raised as ``InProcessJobError`` for Snakemake."""
    log_path = str(snakemake["log"][0])
    handler = logging.FileHandler(log_path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(_ThreadFilter(threading.get_ident()))
    loggers = [logging.getLogger("regionbench"), logging.getLogger("py.warnings")]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # the Snakemake process's own handlers print to the screen
    logging.captureWarnings(True)
    _here.log = log_path
    start = time.thread_time()
    try:
        with forked.unforked():  # the other jobs' threads run beside it: no child may inherit their locks
            runpy.run_path(str(script), init_globals={"snakemake": SimpleNamespace(**snakemake)}, run_name="__main__")
    except SystemExit as exc:  # ``fail``: its message is recorded and logged already
        raise InProcessJobError(str(exc.code)) from None
    except Exception as exc:
        _job_error(log_path, type(exc), exc, exc.__traceback__)
        raise InProcessJobError(errors.first_line(exc)) from None
    finally:
        logging.getLogger("regionbench").info(
            RESOURCES.format(peak_mib=own_peak_kib() / 1024, cpu_s=time.thread_time() - start)
        )
        _here.log = None
        for logger in loggers:
            logger.removeHandler(handler)
        handler.close()


def fail(message: str) -> NoReturn:
    """End this job with ``message`` (what, where, how to fix): logged, written to stderr, and kept
    under ``FAILURES`` so that ``regionbench build`` prints it last, after Snakemake's report."""
    logging.getLogger("regionbench").error("%s", message)
    _record(message)
    sys.exit(message)


def _record(message: str, bug: bool = False) -> None:
    """Keep ``message`` for ``regionbench build``, marked when it reports a bug (a full disk may
    refuse even this: then the message still reaches Snakemake's log through stderr)."""
    name = hashlib.sha256(message.encode()).hexdigest()[:16]  # parallel jobs never share a file
    path = FAILURES / f"{name}{'.bug' if bug else ''}.txt"
    try:
        FAILURES.mkdir(parents=True, exist_ok=True)
        path.write_text(message + "\n", encoding="utf-8")
    except OSError:
        path.unlink(missing_ok=True)  # a file the full disk cut short would read as an empty reason


def failures(project: Path) -> list[str]:
    """The messages of the jobs that failed through ``fail`` in ``project``, sorted (a file left
    empty or cut short by a full disk holds no message)."""
    folder = Path(project) / FAILURES
    found = [p.read_text(encoding="utf-8", errors="replace").strip() for p in folder.glob("*.txt")]
    return sorted(message for message in found if message)


def bug_reported(project: Path) -> bool:
    """Whether a job of the last build of ``project`` failed on a bug rather than on input."""
    return any((Path(project) / FAILURES).glob("*.bug.txt"))


def clear_failures(project: Path) -> None:
    """Forget the failures of an earlier build of ``project``."""
    for path in (Path(project) / FAILURES).glob("*.txt"):
        path.unlink()
