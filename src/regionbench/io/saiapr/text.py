"""The text files of the SAIAPR TC-12 layout, read and written by the same rules.

``wlist.txt``, ``labels.txt``, ``ontology_path.txt`` and ``features.txt`` are latin-1 text
(``ENCODING``) both ways; captions (``.eng``) are cp1252 documents. See
docs/inputs.md for the layout and its quirks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from regionbench.core import numbers, tables
from regionbench.io.shards import IngestError

ENCODING = "latin-1"  # decodes any byte, and the official files are 8-bit text
CAPTION_FIELDS = ("TITLE", "DESCRIPTION", "NOTES", "LOCATION", "DATE")
CAPTION_ENCODING = "cp1252"


class LayoutError(IngestError):
    """A file of the layout that cannot be read at all; one line naming the file and the fix."""


# --- plain lines ------------------------------------------------------------------------------


BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, which some editors put first


def read_text(path: Path) -> tuple[str, bool]:
    """The text of an official file and whether it began with a byte order mark (removed: the
    official files have none, and left in it would glue itself to the first id)."""
    data = Path(path).read_bytes()
    return data.removeprefix(BOM).decode(ENCODING), data.startswith(BOM)


def official_lines(path: Path) -> tuple[list[str], int, bool]:
    """Lines of an official text file without its trailing blank lines, how many there were,
    and whether a byte order mark was removed (``read_text``)."""
    content, bom = read_text(path)
    lines = content.splitlines()
    trailing = 0
    while lines and not lines[-1].strip():
        lines.pop()
        trailing += 1
    return lines, trailing, bom


def write_lines(path: Path, lines: Iterable[str], trailer: str = "") -> None:
    """Write newline-terminated ``lines`` (and ``trailer``, e.g. the blank lines some files end with)."""
    Path(path).write_text("".join(lines) + trailer, encoding=ENCODING)


# --- wlist.txt --------------------------------------------------------------------------------


def read_wordlist(path: Path) -> dict[int, str]:
    """``wlist.txt``: ``id<TAB>word`` per line; blank lines are skipped."""
    path = Path(path)
    if path.is_dir():
        raise LayoutError(f"{path}: a folder, not the word list file; put wlist.txt itself there")
    if not path.is_file():
        raise LayoutError(f"{path}: word list missing; a SAIAPR root needs wlist.txt beside its folders")
    words: dict[int, str] = {}
    for n, line in enumerate(read_text(path)[0].splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not numbers.is_id(parts[0].strip()):
            raise LayoutError(
                f"{path}:{n}: expected 'id<TAB>word' (id in ASCII digits), got {line[:60]!r}; fix the line"
            )
        word_id = int(parts[0])
        if word_id in words:
            raise LayoutError(f"{path}:{n}: id {word_id} already names {words[word_id]!r}; keep one line per id")
        words[word_id] = parts[1].strip()
    return words


def write_wordlist(path: Path, words: dict[int, str]) -> None:
    """``wlist.txt`` from id -> word, in id order."""
    write_lines(path, (f"{i}\t{word}\n" for i, word in sorted(words.items())))


# --- labels.txt, ontology_path.txt, features.txt rows -----------------------------------------


def key_row(image_id: int, region_id: int, *values: str) -> str:
    """One row of a per-folder text file: the region key, then ``values``, tab separated."""
    return "\t".join([str(image_id), str(region_id), *values]) + "\n"


@dataclass(frozen=True)
class OntologyPath:
    """An ``ontology_path.txt`` entry: its node names, the quirks its spelling shows, and the
    nodes written with the ``_`` group flag."""

    nodes: list[str]
    quirks: set[str]
    groups: set[str]


def parse_ontology_path(raw: str) -> OntologyPath:
    """``entity->->humans->_group-of-persons␠␠`` gives nodes ``[entity, humans, group-of-persons]``,
    quirks ``doubled_arrow``, ``group_flag`` and ``trailing_space``, and group ``group-of-persons``."""
    quirks = set()
    if raw != raw.rstrip():
        quirks.add("trailing_space")
    parts = raw.strip().split("->")
    if any(p == "" for p in parts[1:-1]) or (len(parts) > 2 and parts[1] == ""):
        quirks.add("doubled_arrow")
    nodes, groups = [], set()
    for p in parts:
        if not p:
            continue
        if p.startswith("_"):
            quirks.add("group_flag")
            groups.add(p.lstrip("_"))
        nodes.append(p.lstrip("_"))
    if nodes == ["entity"]:
        quirks.add("bare_entity_path")
    return OntologyPath(nodes, quirks, groups)


def format_ontology_path(path: list[str], groups: set[str]) -> str:
    """A label's root-to-label ``path`` as the official file spells it, with its quirks:
    ``entity->->humans->_group-of-persons␠␠`` (group nodes prefixed with ``_``)."""
    nodes = ["_" + x if x in groups else x for x in path[1:]]
    return f"{path[0]}->" + "".join("->" + x for x in nodes) + "  "


def ontology_rows(lines: Iterable[str]) -> Iterator[tuple[int, int, OntologyPath] | None]:
    """Rows of ``ontology_path.txt`` as (image_id, region_id, path); ``None`` for a malformed row."""
    for line in lines:
        parts = line.split("\t")
        if len(parts) != 3 or not numbers.is_id(parts[0].strip()) or not numbers.is_id(parts[1].strip()):
            yield None
            continue
        yield int(parts[0]), int(parts[1]), parse_ontology_path(parts[2])


def _num2str_precision(values: np.ndarray) -> int:
    """MATLAB num2str's significant digits for a row: floor(log10(max |v|)) + 5, at least 5."""
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    return max(int(np.floor(np.log10(peak))) + 5 if peak > 0 else 5, 5)


