"""The Layout contract as the type checker holds it: the test layout passes mypy with the
project's settings and a copy with a wrong signature fails. In the lint lane (``make lint``),
beside the project's own mypy run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT
from layouts.tree import LAYOUT_FILE, wrong_copy


@pytest.fixture(scope="module")
def mypy_cache() -> Path:
    """The project's own mypy cache: ``make lint`` runs mypy on the library just before this
    lane, so its types are read from there instead of checked again (the library is most of what
    a check reads)."""
    return PROJECT / ".mypy_cache"


@pytest.mark.parametrize("wrong", [False, True])
def test_the_type_checker_holds_a_layout_to_the_contract(tmp_path: Path, mypy_cache: Path, wrong: bool) -> None:
    path = wrong_copy(tmp_path) if wrong else shutil.copy(LAYOUT_FILE, tmp_path / "labelmap.py")
    config = ["--config-file", str(PROJECT / "pyproject.toml"), "--cache-dir", str(mypy_cache)]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *config, str(path)], capture_output=True, text=True, cwd=tmp_path
    )
    if wrong:
        assert done.returncode == 1, done.stdout
        assert 'Signature of "shards" incompatible with supertype "Layout"' in done.stdout
    else:
        assert done.returncode == 0, done.stdout
