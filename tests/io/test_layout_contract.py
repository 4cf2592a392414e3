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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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


@pytest.mark.parametrize("wrong", [False, True])
def test_the_type_checker_holds_a_layout_to_the_contract(tmp_path: Path, wrong: bool) -> None:
    path = _wrong_copy(tmp_path) if wrong else shutil.copy(LAYOUT_FILE, tmp_path / "labelmap.py")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(PROJECT / "pyproject.toml"), str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    if wrong:
        assert done.returncode == 1, done.stdout
        assert 'Signature of "shards" incompatible with supertype "Layout"' in done.stdout
    else:
        assert done.returncode == 0, done.stdout


MARKERS = {
    "images/": None, "annotations/a.json": "{}", "annotations/train/a.png": "", "groundTruth/": None,
    "wlist.txt": "", "JPEGImages/": None, "SegmentationClass/": None, "leftImg8bit/": None, "gtFine/": None,
    "images/ADE/": None,
}  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=st.sets(st.sampled_from(sorted(MARKERS))))
def test_detection_is_one_rule_and_a_tree_of_two_layouts_is_one_line(tmp_path_factory, chosen: set[str]) -> None:
    """Whatever a tree holds: the one layout that recognises it, or one line, saying what each
    layout expects (none), or which two recognise it and that ``layout`` decides (several)."""
    root = tmp_path_factory.mktemp("tree")
    for marker in sorted(chosen):
        path = root / marker
        if MARKERS[marker] is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(MARKERS[marker])
    found = [layout.name for layout in layouts.registry().values() if layout.detect(root)]
    if len(found) == 1:
        assert layouts.detect(root).name == found[0]
        return
    with pytest.raises(IngestError) as refused:
        layouts.detect(root)
    text = str(refused.value)
    assert "\n" not in text
    if found:
        assert f"holds both {' and '.join(f'a {n} tree' for n in found)}; set layout to one of" in text
        assert layouts.detect(root, found[1]).name == found[1]  # the config's layout decides
    else:
        assert "holds neither a " in text