def num2str(values: np.ndarray) -> str:
    """A row of numbers as MATLAB ``num2str`` prints it (``features.txt``).

    Precision p = floor(log10(max |v|)) + 5 (at least 5), each number as ``%{p+7}.{p}g``,
    leading blanks of the row removed.
    """
    values = np.asarray(values, dtype=np.float64)
    p = _num2str_precision(values)
    return "".join(f"{v:{p + 7}.{p}g}" for v in values).lstrip()


def num2str_tolerance(values: np.ndarray) -> np.ndarray:
    """Largest error ``num2str`` rounding can put on each value (half a unit in the last place)."""
    values = np.asarray(values, dtype=np.float64)
    exponent = np.floor(np.log10(np.maximum(np.abs(values), 1e-300)))
    tolerance: np.ndarray = 0.5 * 10.0 ** (exponent - _num2str_precision(values) + 1)
    return tolerance


def feature_row(image_id: int, region_id: int, values: np.ndarray, label_id: int) -> str:
    """One ``features.txt`` row: key, the numbers as ``num2str`` prints them, label id."""
    return key_row(image_id, region_id, num2str(values), str(label_id))


def read_features_txt(path: str | Path) -> dict[tuple[int, int], np.ndarray]:
    """Official ``features.txt`` rows: (image_id, region_id) -> the 27 numbers."""
    out = {}
    for line in read_text(Path(path))[0].splitlines():
        parts = line.split("\t")
        if len(parts) != 4 or not numbers.is_id(parts[0]) or not numbers.is_id(parts[1]):
            continue  # not a row: the parity report counts its key as computed only
        try:
            values = np.array([numbers.parse_number(v) for v in parts[2].split()], dtype=np.float64)
        except ValueError:
            continue
        out[(int(parts[0]), int(parts[1]))] = values
    return out


def read_official_features(paths: Sequence[str | Path]) -> dict[tuple[int, int], np.ndarray]:
    """Rows of every ``features.txt`` given, or found in ``<root>/NN/`` for a root folder."""
    rows: dict[tuple[int, int], np.ndarray] = {}
    for path in map(Path, paths):
        for file in sorted(path.glob("*/features.txt")) if path.is_dir() else [path]:
            rows.update(read_features_txt(file))
    return rows


