"""What every ``script:`` file of the workflow does first: log to the rule's ``log:`` file."""

from __future__ import annotations

import logging


def log_to(path: str) -> logging.Logger:
    """Send this job's log records (INFO and above, message only) to ``path``; return the logger."""
    logging.basicConfig(filename=path, level=logging.INFO, format="%(message)s", force=True)
    return logging.getLogger("regionbench")
