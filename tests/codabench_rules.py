"""Codabench's own rules for a competition bundle (format version 2), as its documentation and its
unpacker (``competitions/unpackers/v2.py``) state them: what a test holds a written bundle to.

The unpacker refuses a bundle whose competition.yaml lacks tasks, a task without an index or
with a duplicate one, a task without a scoring program, a solution without an index, tasks or
path, or naming a task that is not there, terms or pages whose files are missing or empty, a
logo it cannot open, no phases, a phase without tasks, phases not in sequence (a phase before
another must end, and the next start after), and no leaderboards. Every file a task or a
solution names must be in the bundle; a leaderboard column needs a title, a key, an index and a
sorting (asc or desc), keys unique.
"""

from __future__ import annotations

import datetime
import itertools
import zipfile
from typing import Any

import yaml


def _date(value: object) -> datetime.datetime | None:
    """A phase date as the unpacker parses it (``utils.get_datetime``): a date, or a date and time."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value
    if isinstance(value, datetime.date):
        return datetime.datetime(value.year, value.month, value.day)
    return datetime.datetime.fromisoformat(str(value))


def problems(bundle: zipfile.ZipFile) -> list[str]:
    """What Codabench would refuse in ``bundle``, one line each ([] when it loads)."""
    names = set(bundle.namelist())
    if "competition.yaml" not in names:
        return ["no competition.yaml at the bundle's top"]
    doc: dict[str, Any] = yaml.safe_load(bundle.read("competition.yaml"))
    found: list[str] = []

    def readable(name: object, what: str) -> None:
        if not isinstance(name, str) or name not in names:
            found.append(f"{what}: {name!r} is not in the bundle")
        elif not bundle.read(name).strip():
            found.append(f"{what}: {name} is empty")

    if doc.get("version") != 2:
        found.append("version is not 2")
    if not isinstance(doc.get("title"), str):
        found.append("no title")
    for page in doc.get("pages") or []:
        readable(page.get("file"), "page")
    readable(doc.get("terms"), "terms")
    readable(doc.get("image"), "image")
    tasks = doc.get("tasks")
    if not tasks:
        found.append("no tasks")
        tasks = []
    indexes = []
    for task in tasks:
        if "index" not in task:
            found.append(f"task {task.get('name')}: no index")
            continue
        indexes.append(task["index"])
        if "scoring_program" not in task:
            found.append(f"task {task.get('name')}: no scoring program")
        for kind in ("ingestion_program", "input_data", "scoring_program", "reference_data"):
            if kind in task:
                readable(task[kind], f"task {task['index']} {kind}")
    if len(indexes) != len(set(indexes)):
        found.append("duplicate task indexes")
    for solution in doc.get("solutions") or []:
        if "index" not in solution or "tasks" not in solution or "path" not in solution:
            found.append(f"solution {solution}: needs an index, tasks and a path")
            continue
        if not all(t in indexes for t in solution["tasks"]):
            found.append(f"solution {solution['index']}: names a task that is not there")
        readable(solution["path"], "solution")
    phases = sorted(doc.get("phases") or [], key=lambda p: p.get("index", 0))
    if not phases:
        found.append("no phases")
    for phase in phases:
        if not phase.get("tasks"):
            found.append(f"phase {phase.get('name')}: no tasks")
        elif not all(t in indexes for t in phase["tasks"]):
            found.append(f"phase {phase.get('name')}: names a task that is not there")
        try:
            if _date(phase.get("start")) is None:
                found.append(f"phase {phase.get('name')}: no start date")
            _date(phase.get("end"))
        except ValueError as exc:
            found.append(f"phase {phase.get('name')}: a date that does not parse ({exc})")
    for before, after in itertools.pairwise(phases):
        end = _date(before.get("end"))
        if end is None:
            found.append(f"phase {before.get('name')}: must end, a phase follows it")
        elif _date(after.get("start")) < end:  # type: ignore[operator]
            found.append(f"phase {after.get('name')}: starts before {before.get('name')} ends")
    boards = doc.get("leaderboards")
    if not boards:
        found.append("no leaderboards")
    for board in boards or []:
        keys = [c.get("key") for c in board.get("columns", [])]
        if len(keys) != len(set(keys)):
            found.append(f"leaderboard {board.get('key')}: duplicate column keys")
        for column in board.get("columns", []):
            if not {"title", "key", "index"} <= column.keys() or column.get("sorting", "desc") not in ("asc", "desc"):
                found.append(f"leaderboard {board.get('key')}: column {column} needs a title, key, index, asc or desc")
    return found
