"""Hostile and careless run and predictions files: a problem per line, naming the file and row."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core import numbers
from regionbench.scoring.results import read_imageclef_run
from regionbench.scoring.tasks import TaskError
from regionbench.scoring.tasks._labels import Subset
from regionbench.scoring.tasks.image import read_image_scores

CONCEPTS = ["sky", "grass", "man"]
IMAGES = [3, 8, 21]
TASK = Subset(
    labels=CONCEPTS,
    test={3: {"sky"}, 8: {"grass", "man"}, 21: {"sky", "man"}},
    train={1: {"sky"}},
    regions=pd.DataFrame({"image_id": [3], "annotator": ["a"], "region_id": [1], "label": ["sky"]}),
    vocabulary=frozenset(CONCEPTS),
)


def run_text(confidence: str = "0.5") -> str:
    return "".join(f"{i}" + f" {confidence} 1" * len(CONCEPTS) + "\n" for i in IMAGES)


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [("0.1_0", "confidence '0.1_0'"), ("\u0660.5", "confidence '\u0660.5'"), ("nan", "confidence 'nan'"),
     (" 0.5", "fields, expected 7"), ("1e-1", None), (".5", None)],
)  # fmt: skip
def test_run_file_numbers_are_ascii_and_finite(tmp_path: Path, confidence: str, expected: str | None) -> None:
    path = tmp_path / "run.txt"
    path.write_text(run_text(confidence), encoding="utf-8")
    if expected is None:
        confidence_, _ = read_imageclef_run(path, IMAGES, CONCEPTS)
        assert confidence_[0, 0] == float(confidence)
        return
    with pytest.raises(TaskError, match=expected):
        read_imageclef_run(path, IMAGES, CONCEPTS)


@pytest.mark.parametrize(
    ("score", "image", "expected"),
    [("high", "3", "row 2: score 'high' is not a number"), ("0.1_0", "3", "row 2: score '0.1_0' is not a number"),
     ("0.5", "\u0663", "row 2: image_id '\u0663' is not an id"), ("", "3", "row 2: score '' is not a number"),
     ("0.5", "-3", "row 2: image_id '-3' is not an id"), ("inf", "3", "row 2: score 'inf' is not a number")],
)  # fmt: skip
def test_image_scores_are_parsed_strictly(tmp_path: Path, score: str, image: str, expected: str) -> None:
    path = tmp_path / "scores.csv"
    path.write_text(f"image_id,label,score\n{image},sky,{score}\n8,man,0.2\n", encoding="utf-8")
    with pytest.raises(TaskError, match=expected):
        read_image_scores(path, TASK)


def test_parquet_scores_must_be_finite(tmp_path: Path) -> None:
    path = tmp_path / "scores.parquet"
    pd.DataFrame({"image_id": [3, 8], "label": ["sky", "man"], "score": [float("nan"), 0.5]}).to_parquet(path)
    with pytest.raises(TaskError, match=r"scores.parquet: row 2: score nan is not a finite number"):
        read_image_scores(path, TASK)


def test_a_predictions_file_that_is_no_csv_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TaskError, match=r"scores.csv: unreadable as csv") as info:
        read_image_scores(path, TASK)
    assert "\n" not in str(info.value)


FIELD = st.sampled_from(["0.5", "1", "0", "0.1_0", "\u0663", "nan", "-0.1", "2", "", "x", "1e3", ".25"]) | st.text(
    max_size=4
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(FIELD, min_size=0, max_size=9).map(" ".join), max_size=6), st.booleans())
def test_any_run_file_is_scored_or_refused_line_by_line(lines: list[str], final_newline: bool) -> None:
    """Any lines: either every test image has a valid line (and the arrays are in range), or a
    RunError whose every line names the file."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "run.txt"
        path.write_text("\n".join(lines) + ("\n" if final_newline else ""), encoding="utf-8")
        try:
            confidence, binary = read_imageclef_run(path, IMAGES, CONCEPTS)
        except TaskError as exc:
            assert all(line.startswith(f"{path}: ") for line in str(exc).splitlines()), str(exc)
        else:
            assert ((confidence >= 0) & (confidence <= 1)).all() and binary.shape == (3, 3)
            # Nothing loosely parsed was accepted: every confidence is a plain ASCII number.
            fields = [f for line in lines for f in line.split(" ")[1::2]]
            assert all(numbers.NUMBER.fullmatch(f) for f in fields), fields


CELL = st.sampled_from(["3", "8", "21", "sky", "man", "0.5", "1_0", "\u0663", "nan", "", "NA", "-1", '"', "a,b"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(CELL, min_size=1, max_size=4).map(",".join), max_size=6), st.booleans())
def test_any_scores_csv_is_scored_or_refused_line_by_line(rows: list[str], header: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "scores.csv"
        path.write_text("\n".join((["image_id,label,score"] if header else []) + rows) + "\n", encoding="utf-8")
        try:
            scores = read_image_scores(path, TASK)
        except TaskError as exc:
            assert all(line.startswith(f"{path}: ") for line in str(exc).splitlines()), str(exc)
        else:
            assert len(scores) == len(IMAGES) and all(0 <= v <= 1 for s in scores for v in s.values())
            cells = [row.split(",") for row in rows]
            assert all(numbers.NUMBER.fullmatch(c[2]) and numbers.is_id(c[0]) for c in cells if len(c) == 3), cells
