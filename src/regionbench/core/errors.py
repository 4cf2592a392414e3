"""The one error path of the command line and of every workflow job.

An error the user can fix (bad input, a bad setting, a full disk) is reported as one line per
problem saying what, where and how to fix it; anything else is a bug in regionbench and is
shown with its traceback and a request to report it. ``describe`` tells the two apart.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

BUG_HINT = (
    "regionbench: internal error (a bug in regionbench, not in your input); "
    "please report it with the command and the traceback above"
)

# What the user can do about an OSError, by its errno.
_OS_HINTS = {
    errno.ENOSPC: "free some disk space and run again",
    errno.EDQUOT: "free some of your disk quota and run again",
    errno.EROFS: "the file system is read-only; write to another folder",
    errno.EACCES: "make it readable/writable for this user",
    errno.EPERM: "make it readable/writable for this user",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "check the path: a part of it is a file",
    errno.EISDIR: "check the path: it is a folder",
    errno.EEXIST: "remove it or choose another path",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.EMFILE: "raise the open-file limit (ulimit -n)",
}


class InputError(ValueError):
    """Input the user can fix; the message says what, where and how (one line per problem)."""


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an exception's message, or its type's name: what a library
    says goes into one of our lines without its tracebacks or multi-line dumps."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def streamed_json_problem(exc: BaseException, not_utf8: str, nan: str, fix: str | None = None) -> str:
    """One line completing "<path>: " for a JSON file a streamed parse (ijson) stopped on: not
    UTF-8 (``not_utf8``: what to do), else not valid JSON where it stopped, with ``nan`` (what to
    write instead) when it stopped on NaN or Infinity, and ``fix`` when given."""
    text = " ".join(str(exc).split())
    if "UTF8" in text or "UTF-8" in text:
        return f"not UTF-8 text; {not_utf8}"
    if "NaN" in text or "Infinity" in text:  # yajl quotes the text where it stopped
        text += f" (NaN and Infinity are not JSON: {nan})"
    return f"not valid JSON ({text[:300]})" + (f"; {fix}" if fix else "")


def describe(exc: BaseException) -> str | None:
    """The message of a user-caused error, ``None`` for a bug.

    ``InputError`` (and every error class of the library that derives from it) is its own
    message; a package an install extra brings and this install lacks names the extra; an ``OSError`` from the machine (no space, read-only, permission, missing path)
    names the file, the system's reason and what to do.
    """
    if isinstance(exc, InputError):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.split(".")[0] != "regionbench":
        # a package of an install extra that this install lacks (the client has no SciPy, no DVC)
        package = exc.name.split(".")[0]
        extra = "dvc" if package == "dvc" else "build"
        return f"this needs {package}, which this install lacks: pip install 'regionbench[{extra}]'"
    if isinstance(exc, OSError) and exc.errno in _OS_HINTS:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or os.strerror(exc.errno)}; {_OS_HINTS[exc.errno]}"
    return None


def parse_json(text: str) -> object:
    """The JSON value of ``text``; raises ValueError with one line (where it breaks, that it
    nests too deeply for the parser, or the key an object gives twice) for text that is not
    usable JSON. A key given twice is refused: a reader keeping the last value would see what a
    checker reading the first did not (a manifest whose ``version`` is given twice)."""
    try:
        return json.loads(text, object_pairs_hook=_once)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise ValueError("not usable JSON (nested too deeply)") from None


def _once(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object's members, each key once (``parse_json``)."""
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"not usable JSON (the key {key!r} is given twice in one object)")
        out[key] = value
    return out


def file_problem(path: Path, what: str) -> str | None:
    """Why ``path`` cannot be read as ``what`` (a config file, a predictions file ...): missing,
    a folder, or not a regular file (a device such as /dev/null, a FIFO); None when it is one.
    The message completes "<path>: "."""
    if path.is_file():
        return None
    if path.is_dir():
        return f"a folder, not {what}; give the file itself"
    if path.exists():
        return f"not a regular file (a device or a pipe), not {what}; give a file"
    return f"no such file; give {what}"


def read_json(path: Path, what: str) -> object:
    """The JSON value of the file ``path``, read as ``what`` (a results file ...); raises
    ValueError with one line completing "<path>: " when it is no file (``file_problem``), not
    UTF-8 or not JSON (``parse_json``)."""
    if problem := file_problem(path, what):
        raise ValueError(problem)
    try:
        return parse_json(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
