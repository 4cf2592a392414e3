"""User code and extreme values in scoring: a similarity hook that raises or strays, and ids at and
beyond the 64-bit edge, are one line each, never a traceback or a silently rounded id."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from regionbench.core import numbers
from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline import vocabulary
from regionbench.scoring.results import _strict
from regionbench.scoring.tasks import TaskError
from regionbench.scoring.tasks.image import similarity_function

TREE = Hierarchy.from_yaml(vocabulary.DEFAULT_DIR / "hierarchy.yaml")

HOOKS = """
def raising(tree):
    raise RuntimeError("model weights not found")

def bad_call(tree):
    return lambda a, b: {}[a]

def strays(tree):
    return lambda a, b: 1.5

def fine(tree):
    return lambda a, b: 1.0 if a == b else 0.25
"""


@pytest.fixture()
def hooks(tmp_path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "user_hooks.py").write_text(HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "user_hooks"


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        ("raising", "the hook raised RuntimeError when made: model weights not found; fix the hook"),
        ("bad_call", "the hook raised KeyError on ('sky', 'man'): 'sky'; fix the hook"),
        ("strays", "the hook gives 1.5 for ('sky', 'man'), not a value in [0, 1]"),
    ],
)
def test_a_hook_that_fails_is_one_line_naming_it(hooks: str, factory: str, expected: str) -> None:
    with pytest.raises(TaskError) as failed:
        similarity_function(f"{hooks}:{factory}", TREE)("sky", "man")
    assert expected in str(failed.value) and "\n" not in str(failed.value)


def test_a_sound_hook_is_used_as_given(hooks: str) -> None:
    measure = similarity_function(f"{hooks}:fine", TREE)
    assert (measure("sky", "sky"), measure("sky", "man")) == (1.0, 0.25)


@given(st.integers(0, 2**64 - 1))
def test_any_unsigned_id_is_taken_exactly_or_refused(value: int) -> None:
    """Parquet ids as uint64 or int64: every id up to 2**63 - 1 exactly (no rounding through a
    float beyond 2**53), anything larger refused with the range."""
    for cell in (np.uint64(value), value):
        if value <= numbers.MAX_ID:
            assert _strict(cell, numbers.parse_id, "image_id") == value
            assert numbers.parse_id(str(value)) == value
        else:
            with pytest.raises(ValueError, match=r"not an id \(a whole number from 0 to 9223372036854775807\)"):
                _strict(cell, numbers.parse_id, "image_id")
            with pytest.raises(ValueError, match="not an id"):
                numbers.parse_id(str(value))
