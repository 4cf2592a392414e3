"""Numbers read from files, strictly: ASCII digits only, finite values.

Python's ``int`` and ``float`` accept what no data file of ours should hold: digits of other
scripts (``'٣'``, ``'²'``), underscores (``'0.1_0'``), surrounding blanks, ``nan`` and
``inf``. Every reader of a raw tree, a run file or a predictions file parses through here, so
such a value is an error with its line instead of a silent number or a traceback.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

ID = re.compile(r"[0-9]{1,19}")
MAX_ID = 2**63 - 1  # an id fits a signed 64-bit integer (a COCO file name's hash id has 19 digits)
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def is_id(text: str) -> bool:
    """Whether ``text`` is an id: 1 to 19 ASCII digits, nothing else, at most ``MAX_ID``."""
    return ID.fullmatch(text) is not None and int(text) <= MAX_ID


def is_canonical_id(text: str) -> bool:
    """Whether ``text`` is an id as the id itself is written: no leading zero (``984``, not
    ``0984``), so two spellings never name one item."""
    return is_id(text) and str(int(text)) == text


def parse_id(text: str, what: str = "id") -> int:
    """``text`` as an id (``is_id``); ValueError naming ``what`` and the text otherwise."""
    if not is_id(text):
        raise ValueError(f"{what} {text[:40]!r} is not an id (ASCII digits, at most {MAX_ID})")
    return int(text)


def parse_number(text: str, what: str = "value") -> float:
    """``text`` as a finite decimal number (ASCII digits, optional sign, point and exponent);
    ValueError naming ``what`` and the text otherwise."""
    if NUMBER.fullmatch(text) is None:
        raise ValueError(f"{what} {text[:40]!r} is not a number (ASCII digits, e.g. 0.25)")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{what} {text[:40]!r} is out of range")
    return value


def json_number(value: object) -> float | None:
    """A finite JSON number (as ``json`` reads it) as a float, else None: a bool is no number
    here, and an integer beyond a double is none either."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def argument(kind: type, low: float, high: float | None = None) -> Callable[[str], Any]:
    """An argparse type: ``kind`` (int: ASCII digits, ``parse_id``; float: a finite number,
    ``parse_number``) in [low, high]; the message names the range."""
    import argparse

    bounds = f" >= {low:g}" if high is None else f" in [{low:g}, {high:g}]"
    wanted = f"{'an integer' if kind is int else 'a number'}{bounds}"

    def parse(text: str) -> Any:
        try:
            value: float | None = parse_id(text) if kind is int else parse_number(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{text!r} is not {wanted}")
        return value

    parse.__name__ = kind.__name__
    return parse


def counted(n: int, noun: str) -> str:
    """``n`` with its noun as a sentence says it: ``1 group``, ``3,014 groups`` (nouns whose
    plural adds ``s``)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
