"""The Layout contract is the code: every registered layout keeps it, and a layout that breaks
it is caught, by the registry at run time and by the type checker before."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import PROJECT
from layouts.tree import LAYOUT_FILE

from regionbench.io import layouts
from regionbench.io.shards import IngestError

WRONG = ("def shards(self, root: Path, shard_size: int | None)", "def shards(self, root: Path)")


def _module(path: Path) -> object:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wrong_copy(tmp_path: Path) -> Path:
    text = LAYOUT_FILE.read_text()
    assert WRONG[0] in text
    path = tmp_path / "labelmap.py"
    path.write_text(text.replace(*WRONG))
    return path


@pytest.mark.parametrize("name", sorted(layouts.registry()))
def test_every_registered_layout_keeps_the_contract(name: str) -> None:
    layout = layouts.get(name)
    assert isinstance(layout, layouts.Layout)
    assert layouts.contract_problems(layout) == []


def test_capabilities_are_what_the_layouts_claim() -> None:
    claimed = {
        name: sorted(c.__name__ for c in layouts.CAPABILITIES if isinstance(layout, c))
        for name, layout in layouts.registry().items()
    }
    assert claimed["coco"] == ["DescribesSource", "Exports", "NamesCategories", "PreparesPieces"]
    assert claimed["saiapr"] == ["Exports", "NamesCategories", "PublishesMeasures"]


def test_the_test_layout_keeps_the_contract() -> None:
    assert layouts.contract_problems(_module(LAYOUT_FILE).LAYOUT) == []


def test_a_wrong_signature_is_found_at_run_time(tmp_path: Path) -> None:
    layout = _module(_wrong_copy(tmp_path)).LAYOUT
    assert layouts.contract_problems(layout) == ["shards(root) should be shards(root, shard_size)"]


def test_the_registry_refuses_a_layout_that_breaks_the_contract(
    tmp_path: Path, drop_in_layout: Callable[[Path], None]
) -> None:
    drop_in_layout(_wrong_copy(tmp_path))
    with pytest.raises(IngestError, match=r"regionbench.io.labelmap: its LAYOUT breaks the Layout contract"):
        layouts.registry()


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for the module's checks: the library's types are read once, not per check."""
    return tmp_path_factory.mktemp("mypy-cache")


@pytest.mark.parametrize("wrong", [False, True])
def test_the_type_checker_holds_a_layout_to_the_contract(tmp_path: Path, mypy_cache: Path, wrong: bool) -> None:
    path = _wrong_copy(tmp_path) if wrong else shutil.copy(LAYOUT_FILE, tmp_path / "labelmap.py")
    config = ["--config-file", str(PROJECT / "pyproject.toml"), "--cache-dir", str(mypy_cache)]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *config, str(path)], capture_output=True, text=True, cwd=tmp_path
    )
    if wrong:
        assert done.returncode == 1, done.stdout
        assert 'Signature of "shards" incompatible with supertype "Layout"' in done.stdout
    else:
        assert done.returncode == 0, done.stdout
