"""The build's last lines (``release.summary``): what was kept without a word is named there."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.release.summary import QUIRK_MEANING, SHOWN_QUIRKS, quirks


@settings(max_examples=40, deadline=None)
@given(counted=st.dictionaries(st.from_regex(r"[a-z_]{3,12}", fullmatch=True), st.integers(1, 10**6), max_size=8))
def test_the_quirks_counted_are_named_most_frequent_first(counted: dict[str, int]) -> None:
    """Any quirks an ingest counted: one line naming the most frequent (ties by name) and how many
    more kinds, and where all are; no line when none were seen."""
    lines = quirks({"quirks": counted}, "releases/x/v1.0.0")
    if not counted:
        assert lines == []
        return
    (line,) = lines
    ranked = sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))
    assert line.startswith("  quirks, counted and kept: " + f"{ranked[0][0]} {ranked[0][1]:,}")
    assert all(f"{k} {n:,}" in line for k, n in ranked[:SHOWN_QUIRKS])
    assert ("more kinds" in line) == (len(ranked) > SHOWN_QUIRKS)
    assert line.endswith("(all: releases/x/v1.0.0/results/ingest_report.json)")
    assert "\n" not in line and json.dumps(line)  # one printable line


def test_a_release_without_an_ingest_report_has_no_quirk_line(tmp_path: Path) -> None:
    assert quirks({}, str(tmp_path)) == []


@settings(max_examples=40, deadline=None)
@given(
    seen=st.dictionaries(
        st.sampled_from(sorted(QUIRK_MEANING)),
        st.lists(st.from_regex(r"[a-z0-9]{1,8}/images/[0-9]{1,5}\.jpg", fullmatch=True), min_size=1, max_size=4,
                 unique=True).map(sorted),
        max_size=len(QUIRK_MEANING),
    )
)  # fmt: skip
def test_a_quirk_that_may_be_a_mistake_names_its_first_file_and_what_to_do(seen: dict[str, list[str]]) -> None:
    """A quirk the ingest kept with its files (``quirk_files``): a line each, naming the first
    file, how many more, what the quirk means and what to do."""
    counted = {k: len(v) for k, v in seen.items()}
    lines = quirks({"quirks": counted, "quirk_files": seen}, "releases/x/v1.0.0")
    assert len(lines) == (1 + len(seen) if seen else 0)
    for line, (kind, files) in zip(lines[1:], sorted(seen.items()), strict=True):
        assert line.startswith(f"  check {kind}: {files[0]}")
        assert (f"and {len(files) - 1:,} more" in line) == (len(files) > 1)
        assert QUIRK_MEANING[kind] in line and "\n" not in line
