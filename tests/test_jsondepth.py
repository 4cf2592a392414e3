"""The depth of a JSON file found by a vectorised scan equals the parsed value's."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core.jsondepth import deeper_than

TRICKY = st.text(alphabet='ab[]{}"\\ ,:', max_size=6)  # brackets, quotes and backslashes in strings
VALUES = st.recursive(
    st.none() | st.integers() | TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY, inner, max_size=3),
    max_leaves=20,
)


def depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(VALUES, st.integers(1, 64), st.integers(0, 8), st.booleans())
def test_the_scan_finds_the_parsed_depth_whatever_the_chunks(
    value: object, chunk: int, extra: int, spaced: bool
) -> None:
    import tempfile
    from pathlib import Path

    text = json.dumps(value, indent=1 if spaced else None)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.json"
        path.write_text(text)
        true_depth = depth(value)
        assert deeper_than(path, true_depth, chunk=chunk) is False
        if true_depth:
            assert deeper_than(path, true_depth - 1, chunk=chunk) is True
        assert deeper_than(path, true_depth + extra, chunk=chunk) is False
