"""What every ``script:`` file of the workflow does: log to the rule's ``log:`` file, and fail on
input the user must fix with a message that ``regionbench build`` repeats as its last lines."""

from __future__ import annotations

import hashlib
import logging
import sys
from pathlib import Path
from typing import NoReturn

# Relative to the project (every job runs there): messages of failed jobs for the build command.
FAILURES = Path(".snakemake") / "regionbench-failures"


def log_to(path: str) -> logging.Logger:
    """Send this job's log records (INFO and above, message only) to ``path``; return the logger."""
    logging.basicConfig(filename=path, level=logging.INFO, format="%(message)s", force=True)
    return logging.getLogger("regionbench")


def fail(message: str) -> NoReturn:
    """End this job with ``message`` (what, where, how to fix): logged, written to stderr, and kept
    under ``FAILURES`` so that ``regionbench build`` prints it last, after Snakemake's report."""
    logging.getLogger("regionbench").error("%s", message)
    FAILURES.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(message.encode()).hexdigest()[:16]  # parallel jobs never share a file
    (FAILURES / f"{name}.txt").write_text(message + "\n", encoding="utf-8")
    sys.exit(message)


def failures(project: Path) -> list[str]:
    """The messages of the jobs that failed through ``fail`` in ``project``, sorted."""
    folder = Path(project) / FAILURES
    return sorted(p.read_text(encoding="utf-8").rstrip("\n") for p in folder.glob("*.txt")) if folder.is_dir() else []


def clear_failures(project: Path) -> None:
    """Forget the failures of an earlier build of ``project``."""
    for path in (Path(project) / FAILURES).glob("*.txt"):
        path.unlink()