# --- captions ---------------------------------------------------------------------------------


def parse_caption(data: bytes) -> tuple[dict[str, str | None], str]:
    """Fields of an IAPR TC-12 ``.eng`` document and the encoding that decoded it.

    The official captions are cp1252; UTF-8 is accepted when the bytes are valid UTF-8, and
    latin-1 (which decodes any byte) is the last resort.
    """
    for encoding in ("utf-8", CAPTION_ENCODING, "latin-1"):
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    if "<DOC>" not in text or "</DOC>" not in text:
        raise ValueError("not an IAPR TC-12 document (no <DOC>...</DOC>)")
    fields: dict[str, str | None] = {}
    for tag in CAPTION_FIELDS:
        m = re.search(rf"<{tag}>(.*?)</{tag}>", text, flags=re.DOTALL)
        fields[tag.lower()] = m.group(1).strip() if m else None
    return fields, encoding


def format_caption(folder: str, image_id: int, fields: dict[str, str | None]) -> str:
    """An image's IAPR TC-12 ``.eng`` document from its caption ``fields`` (lower-case names of
    ``CAPTION_FIELDS``; ``None`` fields are omitted)."""
    lines = ["<DOC>", f"<DOCNO>annotations/{folder}/{image_id}.eng</DOCNO>"]
    for tag in CAPTION_FIELDS:
        value = fields.get(tag.lower())
        if value is not None:
            lines.append(f"<{tag}>{value}</{tag}>")
    lines += [
        f"<IMAGE>images/{folder}/{image_id}.jpg</IMAGE>",
        f"<THUMBNAIL>thumbnails/{folder}/{image_id}.jpg</THUMBNAIL>",
        "</DOC>",
        "",
    ]
    return "\n".join(lines)


def features_parity(official: dict[tuple[int, int], np.ndarray], computed: pa.Table, worst: int = 5) -> dict[Any, Any]:
    """Compare computed features (the stage table ``features``) with official ``features.txt`` rows.

    Per column: the largest |difference| and the largest that ``num2str`` rounding allows for
    those rows; ``excess`` counts values whose difference exceeds their rounding allowance.
    """
    keys = list(zip(computed.column("image_id").to_pylist(), computed.column("region_id").to_pylist(), strict=True))
    common = [k for k in keys if k in official]
    ours = np.column_stack([computed.column(name).to_numpy() for name in tables.FEATURE_NAMES])
    index = {k: n for n, k in enumerate(keys)}
    mine = ours[[index[k] for k in common]] if common else np.empty((0, len(tables.FEATURE_NAMES)))
    theirs = np.array([official[k] for k in common]) if common else np.empty((0, len(tables.FEATURE_NAMES)))
    allowed = (
        np.array([num2str_tolerance(official[k]) for k in common])
        if common
        else np.empty((0, len(tables.FEATURE_NAMES)))
    )
    diff = np.abs(mine - theirs)
    excess = diff > allowed * (1 + 1e-9) + 1e-12
    row_excess = (diff / np.maximum(allowed, 1e-300)).max(axis=1) if common else np.empty(0)
    order = np.argsort(-row_excess, kind="stable")[:worst]
    return {
        "rows_compared": len(common),
        "rows_only_computed": len(keys) - len(common),
        "rows_only_official": len(set(official) - set(keys)),
        "columns": {
            name: {
                "max_abs_diff": float(diff[:, k].max(initial=0.0)),
                "max_rounding": float(allowed[:, k].max(initial=0.0)),
                "excess": int(excess[:, k].sum()),
            }
            for k, name in enumerate(tables.FEATURE_NAMES)
        },
        "worst_rows": [
            {"image_id": common[n][0], "region_id": common[n][1], "diff_over_rounding": float(row_excess[n])}
            for n in order
        ],
    }
