"""What the commands share: the one-line user error, the workflow folder found from here, a path
as the user would type it, and an ``evaluate --out`` report read back."""

from __future__ import annotations

import json
from pathlib import Path

from regionbench.core.errors import InputError


class UserError(InputError):
    """Something the user can fix; printed as one line without a traceback."""


def find_project(start: Path | None = None) -> Path:
    """The workflow folder: the nearest folder holding a Snakefile, from ``start`` upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Snakefile").is_file() and (folder / "config" / "config.yaml").is_file():
            return folder
    raise UserError(
        f"no regionbench workflow (Snakefile) in {here} or above; run inside the checkout or pass --project-dir"
    )


def shown(path: Path) -> str:
    """``path`` as the user would type it: relative to the current folder when under it."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def run_report(path: str) -> dict:
    """The report ``evaluate --out`` wrote at ``path``; a UserError naming it otherwise."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"--run {path}: not a report of evaluate --out ({exc})") from None
    if not isinstance(report, dict):
        raise UserError(f"--run {path}: not a report of evaluate --out (a JSON object)")
    return report
