"""The scoring program of a hosted benchmark, as Codabench's compute worker runs it.

The worker unpacks the program into ``/app/program``, the task's reference data into
``/app/input/ref`` and the submission into ``/app/input/res``, runs the program's command with
``/app/program`` as its folder, and reads ``/app/output/scores.json`` (one number per
leaderboard column) and ``/app/output/detailed_results.html``. ``main`` takes the folder
standing for ``/app``, so the same program runs under any root.

The reference data holds the private release (``release/``) and ``challenge.json``: the task,
its settings, the submission entry (``instances.json``, ``segments/`` ...), the size limit and
the leaderboard's columns. A submission is checked before it is scored (its size, its shape,
its entry) and then scored by ``regionbench.scoring.tasks.evaluate``: the scores are those
``regionbench evaluate`` prints for the same files. Anything wrong with a submission is one
line on standard error and exit status 1, and no ``scores.json`` is left: never a partial
score. Every output names the private release's digest.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from regionbench.core.errors import InputError

CHALLENGE = "challenge.json"  # in the reference data, beside release/
SCORES = "scores.json"
DETAILED = "detailed_results.html"
REPORT = "report.json"


class SubmissionError(InputError):
    """A submission that cannot be scored: what is wrong and how to mend it, in one line."""


def column_key(task: str, measure: str) -> str:
    """A leaderboard column's key: the task and the measure's dotted name, as a word."""
    return re.sub(r"[^0-9A-Za-z]+", "_", f"{task}_{measure}").strip("_").lower()


def headline(report: Mapping[str, Any]) -> list[str]:
    """A report's headline measures (dotted names): those with an interval, else every measure."""
    from regionbench.scoring.tasks import measures

    found = measures(report)
    named = [name for name in (report.get("intervals") or {}) if name in found]
    return named or sorted(found)


def scores(report: Mapping[str, Any], columns: Mapping[str, str]) -> dict[str, float]:
    """The leaderboard's numbers of ``report``: each column (``columns``: measure -> key) its
    measure's value, and ``<key>_low`` and ``<key>_high`` its 95 % interval where it has one."""
    from regionbench.scoring.tasks import measures

    found = measures(report)
    intervals = report.get("intervals") or {}
    out: dict[str, float] = {}
    for measure, key in columns.items():
        if measure not in found:
            raise InputError(f"the report has no measure {measure}: the reference data's challenge.json names another")
        out[key] = found[measure]
        around = intervals.get(measure) or {}
        if around.get("low") is not None:
            out[f"{key}_low"], out[f"{key}_high"] = float(around["low"]), float(around["high"])
    return out


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def entry(submission: Path, name: str, limit: int) -> Path:
    """The entry ``name`` (a file or folder) of the unpacked ``submission``, checked: under
    ``limit`` bytes in all, the zip's files at its top, the entry there. A ``SubmissionError``
    otherwise."""
    if not submission.is_dir():
        raise SubmissionError(f"no submission at {submission}: the zip was not unpacked")
    size = _size(submission)
    if size > limit:
        raise SubmissionError(
            f"the submission unpacks to {size / 2**20:.1f} MiB, over this benchmark's limit of {limit / 2**20:.0f} MiB; "
            "send a smaller file (scores rounded to 4 digits, masks as compressed RLE)"
        )
    found = submission / name
    if found.exists():
        return found
    top = sorted(p.name for p in submission.iterdir() if not p.name.startswith((".", "__MACOSX")))
    if len(top) == 1 and (submission / top[0]).is_dir() and (submission / top[0] / name).exists():
        raise SubmissionError(
            f"the zip holds a folder {top[0]}/ around {name}: zip the files themselves (cd {top[0]} && zip -r ../submission.zip .)"
        )
    held = ", ".join(top[:5]) + (" ..." if len(top) > 5 else "") if top else "nothing"
    raise SubmissionError(
        f"the zip has no {name} at its top (it holds {held}); put the predictions there, as the starting kit does"
    )


def _page(challenge: Mapping[str, Any], report: Mapping[str, Any], values: Mapping[str, float]) -> str:
    """The detailed results page: the scores, the report as ``evaluate`` prints it, and the
    private release they were computed on."""
    from regionbench.scoring.tasks import render

    private = challenge["private"]
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{v:.6f}</td></tr>" for k, v in values.items())
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>scores</title></head><body>'
        f"<h1>{html.escape(challenge['task'])} on {html.escape(challenge['split'])}</h1>"
        f"<p>Scored against {html.escape(private['dataset'])} v{html.escape(private['version'])}, "
        f"digest <code>{html.escape(private['digest'])}</code>, by regionbench {html.escape(challenge['regionbench'])}.</p>"
        f"<table><tr><th>column</th><th>value</th></tr>{rows}</table>"
        f"<pre>{html.escape(render(report))}</pre></body></html>\n"
    )


def _write(path: Path, text: str) -> None:
    """``text`` written whole or not at all (a temporary file renamed)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def score(app: Path) -> dict[str, float]:
    """The submission under ``app/input/res`` scored against ``app/input/ref`` (module
    docstring); ``app/output`` receives scores.json, the detailed page and the whole report.
    Returns the scores."""
    from regionbench.release.loader import load
    from regionbench.scoring import tasks

    reference, submission, output = app / "input" / "ref", app / "input" / "res", app / "output"
    try:
        challenge = json.loads((reference / CHALLENGE).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(
            f"{reference / CHALLENGE}: unreadable ({exc}); the reference data is not a regionbench bundle's"
        ) from None
    predictions = entry(submission, challenge["entry"], int(challenge["max_bytes"]))
    data = load(reference / "release")
    if data.manifest["digest"] != challenge["private"]["digest"]:
        raise InputError(
            f"{reference / 'release'}: digest {data.manifest['digest'][:12]}, not the private release the bundle "
            f"names ({challenge['private']['digest'][:12]}); upload the bundle's own reference data"
        )
    report = tasks.evaluate(data, predictions, challenge["task"], cores=None, **challenge["settings"])
    values = scores(report, challenge["columns"])
    output.mkdir(parents=True, exist_ok=True)
    from regionbench.core import tables

    tables.write_json(output / REPORT, report)
    _write(output / DETAILED, _page(challenge, report, values))
    _write(output / SCORES, json.dumps(values, sort_keys=True, indent=1) + "\n")
    return values


def main(app: Path) -> int:
    """The program's entry: ``score`` of the folder standing for ``/app``; 0 when scored, 1
    with one line on standard error when the submission (or the bundle) cannot be scored."""
    from regionbench.core import errors

    output = app / "output"
    for stale in (SCORES, DETAILED):  # a failed submission leaves no score behind
        (output / stale).unlink(missing_ok=True)
    try:
        values = score(app)
    except Exception as exc:
        message = errors.describe(exc)
        if message is None:
            raise
        print(f"submission refused: {message}", file=sys.stderr)
        return 1
    private = json.loads((app / "input" / "ref" / CHALLENGE).read_text())["private"]
    print(f"scored against {private['dataset']} v{private['version']} (digest {private['digest']})")
    for key, value in values.items():
        print(f"{key}: {value:.6f}")
    return 0
